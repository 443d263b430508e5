"""Tiny random checkpoints laid out exactly as fla 0.6.0 / flame save them.

Tests use these to check that our loader accepts real fla checkpoints with no conversion step
(same ``config.json`` field names, same parameter names and shapes in ``model.safetensors``)
and, together with ``tests/definition.py``, that our attention matches the definition.

The weights are random but *scaled on purpose*: with fla's own init (std 0.02, zero biases)
every softmax is nearly uniform, every beta is exactly 1 and every forget gate is the same,
so a wrong transform, a wrong gate scaling or a wrong head mapping would barely change the
logits.  Here the attention logits have a spread of a few units, beta = 2*sigmoid(.) covers
(0, 2) including values near 2 (near-reflections), the forget gates decay at different rates
per head, and norm weights are close to, but not exactly, 1.

Deliberately independent of ``path_eval/``: nothing from the package under test is imported.
"""

from __future__ import annotations

import json
import math
import pathlib

import torch
from safetensors.torch import save_file

_MODEL_TYPE = {"path": "path_attn", "path_fox": "path_attn",
               "fox": "forgetting_transformer", "rope": "transformer"}
_ARCH = {"path_attn": "PaTHAttentionForCausalLM",
         "forgetting_transformer": "ForgettingTransformerForCausalLM",
         "transformer": "TransformerForCausalLM"}


def _intermediate_size(hidden_size: int, hidden_ratio: int = 4) -> int:
    """fla's GatedMLP default: a multiple of 256 at or above 2/3 * hidden_ratio * D."""
    return 256 * math.ceil(int(hidden_size * hidden_ratio * 2 / 3) / 256)


def _config(variant, *, hidden_size, num_heads, num_kv_heads, num_hidden_layers, vocab_size,
            low_rank_w, tie_word_embeddings, qk_norm, use_output_gate, qkv_bias, rope_theta,
            dtype, omit_low_rank_flag) -> dict:
    """config.json as fla's PretrainedConfig.save_pretrained writes it (all fields, nulls kept)."""
    model_type = _MODEL_TYPE[variant]
    dtype_name = str(dtype).removeprefix("torch.")
    cfg = {
        "architectures": [_ARCH[model_type]],
        "model_type": model_type,
        "hidden_size": hidden_size,
        "num_hidden_layers": num_hidden_layers,
        "num_heads": num_heads,
        "num_kv_heads": num_kv_heads,
        "hidden_ratio": 4,
        "intermediate_size": None,
        "hidden_act": "swish",
        "initializer_range": 0.02,
        "elementwise_affine": True,
        "norm_eps": 1e-6,
        "use_cache": True,
        "pad_token_id": None,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "tie_word_embeddings": tie_word_embeddings,
        "fuse_norm": True,
        "fuse_swiglu": True,
        "fuse_cross_entropy": True,
        "fuse_linear_cross_entropy": False,
        "use_l2warp": False,
        "vocab_size": vocab_size,
        "attnres_block_size": None,
        # transformers 4.x wrote "torch_dtype", 5.x writes "dtype"; flame checkpoints exist with both.
        "torch_dtype": dtype_name,
        "dtype": dtype_name,
        "transformers_version": "4.53.3",
    }
    if model_type == "path_attn":
        cfg.update(use_forget_gate=(variant == "path_fox"), use_w_shortconv=True,
                   use_low_rank_w=low_rank_w)
        if omit_low_rank_flag:          # checkpoints older than the flag: loader must read the keys
            del cfg["use_low_rank_w"]
    elif model_type == "forgetting_transformer":
        cfg.update(qkv_bias=qkv_bias, qk_norm=qk_norm, window_size=None,
                   use_output_gate=use_output_gate)
    else:
        cfg.update(qkv_bias=qkv_bias, qk_norm=qk_norm, window_size=None, rope_theta=rope_theta,
                   max_position_embeddings=2048)
    return cfg


