"""What a run changed from its suite's protocol: `report` names every setting of a stored run (its
plan.json) that differs from the built-in suite of the same name (for a suite of the user's own, from
the suite the run stored), so that a table made with --limit, other lengths, fewer samples, another
LongBench rule, a chat template where the paper prompted base models (or none where it used one) or a
cut-down copy of a suite is never read as the suite's own numbers."""
from __future__ import annotations

from typing import TYPE_CHECKING

from path_eval.suites import SuiteSpec, available_suites, load_suite

if TYPE_CHECKING:
    from path_eval.plan import ResolvedPlan

# Suite settings that change the numbers; the others (labels, captions, descriptions) do not.
SUITE_SETTINGS = ("max_length", "bucket_size", "max_blocks", "truncate_middle", "longbench_rule", "babilong",
                  "length_buckets", "training_length")


def protocol_suite(plan: ResolvedPlan) -> SuiteSpec:
    """The suite whose protocol the run is held to: the built-in one of its name, else its own."""
    return load_suite(plan.suite.name) if plan.suite.name in available_suites() else plan.suite


def departures(plan: ResolvedPlan) -> list[str]:
    """One phrase per setting of the run that differs from its suite's protocol, in the order: limit,
    seed, suite settings, tasks not run, then per task its settings, lengths and sample counts."""
    from path_eval.kinds import KINDS, sample_count
    from path_eval.plan import ResolvedPlan

    reference, run = protocol_suite(plan), plan.suite
    found = []
    if plan.limit is not None:
        found.append(f"limit {plan.limit} (the protocol: every sample)")
    default_seed = ResolvedPlan.model_fields["seed"].default
    if plan.seed != default_seed:
        found.append(f"seed {plan.seed} (the protocol: {default_seed})")
    for field in SUITE_SETTINGS:
        mine, theirs = getattr(run, field), getattr(reference, field)
        if mine != theirs:
            found.append(f"{field} {_text(mine)} (the protocol: {_text(theirs)})")
    planned = {item.task for item in plan.items}
    ran = [t.name for t in run.tasks if t.name in planned]  # in the suite's order, as its table lists them
    missing = [t.name for t in reference.tasks if t.name not in ran]
    if missing:
        found.append(f"tasks not run: {_some(missing)}")
    for name in ran:
        task = run.task(name)
        protocol = next((t for t in reference.tasks if t.name == name), None)
        if protocol is None:
            found.append(f"{name}: not a task of the suite {reference.name}")
            continue
        # each kind's settings (its options, what its tasks read: path_eval/kinds/), the protocol's kind's too
        settings = dict.fromkeys([*KINDS[task.kind].protocol_settings(), *KINDS[protocol.kind].protocol_settings(),
                                  "metrics"])
        for field in settings:
            mine, theirs = task.setting(field), protocol.setting(field)
            if mine != theirs:
                found.append(f"{name} {field} {_text(mine)} (the protocol: {_text(theirs)})")
        items = [item for item in plan.items if item.task == name]
        lengths = sorted({item.length for item in items if item.length is not None})
        wanted = sorted(protocol.lengths or reference.lengths)
        if lengths != wanted and (lengths or wanted):
            found.append(f"{name} lengths {_text(lengths)} (the protocol: {_text(wanted)})")
        samples = sorted({item.samples for item in items if item.samples is not None})
        if samples and samples != [sample_count(protocol, reference, None)]:
            found.append(f"{name} samples {_text(samples)} (the protocol: {sample_count(protocol, reference, None)})")
        chat = chat_departure(plan, task, protocol, reference)
        if chat:
            found.append(chat)
    return found


def chat_departure(plan: ResolvedPlan, task, protocol, reference: SuiteSpec) -> str | None:
    """A task prompted through a chat template where the paper's rows used none, or the reverse,
    naming each model's template and its hash's first 12 hex digits."""
    from path_eval.kinds import KINDS

    if not KINDS[task.kind].prompts_chat(task):
        return None  # no prompt a template could reach: the paper's choice does not bear on it
    paper = protocol.paper_chat_template if protocol.paper_chat_template is not None else reference.paper_chat_template
    applied = plan.chat is not None
    if applied == paper:
        return None
    if not applied:
        return f"{task.name} prompted without a chat template (the protocol: the paper's rows used one)"
    templates = ", ".join(dict.fromkeys(f"{m.chat_template.name} sha256 {m.chat_template.sha256[:12]}"
                                        for m in plan.models if m.chat_template and m.name in _models_of(plan, task)))
    return (f"{task.name} prompted through chat template {templates} (the protocol: none, the paper's rows are "
            "a base model's)")


def _models_of(plan: ResolvedPlan, task) -> set[str]:
    return {name for item in plan.items if item.task == task.name for name in item.models}


NAMES_LISTED = 12  # the task names a departure lists before it counts the rest


def _some(names: list[str]) -> str:
    """The names, or the first NAMES_LISTED and how many more (a run of one table of an 80-task suite
    would otherwise print 80 names)."""
    if len(names) <= NAMES_LISTED:
        return ", ".join(names)
    return f"{', '.join(names[:NAMES_LISTED])} and {len(names) - NAMES_LISTED} more"


def _text(value) -> str:
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value) or "none"
    if hasattr(value, "model_dump"):
        return str(value.model_dump(exclude_defaults=True) or "defaults")
    return str(value)


def departures_note(plans: list[ResolvedPlan]) -> str | None:
    """The departures of the runs of one suite, for a table's note (None when every run follows the
    protocol); runs that depart alike are named once."""
    lines = list(dict.fromkeys(line for plan in plans for line in departures(plan)))
    if not lines:
        return None
    return f"CAUTION, settings that differ from the {plans[0].suite.name} suite's protocol: {'; '.join(lines)}"
