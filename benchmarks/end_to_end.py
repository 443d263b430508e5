"""End to end on one GPU: RULER `generate_until` requests through lm-eval's `hf` model over fla's PaTH
model against our `path` model, `eval.py run` against its requests' generation time, and a cold start.

    python -m benchmarks.end_to_end --out results/bench/end_to_end_h200.json

(about 500 s on an H200, most of it fla's side: `--parts generate`, then `--parts cold,run` with another
`--out`, split it into two commands.)

The requests are those of `eval.py run --suite ruler --tasks TASK --lengths LENGTH --limit N` (default
niah_single_1, whose noise haystack needs no data files, at 16K, 26 requests), generated offline by our
RULER generators with the paper's Mistral v1 tokenizer and frozen in path-eval's cache, as that run
freezes them. The model is 760M-shaped (hidden 1536, 24 layers, 24 heads of 64, vocabulary 32000)
with fla's own random initialisation, built by fla's classes (`PaTHAttentionConfig`,
`AutoModelForCausalLM`) and saved with fla's `save_pretrained`; our side reads that folder as any fla
checkpoint, unconverted, so both sides hold the same weights (bfloat16 on a GPU). The parts, in this
order (`--parts` picks some):

  - generate: each side answers the requests in one `generate_until` call at `--batch-size` (8) after a
    warm-up call of the same requests (fla compiles and autotunes for each new shape, so shorter
    warm-up requests would leave its compiling to the timed call), timed apart: greedy, the task's
    `max_gen_toks` and `until` on both sides; the record names any kernel the timed call still compiled. The hf side is `lm_eval.models.huggingface.HFLM` over
    fla's model; ours is `path_eval.lm.PathEvalLM` over our model. Speed-up = hf seconds / ours.
  - cold: a fresh process with an empty TRITON_CACHE_DIR loads our model and makes a call of
    `--warmup-requests` requests of `--warmup-length` tokens (longer than one prefill chunk, so that
    the chunked-prefill kernels compile too) twice; the first call's extra time over the second is
    the compile and autotune cost (and the first-call costs of any process).
  - run: `eval.py run` of the same requests on the frozen samples (a fresh run folder, so nothing is
    resumed), our model; its wall time against its requests' generation time (the adapter's own timing,
    from the run's provenance, and the generate part's timing of our side).

`--budget-s` stops starting new parts after that many seconds. Each record carries the command that
made it, the machine and the versions; the JSON is written after each record.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import torch

from path_eval.models.random_checkpoint import SHAPES
from path_eval.data import default_data_dir
from path_eval.errors import PathEvalError
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import kilo, load, machine_line, ratio, seconds, source, table

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("generate", "cold", "run")
SUITE = "ruler"
EVAL_RUN_TARGET = 1.15  # issue 18: `eval.py run` spends at most 15% more than its requests' generation
SPEEDUP_TARGET = 6.0  # issue 18: our side at least 6x lm-eval's hf model over fla's


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/end_to_end_h200.json"))
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated, from " + ", ".join(PARTS))
    parser.add_argument("--task", default="niah_single_1", help="a task of the ruler suite")
    parser.add_argument("--length", type=int, default=16384, help="the requests' context length in tokens")
    parser.add_argument("--requests", type=int, default=26)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--warmup-requests", type=int, default=2, help="the cold start's requests")
    parser.add_argument("--warmup-length", type=int, help="their length (default: the requests' length, at most "
                                                          "one prefill chunk of ours and 1K more)")
    parser.add_argument("--shape", choices=SHAPES, default="760m")
    parser.add_argument("--seed", type=int, default=1234, help="the samples' seed (eval.py run's --seed)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default=None, help="both sides' weights (default: bfloat16 on a GPU, float32 on "
                                                      "the CPU, as eval.py run)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(),
                        help="offline data folder (the default task reads none)")
    parser.add_argument("--work", type=Path, default=Path("runs/end_to_end"),
                        help="the checkpoint, the run folder and the warm-up requests go here")
    parser.add_argument("--budget-s", type=float, default=1e9, help="start no part after this many seconds")
    args = parser.parse_args(argv)
    for option in ("length", "warmup_length"):
        if getattr(args, option) is not None and getattr(args, option) < 1:
            raise PathEvalError(f"--{option.replace('_', '-')} {getattr(args, option)}: give 1 or more tokens")
    if args.warmup_length is None:
        args.warmup_length = min(args.length, warmup_length())
    args.work, args.data_dir = args.work.resolve(), args.data_dir.resolve()  # the processes it starts run elsewhere
    args.parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown or not args.parts:
        raise PathEvalError(f"--parts {','.join(args.parts)}: choose from {', '.join(PARTS)}")
    for option in ("requests", "batch_size", "warmup_requests"):
        if getattr(args, option) < 1:
            raise PathEvalError(f"--{option.replace('_', '-')} {getattr(args, option)}: give 1 or more")
    return args


def warmup_length() -> int:
    """A cold start's warm-up requests: one prefill chunk of our adapter and 1K more, so that the
    kernels of a chunk on a cache compile too."""
    from path_eval.models.context import PREFILL_CHUNK

    return PREFILL_CHUNK + 1024


def check_task(task: str) -> None:
    """One clear line for a task the ruler suite does not have, before the slow model building."""
    from path_eval.suites import load_suite

    names = [t.name for t in load_suite(SUITE).tasks]
    if task not in names:
        raise PathEvalError(f"--task {task}: the {SUITE} suite has {', '.join(names)}")


def bench_command(argv: list[str]) -> str:
    return shlex.join(["python", "-m", "benchmarks.end_to_end", *argv])


# ----------------------------------------------------------------- machine and versions


def machine(device: str) -> str:
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def versions() -> dict[str, str | None]:
    """torch, triton, transformers, fla, lm_eval and Python, as imported here (None: not installed)."""
    import importlib

    found = {"python": platform.python_version()}
    for name in ("torch", "triton", "transformers", "fla", "lm_eval"):
        try:
            found[name] = getattr(importlib.import_module(name), "__version__", "?")
        except ImportError:
            found[name] = None
    return found


def synchronize(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(torch.device(device))


def triton_cache() -> Path | None:
    """Triton's cache folder (one folder per compiled kernel), None without Triton."""
    try:
        from triton import knobs
    except ImportError:
        return None
    return Path(knobs.cache.dir)


