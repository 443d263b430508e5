"""Running model-written programs without trusting them: each in its own user, mount, network, PID,
IPC and UTS namespaces, with read-only mounts, no network, rlimits and a wall clock
(docs/code-execution.md). Layer 0: nothing of the package but `errors` and `terminal`'s `printable`."""
from path_eval.sandbox.launch import Limits, Outcome, run_python, unavailable_reason

__all__ = ["Limits", "Outcome", "run_python", "unavailable_reason"]
