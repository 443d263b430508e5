"""Our logits against fla's own models, on checkpoints that fla itself builds and saves.

For each configuration: build the fla model (random weights, scaled so that attention is far from
uniform and PaTH's betas reach close to 2), `save_pretrained` it, load the folder with
`path_eval.load_model` (no conversion), and compare logits on the same tokens:
  - fla in float32 vs ours in float32 (our `torch` backend, and `triton` when registered);
  - fla in bfloat16 vs ours in bfloat16, both against the float32 result;
  - our chunked prefill + token-by-token decode against our full forward.
Needs a CUDA GPU with fla installed:  python -m benchmarks.fla_parity --out results/fla_parity.json
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from path_eval.numerics import relative_error
from path_eval.atomic_files import write_json_atomic
from benchmarks.markdown import load, machine_line, sci, source, table


def _sdpa_as_flash_attn(q, k, v, causal=True, window_size=(-1, -1), **_):
    """fla's Transformer layer calls flash_attn; where it is not installed, SDPA computes the same."""
    group = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(group, 2), v.repeat_interleave(group, 2)
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal)
    return out.transpose(1, 2)


CASES = [
    ("path", "path_attn", {}),
    ("path, full-rank w, GQA", "path_attn", {"use_low_rank_w": False, "num_kv_heads": 2}),
    ("path_fox", "path_attn", {"use_forget_gate": True}),
    ("path_fox, GQA, tied", "path_attn", {"use_forget_gate": True, "num_kv_heads": 4, "tie_word_embeddings": True}),
    ("fox", "forgetting_transformer", {}),
    ("fox, qk-norm, output gate, GQA", "forgetting_transformer",
     {"qk_norm": True, "use_output_gate": True, "num_kv_heads": 2}),
    ("fox, legacy g_proj gate name", "forgetting_transformer", {"legacy_gate_name": True}),
    ("rope (fla transformer)", "transformer", {}),
]


def build_fla_model(model_type: str, options: dict, hidden: int, heads: int, layers: int, vocab: int, seed: int):
    from transformers import AutoConfig, AutoModelForCausalLM

    options = {k: v for k, v in options.items() if k != "legacy_gate_name"}
    # fla's fused RMSNorm and SwiGLU kernels compute the same functions as its plain ones (the saved
    # weights do not depend on the flag); the plain ones spare minutes of Triton compilation per dtype.
    config = AutoConfig.for_model(model_type, hidden_size=hidden, num_heads=heads, num_hidden_layers=layers,
                                  vocab_size=vocab, fuse_norm=False, fuse_swiglu=False, **options)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1 and "embeddings" not in name:
                p.normal_(0, 1.5 / p.shape[-1] ** 0.5)
            elif name.endswith("bt_proj.bias"):
                p.uniform_(-4, 4)  # betas over (0, 2), some within 0.04 of 2
            elif name.endswith(("f_proj.bias", "g_proj.bias")):
                p.uniform_(0, 6)   # forget gates from fast to slow decay
            elif name.endswith("norm.weight"):
                p.normal_(1, 0.1)
    return model


def save_legacy_fox(model, path: Path) -> None:
    """A FoX checkpoint as fla saved it before 2025-04: the forget gate under `attn.g_proj`."""
    from safetensors.torch import load_file, save_file

    model.save_pretrained(path)
    state = load_file(path / "model.safetensors")
    save_file({k.replace(".attn.f_proj.", ".attn.g_proj."): v for k, v in state.items()}, path / "model.safetensors",
              metadata={"format": "pt"})


_START = time.perf_counter()


def progress(message: str) -> None:
    """Timestamped progress: fla compiles its Triton kernels on first use, which can take minutes."""
    print(f"[{time.perf_counter() - _START:7.1f}s] {message}", flush=True)