def cached_kernels(folder: Path) -> set[str]:
    return {entry.name for entry in folder.iterdir()} if folder.is_dir() else set()


def kernel_names(folder: Path, entries: set[str]) -> dict[str, int]:
    """How many of the cache's `entries` each kernel is (the name its `__grp__NAME.json` file gives)."""
    names = Counter(group.name.removeprefix("__grp__").removesuffix(".json")
                    for entry in entries for group in (folder / entry).glob("__grp__*.json"))
    return dict(sorted(names.items()))


# ----------------------------------------------------------------- the requests and the models


def fla_checkpoint(shape: str, folder: Path, device: str, dtype: torch.dtype, seed: int = 0):
    """fla's PaTH model of `shape` with fla's random initialisation, built by fla's own classes and
    saved by its `save_pretrained` into `folder` (what our side loads) -> the model on `device`."""
    try:
        import fla  # noqa: F401  (registers fla's models with transformers' Auto classes)
        from fla.models import PaTHAttentionConfig
    except ImportError:
        raise PathEvalError("the hf side runs fla's own PaTH model: install flash-linear-attention "
                            "(pip install flash-linear-attention)") from None
    from transformers import AutoModelForCausalLM

    size = SHAPES[shape]
    torch.manual_seed(seed)
    config = PaTHAttentionConfig(hidden_size=size["hidden_size"], num_hidden_layers=size["num_hidden_layers"],
                                 num_heads=size["num_heads"], vocab_size=size["vocab_size"])
    with torch.device(device):  # initialising 760M float32 weights on the host takes minutes
        model = AutoModelForCausalLM.from_config(config).to(dtype=dtype)
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    return model.eval()


