"""The Python API: `evaluate` runs a suite on models (what `eval.py run` does), `load_results`
opens stored runs (what `eval.py report` reads), and both give a `Results`: the records, a pandas
frame, the suite tables, the plots and the HTML page of a study. The command line's `run` and
`report` are a thin layer over these functions. Heavy libraries (torch, lm-eval, matplotlib, pandas)
are imported only when a function needs them."""
from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from path_eval.errors import PathEvalError

if TYPE_CHECKING:
    from path_eval.plan import ChatOptions
    from path_eval.reports.plots import StudyFigure
    from path_eval.reports.stored import StoredRun
    from path_eval.results import ResultRecord
    from path_eval.suites import SuiteSpec


class Results:
    """The records of one or more runs, with what reports them. `a + b` is the study of both."""

    def __init__(self, runs: list[StoredRun], files: list[Path] | None = None):
        self.runs = list(runs)
        self.files = list(files or [])  # reports the run wrote into its folder (per-position perplexity)

    @property
    def records(self) -> list[ResultRecord]:
        return [r for run in self.runs for r in run.records]

    @property
    def suites(self) -> dict[str, SuiteSpec]:
        """Each suite of the study by name, as its first run stored it."""
        suites: dict = {}
        for run in self.runs:
            for name, suite in run.suites.items():
                suites.setdefault(name, suite)
        return suites

    def __add__(self, other: Results) -> Results:
        return Results(self.runs + other.runs, self.files + other.files)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        models = ", ".join(dict.fromkeys(r.model for r in self.records))
        return f"Results({len(self)} records; suites {', '.join(self.suites)}; models {models})"

    def to_pandas(self):
        """One row per record; the provenance as `provenance.<field>` columns."""
        import pandas as pd

        return pd.json_normalize([r.model_dump(mode="json") for r in self.records])

    def report(self, layout: str | None = None, format: str = "markdown", baseline: str | None = None):
        """Each suite's table in its layout (or the paper table `layout`: table3, table7, conversion
        (Tables 4 and 5); or `variants`:
        each model against the model `baseline` at each length, paired tests marked; or
        `state_tracking`: the diagnostics in Figure 2's layout, the paper's directions tested) as the text of a
        Markdown, CSV or LaTeX table; `format="terminal"` gives the rich tables to print."""
        from rich.console import Group

        from path_eval.reports.tables import paper_layouts, render, suite_report

        if format not in REPORT_FORMATS:
            raise PathEvalError(f"unknown report format {format!r}: choose one of {', '.join(REPORT_FORMATS)}")
        if (layout == "variants") != (baseline is not None):
            raise PathEvalError("layout='variants' and baseline=NAME go together: baseline names the model the "
                                "others are tested against")
        if layout == "variants":
            from path_eval.reports.variants import variants_report

            return variants_report(self.runs, self.suites, baseline, format)
        if layout == "state_tracking":
            from path_eval.reports.state_tracking import state_tracking_report

            return state_tracking_report(self.runs, self.suites, format)
        if layout:
            # as `variants` does: of several tables (Tables 4 and 5) a CSV names each in its first header
            # cell; a LaTeX table comes after its title and note as comments
            tables = paper_layouts(layout, self.records)
            rendered = [render([title if format == "csv" and len(tables) > 1 else header[0]] + header[1:], rows,
                               format, title, note) for title, header, rows, note in tables]
            if format == "latex":
                rendered = [f"% {title}\n% {note}\n{text}" for (title, _, _, note), text in zip(tables, rendered)]
            if format != "terminal":
                return "\n".join(rendered)
        else:
            rendered = []
            for name, suite in self.suites.items():
                plans = [run.plan for run in self.runs if run.plan and run.plan.suite.name == name]
                rendered.append(suite_report([r for r in self.records if r.suite == name], suite, plans, format))
        return Group(*rendered) if format == "terminal" else "".join(rendered)

    def plot(self, folder) -> list[Path]:
        """Every long-context suite's plots as FOLDER/SUITE.png and .svg (per-position perplexity:
        SUITE_by_position); the files written."""
        from path_eval.reports.plots import write_plots

        return write_plots(self.figures, Path(folder))

    def html(self, file, layout: str | None = None, baseline: str | None = None) -> Path:
        """One self-contained page of the study: tables (with the `variants` layout, each model against
        `baseline`), the plots `plot` writes, protocol and provenance per run."""
        from path_eval.reports.html import write_page

        return write_page(self.runs, self.suites, self.figures, Path(file), layout, baseline)

    @cached_property
    def figures(self) -> list[StudyFigure]:
        """The study's figures, drawn on first use and shared by `plot` and `html`."""
        from path_eval.reports.plots import study_figures

        return study_figures(self.records, self.suites)


