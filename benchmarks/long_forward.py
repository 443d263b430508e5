"""Peak memory and speed of one long forward pass of a small model (CPU or GPU).

    python -m benchmarks.long_forward --tokens 16384 --variant path_fox

Peak host memory is the process's maximum resident set size (on a GPU, the allocator's peak);
printed beside it is what one head's T x T float32 logit matrix alone would take.
"""
from __future__ import annotations

import argparse
import json
import resource
import time

import torch

from path_eval.models import VARIANTS, PathEvalConfig, PathEvalForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--variant", choices=VARIANTS, default="path_fox")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--attention", default="torch")
    args = parser.parse_args()

    torch.manual_seed(0)
    config = PathEvalConfig(attention=args.variant, vocab_size=32000, hidden_size=args.hidden,
                            num_hidden_layers=args.layers, num_heads=args.heads)
    model = PathEvalForCausalLM(config).to(args.device).eval()
    model.attention_backend = args.attention
    ids = torch.randint(0, 32000, (1, args.tokens), device=args.device)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with torch.no_grad():
        logits = model(ids, logits_to_keep=1).logits
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = (torch.cuda.max_memory_allocated() / 2**30 if args.device.startswith("cuda")
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    print(json.dumps({
        "variant": args.variant, "tokens": args.tokens, "hidden": args.hidden, "heads": args.heads,
        "layers": args.layers, "device": args.device, "backend": args.attention, "seconds": round(seconds, 2),
        "tokens_per_second": round(args.tokens / seconds, 1),
        "peak_memory_gib": round(peak, 3), "host_rss_before_forward_gib": round(rss_before, 3),
        "one_head_TxT_fp32_gib": round(args.tokens ** 2 * 4 / 2**30, 3),
        "finite": bool(torch.isfinite(logits).all()),
    }))


if __name__ == "__main__":
    main()