def ruler_requests(args, checkpoint: Path, tokenizer, length: int, count: int) -> tuple[list, int]:
    """The generate_until requests of `eval.py run --suite ruler --tasks TASK --lengths LENGTH --limit
    COUNT` on `checkpoint` (its samples frozen in path-eval's cache, where that run finds them), and
    the context length that run gives the model."""
    from lm_eval.api.instance import Instance

    from path_eval.evaluators import EvaluationContext
    from path_eval.evaluators.generated import GeneratedEvaluator
    from path_eval.plan import resolve_plan
    from path_eval.models.identity import tokenizer_sha256
    from path_eval.suites import load_suite
    from path_eval.tasks.frozen import read_frozen

    plan = resolve_plan(load_suite(SUITE), [str(checkpoint)], tasks=[args.task], lengths=[str(length)], limit=count,
                        seed=args.seed, data_dir=args.data_dir)
    context = EvaluationContext(plan, plan.models[0], args.work, tokenizer_sha256(tokenizer))
    [samples] = GeneratedEvaluator().frozen_sets(tokenizer, plan.items, context)
    config = samples.freeze().config
    docs = read_frozen(Path(config["dataset_kwargs"]["data_files"]["test"]))[:count]
    requests = [Instance("generate_until", doc, (config["doc_to_text"](doc), dict(config["generation_kwargs"])), 0)
                for doc in docs]
    return requests, plan.models[0].max_length


def hf_lm(model, tokenizer, args, max_length: int):
    """lm-eval's own `hf` model over `model` (already on its device)."""
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=model, tokenizer=tokenizer, batch_size=args.batch_size, max_length=max_length)


def path_lm(checkpoint: Path, tokenizer, args, max_length: int):
    """Our `path` model over the checkpoint, loaded as `eval.py run` loads it (the device's default backend)."""
    from path_eval.lm import PathEvalLM
    from path_eval.models.loading import load_network

    return PathEvalLM(str(checkpoint), model=load_network(checkpoint, device=args.device, dtype=args.dtype),
                      tokenizer=tokenizer, device=args.device, dtype=args.dtype, batch_size=args.batch_size,
                      max_length=max_length)


def describe(lm) -> str:
    from path_eval.lm import PathEvalLM

    model = lm.model
    if isinstance(lm, PathEvalLM):
        backend = getattr(model, "backend_name", None)
        return f"path-eval PathEvalLM over {type(model).__name__}" + (f" ({backend} backend)" if backend else "")
    origin = type(model).__module__.split(".")[0]
    return f"lm-eval HFLM over {origin} {type(model).__name__}"


# ----------------------------------------------------------------- the parts


def timed_call(lm, requests, device: str) -> tuple[float, list[str]]:
    synchronize(device)
    start = time.perf_counter()
    texts = lm.generate_until(requests, disable_tqdm=True)
    synchronize(device)
    return time.perf_counter() - start, texts


def generation_record(side: str, lm, requests, device: str) -> tuple[dict, list[str]]:
    """One side's warm-up call of the very requests it then times (fla compiles and autotunes for each
    new shape, so shorter warm-up requests leave compiling to the timed call), then the timed call
    -> (record, generated texts). `kernels_compiled_in_timed_call` says what still compiled."""
    warmup_seconds, _ = timed_call(lm, requests, device)
    cache = triton_cache()
    compiled_before = cached_kernels(cache) if cache else set()
    model_seconds = getattr(lm, "seconds", None)
    seconds, texts = timed_call(lm, requests, device)
    record = {"part": "generate", "side": side, "impl": describe(lm), "status": "ok", "requests": len(requests),
              "batch_size": lm.batch_size, "prompt_tokens": sum(len(lm.tok_encode(r.args[0])) for r in requests),
              "warmup": "the same requests, one call before", "warmup_s": round(warmup_seconds, 3),
              "seconds": round(seconds, 3), "seconds_per_request": round(seconds / len(requests), 4),
              "generated_characters": sum(map(len, texts))}
    if model_seconds is not None:  # our adapter's own timing of its model calls
        record["model_seconds"] = round(lm.seconds - model_seconds, 3)
    if cache:  # kernels the warm-up did not compile (a shape or specialisation first met in the timed call)
        record["kernels_compiled_in_timed_call"] = kernel_names(cache, cached_kernels(cache) - compiled_before)
    return record, texts


