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
    # Without padding no mask is passed: equivalent for every causal LM, and the only call fla's PaTH
    # layer accepts without a cache (with a mask it takes its prefill/decode path).
    hidden = model.base_model(input_ids=tokens, attention_mask=None if bool(mask.all()) else mask,
                              use_cache=False).last_hidden_state
    return [hidden[b, r] for b, r in enumerate(rows)]


def _target_logprobs(model, hidden: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and whether it is the argmax, per row of `hidden`, PROJECTION_ROWS at a time."""
    logprobs, greedy = [], []
    for start in range(0, len(targets), PROJECTION_ROWS):
        full = torch.log_softmax(_project(model, hidden[start:start + PROJECTION_ROWS]), -1)
        part = targets[start:start + PROJECTION_ROWS]
        logprobs.append(full.gather(-1, part[:, None])[:, 0])
        greedy.append(full.argmax(-1) == part)
    return torch.cat(logprobs), torch.cat(greedy)


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
        logprobs, greedy = _target_logprobs(model, h, torch.tensor(t, device=device))
        results.append((logprobs.sum().item(), bool(greedy.all())))
    return results


@torch.no_grad()
def next_token_nll(model, block: list[int], prefill_chunk: int | None = None) -> torch.Tensor:
    """Negative log-likelihood of every token of `block` after the first, given all before it
    ([len(block) - 1], float32): one forward over the block (prefilled in chunks for our models)."""
    device = next(model.parameters()).device
    tokens = torch.tensor([block], device=device)
    rows = [torch.arange(len(block) - 1, device=device)]
    [hidden] = _hidden_rows(model, tokens, torch.ones_like(tokens), rows, prefill_chunk)
    logprobs, _ = _target_logprobs(model, hidden, tokens[0, 1:])
    return -logprobs.float()
