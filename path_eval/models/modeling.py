"""The decoder family in one file: pre-norm blocks (RMSNorm, attention, RMSNorm, SwiGLU MLP).

Module and parameter names are fla's (`model.embeddings`, `model.layers.{i}.attn.w_proj.0`, ...),
so fla / flame checkpoints load with a plain `load_state_dict`. The attention arithmetic lives in
the backends (`path_eval.models.attention`); this file prepares their inputs.

Plain torch: an evaluation run loads `CausalDecoder` without importing transformers' modeling code
(its import pulls scipy, sympy, torch._dynamo and more: 1.5 s of a run's start on a 2-core CPU).
`path_eval.models.pretrained.PathEvalForCausalLM` is the same network as a transformers
`PreTrainedModel`, for `save_pretrained`, the Auto classes and the random checkpoints.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from path_eval.kernels.path_attn import supported
from path_eval.kernels.short_conv.naive import conv_history, householder_directions
from path_eval.kernels.precision import compute_dtype
from path_eval.kernels.rms_norm.naive import rms_norm
from path_eval.models.attention import AttentionInputs, default_backend, get_backend
from path_eval.models.cache import DecoderCache, LayerCache
from path_eval.models.config import PathEvalConfig
from path_eval.models.decode_graph import graph_unavailable


@dataclass
class CausalLMOutput:
    """logits [B, T, vocab] (fp32, or fp64 for fp64 models) and the cache when one was asked for.
    (Our own type: transformers renames its output fields between releases.)"""

    logits: torch.Tensor
    past_key_values: DecoderCache | None = None

    @property
    def cache(self) -> DecoderCache | None:
        return self.past_key_values


class RMSNorm(nn.Module):
    """RMSNorm over the last dim. Also the per-head q/k norm of x [..., heads, head_dim]: its weight
    is per channel ([heads * head_dim], fla's GroupNorm in FoX) or shared by all heads ([head_dim],
    fla's RMSNorm(head_dim) in PaTH and the Transformer). `fused`: one Triton kernel (the `triton`
    backend's choice) instead of torch's nine."""

    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor, fused: bool = False) -> torch.Tensor:
        if fused and x.dtype in supported.DTYPES:
            from path_eval.kernels.rms_norm.fused import rms_norm_triton  # with triton, on first use
            return rms_norm_triton(x, self.weight, self.eps)
        return rms_norm(x, self.weight, self.eps)


class GatedMLP(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """GPT-NeoX (rotate-half) RoPE of x [B, T, heads, d] at integer positions [B, T]."""
    f = compute_dtype(x)
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, device=x.device, dtype=f) / d))  # fp32 as in fla
    angles = positions.to(f)[..., None] * inv_freq                                       # [B, T, d/2]
    cos = torch.cat([angles.cos(), angles.cos()], -1)[:, :, None]
    sin = torch.cat([angles.sin(), angles.sin()], -1)[:, :, None]
    xf = x.to(f)
    x1, x2 = xf.chunk(2, dim=-1)
    return (xf * cos + torch.cat([-x2, x1], -1) * sin).to(x.dtype)


class DecoderAttention(nn.Module):
    """Projections of one attention variant; the arithmetic is the selected backend's."""

    def __init__(self, config: PathEvalConfig, layer_idx: int):
        super().__init__()
        self.variant = config.attention
        self.layer_idx = layer_idx
        D, d = config.hidden_size, config.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = config.num_heads, config.num_kv_heads, d
        kv_dim = self.num_kv_heads * d
        self.q_proj = nn.Linear(D, config.num_heads * d, bias=config.qkv_bias)
        self.k_proj = nn.Linear(D, kv_dim, bias=config.qkv_bias)
        self.v_proj = nn.Linear(D, kv_dim, bias=config.qkv_bias)
        self.o_proj = nn.Linear(config.num_heads * d, D, bias=False)
        self.rope_theta = config.rope_theta
        self.use_output_gate = False
        self.qk_norm_names: tuple[str, str] | None = None  # fla names them differently per family

        if self.variant in ("path", "path_fox"):
            self.w_proj = (nn.Sequential(nn.Linear(D, config.w_rank, bias=False), nn.Linear(config.w_rank, kv_dim, bias=False))
                           if config.low_rank_w else nn.Linear(D, kv_dim, bias=False))
            self.conv_size = config.conv_size if config.use_w_shortconv else 0
            if self.conv_size:
                self.w_conv1d = nn.Conv1d(kv_dim, kv_dim, config.conv_size, groups=kv_dim, bias=config.conv_bias)
            self.bt_proj = nn.Linear(D, self.num_kv_heads, bias=True)
            if self.variant == "path_fox":
                self.g_proj = nn.Linear(D, config.num_heads, bias=True)
            if config.qk_norm:
                self.maybe_q_norm, self.maybe_k_norm = RMSNorm(d, 1e-5), RMSNorm(d, 1e-5)
                self.qk_norm_names = ("maybe_q_norm", "maybe_k_norm")
        elif self.variant == "fox":
            self.f_proj = nn.Linear(D, config.num_heads, bias=True)
            self.use_output_gate = config.use_output_gate
            if self.use_output_gate:
                self.g_proj = nn.Linear(D, config.num_heads * d, bias=False)
            if config.qk_norm:
                self.q_norm, self.k_norm = RMSNorm(config.num_heads * d, 1e-5), RMSNorm(kv_dim, 1e-5)
                self.qk_norm_names = ("q_norm", "k_norm")
        elif config.qk_norm:  # rope / nope
            self.q_norm, self.k_norm = RMSNorm(d, 1e-5), RMSNorm(d, 1e-5)
            self.qk_norm_names = ("q_norm", "k_norm")

    def _householder_directions(self, x: torch.Tensor, conv_state: torch.Tensor | None, valid: torch.Tensor | None,
                                use_cache: bool, backend: str) -> tuple[torch.Tensor, torch.Tensor | None]:
        """w = l2norm(silu(causal depthwise conv(w_proj(x)))) per head, and the new conv history
        (None unless `use_cache`: a call that does not extend the cache leaves its history alone).
        On the triton backend one fused kernel computes w (`short_conv.fused`)."""
        raw = self.w_proj(x)
        if valid is not None:  # padding must look like the zero history before a sequence starts
            raw = raw * valid[..., None].to(raw.dtype)
        conv = self.w_conv1d if self.conv_size else None
        if conv is not None and backend == "triton" and self.head_dim in supported.HEAD_DIMS and raw.dtype in supported.DTYPES:
            from path_eval.kernels.short_conv.fused import householder_directions_triton  # with triton, on first use
            w = householder_directions_triton(raw, conv_state, conv.weight, conv.bias, self.num_kv_heads)
        else:
            w = householder_directions(raw, conv_state, conv.weight if conv is not None else None,
                                       conv.bias if conv is not None else None, self.num_kv_heads)
        new_state = None
        if conv is not None and use_cache:
            last = conv_history(conv_state, raw, self.conv_size - 1)
            # Updated in place, so a captured decoding step (CUDA graph) keeps writing the buffer the
            # next replay reads; a fresh history is a copy, not a view that would keep `raw` alive.
            new_state = conv_state.copy_(last) if conv_state is not None else last.clone()
        return w, new_state

    def forward(self, x: torch.Tensor, state: LayerCache | None, positions: torch.Tensor,
                valid: torch.Tensor | None, use_cache: bool, backend: str) -> tuple[torch.Tensor, LayerCache | None]:
        B, T, _ = x.shape
        f = compute_dtype(x)
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim)
        if self.qk_norm_names is not None:
            fused = backend == "triton"
            q, k = getattr(self, self.qk_norm_names[0])(q, fused), getattr(self, self.qk_norm_names[1])(k, fused)
        scale = self.head_dim ** -0.5
        w = beta = g = conv_state = None
        gate_scale = 1.0
        if self.variant == "rope":
            q, k = rotate(q, positions, self.rope_theta), rotate(k, positions, self.rope_theta)
        elif self.variant == "fox":
            g = F.logsigmoid(self.f_proj(x).to(f))
        elif self.variant in ("path", "path_fox"):
            w, conv_state = self._householder_directions(x, state.conv if state else None, valid, use_cache, backend)
            beta = 2 * torch.sigmoid(self.bt_proj(x).to(f))
            if self.variant == "path_fox":
                g, gate_scale = F.logsigmoid(self.g_proj(x).to(f)), scale  # PaTH-FoX scales the gate too
        inputs = AttentionInputs(q, k, v, scale, w, beta, g, gate_scale, valid)
        # Under torch.autocast (--dtype autocast-bf16) the projections run in bfloat16 and the attention
        # core in its own compute dtype, float32, as the kernels accumulate; autocast would also turn the
        # core's matmuls to bfloat16, where its float32 masking constants overflow.
        with torch.autocast(x.device.type, enabled=False):
            out, kv = get_backend(backend)(inputs, state.kv if state else None, use_cache)
        out = out.reshape(B, T, -1)
        if self.use_output_gate:
            out = out * torch.sigmoid(self.g_proj(x))
        return self.o_proj(out), (LayerCache(kv, conv_state) if use_cache else None)