def speedup_record(hf: dict, ours: dict, hf_texts: list[str], our_texts: list[str]) -> dict:
    return {"part": "generate", "side": "speedup", "status": "ok", "hf_seconds": hf["seconds"],
            "path_seconds": ours["seconds"], "speedup": round(hf["seconds"] / ours["seconds"], 3),
            "target": SPEEDUP_TARGET, "same_generations": sum(a == b for a, b in zip(hf_texts, our_texts)),
            "requests": len(our_texts)}


def save_requests(requests, target: Path) -> Path:
    write_json_atomic([list(r.args) for r in requests], target)
    return target


def load_requests(source: Path) -> list:
    from lm_eval.api.instance import Instance

    return [Instance("generate_until", {}, (prompt, options), 0) for prompt, options in json.loads(source.read_text())]


def cold_start(checkpoint: str, requests_file: str, device: str, dtype: str, batch_size: int, max_length: int) -> dict:
    """In a fresh process (`cold_record` starts it): load our model, then make the warm-up call twice
    (dtype "": the device's default). The first call's extra time over the second is compile and
    autotune, and the first-call costs of any process (cuBLAS handles, the allocator's growth)."""
    from path_eval.models.tokenizer import load_tokenizer

    args = argparse.Namespace(device=device, dtype=dtype or None, batch_size=batch_size)
    began = time.perf_counter()
    lm = path_lm(Path(checkpoint), load_tokenizer(Path(checkpoint)), args, max_length)
    synchronize(device)
    load = time.perf_counter() - began
    requests = load_requests(Path(requests_file))
    with triton_compiles() as compiles:
        first, _ = timed_call(lm, requests, device)
    second, _ = timed_call(lm, requests, device)
    return {"load_s": round(load, 3), "first_call_s": round(first, 3), "second_call_s": round(second, 3),
            "compile_autotune_s": round(first - second, 3), "requests": len(requests),
            "triton_compile_s": round(sum(c["s"] for c in compiles["kernels"].values()), 3),
            "triton_compiles": compiles["kernels"], "launcher_builds": compiles["launchers"]}


@contextmanager
def triton_compiles():
    """{"kernels": {kernel: {"count", "s"}}, "launchers": {"count", "s"}}: the Triton compilations made
    inside the block with the compiler's own seconds (Triton's compilation listener), and the C
    launchers built for them with a C compiler (one per new kernel signature, outside the listener's
    timing), so that a cold start's cost splits into compiling, by kernel and specialisation count,
    and the rest (autotuning's timed runs, first-call costs). Empty where Triton is absent."""
    compiles: dict = {"kernels": {}, "launchers": {"count": 0, "s": 0.0}}
    try:
        from triton import knobs
        from triton.runtime import build
    except ImportError:
        yield compiles
        return

    def listen(*, src, times, cache_hit, **_):
        if not cache_hit:
            row = compiles["kernels"].setdefault(src.name, {"count": 0, "s": 0.0})
            row["count"] += 1
            row["s"] += times.total / 1e6

    build_module = getattr(build, "_build", None)  # private: where it is missing, launchers go uncounted

    def timed_build(*args, **kwargs):
        began = time.perf_counter()
        try:
            return build_module(*args, **kwargs)
        finally:
            launchers = compiles["launchers"]
            launchers["count"] += 1
            launchers["s"] += time.perf_counter() - began

    before, knobs.compilation.listener = knobs.compilation.listener, listen
    if build_module is not None:
        build._build = timed_build
    try:
        yield compiles
    finally:
        knobs.compilation.listener = before
        if build_module is not None:
            build._build = build_module
        for row in [*compiles["kernels"].values(), compiles["launchers"]]:
            row["s"] = round(row["s"], 3)


