"""The models straight from their mathematical definition: the oracle the real code is tested against.

Reads ``config.json`` and ``model.safetensors`` of an fla checkpoint (path_attn,
forgetting_transformer, transformer) and computes next-token logits for ONE sequence in float64.
Nothing is batched, cached, chunked or fused, and nothing is imported from ``path_eval``: the
point is to share no algorithm with the implementation under test.  In particular PaTH's
Householder products are multiplied out as explicit d x d matrices, query by query, instead
of the chunked WY / UT-transform used by fla and by our fast path.  O(T^2 d^3): tiny models only.

Attention logit of query i and key j <= i (scale = head_dim ** -0.5; query head h reads kv head
h // (H / H_kv)):
    rope      scale * (R_i q_i) . (R_j k_j)
    fox       scale * q_i . k_j + G_i - G_j
    path      scale * q_i^T H_i H_{i-1} ... H_{j+1} k_j            (j = i: no transform)
    path_fox  scale * (q_i^T H_i ... H_{j+1} k_j + G_i - G_j)      (PaTH-FoX scales the gate too)
with H_t = I - beta_t w_t w_t^T and G = cumsum(logsigmoid(gate(x))).
"""

from __future__ import annotations

import json
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

DT = torch.float64


def _load(directory):
    directory = pathlib.Path(directory)
    cfg = json.loads((directory / "config.json").read_text())
    sd = {k: v.to(DT) for k, v in load_file(str(directory / "model.safetensors")).items()}
    return cfg, sd


