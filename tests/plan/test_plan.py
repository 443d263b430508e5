"""The resolved plan: everything a run knows before a model loads (items, skipped tasks, each
model's context length, data presence), as JSON that round-trips; no weights are read."""
import json

import pytest

from path_eval.errors import PathEvalError
from path_eval.plan import ResolvedPlan, resolve_plan
from path_eval.suites import load_suite


def checkpoint(folder, **config):
    """A checkpoint folder with a config.json and no weights: planning must not need them."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "path_eval", "attention": "path"} | config))
    return str(folder)


def piqa_suite(tmp_path):
    """One lm-eval task, no lengths and no max_length: the context length is the checkpoint's."""
    (tmp_path / "data" / "baber" / "piqa" / "default").mkdir(parents=True)
    (tmp_path / "data" / "baber" / "piqa" / "default" / "validation.jsonl").write_text("{}\n")
    (tmp_path / "s.yaml").write_text("name: s\ndescription: x\ntasks:\n  - {name: piqa, lm_eval_task: piqa, "
                                     "metrics: [acc]}\n")
    return load_suite(str(tmp_path / "s.yaml"))


def test_generated_items_and_the_context_they_need(tmp_path):
    model = checkpoint(tmp_path / "m")
    plan = resolve_plan(load_suite("phonebook"), [model], lengths=["1k", "2k"], limit=4, data_dir=tmp_path)
    assert [(i.task, i.kind, i.length, i.seeds, i.samples, i.lm_eval_tasks) for i in plan.items] == [
        ("phonebook", "generated", 1024, [1234, 1235, 1236], 4, ["phonebook_1024_s1234", "phonebook_1024_s1235",
                                                                 "phonebook_1024_s1236"]),
        ("phonebook", "generated", 2048, [1234, 1235, 1236], 4, ["phonebook_2048_s1234", "phonebook_2048_s1235",
                                                                 "phonebook_2048_s1236"])]
    assert plan.models[0].max_length == 2049  # the longest sample plus BOS
    assert resolve_plan(load_suite("phonebook"), [model], lengths=["1k"], data_dir=tmp_path,
                        max_length=4096).models[0].max_length == 4096
    assert ResolvedPlan.model_validate_json(plan.model_dump_json()) == plan


def test_optional_tasks_without_data_are_skipped_with_the_reason(tmp_path):
    plan = resolve_plan(load_suite("ruler"), [checkpoint(tmp_path / "m")], tasks=["vt", "qa_1"], lengths=["1k"],
                        data_dir=tmp_path)
    assert [i.task for i in plan.items] == ["vt"]
    [skipped] = plan.skipped
    assert skipped.task == "qa_1" and skipped.reason.startswith("missing data file")


def test_the_checkpoints_context_length_is_read_from_its_config(tmp_path):
    suite = piqa_suite(tmp_path)
    plan = resolve_plan(suite, [checkpoint(tmp_path / "a", max_position_embeddings=777)], data_dir=tmp_path / "data")
    assert plan.models[0].max_length == 777
    [item] = plan.items
    assert item.kind == "lm_eval" and item.lm_eval_tasks == ["piqa"] and item.data_files[0].endswith("validation.jsonl")
    with pytest.raises(PathEvalError, match="the checkpoint's config.json states no context length: pass --max-length"):
        resolve_plan(suite, [checkpoint(tmp_path / "b")], data_dir=tmp_path / "data")
    assert resolve_plan(suite, [checkpoint(tmp_path / "c")], data_dir=tmp_path / "data",
                        max_length=512).models[0].max_length == 512


def test_a_transformers_checkpoint_states_its_length_through_its_config(tmp_path):
    from transformers import LlamaConfig

    LlamaConfig(max_position_embeddings=1536).save_pretrained(tmp_path / "llama")
    plan = resolve_plan(piqa_suite(tmp_path), [str(tmp_path / "llama")], data_dir=tmp_path / "data")
    assert plan.models[0].max_length == 1536


def test_zoo_models_by_name_and_each_task_on_its_own_models_and_lengths(tmp_path):
    plan = resolve_plan(load_suite("ci"), ["zoo:rope", "zoo:flipflop_path"], tasks=["heldout", "flipflop_in"],
                        data_dir=tmp_path)
    assert [m.name for m in plan.models] == ["rope", "flipflop_path"]
    assert {m.max_length for m in plan.models} == {4097}  # the suite's, whatever the subset
    assert [(i.task, i.kind, i.length, i.models) for i in plan.items] == [
        ("heldout", "corpus", 1024, ["rope"]), ("heldout", "corpus", 2048, ["rope"]),
        ("heldout", "corpus", 4096, ["rope"]), ("flipflop_in", "flipflop", 512, ["flipflop_path"])]
    assert plan.of_kind("flipflop", "rope") == [] and len(plan.of_kind("corpus", "rope")) == 3
    only_lm = resolve_plan(load_suite("ci"), ["zoo:fox"], tasks=["heldout", "flipflop_in"], data_dir=tmp_path)
    assert [s.task for s in only_lm.skipped] == ["flipflop_in"] and {i.task for i in only_lm.items} == {"heldout"}
    assert len(resolve_plan(load_suite("ci"), ["zoo"], tasks=["heldout"], data_dir=tmp_path).models) == 9
    with pytest.raises(PathEvalError, match="no chosen task of suite ci runs on rope: each names its models"):
        resolve_plan(load_suite("ci"), ["zoo:rope"], tasks=["flipflop_in"], data_dir=tmp_path)


def test_unknown_zoo_model_and_a_task_for_an_unknown_model_are_one_line_errors(tmp_path):
    with pytest.raises(PathEvalError, match="no zoo model 'ropee': choose one of a5_rope, flipflop_fox"):
        resolve_plan(load_suite("ci"), ["zoo:ropee"], data_dir=tmp_path)
    (tmp_path / "s.yaml").write_text("name: s\ndescription: x\ntasks:\n  - {name: ff, flipflop: {p_ignore: 0.8}, "
                                     "lengths: [64], metrics: [flipflop_error], models: [flipflop_pth]}\n")
    with pytest.raises(PathEvalError, match="task ff runs on model 'flipflop_pth', which is neither a model of this "
                                            "run \\(rope\\) nor of the zoo"):
        resolve_plan(load_suite(str(tmp_path / "s.yaml")), ["zoo:rope"], data_dir=tmp_path)