def cold_record(args, checkpoint: Path, warmup, max_length: int) -> dict:
    """`cold_start` in a fresh process with an empty Triton cache folder."""
    requests_file = save_requests(warmup, args.work / "warmup_requests.json")
    code = ("import json, sys; from benchmarks.end_to_end import cold_start; a = sys.argv[1:]; "
            "print(json.dumps(cold_start(a[0], a[1], a[2], a[3], int(a[4]), int(a[5]))))")
    command = [sys.executable, "-c", code, str(checkpoint), str(requests_file), args.device, args.dtype or "",
               str(args.batch_size), str(max_length)]
    env = {name: value for name, value in os.environ.items() if name != "PATH_EVAL_AUTOTUNE"}  # tuning is measured
    with tempfile.TemporaryDirectory(prefix="triton-cold-") as cache:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**env, "TRITON_CACHE_DIR": cache})
    result = last_json_line(done.stdout)
    if done.returncode != 0 or result is None:
        return {"part": "cold", "status": f"failed (exit {done.returncode})", "stderr": done.stderr[-2000:],
                "command": shlex.join(command)}
    return {"part": "cold", "status": "ok", "triton_cache": "empty (a fresh TRITON_CACHE_DIR)", **result,
            "command": shlex.join(command)}


def last_json_line(text: str) -> dict | None:
    """The last line of `text` that is a JSON object (what `cold_start` prints), None if there is none."""
    for line in reversed(text.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def eval_run_record(args, checkpoint: Path, requests, our_generation: dict | None) -> dict:
    """`eval.py run` of the same requests on their frozen samples, in a fresh run folder. Its wall time
    against its own generation time (the adapter's seconds in its model calls, which include any
    compile and autotune a fresh process does) and, when the generate part ran, against that part's
    warm generation of the same requests."""
    from path_eval.results import load_records

    out = args.work / "run"
    shutil.rmtree(out, ignore_errors=True)  # nothing resumed: every request computed
    command = [sys.executable, str(ROOT / "eval.py"), "run", "--suite", SUITE, "--tasks", args.task, "--lengths",
               str(args.length), "--limit", str(len(requests)), "--model", str(checkpoint), "--data-dir",
               str(args.data_dir), "--device", args.device, "--batch-size", str(args.batch_size), "--seed",
               str(args.seed), "--out", str(out), "--quiet", *(["--dtype", args.dtype] if args.dtype else [])]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"part": "run", "status": f"failed (exit {done.returncode})", "stderr": done.stderr[-2000:],
                "command": shlex.join(command)}
    provenance = load_records(out)[0].provenance
    if not provenance.tokens_per_second:
        return {"part": "run", "status": "failed (the run recorded no generation rate)", "command": shlex.join(command)}
    generation = provenance.tokens / provenance.tokens_per_second  # the adapter's own seconds in its model calls
    [phases] = json.loads((out / "timings.json").read_text())["processes"]
    logged = [json.loads(line)["request"][0] for log in sorted((out / "samples").glob("*/*.jsonl"))
              for line in log.read_text().splitlines()]
    record = {"part": "run", "status": "ok", "wall_s": round(wall, 3), "run_wall_time_s": provenance.wall_time_s,
              # before the model starts loading (start, imports, plan) and after its requests (writing, exit)
              "outside_run_wall_time_s": round(wall - provenance.wall_time_s, 3),
              "generation_s": round(generation, 3), "wall_over_generation": round(wall / generation, 3),
              "target": EVAL_RUN_TARGET, "phases": phases, "requests_computed": provenance.requests_computed,
              "same_requests": sorted(map(tuple, logged), key=str) == sorted((r.args for r in requests), key=str),
              "triton_cache": ("the one the generate part filled" if our_generation is not None
                               else "Triton's, as this machine had it")}
    if our_generation is not None:
        record["wall_over_generate_part"] = round(wall / our_generation["seconds"], 3)
    return record | {"command": shlex.join(command)}


# ----------------------------------------------------------------- the whole bench


