"""Log-likelihood of target tokens without a [T, vocab] tensor: hidden states first, then the
vocabulary projection and log-softmax a slice of positions at a time.

Works for path-eval models (which prefill long inputs in chunks on their cache, so activations
stay O(chunk) and the cache O(T x d)) and for transformers causal LMs (one forward of the base
model, then the same sliced projection).
"""
from __future__ import annotations

import torch

from path_eval.models import PathEvalForCausalLM

PROJECTION_ROWS = 1024


def _project(model, hidden: torch.Tensor) -> torch.Tensor:
    if isinstance(model, PathEvalForCausalLM):
        return model.logits_of(hidden)
    logits = model.get_output_embeddings()(hidden).float()
    cap = getattr(model.config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits


def _hidden_rows(model, tokens: torch.Tensor, mask: torch.Tensor, rows: list[torch.Tensor],
                 prefill_chunk: int | None) -> list[torch.Tensor]:
    """Final hidden states of `tokens` [B, T] at the positions rows[b] (1-D index tensors)."""
    if isinstance(model, PathEvalForCausalLM):
        T = tokens.shape[1]
        step = prefill_chunk if prefill_chunk and T > prefill_chunk else T
        cache = None
        pieces: list[list[torch.Tensor]] = [[] for _ in rows]
        for start in range(0, T, step):
            stop = min(start + step, T)
            hidden, cache = model.hidden_states(tokens[:, start:stop], mask[:, :stop], cache,
                                                use_cache=stop < T)
            for b, r in enumerate(rows):
                inside = r[(r >= start) & (r < stop)]
                pieces[b].append(hidden[b, inside - start])
        return [torch.cat(p) for p in pieces]
    hidden = model.base_model(input_ids=tokens, attention_mask=mask).last_hidden_state
    return [hidden[b, r] for b, r in enumerate(rows)]


@torch.no_grad()
def score_batch(model, inputs: list[list[int]], targets: list[list[int]], pad_id: int,
                prefill_chunk: int | None = None) -> list[tuple[float, bool]]:
    """For each sequence: sum of log p(target_k | inputs[:len-len(targets)+k+1]) over its targets,
    which predict the last len(targets) positions of `inputs`, and whether every target is the
    argmax (lm-eval's is_greedy). Sequences are right-padded into one batch."""
    device = next(model.parameters()).device
    width = max(len(x) for x in inputs)
    tokens = torch.full((len(inputs), width), pad_id, dtype=torch.long)
    mask = torch.zeros(len(inputs), width, dtype=torch.long)
    for b, x in enumerate(inputs):
        tokens[b, : len(x)] = torch.tensor(x)
        mask[b, : len(x)] = 1
    rows = [torch.arange(len(x) - len(t), len(x), device=device) for x, t in zip(inputs, targets)]
    hidden = _hidden_rows(model, tokens.to(device), mask.to(device), rows, prefill_chunk)
    results = []
    for h, t in zip(hidden, targets):
        target = torch.tensor(t, device=device)
        total, greedy = 0.0, True
        for start in range(0, len(t), PROJECTION_ROWS):
            logprobs = torch.log_softmax(_project(model, h[start:start + PROJECTION_ROWS]), -1)
            part = target[start:start + PROJECTION_ROWS]
            total += logprobs.gather(-1, part[:, None]).sum().item()
            greedy &= bool((logprobs.argmax(-1) == part).all())
        results.append((total, greedy))
    return results