def save(records: list[dict], args, fla_version: str) -> None:
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "fla": fla_version,
            "python": platform.python_version(), "command": "python -m benchmarks.fla_parity " +
            f"--lengths {args.lengths} --hidden {args.hidden} --heads {args.heads} --layers {args.layers}" +
            (f" --cases {args.cases}" if args.cases else "")}
    write_json_atomic({"meta": meta, "records": records}, Path(args.out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/fla_parity.json")
    parser.add_argument("--lengths", default="1000,4096")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--cases", default=None, help="comma-separated indices into CASES (default: all)")
    args = parser.parse_args()
    cases = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES

    os.environ.setdefault("TRITON_F32_DEFAULT", "ieee")  # fla's fp32 Triton dots are TF32 otherwise
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    import fla
    import fla.layers.attn as fla_attn
    if getattr(fla_attn, "flash_attn_func", None) is None:
        fla_attn.flash_attn_func = _sdpa_as_flash_attn
    from path_eval import load_model
    from path_eval.models.attention import backend_names
    from path_eval.models.generation import prefill

    vocab, device = 1000, "cuda"
    lengths = [int(x) for x in args.lengths.split(",")]
    records = []
    for n, (name, model_type, options) in enumerate(cases):
        progress(f"{name}: building the fla model")
        fla_model = build_fla_model(model_type, options, args.hidden, args.heads, args.layers, vocab, seed=n)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp)
            if options.get("legacy_gate_name"):
                save_legacy_fox(fla_model, path)
            else:
                fla_model.save_pretrained(path)
            ours32, _ = load_model(path, device=device, dtype="float32", attention="torch")
            ours16, _ = load_model(path, device=device, dtype="bfloat16", attention="torch")
        fla32 = fla_model.to(device).eval()
        fla16 = copy.deepcopy(fla32).to(torch.bfloat16)
        for T in lengths:
            ids = torch.randint(0, vocab, (2, T), generator=torch.Generator().manual_seed(T + n)).to(device)
            with torch.no_grad():
                progress(f"{name}, T={T}: fla float32 forward")
                ref = fla32(ids, use_cache=False).logits.float()
                progress(f"{name}, T={T}: our forwards")
                rec = {"case": name, "fla_model_type": model_type, "T": T, "B": 2, "hidden": args.hidden,
                       "heads": args.heads, "layers": args.layers}
                ours = ours32(ids).logits
                rec["fp32_ours_vs_fla"] = relative_error(ours, ref)
                rec["argmax_agreement"] = (ours.argmax(-1) == ref.argmax(-1)).float().mean().item()
                for backend in sorted(set(backend_names()) - {"torch", "reference"}):
                    ours32.attention_backend = backend
                    rec[f"fp32_ours_{backend}_vs_fla"] = relative_error(ours32(ids).logits, ref)
                    ours32.attention_backend = "torch"
                rec["bf16_fla_vs_fla_fp32"] = relative_error(fla16(ids, use_cache=False).logits, ref)
                rec["bf16_ours_vs_fla_fp32"] = relative_error(ours16(ids).logits, ref)
                chunked, cache = prefill(ours32, ids[:, : T - 16], chunk_size=T // 3 + 1, logits_to_keep=0)
                steps = [chunked]
                for t in range(T - 16, T):
                    steps.append(ours32(ids[:, t:t + 1], past_key_values=cache).logits)
                rec["fp32_ours_prefill_decode_vs_ours_full"] = relative_error(torch.cat(steps, 1), ours)
            records.append(rec)
            print(json.dumps(rec), flush=True)
            save(records, args, fla.__version__)  # after each record: a run cut short keeps what it measured
        del fla_model, fla32, fla16, ours32, ours16
        torch.cuda.empty_cache()

    print(f"\n{'case':34s} {'T':>5s} {'fp32 ours/fla':>13s} {'bf16 fla':>9s} {'bf16 ours':>9s} {'prefill+dec':>11s}")
    for r in records:
        print(f"{r['case']:34s} {r['T']:5d} {r['fp32_ours_vs_fla']:13.2e} {r['bf16_fla_vs_fla_fp32']:9.2e} "
              f"{r['bf16_ours_vs_fla_fp32']:9.2e} {r['fp32_ours_prefill_decode_vs_ours_full']:11.2e}")


# ---------------------------------------------------------------- docs/benchmarks.md

def render_fla_parity(results: Path) -> str:
    path = results / "fla_parity.json"
    data = load(path)
    meta = data["meta"]
    rows = [[r["case"], r["fla_model_type"], str(r["T"]), str(r["B"]), sci(r["fp32_ours_vs_fla"]),
             f"{100 * r['argmax_agreement']:.2f}%", sci(r["bf16_fla_vs_fla_fp32"]), sci(r["bf16_ours_vs_fla_fp32"]),
             sci(r["fp32_ours_prefill_decode_vs_ours_full"])] for r in data["records"]]
    shape = {(r["hidden"], r["heads"], r["layers"]) for r in data["records"]}
    shapes = "; ".join(f"hidden {h}, {n} heads, {layers} layers" for h, n, layers in sorted(shape))
    return "\n\n".join([
        f"Source: {source(path, results)}. "
        + machine_line(GPU=meta.get("gpu"), torch=meta.get("torch"), fla=meta.get("fla"), Python=meta.get("python"))
        + f" Models: {shapes}.",
        table(["case", "fla model_type", "T", "B", "fp32 ours vs fla", "argmax agreement", "bf16 fla vs fp32 fla",
               "bf16 ours vs fp32 fla", "prefill+decode vs full (ours)"], rows),
    ])


if __name__ == "__main__":
    main()