def run_bench(args, hf_model, checkpoint: Path, save, began: float | None = None) -> list[dict]:
    """The chosen parts on `hf_model` (the hf side) and `checkpoint` (ours, the same weights where the
    checkpoint was saved from `hf_model`); `save(records)` after each record. The time budget counts
    from `began` (a `time.perf_counter()`; default now)."""
    from path_eval.models.tokenizer import load_tokenizer

    began = time.perf_counter() if began is None else began
    tokenizer = load_tokenizer(checkpoint)
    requests, max_length = ruler_requests(args, checkpoint, tokenizer, args.length, args.requests)
    warmup, _ = ruler_requests(args, checkpoint, tokenizer, args.warmup_length, args.warmup_requests)
    common = {"task": args.task, "length": args.length, "max_length": max_length}
    records: list[dict] = []

    def add(record: dict) -> None:
        records.append(common | record)
        print(json.dumps(records[-1]), flush=True)
        save(records)

    def over_budget(part: str) -> bool:
        if time.perf_counter() - began <= args.budget_s:
            return False
        add({"part": part, "status": "not run (time budget)"})
        return True

    ours = None
    if "generate" in args.parts and not over_budget("generate"):
        lm = path_lm(checkpoint, tokenizer, args, max_length)
        ours, our_texts = generation_record("path", lm, requests, args.device)
        add(ours)
        del lm
        hf, hf_texts = generation_record("hf", hf_lm(hf_model, load_tokenizer(checkpoint), args, max_length),
                                         requests, args.device)
        add(hf)
        add(speedup_record(hf, ours, hf_texts, our_texts))
    if torch.device(args.device).type == "cuda":
        torch.cuda.empty_cache()  # what the generate part cached goes back; fla's model stays resident
    if "cold" in args.parts and not over_budget("cold"):
        add(cold_record(args, checkpoint, warmup, max_length))
    if "run" in args.parts and not over_budget("run"):
        add(eval_run_record(args, checkpoint, requests, ours))
    return records


def main(argv: list[str] | None = None) -> int:
    began = time.perf_counter()
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv)
        from path_eval.models.loading import check_device_and_backend, resolve_dtype

        check_device_and_backend(args.device, None)
        check_task(args.task)
        if importlib.util.find_spec("lm_eval") is None:
            raise PathEvalError("the hf side is lm-eval's own hf model: install lm-eval (pip install lm-eval)")
        args.work.mkdir(parents=True, exist_ok=True)
        checkpoint = args.work / "checkpoint"
        dtype = resolve_dtype(args.dtype, args.device)
        hf_model = fla_checkpoint(args.shape, checkpoint, args.device, dtype)
        meta = {"command": bench_command(argv), "machine": machine(args.device), "versions": versions(),
                "shape": SHAPES[args.shape], "dtype": str(dtype).removeprefix("torch."),
                "weights": "fla's random initialisation (torch seed 0) saved by fla's save_pretrained; our side "
                           "reads that checkpoint unconverted: the same weights on both sides"}

        def save(records: list[dict]) -> None:
            write_json_atomic({"meta": meta, "records": [meta_fields(meta) | r for r in records]}, args.out)

        records = run_bench(args, hf_model, checkpoint, save, began)
    except PathEvalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    summary(records)
    return 0


def meta_fields(meta: dict) -> dict:
    """What every record carries: the command, the machine, the versions."""
    return {"command": meta["command"], "machine": meta["machine"], "versions": meta["versions"]}


def summary(records: list[dict]) -> None:
    for r in records:
        if r["status"] != "ok":
            print(f"{r['part']}: {r['status']}")
        elif r["part"] == "generate" and r["side"] == "speedup":
            print(f"speed-up: {r['speedup']:.2f}x (hf {r['hf_seconds']:.1f} s / ours {r['path_seconds']:.1f} s; "
                  f"target {r['target']}x); same generations {r['same_generations']}/{r['requests']}")
        elif r["part"] == "generate":
            print(f"{r['side']}: {r['requests']} requests in {r['seconds']:.1f} s after a {r['warmup_s']:.1f} s "
                  f"warm-up ({r['impl']})")
        elif r["part"] == "cold":
            print(f"cold start: compile + autotune {r['compile_autotune_s']:.1f} s (first call {r['first_call_s']:.1f} s, "
                  f"second {r['second_call_s']:.1f} s; Triton compiling {r['triton_compile_s']:.1f} s, "
                  f"{r['launcher_builds']['count']} C launchers built in {r['launcher_builds']['s']:.1f} s)")
            for kernel, c in sorted(r["triton_compiles"].items(), key=lambda kv: -kv[1]["s"]):
                print(f"  {c['s']:6.2f} s {c['count']:3d} compiles  {kernel}")
        else:
            print(f"eval.py run: {r['wall_s']:.1f} s, generation {r['generation_s']:.1f} s: "
                  f"{r['wall_over_generation']:.2f}x (target {r['target']}x); same requests: {r['same_requests']}")


