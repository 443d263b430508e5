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
- rows: the suite's `data` (RMT-team/babilong, 100 samples, one config per length) instead of lm-eval's
  RMT-team/babilong-1k-samples;
- metrics: `path_eval.metrics.babilong` (the original's compare_answers; lm-eval's substring test as a
  second metric).
"""
from __future__ import annotations

from path_eval.errors import PathEvalError
from path_eval.metrics.registry import metric_entry
from path_eval.suites import SuiteSpec, TaskSpec
from path_eval.tasks.longbench import edited_template, metric_list

NEW_TOKENS = 20  # run_model_on_babilong.py: max_new_tokens


def example_block(sample: dict) -> str:
    return f"<example>\n{sample['input']} {sample['question']}\nAnswer: {sample['target']}\n</example>"


def task_prompt(config: dict, spec: TaskSpec) -> str:
    """Instruction, examples and post-prompt from lm-eval's config in the original's layout, with the
    suite's edits."""
    instruction, newline, post_prompt = config["description"].strip().partition("\n")
    if not newline:
        raise PathEvalError(f"task {spec.name}: lm-eval's description for {spec.lm_eval_task} is not "
                            "'instruction, newline, post-prompt': check the suite against this lm-eval version")
    examples = "\n".join(example_block(s) for s in config["fewshot_config"]["samples"])
    return edited_template(f"{instruction}\n\n{examples}\n\n{post_prompt}", spec)


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
        "doc_to_text": prompt_renderer(task_prompt(config, spec)),
        "process_results": sample_scorer(spec),
        "generation_kwargs": {"until": list(spec.stop), "max_gen_toks": NEW_TOKENS, "do_sample": False,
                              "temperature": 0.0},
        "metric_list": metrics,
    }
