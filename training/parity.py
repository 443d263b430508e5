"""The zoo's checkpoints through `load_model` against the library that trained them, on a GPU in
float32: fla's own model for fox / path / path_fox, transformers' Llama (eager attention) for rope.

  python -m training.parity --out parity.json MODEL_DIR [MODEL_DIR ...]

Language models are compared on the held-out text, flip-flop models on FFL(0.8) sequences; the
per-token loss of the reference at length 512 is kept, so a CPU run can measure its drift.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
import torch.nn.functional as F

from path_eval.atomic_files import write_json_atomic
from path_eval.numerics import relative_error
from path_eval.tasks import flipflop
from training import run_cli
from training.corpus import HELDOUT_FILE


def inputs_for(folder: Path, tokenizer, length: int) -> torch.Tensor:
    """Two rows of `length` tokens: held-out text, or flip-flop sequences for a flip-flop model."""
    if json.loads((folder / "model_card.json").read_text())["task"] == "flipflop":
        return torch.from_numpy(flipflop.generate(2, flipflop.SPLITS["in"], length=length, seed=length))
    ids = tokenizer(HELDOUT_FILE.read_text())["input_ids"]
    return torch.tensor(ids[:2 * length]).view(2, length)


def reference_model(folder: Path):
    from transformers import AutoModelForCausalLM

    if json.loads((folder / "config.json").read_text())["model_type"] == "llama":
        from transformers import LlamaForCausalLM

        return LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    import fla  # noqa: F401

    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--lengths", default="512,2048")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.environ.setdefault("TRITON_F32_DEFAULT", "ieee")  # fla's fp32 Triton dots are TF32 otherwise
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from path_eval import load_model

    records = []
    for name in args.models:
        folder = Path(name)
        is_llama = json.loads((folder / "config.json").read_text())["model_type"] == "llama"
        # our torch backend for our families; a Llama loads as transformers' own model, SDPA attention
        ours, tokenizer = load_model(folder, device="cuda", dtype="float32", attention=None if is_llama else "torch")
        reference = reference_model(folder).cuda().eval()
        for length in (int(x) for x in args.lengths.split(",")):
            ids = inputs_for(folder, tokenizer, length).cuda()
            with torch.no_grad():
                ref = reference(input_ids=ids, use_cache=False).logits.float()
                mine = ours(ids).logits.float()
            record = {"model": folder.name, "T": length, "B": 2, "reference": type(reference).__name__,
                      "fp32_ours_vs_reference": relative_error(mine, ref),
                      "argmax_agreement": (mine.argmax(-1) == ref.argmax(-1)).float().mean().item()}
            if length == 512:
                nll = F.cross_entropy(ref[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="none")
                record["reference_nll"] = [round(x, 6) for x in nll.tolist()]
            records.append(record)
            print(json.dumps({k: v for k, v in record.items() if k != "reference_nll"}), flush=True)
        del ours, reference
        torch.cuda.empty_cache()
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "command": "python -m training.parity --lengths " + args.lengths + " " + " ".join(args.models)}
    write_json_atomic({"meta": meta, "records": records}, Path(args.out))


if __name__ == "__main__":
    run_cli(main)
