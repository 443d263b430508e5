"""Where one batch of a small model's generation goes: prefill, the eager first decoding step, the
CUDA graph's capture, one replay (the GPU's time and the host's), and whole `generate` calls.

    python -m benchmarks.decode_parts --out results/bench/decode_parts_h100.json

For issue 47 (small models keep the GPU busy): a zoo model's decoding step is far shorter than the
host's share of a batch, so each part the host spends once per batch (capture, eager step, looks)
is measured beside what the GPU spends per token. For each prompt length (`--prompt-lengths`) at
batch `--batch` of the zoo model `--model` (default path, bfloat16 as shipped, triton backend):
random prompt tokens (seeded), prefilled `PREFILL_CHUNK` tokens at a time as `eval.py run` does;
each part timed between `torch.cuda.synchronize()` calls, `--repeats` times on a fresh cache, the
median kept. Captures are timed with a memory pool of their own (as `generate` captures) and with
one pool shared by every capture (`CapturedDecodeStep(pool=...)`). Replays: `--replays` in a row,
the host's time to issue them (no sync) and the time until the GPU has run them, per replay.
`generate`: `--new-tokens` new tokens that never stop early (`eos_token_id=[]`), with and without
the graph. GPU only: the graph needs CUDA.
"""
from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from pathlib import Path

import torch

from benchmarks.end_to_end import machine, versions
from benchmarks.markdown import kilo, load, source, table
from path_eval.atomic_files import write_json_atomic
from path_eval.models.context import PREFILL_CHUNK
from path_eval.models.decode_graph import CapturedDecodeStep, reserve_decoding
from path_eval.models.generation import generate, prefill
from path_eval.models.loading import load_model
from path_eval.models.zoo import zoo_models
from path_eval.results.provenance import git_revision


def timed_ms(fn) -> tuple[float, object]:
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3, out


def batch_parts(model, ids, mask, replays: int, pool) -> dict[str, float]:
    """One batch's parts on a fresh cache: prefill, eager step, capture (`pool`), replays."""
    parts = {}
    parts["prefill_ms"], (logits, cache) = timed_ms(lambda: prefill(model, ids, mask, PREFILL_CHUNK))
    reserve_decoding(cache, replays + 2)
    token = logits[:, -1].argmax(-1)
    parts["eager_step_ms"], _ = timed_ms(lambda: model(token[:, None], past_key_values=cache, use_cache=True))
    parts["capture_ms"], step = timed_ms(lambda: CapturedDecodeStep(model, cache, replays, token=token, pool=pool))
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(replays):
        step()
    issued = time.perf_counter()
    torch.cuda.synchronize()
    done = time.perf_counter()
    parts["replay_host_ms"] = (issued - start) * 1e3 / replays
    parts["replay_ms"] = (done - start) * 1e3 / replays
    return parts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="path", help="a zoo model's name")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--prompt-lengths", default="1024,4096,16256")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--replays", type=int, default=120)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("decode_parts needs a CUDA GPU (the decoding graph is a CUDA graph)", file=sys.stderr)
        return 2
    (folder,) = zoo_models(args.model)
    model, _ = load_model(folder, device="cuda")
    vocab = model.config.vocab_size
    record = {"meta": {"command": "python -m benchmarks.decode_parts " + shlex.join(argv or sys.argv[1:]),
                       "machine": machine("cuda"), "revision": git_revision(), "versions": versions(),
                       "model": f"zoo:{args.model}",
                       "batch": args.batch, "repeats": args.repeats, "replays": args.replays,
                       "new_tokens": args.new_tokens, "prefill_chunk": PREFILL_CHUNK}, "lengths": []}
    shared = torch.cuda.graph_pool_handle()
    for length in (int(n) for n in args.prompt_lengths.split(",")):
        g = torch.Generator().manual_seed(length)
        ids = torch.randint(3, vocab, (args.batch, length), generator=g).cuda()
        mask = torch.ones_like(ids)
        batch_parts(model, ids, mask, 4, None)  # compiles this length's kernels
        runs = {"own pool": [], "shared pool": []}
        for _ in range(args.repeats):
            for label, pool in (("own pool", None), ("shared pool", shared)):
                runs[label].append(batch_parts(model, ids, mask, args.replays, pool))
        row = {"prompt_tokens": length}
        for name in runs["own pool"][0]:
            row[name] = round(statistics.median(r[name] for r in runs["own pool"]), 3)
        row["capture_shared_pool_ms"] = round(statistics.median(r["capture_ms"] for r in runs["shared pool"]), 3)
        for graph in (True, False):
            call = lambda: generate(model, ids, mask, max_new_tokens=args.new_tokens, eos_token_id=[],  # noqa: E731
                                    pad_token_id=0, prefill_chunk_size=PREFILL_CHUNK, cuda_graph=graph)
            call()
            times = [timed_ms(call)[0] for _ in range(args.repeats)]
            row["generate_graph_ms" if graph else "generate_eager_ms"] = round(statistics.median(times), 3)
        record["lengths"].append(row)
        print(row, flush=True)
        write_json_atomic(record, args.out)
    return 0


COLUMNS = (("prefill_ms", "prefill ms"), ("eager_step_ms", "eager step ms"), ("capture_ms", "capture ms"),
           ("capture_shared_pool_ms", "capture, shared pool, ms"), ("replay_host_ms", "replay, host ms"),
           ("replay_ms", "replay ms"), ("generate_graph_ms", "generate, graph, ms"),
           ("generate_eager_ms", "generate, eager, ms"))


def render_decode_parts(results: Path) -> str:
    """Each results/bench/decode_parts_*.json: one batch's parts by prompt length."""
    parts = []
    for path in sorted((results / "bench").glob("decode_parts_*.json")):
        data = load(path)
        meta = data["meta"]
        revision = f" Revision {meta['revision']}." if meta.get("revision") else ""
        parts.append(f"Source: {source(path, results)}. Machine: {meta['machine']}; `{meta['model']}`, batch "
                     f"{meta['batch']}, medians of {meta['repeats']}; replays {meta['replays']} in a row; generate "
                     f"{meta['new_tokens']} new tokens." + revision)
        parts.append(table(["prompt", *(label for _, label in COLUMNS)],
                           [[kilo(row["prompt_tokens"]), *(f"{row[key]:.2f}" for key, _ in COLUMNS)]
                            for row in data["lengths"]]))
    return "\n\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
