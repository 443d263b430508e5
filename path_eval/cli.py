"""The command line (`python eval.py ...`): argument parsing and error reporting only; the work
happens in the package's stages."""
from __future__ import annotations

import argparse
import sys


def _inspect(args) -> None:
    from path_eval import load_model
    from path_eval.models import PathEvalForCausalLM

    model, tokenizer = load_model(args.model, device=args.device, dtype=args.dtype, attention=args.attention)
    params = sum(p.numel() for p in model.parameters())
    if isinstance(model, PathEvalForCausalLM):
        c = model.config
        kind = (f"path-eval {c.attention}: {c.num_hidden_layers} layers, hidden {c.hidden_size}, "
                f"{c.num_heads} heads ({c.num_kv_heads} kv) of {c.head_dim}, backend {model.backend_name}")
    else:
        kind = f"transformers {model.config.model_type}"
    print(f"{args.model}: {kind}, {params / 1e6:.2f}M parameters, {next(model.parameters()).dtype}, "
          f"device {args.device}, tokenizer {type(tokenizer).__name__} ({len(tokenizer)} tokens)")


def _generate(args) -> None:
    import torch

    from path_eval import load_model

    model, tokenizer = load_model(args.model, device=args.device, dtype=args.dtype, attention=args.attention)
    ids = torch.tensor([tokenizer(args.prompt)["input_ids"]], device=args.device)
    out = model.generate(ids, max_new_tokens=args.max_new_tokens, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.eos_token_id)
    print(tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eval.py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def model_options(p):
        p.add_argument("--model", required=True, help="checkpoint directory (fla / flame, transformers, path-eval)")
        p.add_argument("--device", default="cpu")
        p.add_argument("--dtype", default=None, help="float32 | bfloat16 | float16 | float64 (default: fp32 on "
                                                       "CPU, bf16 on GPU)")
        p.add_argument("--attention", default=None, help="attention backend: torch | reference (| triton)")

    p = sub.add_parser("inspect", help="load a checkpoint and describe it")
    model_options(p)
    p.set_defaults(func=_inspect)
    p = sub.add_parser("generate", help="greedy continuation of a prompt")
    model_options(p)
    p.add_argument("--prompt", required=True)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.set_defaults(func=_generate)
    return parser


def main(argv: list[str] | None = None) -> int:
    from path_eval.errors import PathEvalError

    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except PathEvalError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