def _rmsnorm(x, weight, eps):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last dim."""
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _head_rmsnorm(x, weight, n_heads, eps=1e-5):
    """RMSNorm of each head separately ([T, n_heads*d] in and out).  ``weight`` is either
    [n_heads*d] (fla GroupNorm, FoX) or [d] shared by all heads (fla RMSNorm(head_dim), transformer)."""
    T = x.shape[0]
    xh = x.reshape(T, n_heads, -1)
    w = weight.reshape(n_heads, -1) if weight.numel() == x.shape[1] else weight
    return _rmsnorm(xh, w, eps).reshape(T, -1)


def _linear(sd, name, x):
    y = x @ sd[name + ".weight"].T
    return y + sd[name + ".bias"] if name + ".bias" in sd else y


def _rope(x, theta):
    """GPT-NeoX (rotate-half) rotary embedding of [T, heads, d] at positions 0..T-1."""
    T, _, d = x.shape
    inv_freq = 1.0 / theta ** (torch.arange(0, d, 2, dtype=DT) / d)
    ang = torch.arange(T, dtype=DT)[:, None] * inv_freq[None, :]          # [T, d/2]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def _path_w_beta(sd, p, x, H_kv, d):
    """Householder directions w [T, H_kv, d] (unit norm) and strengths beta [T, H_kv] in (0, 2)."""
    if p + "w_proj.0.weight" in sd:                     # low-rank D -> 32 -> kv_dim (decided by keys)
        w = x @ sd[p + "w_proj.0.weight"].T @ sd[p + "w_proj.1.weight"].T
    else:                                               # older full-rank D -> kv_dim
        w = x @ sd[p + "w_proj.weight"].T
    if p + "w_conv1d.weight" in sd:
        # depthwise causal conv of width K over the whole kv_dim (before the head split), zero
        # history; the last tap multiplies the current token.  Then SiLU.
        ker = sd[p + "w_conv1d.weight"][:, 0, :]        # [kv_dim, K]
        K = ker.shape[1]
        padded = torch.cat([torch.zeros(K - 1, w.shape[1], dtype=DT), w])
        w = F.silu(sum(padded[k:k + w.shape[0]] * ker[:, k] for k in range(K)))
    w = w.reshape(-1, H_kv, d)
    w = w / torch.sqrt(w.pow(2).sum(-1, keepdim=True) + 1e-6)
    beta = 2 * torch.sigmoid(_linear(sd, p + "bt_proj", x))
    return w, beta


def _path_scores(q, k, w, beta, group):
    """s[h, i, j] = q_i^T H_i H_{i-1} ... H_{j+1} k_j with the products built as dense matrices."""
    T, H, d = q.shape
    s = torch.full((H, T, T), float("-inf"), dtype=DT)
    eye = torch.eye(d, dtype=DT)
    for hk in range(k.shape[1]):
        Hmat = [eye - beta[t, hk] * torch.outer(w[t, hk], w[t, hk]) for t in range(T)]
        heads = list(range(hk * group, (hk + 1) * group))
        for i in range(T):
            M = eye.clone()                             # M = H_i ... H_{j+1}
            for j in range(i, -1, -1):
                s[heads, i, j] = q[i, heads] @ M @ k[j, hk]
                M = M @ Hmat[j]
    return s


def _attention(cfg, sd, p, x):
    """One attention sublayer on normalised input x [T, D] -> [T, D]."""
    T, D = x.shape
    H = cfg["num_heads"]
    H_kv = cfg.get("num_kv_heads") or H
    d = D // H
    group = H // H_kv
    scale = d ** -0.5
    mt = cfg["model_type"]

    q, k, v = (_linear(sd, p + n, x) for n in ("q_proj", "k_proj", "v_proj"))
    if p + "q_norm.weight" in sd:
        q = _head_rmsnorm(q, sd[p + "q_norm.weight"], H)
        k = _head_rmsnorm(k, sd[p + "k_norm.weight"], H_kv)
    q, k, v = q.reshape(T, H, d), k.reshape(T, H_kv, d), v.reshape(T, H_kv, d)

    out_gate = None
    G = None                                            # [T, H] cumulative log forget gate
    if mt == "transformer":
        if cfg.get("rope_theta") is not None:
            q, k = _rope(q, cfg["rope_theta"]), _rope(k, cfg["rope_theta"])
        s = scale * torch.einsum("ihd,jhd->hij", q, k.repeat_interleave(group, dim=1))
    elif mt == "forgetting_transformer":
        if p + "f_proj.weight" in sd:
            G = torch.cumsum(F.logsigmoid(_linear(sd, p + "f_proj", x)), 0)
            if p + "g_proj.weight" in sd:               # optional sigmoid output gate [D, D]
                out_gate = torch.sigmoid(_linear(sd, p + "g_proj", x))
        else:                                           # before 2025-04 the forget gate was g_proj [H, D]
            assert sd[p + "g_proj.weight"].shape[0] == H and p + "g_proj.bias" in sd
            G = torch.cumsum(F.logsigmoid(_linear(sd, p + "g_proj", x)), 0)
        s = scale * torch.einsum("ihd,jhd->hij", q, k.repeat_interleave(group, dim=1))
        s = s + G.T[:, :, None] - G.T[:, None, :]
    elif mt == "path_attn":
        w, beta = _path_w_beta(sd, p, x, H_kv, d)
        s = _path_scores(q, k, w, beta, group)
        if p + "g_proj.weight" in sd:                   # PaTH-FoX
            G = torch.cumsum(F.logsigmoid(_linear(sd, p + "g_proj", x)), 0)
            s = s + G.T[:, :, None] - G.T[:, None, :]
        s = scale * s
    else:
        raise ValueError(f"unknown model_type {mt!r}")

    causal = torch.ones(T, T, dtype=torch.bool).tril()
    s = s.masked_fill(~causal, float("-inf"))
    o = torch.einsum("hij,jhd->ihd", torch.softmax(s, -1), v.repeat_interleave(group, dim=1))
    o = o.reshape(T, D)
    if out_gate is not None:
        o = o * out_gate
    return _linear(sd, p + "o_proj", o)


def definition_logits(directory, input_ids) -> torch.Tensor:
    """Next-token logits [T, vocab] (float64) of one sequence, from the definition."""
    cfg, sd = _load(directory)
    if cfg.get("hidden_act", "swish") not in ("swish", "silu"):
        raise ValueError(f"hidden_act {cfg['hidden_act']!r} not covered by the definition")
    ids = torch.as_tensor(input_ids, dtype=torch.long).reshape(-1)
    eps = cfg.get("norm_eps", 1e-6)
    x = sd["model.embeddings.weight"][ids]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        x = x + _attention(cfg, sd, p + "attn.", _rmsnorm(x, sd[p + "attn_norm.weight"], eps))
        h = _rmsnorm(x, sd[p + "mlp_norm.weight"], eps)
        mlp = F.silu(_linear(sd, p + "mlp.gate_proj", h)) * _linear(sd, p + "mlp.up_proj", h)
        x = x + _linear(sd, p + "mlp.down_proj", mlp)
    x = _rmsnorm(x, sd["model.norm.weight"], eps)
    head = sd.get("lm_head.weight")
    if head is None or cfg.get("tie_word_embeddings", False):
        head = sd["model.embeddings.weight"]
    return x @ head.T


def definition_generate_greedy(directory, prompt_ids, n_new: int) -> list[int]:
    """Greedy continuation: a full definition forward per new token (no cache to get wrong)."""
    ids = [int(t) for t in torch.as_tensor(prompt_ids).reshape(-1).tolist()]
    new = []
    for _ in range(n_new):
        nxt = int(definition_logits(directory, ids)[-1].argmax())
        ids.append(nxt)
        new.append(nxt)
    return new
