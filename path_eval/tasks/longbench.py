"""LongBench(-E) on lm-eval's task configs, made to run as THUDM/LongBench v1's `pred.py` and score as
its `eval.py` do (DESIGN.md §4.4).

Kept from lm-eval's config (read at run time from the installed package): the prompt template and
the number of new tokens. Changed, because lm-eval departs from the original there and the scores
move with it:
- rows: the original's files (fields `input`, `context`, `answers`, `length`, `all_classes`, ...)
  instead of lm-eval's mirror, whose templates call `input` `question`;
- prompt: the suite's `prompt_edits` put back the original's text where lm-eval's differs;
- generation: no stop sequence unless the suite gives one (lm-eval stops trec, triviaqa and samsum at
  the first newline, even a leading one; the original generates on and cuts the first line after
  leading newlines when scoring), greedy;
- truncation: prompts longer than the suite's `truncate_middle` tokens keep their first and last
  halves (the model adapter does it; lm-eval would cut the left);
- chat (`--apply-chat-template`): as pred.py, the raw prompt is cut first and only then put in the
  user turn (`build_chat`), by the model adapter (lm-eval would wrap first, and the cut would then
  fall on the template's text); the six datasets pred.py leaves unwrapped stay so;
- metrics: `path_eval.metrics.longbench` (the original's), the first-line cut where the suite's
  LongBench rule says so (`fox`: every dataset, as the FoX repository's eval.py; `thudm`: trec,
  triviaqa and samsum, as THUDM's).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from path_eval.errors import PathEvalError
from path_eval.metrics.longbench import longbench_score
from path_eval.metrics.registry import Metric, lm_eval_metric_list, metric_entry, metrics_of

if TYPE_CHECKING:  # annotations only: the suite schema reads the kinds, whose rules call these modules
    from path_eval.suites import SuiteSpec, TaskSpec


def edited_template(template: str, spec: TaskSpec) -> str:
    """lm-eval's template with the suite's edits; an edit that no longer matches once is an error
    (lm-eval's text changed: the suite must be checked again)."""
    for edit in spec.prompt_edits:
        found = template.count(edit.old)
        if found != 1:
            raise PathEvalError(f"task {spec.name}: the prompt edit {edit.old!r} matches {found} times in lm-eval's "
                                f"template for {spec.lm_eval_task} (expected once): check the suite against this "
                                "lm-eval version")
        template = template.replace(edit.old, edit.new)
    return template


def prompt_renderer(template: str):
    """doc -> prompt: lm-eval's Jinja rendering, with the original's `input` under lm-eval's name."""
    from lm_eval.utils import apply_template

    def render(doc: dict) -> str:
        return apply_template(template, {**doc, "question": doc["input"]})
    return render


def sample_scorer(spec: TaskSpec, suite: SuiteSpec):
    """lm-eval's per-document hook: each metric of the task on the generation, best over answers, the
    prediction cut to its first line where the suite's LongBench rule says so."""
    first_line = suite.scoring_rule().cuts_first_line(spec.name)

    def score(doc: dict, results: list[str]) -> dict[str, float]:
        return {m.name: longbench_score(m.name, results[0], doc[metric_entry(m.name).reference_field],
                                        doc.get("all_classes"), first_line) for m in spec.metrics}
    return score


def metric_list(spec: TaskSpec, benchmark: str) -> list[dict]:
    """lm-eval's metric_list for the task's metrics, each one the registry defines after `benchmark`."""
    known: dict[str, Metric] = metrics_of(benchmark)
    unknown = [m.name for m in spec.metrics if m.name not in known]
    if unknown:
        raise PathEvalError(f"task {spec.name}: unknown {benchmark} metric {unknown[0]!r}: choose one of "
                            f"{', '.join(known)}")
    return lm_eval_metric_list([m.name for m in spec.metrics])


# pred.py: "chat models are better off without build prompts on these tasks"
UNWRAPPED_DATASETS = ("trec", "triviaqa", "samsum", "lsht", "lcc", "repobench-p")


def chat_wrapped(spec: TaskSpec) -> bool:
    """Whether pred.py prompts a chat model with this dataset through its template (lm-eval's task
    `longbench_<dataset>[_e]`)."""
    return spec.lm_eval_task.removeprefix("longbench_").removesuffix("_e") not in UNWRAPPED_DATASETS


def with_chat(config: dict, spec: TaskSpec) -> dict:
    """The adapted config under a chat template: its prompts cut, then put in the user turn, by the
    model adapter (the generation option `chat_user_turn`), for the datasets pred.py wraps."""
    if not chat_wrapped(spec):
        return config
    return config | {"generation_kwargs": config["generation_kwargs"] | {"chat_user_turn": True}}


def adapt_config(config: dict, spec: TaskSpec, suite: SuiteSpec) -> dict:
    metrics = metric_list(spec, "LongBench")
    generation = {"until": list(spec.stop), "max_gen_toks": config["generation_kwargs"]["max_gen_toks"],
                  "do_sample": False, "temperature": 0.0}
    if suite.truncate_middle:
        generation["truncate_middle"] = suite.truncate_middle
    return config | {
        "doc_to_text": prompt_renderer(edited_template(config["doc_to_text"], spec)),
        "process_results": sample_scorer(spec, suite),
        "generation_kwargs": generation,
        "metric_list": metrics,
    }
