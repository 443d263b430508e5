"""Peak memory of lm-eval's loglikelihood_rolling through our adapter on one long document.

    python -m benchmarks.rolling_memory --tokens 32768

One window of `--tokens` tokens (max_length = tokens) is scored; printed beside the peak is what a
[T, vocab] float32 log-softmax alone would take, which scoring never builds.
"""
from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time

import torch
from lm_eval.api.instance import Instance

from path_eval.lm import PathEvalLM
from path_eval.models import VARIANTS, PathEvalConfig, PathEvalForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=32768)
    parser.add_argument("--variant", choices=VARIANTS, default="path")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--prefill-chunk", type=int, default=8192)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        PathEvalForCausalLM(PathEvalConfig(attention=args.variant, vocab_size=32000, hidden_size=args.hidden,
                                           num_hidden_layers=args.layers, num_heads=args.hidden // 64)).save_pretrained(folder)
        lm = PathEvalLM(folder, device=args.device, max_length=args.tokens, prefill_chunk=args.prefill_chunk)
    words = " ".join(f"w{i % 1000}" for i in range(args.tokens))
    tokens = lm.tok_encode(words)
    text = lm.tokenizer.decode(tokens[1:args.tokens], skip_special_tokens=True)
    n = len(lm.tok_encode(text))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    start = time.perf_counter()
    [total] = lm.loglikelihood_rolling([Instance("loglikelihood_rolling", {}, (text,), 0)])
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({"document_tokens": n, "max_length": args.tokens, "variant": args.variant,
                      "hidden": args.hidden, "layers": args.layers, "prefill_chunk": args.prefill_chunk,
                      "seconds": round(seconds, 1), "loglikelihood": round(total, 2),
                      "peak_rss_gib": round(peak, 3), "rss_before_scoring_gib": round(before, 3),
                      "T_x_vocab_fp32_gib": round(n * 32000 * 4 / 2**30, 2)}))


if __name__ == "__main__":
    main()