REPORT_FORMATS = ("terminal", "markdown", "csv", "latex")


def load_results(*runs) -> Results:
    """Stored runs (run folders or results.json files) as one study."""
    from path_eval.reports.stored import read_run

    if not runs:
        raise PathEvalError("load_results() names no run: give run folders or results.json files")
    study = Results([read_run(Path(run)) for run in runs])
    if not study.records:
        raise PathEvalError("the results hold no records: give the results.json of a finished run")
    return study


def default_out(suite: SuiteSpec, longbench_rule: str | None, models: list[str], tasks: list[str] | None,
                lengths: list[str] | None, limit: int | None, seed: int, data_dir: Path, device: str,
                dtype: str | None, attention: str | None, max_length: int | None,
                chat: ChatOptions | None = None, allow_code_execution: bool = False) -> Path:
    """runs/SUITE[-RULE]-KEY, KEY a hash of every argument that changes the results, the suite's whole
    definition among them: the same call (or command) finds its own folder again and resumes there,
    and two suite files that share a name (copies edited apart) never share a folder. The name is
    the suite's (and another LongBench rule's than its own) as its file name."""
    from path_eval import run_folder
    from path_eval.plan.models import is_folder

    # folders by absolute path; hub ids, zoo names and NAME= references as given
    key = [[str(Path(m).resolve()) if is_folder(m) else m for m in models], ",".join(tasks) if tasks else None,
           ",".join(lengths) if lengths else None, limit, seed, str(Path(data_dir).resolve()), device, dtype,
           attention, max_length, suite.model_dump(mode="json")]
    if chat is not None:  # only then: a run without a template keeps the folder it always had
        key.append(chat.model_dump(mode="json"))
    if allow_code_execution:  # another plan (code tasks run, not skipped): its own folder; runs without it keep theirs
        key.append("allow_code_execution")
    return run_folder.default_folder("-".join(filter(None, [suite.name, longbench_rule])),
                                     hashlib.sha256(json.dumps(key).encode()).hexdigest()[:10])


def _names(value, what: str) -> list[str] | None:
    """A name or a list of names (numbers allowed: lengths) as a list of strings; None stays None."""
    if value is None:
        return None
    names = [str(v) for v in ([value] if isinstance(value, (str, int, Path)) else value)]
    if not names:
        raise PathEvalError(f"{what}=[] names nothing: give at least one, or leave {what} out for all of them")
    return names


