"""Write a checkpoint of one variant with random weights, for runs that measure the harness rather
than a model (speed, memory, throughput of the long-context suites on a GPU).

    python -m path_eval.models.random_checkpoint --variant path --shape 760m --out /tmp/path-760m

Shapes: `760m` is the paper's model size (hidden 1536, 24 layers, 24 heads of 64, vocabulary
32000); `tiny` (hidden 64, 2 layers) is for smoke tests on a CPU. The tokenizer is the paper's
Mistral v1 (what a checkpoint without tokenizer files gets). The tests build every model they need
here, a shape's fields overridden where a test needs other sizes."""
from __future__ import annotations

import argparse

import torch

from path_eval.models import VARIANTS, PathEvalConfig, PathEvalForCausalLM

SHAPES = {
    "760m": {"hidden_size": 1536, "num_hidden_layers": 24, "num_heads": 24, "vocab_size": 32000},
    "tiny": {"hidden_size": 64, "num_hidden_layers": 2, "num_heads": 2, "vocab_size": 32000},
}


def random_model(variant: str, shape: str, seed: int = 0, **config) -> PathEvalForCausalLM:
    """A model of `variant` in `shape`, its weights drawn from `seed`; `config` fields (vocab_size,
    num_kv_heads, qk_norm, ...) replace or add to the shape's."""
    torch.manual_seed(seed)
    return PathEvalForCausalLM(PathEvalConfig(attention=variant, **(SHAPES[shape] | config)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="path")
    parser.add_argument("--shape", choices=SHAPES, default="760m")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    random_model(args.variant, args.shape, args.seed).save_pretrained(args.out)
    print(f"{args.variant} ({args.shape}, random weights, seed {args.seed}) -> {args.out}")


if __name__ == "__main__":
    main()