# ---------------------------------------------------------------- docs/benchmarks.md

def compiled(kernels) -> str:
    """Kernels by name and count (older records: a count alone)."""
    if isinstance(kernels, dict):
        return ", ".join(f"{name} {count}" for name, count in kernels.items()) or "none"
    return "-" if kernels is None else str(kernels)


def cold_start_line(r: dict) -> str:
    """One cold-start record: its times, then (records that split them) Triton's compiles by kernel."""
    label = f" ({r['revision']}, machine start {r['machine_start']})" if "revision" in r else ""
    text = (f"Cold start{label}, in a fresh process: our model loaded in {seconds(r['load_s'])} s, the warm-up call "
            f"of {r['requests']} requests took {seconds(r['first_call_s'])} s, then {seconds(r['second_call_s'])} s: "
            f"compile and autotune {seconds(r['compile_autotune_s'])} s.")
    if "triton_compiles" not in r:
        return text
    by_time = sorted(r["triton_compiles"].items(), key=lambda kv: -kv[1]["s"])
    launchers = r.get("launcher_builds")
    return (text + f" Of it Triton compiled for {seconds(r['triton_compile_s'])} s ("
            + ", ".join(f"`{name}` {c['count']}x {c['s']:.2f} s" for name, c in by_time) + ")"
            + ("" if launchers is None else f" and built {launchers['count']} C launchers in {seconds(launchers['s'])} s")
            + ".")


def render_end_to_end(results: Path) -> str:
    """The runs in results/bench/end_to_end_*.json, each part as it recorded it."""
    parts = []
    for path in sorted((results / "bench").glob("end_to_end_*.json")):
        data = load(path)
        meta, records = data["meta"], data["records"]
        shape = ", ".join(f"{k} {v}" for k, v in meta["shape"].items())
        first = records[0]
        parts.append(f"Source: {source(path, results)}. " + machine_line(
                         GPU=meta["machine"], **{name: version for name, version in meta["versions"].items() if version})
                     + f" Models of shape {shape}, {meta['dtype']}; {meta['weights']}. Requests: {first['task']} at "
                     f"{kilo(first['length'])} tokens (max_length {first['max_length']}).")
        sides = [r for r in records if r["part"] == "generate" and r.get("side") in ("hf", "path") and r["status"] == "ok"]
        if sides:
            parts.append(table(["side", "impl", "requests", "batch", "warm-up s", "timed s", "s / request",
                                "kernels compiled in the timed call"],
                               [[r["side"], r["impl"], str(r["requests"]), str(r["batch_size"]), seconds(r["warmup_s"]),
                                 seconds(r["seconds"]), f"{r['seconds_per_request']:.2f}",
                                 compiled(r.get("kernels_compiled_in_timed_call"))] for r in sides]))
        for r in records:
            if r["status"] != "ok":
                parts.append(f"Part {r['part']}: {r['status']}.")
            elif r.get("side") == "speedup":
                compiling = [side["side"] for side in sides if side.get("kernels_compiled_in_timed_call")]
                caveat = ("" if not compiling else f" The timed call of {' and '.join(compiling)} still compiled "
                          "kernels (above): that speed-up counts their compile and autotune time, so it is not "
                          "the steady-state ratio.")
                parts.append(f"Speed-up of ours over lm-eval's hf model over fla: {ratio(r['speedup'])} (target "
                             f"{ratio(r['target'])}); the same greedy text for {r['same_generations']} of "
                             f"{r['requests']} requests.{caveat}")
            elif r["part"] == "cold":
                parts.append(cold_start_line(r))
            elif r["part"] == "run":
                parts.append(table(
                    ["eval.py run wall s", "from model load s", "requests phase s", "generation s",
                     "wall / generation", "target", "wall / generate part's ours", "same requests"],
                    [[seconds(r["wall_s"]), seconds(r["run_wall_time_s"]), seconds(r["phases"]["requests"]),
                      seconds(r["generation_s"]), ratio(r["wall_over_generation"]), ratio(r["target"]),
                      ratio(r["wall_over_generate_part"]) if "wall_over_generate_part" in r else "-",
                      "yes" if r["same_requests"] else "NO"]]))
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
