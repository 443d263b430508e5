"""BABILong on lm-eval's `babilong_qaN` configs, made to run as booydar/babilong's
`scripts/run_model_on_babilong.py` and score as its `babilong/metrics.py` do (DESIGN.md §4.5).

Kept from lm-eval's config (read at run time from the installed package): the task's instruction and
post-prompt (its `description`: instruction, a newline, post-prompt) and its in-context examples
(`fewshot_config.samples`). Changed, because lm-eval departs from the original there and the scores
move with it:
- layout: the original's prompt, "{instruction}\\n\\n{examples}\\n\\n{post_prompt}\\n\\n<context>\\n{context}\\n
  </context>\\n\\nQuestion: {question}", each example "<example>\\n{input} {question}\\nAnswer: {target}\\n
  </example>" (lm-eval gives description, then examples as few-shot turns "input\\nquestion target", then
  "input\\nquestion" with no tags, no "Question:" and no "Answer:");
- texts: the suite's `prompt_edits`, applied to the instruction, examples and post-prompt laid out as
  above, put back the original's words where lm-eval's differ;
- generation: 20 new tokens (the original's max_new_tokens; lm-eval 16), greedy, no stop sequence;
- rows: the suite's `babilong` options choose them, one config per length: the originals' sample set
  per length by default (RMT-team/babilong-1k-samples up to 32k, RMT-team/babilong above; lm-eval reads
  the 1k set at every length), or samples regenerated here (`babilong_regenerated.py`);
- prompt parts: the instruction, the examples and the post-prompt each on or off, as the original's
  switches (a part that is off leaves its place empty in the template, as there);
- metrics: `path_eval.metrics.babilong` (the original's compare_answers; lm-eval's substring test as a
  second metric).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from path_eval.data import DatasetSplit
from path_eval.errors import PathEvalError
from path_eval.metrics.registry import metric_entry
from path_eval.tasks.longbench import edited_template, metric_list

if TYPE_CHECKING:  # annotations only: the suite schema reads the kinds, whose rules call these modules
    from path_eval.suites import BabilongOptions, SuiteSpec, TaskSpec

NEW_TOKENS = 20  # run_model_on_babilong.py: max_new_tokens
# The hub's sample sets; the originals read the 1k set up to 32k and the 100-sample set above.
SAMPLE_SETS = {"1k": "RMT-team/babilong-1k-samples", "100": "RMT-team/babilong"}
ONE_K_SET_UP_TO = 32 * 1024
PROMPT_PARTS = ("instruction", "examples", "post_prompt")
# Between the parts while the suite's edits apply: an edit that would span two parts matches nothing.
PART_SEPARATOR = "\x00"


def sample_set(spec: TaskSpec, options: BabilongOptions, length: int | None) -> str:
    """The suite's sample set, else the originals' for this length; the 1k set beyond 32k is an error."""
    if options.sample_set is None:
        return "100" if length is not None and length > ONE_K_SET_UP_TO else "1k"
    if options.sample_set == "1k" and length is not None and length > ONE_K_SET_UP_TO:
        raise PathEvalError(f"task {spec.name}: BABILong's 1k sample set ({SAMPLE_SETS['1k']}) is the originals' for "
                            f"0k-32k only, not {length // 1024}k: set babilong: {{sample_set: 100}} in the suite, or "
                            "leave sample_set out (1k up to 32k, 100 above)")
    return options.sample_set


def hub_split(spec: TaskSpec, options: BabilongOptions, config: str | None, length: int | None) -> DatasetSplit:
    """The hub file of the task at this length (`config`: the length's config, e.g. "4k")."""
    return DatasetSplit(SAMPLE_SETS[sample_set(spec, options, length)], config, spec.data.split)


def protocol(spec: TaskSpec, options: BabilongOptions, length: int | None) -> dict:
    """What the provenance records of the run's BABILong choices."""
    return {"data_source": options.source, "sample_set": sample_set(spec, options, length),
            "prompt_parts": [part for part in PROMPT_PARTS if getattr(options, part)]}


def example_block(sample: dict) -> str:
    return f"<example>\n{sample['input']} {sample['question']}\nAnswer: {sample['target']}\n</example>"


def task_prompt(config: dict, spec: TaskSpec, options: BabilongOptions) -> str:
    """Instruction, examples and post-prompt from lm-eval's config in the original's layout, with the
    suite's edits; a part switched off is empty, its blank lines kept (the original's template)."""
    instruction, newline, post_prompt = config["description"].strip().partition("\n")
    if not newline:
        raise PathEvalError(f"task {spec.name}: lm-eval's description for {spec.lm_eval_task} is not "
                            "'instruction, newline, post-prompt': check the suite against this lm-eval version")
    examples = "\n".join(example_block(s) for s in config["fewshot_config"]["samples"])
    edited = edited_template(PART_SEPARATOR.join((instruction, examples, post_prompt)), spec).split(PART_SEPARATOR)
    return "\n\n".join(text if getattr(options, part) else "" for part, text in zip(PROMPT_PARTS, edited))


def prompt_renderer(task_part: str):
    """doc -> the original's prompt: the task part, then the sample's context and question."""
    def render(doc: dict) -> str:
        return f"{task_part}\n\n<context>\n{doc['input'].strip()}\n</context>\n\nQuestion: {doc['question']}".strip()
    return render


def sample_scorer(spec: TaskSpec):
    """lm-eval's per-document hook: each metric of the task on the generation, with the task's answer
    words (the split is the bAbI task: qa1 ... qa5)."""
    def score(doc: dict, results: list[str]) -> dict[str, float]:
        return {m.name: metric_entry(m.name).function(results[0], doc[metric_entry(m.name).reference_field],
                                                      doc["question"], spec.data.split) for m in spec.metrics}
    return score


def adapt_config(config: dict, spec: TaskSpec, suite: SuiteSpec) -> dict:
    metrics = metric_list(spec, "BABILong")
    kept = {k: v for k, v in config.items() if k not in ("custom_dataset", "fewshot_config")}
    return kept | {
        "description": "",  # the instruction is inside each prompt, as in the original
        "doc_to_text": prompt_renderer(task_prompt(config, spec, suite.babilong)),
        "process_results": sample_scorer(spec),
        "generation_kwargs": {"until": list(spec.stop), "max_gen_toks": NEW_TOKENS, "do_sample": False,
                              "temperature": 0.0},
        "metric_list": metrics,
    }