class DecoderLayer(nn.Module):
    def __init__(self, config: PathEvalConfig, layer_idx: int):
        super().__init__()
        self.attn_norm = RMSNorm(config.hidden_size, config.norm_eps)
        self.attn = DecoderAttention(config, layer_idx)
        self.mlp_norm = RMSNorm(config.hidden_size, config.norm_eps)
        self.mlp = GatedMLP(config.hidden_size, config.intermediate_size)

    def forward(self, x, state, positions, valid, use_cache, backend):
        fused = backend == "triton"
        h, new_state = self.attn(self.attn_norm(x, fused), state, positions, valid, use_cache, backend)
        x = x + h
        return x + self.mlp(self.mlp_norm(x, fused)), new_state


class DecoderStack(nn.Module):
    """fla's `model`: the embeddings, the layers and the final norm."""

    def __init__(self, config: PathEvalConfig):
        super().__init__()
        self.build(config)

    def build(self, config: PathEvalConfig) -> None:
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.norm_eps)

    def get_input_embeddings(self):
        return self.embeddings

    def set_input_embeddings(self, value):
        self.embeddings = value


class CausalDecoder(nn.Module):
    """`model(input_ids).logits`, `model(..., past_key_values=cache, use_cache=True)` for chunked
    prefill and decoding, `model.generate(...)`. The attention backend is `self.attention_backend`
    (None: the fastest one for the model's device)."""

    def __init__(self, config: PathEvalConfig):
        super().__init__()
        self.config = config
        self.build(config, DecoderStack(config))

    def build(self, config: PathEvalConfig, stack: nn.Module) -> None:
        self.model = stack
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.attention_backend: str | None = None

    def get_input_embeddings(self):
        return self.model.embeddings

    def set_input_embeddings(self, value):
        self.model.embeddings = value

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, value):
        self.lm_head = value

    @property
    def backend_name(self) -> str:
        weight = self.lm_head.weight
        return self.attention_backend or default_backend(weight.device, weight.dtype, self.config.head_dim)

    @property
    def decoding_path(self) -> str:
        """How `generation.generate` decodes this model by default: "cuda graph" (one recorded step
        replayed per token, for three new tokens or more; fewer decode eagerly) or "eager". The two
        round differently in 16-bit, so a run records it."""
        return "eager" if graph_unavailable(self) else "cuda graph"

    def hidden_states(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None,
                      past_key_values: DecoderCache | None = None, use_cache: bool | None = None,
                      mask_has_padding: bool | None = None) -> tuple[torch.Tensor, DecoderCache | None]:
        """Final-norm hidden states [B, T, D] (the input of `lm_head`) and the cache.
        Scoring code projects these to the vocabulary a slice at a time. An all-ones mask takes the
        path without one; whether it is all ones is read from the mask, a read that waits for the
        GPU, unless the caller says it holds padding (`mask_has_padding=True`: no read)."""
        if past_key_values is not None and not isinstance(past_key_values, DecoderCache):
            raise TypeError("past_key_values must be the DecoderCache this model returned")
        use_cache = past_key_values is not None if use_cache is None else use_cache
        B, T = input_ids.shape
        valid = None
        if attention_mask is not None:
            valid = attention_mask[:, -T:].to(torch.bool)
            if not mask_has_padding and bool(valid.all()):
                valid = None
        start = (past_key_values.next_position if past_key_values is not None and past_key_values.next_position is not None
                 else torch.zeros(B, dtype=torch.long, device=input_ids.device))
        offsets = (valid.long().cumsum(1) - 1).clamp(min=0) if valid is not None \
            else torch.arange(T, device=input_ids.device).expand(B, T)
        positions = start[:, None] + offsets
        cache = past_key_values if past_key_values is not None else (DecoderCache(len(self.model.layers)) if use_cache else None)
        backend = self.backend_name

        h = self.model.embeddings(input_ids)
        for i, layer in enumerate(self.model.layers):
            h, state = layer(h, cache.layers[i] if cache is not None else None, positions, valid, use_cache, backend)
            if use_cache:
                cache.layers[i] = state
        if use_cache:
            advanced = valid.long().sum(1) if valid is not None else T
            if cache.next_position is None:
                cache.next_position = start + advanced
            else:  # in place, as a captured decoding step (CUDA graph) needs
                cache.next_position.add_(advanced)
        return self.model.norm(h, backend == "triton"), (cache if use_cache else None)

    def logits_of(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits of final hidden states, in fp32 (fp64 for fp64 models)."""
        logits = self.lm_head(hidden)
        return logits if logits.dtype == torch.float64 else logits.float()

    def forward(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None,
                past_key_values: DecoderCache | None = None, use_cache: bool | None = None,
                logits_to_keep: int = 0, mask_has_padding: bool | None = None) -> CausalLMOutput:
        """attention_mask: [B, T] or [B, cached + T] (HF style), 0 at padding.
        logits_to_keep: compute logits for the last N positions only (0: all).
        mask_has_padding: as `hidden_states` takes it."""
        h, cache = self.hidden_states(input_ids, attention_mask, past_key_values, use_cache, mask_has_padding)
        if logits_to_keep:
            h = h[:, -logits_to_keep:]
        return CausalLMOutput(self.logits_of(h), cache)

    def generate(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None, **kwargs) -> torch.LongTensor:
        """See `path_eval.models.generation.generate` (greedy by default, HF-style output)."""
        from path_eval.models.generation import generate
        return generate(self, input_ids, attention_mask, **kwargs)

