"""A model whose logits are all NaN stops the run in one line naming it.

Greedy decoding would read NaN as token 0 and every answer would score 0, and a perplexity would be
NaN, as if measured. The check reads the logits on the host, and on a GPU a read waits for the
forward to finish: the GPU then idles while the host issues the next launches. Greedy generation
and scoring, which read their results once at the end, defer the checks to that read
(`deferred_nan_checks`); sampling checks each forward at once.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import torch

from path_eval.errors import PathEvalError

# Inside `deferred_nan_checks`: each checked forward's (all-NaN flag on the device, model root, logits dtype).
_deferred: ContextVar[list[tuple[torch.Tensor, Path, torch.dtype]] | None] = ContextVar("deferred_nan_checks",
                                                                                         default=None)


def nan_logits_error(root: Path, dtype: torch.dtype) -> PathEvalError:
    return PathEvalError(f"model {root} gives NaN logits (NaN weights, or numbers that overflow in {dtype}): "
                         "nothing it answers can be scored; check the checkpoint's weights (or, where a 16-bit "
                         "dtype overflows, give --dtype float32)")


def refuse_nan_logits(model, root: Path) -> None:
    """Check the output embedding's every call, scoring and generation alike, outside a CUDA graph's
    capture (no result can be read there; the eager forwards before it are checked). All of the
    logits NaN, not any: a padded row may hold NaN that no score reads."""
    def check(module, inputs, logits):
        if not logits.numel() or (logits.is_cuda and torch.cuda.is_current_stream_capturing()):
            return
        all_nan = torch.isnan(logits).all()
        pending = _deferred.get()
        if pending is not None:
            pending.append((all_nan, root, logits.dtype))
        elif bool(all_nan):
            raise nan_logits_error(root, logits.dtype)

    head = model.get_output_embeddings()
    if head is not None:  # every causal LM we load has one; a model without gives no logits to check
        head.register_forward_hook(check)


@contextmanager
def _checks_queued_in(pending: list | None):
    """Inside, `refuse_nan_logits` queues its checks in `pending` (None: reads each at once)."""
    token = _deferred.set(pending)
    try:
        yield
    finally:
        _deferred.reset(token)


@contextmanager
def deferred_nan_checks():
    """Inside, the NaN checks of `refuse_nan_logits` are queued on the device, and read together
    (one wait) when the block ends without an error, the first NaN forward's error raised then. For
    work whose results leave the caller only after the block and that NaN logits do not break:
    greedy decoding reads a NaN logit as token 0 (its `should_stop` looks may see such tokens before
    the error), scoring as a NaN score. Sampling from NaN probabilities fails before the block could
    name the cause: it runs under `immediate_nan_checks`."""
    pending: list[tuple[torch.Tensor, Path, torch.dtype]] = []
    with _checks_queued_in(pending):
        yield
    if pending:
        flags = torch.stack([all_nan.to(pending[0][0].device) for all_nan, _, _ in pending]).tolist()
        for nan, (_, root, dtype) in zip(flags, pending):
            if nan:
                raise nan_logits_error(root, dtype)


def immediate_nan_checks():
    """A block inside which each forward's NaN check is read at once, even within a
    `deferred_nan_checks` block."""
    return _checks_queued_in(None)