def write_fla_checkpoint(directory, variant: str, *, seed: int = 0, hidden_size: int = 64,
                         num_heads: int = 4, num_kv_heads: int | None = None,
                         num_hidden_layers: int = 2, vocab_size: int = 97, low_rank_w: bool = True,
                         legacy_fox_gate_name: bool = False, tie_word_embeddings: bool = False,
                         qk_norm: bool = False, use_output_gate: bool = False,
                         qkv_bias: bool = False, rope_theta: float = 10000.0,
                         dtype: torch.dtype = torch.float32,
                         omit_low_rank_flag: bool = False) -> pathlib.Path:
    """Write ``config.json`` + ``model.safetensors`` for a random fla model; return the directory.

    variant: "path" | "path_fox" (model_type path_attn), "fox" (forgetting_transformer),
    "rope" (transformer).  Deterministic in ``seed``.
    """
    if variant not in _MODEL_TYPE:
        raise ValueError(f"unknown variant {variant!r}")
    is_path = variant in ("path", "path_fox")
    if is_path and (qk_norm or use_output_gate or qkv_bias):
        raise ValueError("fla's PaTH config has no qk_norm / output gate / qkv_bias")
    if variant == "rope" and use_output_gate:
        raise ValueError("fla's transformer has no output gate")
    if legacy_fox_gate_name and (variant != "fox" or use_output_gate):
        raise ValueError("legacy_fox_gate_name: FoX only, and g_proj can't be both gates")

    D, H = hidden_size, num_heads
    H_kv = num_kv_heads or H
    d = D // H
    kv_dim = H_kv * d
    I = _intermediate_size(D)
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape, std=1.0, mean=0.0):
        return torch.randn(*shape, generator=gen) * std + mean

    def uniform(*shape, lo, hi):
        return torch.rand(*shape, generator=gen) * (hi - lo) + lo

    def linear(out_f, in_f, gain=1.0):
        """Keeps output entries O(gain) for O(1) inputs (fla's std 0.02 would make them tiny)."""
        return randn(out_f, in_f, std=gain / math.sqrt(in_f))

    def norm_weight(n, centre=1.0):
        return randn(n, std=0.1, mean=centre)

    # q, k entries have std qk_gain for unit-RMS inputs, so scale * q.k has std qk_gain**2 = 2.5
    qk_gain = math.sqrt(2.5)
    sd: dict[str, torch.Tensor] = {"model.embeddings.weight": randn(vocab_size, D, std=0.5)}
    for i in range(num_hidden_layers):
        p = f"model.layers.{i}."
        sd[p + "attn_norm.weight"] = norm_weight(D)
        sd[p + "attn.q_proj.weight"] = linear(D, D, qk_gain)
        sd[p + "attn.k_proj.weight"] = linear(kv_dim, D, qk_gain)
        sd[p + "attn.v_proj.weight"] = linear(kv_dim, D)
        if qkv_bias:
            sd[p + "attn.q_proj.bias"] = randn(D, std=0.5)
            sd[p + "attn.k_proj.bias"] = randn(kv_dim, std=0.5)
            sd[p + "attn.v_proj.bias"] = randn(kv_dim, std=0.5)
        if is_path:
            if low_rank_w:
                sd[p + "attn.w_proj.0.weight"] = linear(32, D)
                sd[p + "attn.w_proj.1.weight"] = linear(kv_dim, 32)
            else:
                sd[p + "attn.w_proj.weight"] = linear(kv_dim, D)
            sd[p + "attn.w_conv1d.weight"] = randn(kv_dim, 1, 3, std=0.7)
            # per-token spread ~1.5 around a per-head offset in (-4, 4): beta reaches ~0 and ~2
            sd[p + "attn.bt_proj.weight"] = linear(H_kv, D, 1.5)
            sd[p + "attn.bt_proj.bias"] = uniform(H_kv, lo=-4.0, hi=4.0)
            if variant == "path_fox":
                sd[p + "attn.g_proj.weight"] = linear(H, D)
                sd[p + "attn.g_proj.bias"] = uniform(H, lo=-1.0, hi=6.0)
        elif variant == "fox":
            # bias in (-1, 6): per-token decay log-sigmoid from ~-1.3 (local) to ~-0.003 (long memory)
            gate = "g_proj" if legacy_fox_gate_name else "f_proj"
            sd[p + f"attn.{gate}.weight"] = linear(H, D)
            sd[p + f"attn.{gate}.bias"] = uniform(H, lo=-1.0, hi=6.0)
            if use_output_gate:
                sd[p + "attn.g_proj.weight"] = linear(D, D)
        if qk_norm:
            # q/k are unit-RMS per head after the norm, so the logit spread is ~ (norm weight)^2:
            # centre the weights at 1.6 to keep logits of a few units.
            n_q, n_k = (D, kv_dim) if variant == "fox" else (d, d)
            sd[p + "attn.q_norm.weight"] = norm_weight(n_q, 1.6)
            sd[p + "attn.k_norm.weight"] = norm_weight(n_k, 1.6)
        sd[p + "attn.o_proj.weight"] = linear(D, D)
        sd[p + "mlp_norm.weight"] = norm_weight(D)
        sd[p + "mlp.gate_proj.weight"] = linear(I, D)
        sd[p + "mlp.up_proj.weight"] = linear(I, D)
        sd[p + "mlp.down_proj.weight"] = linear(D, I)
    sd["model.norm.weight"] = norm_weight(D)
    if not tie_word_embeddings:
        sd["lm_head.weight"] = linear(vocab_size, D, 2.0)

    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    cfg = _config(variant, hidden_size=D, num_heads=H, num_kv_heads=num_kv_heads,
                  num_hidden_layers=num_hidden_layers, vocab_size=vocab_size,
                  low_rank_w=low_rank_w, tie_word_embeddings=tie_word_embeddings, qk_norm=qk_norm,
                  use_output_gate=use_output_gate, qkv_bias=qkv_bias, rope_theta=rope_theta,
                  dtype=dtype, omit_low_rank_flag=omit_low_rank_flag)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    save_file({k: v.to(dtype).contiguous() for k, v in sd.items()}, str(out / "model.safetensors"),
              metadata={"format": "pt"})
    return out
