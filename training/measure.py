"""A first look at the first zoo (language models trained at 512) on the CPU, through `load_model` (our torch backend for fla checkpoints):

  - per-position loss on the held-out text (blocks of 512, 2K and 4K tokens; positions bucketed
    0-512, 512-1K, 1K-2K, 2K-4K), where RoPE's should climb past the training length (512);
  - flip-flop error (share of reads wrong) in / sparse / dense for the flip-flop models;
  - the drift of the CPU's per-token loss from the GPU reference's (parity JSON of training.parity).

  python -m training.measure --out results/zoo/first_zoo/first_look_cpu.json \
      [--parity results/zoo/first_zoo/parity_h200.json]
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np
import torch

from path_eval import load_model
from path_eval.atomic_files import write_json_atomic
from path_eval.lm.scoring import next_token_nll
from path_eval.models.zoo import zoo_models
from path_eval.tasks import flipflop
from training import run_cli
from training.corpus import HELDOUT_FILE

LM_VARIANTS = ("rope", "fox", "path", "path_fox")
BUCKETS = ((0, 512), (512, 1024), (1024, 2048), (2048, 4096))
FLIPFLOP_SETS = {"in": 256, "sparse": 2048, "dense": 64}
FLIPFLOP_SEED = 30_001


def heldout_tokens(tokenizer) -> list[int]:
    return tokenizer(HELDOUT_FILE.read_text())["input_ids"]


def per_position_loss(model, tokens: list[int], length: int, blocks: int) -> dict:
    """Mean loss per position bucket over `blocks` disjoint blocks of `length` tokens (each block's
    first token is context only)."""
    losses = torch.stack([next_token_nll(model, tokens[i * length:(i + 1) * length]) for i in range(blocks)])
    result = {"blocks": blocks, "mean_loss": losses.mean().item()}
    for lo, hi in BUCKETS:
        if lo < length - 1:
            bucket = losses[:, max(lo - 1, 0):hi - 1].mean().item()  # loss index k predicts token k + 1
            result[f"loss_{lo}_{hi}"] = bucket
            result[f"ppl_{lo}_{hi}"] = math.exp(bucket)
    return result


@torch.no_grad()
def flipflop_error(model) -> dict:
    errors = {}
    for split, count in FLIPFLOP_SETS.items():
        wrong = reads = 0
        for start in range(0, count, 64):
            tokens = flipflop.generate(min(64, count - start), flipflop.SPLITS[split], seed=FLIPFLOP_SEED + 7919 * start
                                       + list(FLIPFLOP_SETS).index(split))
            predictions = model(torch.from_numpy(tokens)).logits.argmax(-1).numpy()
            w, r = flipflop.read_errors(tokens, predictions)
            wrong, reads = wrong + w, reads + r
        errors[split], errors[f"{split}_reads"] = wrong / reads, reads
    return errors


def drift(model, record: dict, tokenizer, flipflop_model: bool) -> float:
    """Largest |CPU - GPU| per-token loss at length 512 on the parity inputs."""
    if flipflop_model:
        ids = flipflop.generate(2, flipflop.SPLITS["in"], length=512, seed=512)
    else:
        ids = np.asarray(heldout_tokens(tokenizer)[:1024]).reshape(2, 512)
    ours = torch.cat([next_token_nll(model, row.tolist()) for row in ids])
    return (ours - torch.tensor(record["reference_nll"])).abs().max().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--parity", help="the GPU parity JSON (with reference_nll) to measure drift against")
    parser.add_argument("--blocks", default="512:32,2048:8,4096:4", help="length:blocks, comma-separated")
    args = parser.parse_args()
    torch.manual_seed(0)
    parity = {}
    if args.parity:
        parity = {r["model"]: r for r in json.loads(Path(args.parity).read_text())["records"] if "reference_nll" in r}
    records = {}
    for folder in zoo_models():
        start = time.time()
        model, tokenizer = load_model(folder, dtype="float32")
        is_flipflop = folder.name.startswith("flipflop_")
        record = {}
        if is_flipflop:
            record["flipflop_error"] = flipflop_error(model)
        else:
            tokens = heldout_tokens(tokenizer)
            for spec in args.blocks.split(","):
                length, blocks = (int(x) for x in spec.split(":"))
                record[f"heldout_{length}"] = per_position_loss(model, tokens, length, blocks)
        parity_name = folder.name + ("_seed0" if is_flipflop else "")  # the GPU run named them by seed
        if parity_name in parity:
            record["max_abs_nll_drift_cpu_vs_gpu"] = drift(model, parity[parity_name], tokenizer, is_flipflop)
        record["seconds"] = round(time.time() - start, 1)
        records[folder.name] = record
        print(folder.name, json.dumps(record), flush=True)
    meta = {"machine": f"{platform.machine()} CPU, {torch.get_num_threads()} threads, torch {torch.__version__}",
            "command": "python -m training.measure --out " + args.out
            + (f" --parity {args.parity}" if args.parity else "") + f" --blocks {args.blocks}"}
    write_json_atomic({"meta": meta, "records": records}, Path(args.out))


if __name__ == "__main__":
    run_cli(main)