def evaluate(suite, models, lengths=None, limit: int | None = None, device: str = "cpu", dtype: str | None = None,
             out=None, *, tasks=None, attention: str | None = None, batch_size: int = 1,
             max_length: int | None = None, seed: int = 1234, data_dir=None,
             bootstrap_iters: int = 100000, wandb_args: dict | None = None,
             hf_hub_log_args: dict | None = None, longbench_rule: str | None = None,
             apply_chat_template: bool | str = False, system_instruction: str | None = None,
             fewshot_as_multiturn: bool = False, allow_code_execution: bool = False) -> Results:
    """Run `suite` (a built-in name, a suite YAML path, or a SuiteSpec) on `models` (what `--model`
    takes: checkpoint folders, zoo:NAME, zoo) as `eval.py run` does, into the run folder `out`
    (default runs/SUITE-KEY, as the command line's); a killed call resumes when repeated.
    `wandb_args` / `hf_hub_log_args`: lm-eval's WandbLogger and EvaluationTracker arguments, as
    `--wandb-args` / `--hf-hub-log-args` give them parsed. `longbench_rule`: LongBench-E's scoring
    rule (`--longbench-rule`: fox, thudm), default the suite's. `apply_chat_template`: True (each
    tokenizer's default chat template) or a template's name prompts every task through it, as
    `--apply-chat-template [NAME]` (docs/chat-templates.md); `system_instruction` and
    `fewshot_as_multiturn` as `--system-instruction` and `--fewshot-as-multiturn`. `allow_code_execution`
    (`--allow-code-execution`): code tasks (HumanEval, MBPP) run the model's programs in the sandbox;
    without it the plan skips them and nothing runs."""
    from path_eval.cpu_threads import configure_threads
    from path_eval.data import default_data_dir
    from path_eval.locations import stay_offline

    stay_offline()
    threads = configure_threads()  # before torch imports (the command line chose already)
    from path_eval.plan.models import resolve_models
    from path_eval.results.lm_eval_layout import check_hub_log_args, check_wandb_args
    from path_eval.suites import SuiteSpec, load_suite

    if wandb_args is not None:
        check_wandb_args(wandb_args)
    if hf_hub_log_args:
        check_hub_log_args(hf_hub_log_args)
    spec = (suite if isinstance(suite, SuiteSpec) else load_suite(str(suite))).with_longbench_rule(longbench_rule)
    models, tasks, lengths = _names(models, "models"), _names(tasks, "tasks"), _names(lengths, "lengths")
    # Mistyped models, devices, precisions, backends, tasks and lengths, missing data and a folder the
    # run cannot write in fail here, before the model stack (torch, transformers, lm-eval) imports:
    # seconds idle, minutes on a loaded machine.
    from path_eval.atomic_files import check_cache_folder, check_out_folder
    from path_eval.models.devices import check_device_and_backend_names
    from path_eval.models.precisions import check_dtype_name
    from path_eval.plan import ChatOptions, resolve_plan
    from path_eval.plan.reach import check_gpu_reach, check_reach

    check_cache_folder()
    chat = ChatOptions.from_arguments(apply_chat_template, system_instruction, fewshot_as_multiturn)
    resolve_models(models or [])
    check_device_and_backend_names(device, attention)
    check_dtype_name(dtype)
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    plan = resolve_plan(spec, models or [], tasks=tasks, lengths=lengths, limit=limit, seed=seed, data_dir=data_dir,
                        max_length=max_length, chat=chat, allow_code_execution=allow_code_execution)
    check_reach(plan, device, dtype, attention)  # lengths the CPU's memory or the kernels cannot reach
    if out is None:
        out = default_out(spec, longbench_rule, models, tasks, lengths, limit, seed, data_dir, device, dtype,
                          attention, max_length, chat, allow_code_execution)
    out = Path(out)
    import logging

    if threads.chosen_here:  # said where the harness chose: a user who set the count knows it
        logging.getLogger("path_eval").info(threads.line())
    from path_eval import run_folder
    from path_eval.results.ownership import claim_for_run

    check_out_folder(out)
    claim_for_run(out, plan)
    # Held until the run ends (the kernel lets go of a killed one): a second run into `out` is refused,
    # and none can have written its plan since the claim above: claimed again, holding the folder.
    with run_folder.locked(out):
        claim_for_run(out, plan)
        from path_eval.models.loading import check_device_and_backend

        check_device_and_backend(device, attention)
        check_gpu_reach(plan, device, dtype, attention)  # and the GPU's, before the model loads
        from path_eval.reports.extrapolation import write_reports
        from path_eval.reports.stored import StoredRun
        from path_eval.runner import RunOptions, run

        records = run(plan, RunOptions(out=out, device=device, dtype=dtype, attention=attention,
                                       batch_size=batch_size, bootstrap_iters=bootstrap_iters,
                                       wandb_args=wandb_args, hf_hub_log_args=hf_hub_log_args))
        files = write_reports(records, spec, out) if records else []
    return Results([StoredRun(out, records, {spec.name: spec}, plan)], files)
