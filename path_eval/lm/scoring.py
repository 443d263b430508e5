"""Log-likelihood of target tokens without a [T, vocab] tensor: hidden states first, then the
vocabulary projection and log-softmax a slice of positions at a time.

Works for path-eval models and for transformers causal LMs (one forward of the base model, then the
same sliced projection). A path-eval model on the Triton backend scores a block in one pass with no
cache when its activations fit the GPU's free memory (`one_pass_fits`); otherwise, and on the other
backends, it prefills in chunks on its cache, so activations stay O(chunk) and the cache O(T x d).
"""
from __future__ import annotations

import torch

from path_eval.lm.padding import padded_batch
from path_eval.models import CausalDecoder
from path_eval.models.nan_logits import deferred_nan_checks

PROJECTION_ROWS = 1024
# Activation elements per token and hidden unit held at once by one decoder layer's forward, in the
# model's dtype, with room to spare: the layer input, its norm, q, k, v, w, the preparation's float32
# queries, in-chunk logits and factors (about eight bf16 widths), the attention output and the MLP's
# gate, up and activation (about twelve).
ONE_PASS_ELEMENTS_PER_TOKEN_AND_UNIT = 32


def _project(model, hidden: torch.Tensor) -> torch.Tensor:
    if isinstance(model, CausalDecoder):
        return model.logits_of(hidden)
    logits = model.get_output_embeddings()(hidden).float()
    cap = getattr(model.config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits


def one_pass_fits(model: CausalDecoder, tokens: torch.Tensor) -> bool:
    """Whether `tokens` [B, T] may go through the model in one pass, keeping no cache. The Triton
    kernels hold nothing of size T x T, so one pass needs activations of about T x hidden per layer,
    while chunked prefill keeps every earlier chunk's keys and values in every layer (at 64K tokens of
    a 760M model, 9.7 GB in bf16) and moves them through each later chunk. Chunks are only worth that
    when one pass would not fit the GPU's free memory. The torch backend materializes per-chunk
    products whose size grows with the segment, so it always chunks."""
    if model.backend_name != "triton" or tokens.device.type != "cuda":
        return False
    free, _ = torch.cuda.mem_get_info(tokens.device)
    weight = model.lm_head.weight
    need = tokens.numel() * model.config.hidden_size * weight.element_size() * ONE_PASS_ELEMENTS_PER_TOKEN_AND_UNIT
    return need <= free


def _hidden_rows(model, tokens: torch.Tensor, mask: torch.Tensor, spans: list[tuple[int, int]],
                 prefill_chunk: int | None) -> list[torch.Tensor]:
    """Final hidden states of `tokens` [B, T] at positions spans[b] = (first, end) of row b. The
    padding `mask` [B, T] and the spans stay on the host, so that neither skipping the mask of a
    chunk without padding nor taking the rows waits for the GPU."""
    padded = not bool(mask.all())
    on_device = mask.to(tokens.device) if padded else None
    if isinstance(model, CausalDecoder):
        T = tokens.shape[1]
        chunked = prefill_chunk and T > prefill_chunk and not one_pass_fits(model, tokens)
        step = prefill_chunk if chunked else T
        cache = None
        pieces: list[list[torch.Tensor]] = [[] for _ in spans]
        for start in range(0, T, step):
            stop = min(start + step, T)
            holes = padded and not bool(mask[:, start:stop].all())  # without, no mask: the same numbers
            hidden, cache = model.hidden_states(tokens[:, start:stop], on_device[:, :stop] if holes else None, cache,
                                                use_cache=stop < T, mask_has_padding=holes)
            for b, (first, end) in enumerate(spans):  # copies: a slice would keep the whole chunk alive
                low, high = max(first, start), min(end, stop)
                pieces[b].append(hidden[b, low - start:max(low, high) - start].clone())
        return [torch.cat(p) for p in pieces]
    # Without padding no mask is passed: equivalent for every causal LM, and the only call fla's PaTH
    # layer accepts without a cache (with a mask it takes its prefill/decode path).
    hidden = model.base_model(input_ids=tokens, attention_mask=on_device, use_cache=False).last_hidden_state
    return [hidden[b, first:end].clone() for b, (first, end) in enumerate(spans)]  # copies, as above


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
    argmax (lm-eval's is_greedy). Sequences are right-padded into one batch. The scores are read
    once for the batch, the NaN checks with them: a read per row would idle the GPU while the host
    issues the next row's work."""
    device = next(model.parameters()).device
    tokens, mask = padded_batch(inputs, pad_id, left=False)
    spans = [(len(x) - len(t), len(x)) for x, t in zip(inputs, targets)]
    wanted = torch.tensor([token for t in targets for token in t], dtype=torch.long,
                          device=device).split([len(t) for t in targets])
    sums, greedy = [], []
    with deferred_nan_checks():
        for h, t in zip(_hidden_rows(model, tokens.to(device), mask, spans, prefill_chunk), wanted):
            logprobs, is_greedy = _target_logprobs(model, h, t)
            sums.append(logprobs.sum())
            greedy.append(is_greedy.all())
        scores = list(zip(torch.stack(sums).tolist(), torch.stack(greedy).tolist()))
    return scores


@torch.no_grad()
def next_token_nll(model, block: list[int], prefill_chunk: int | None = None) -> torch.Tensor:
    """Negative log-likelihood of every token of `block` after the first, given all before it
    ([len(block) - 1], float32): one forward over the block (prefilled in chunks for our models).
    The NaN checks are read once, at the end, not after each slice of the projection."""
    device = next(model.parameters()).device
    tokens = torch.tensor([block], device=device)
    with deferred_nan_checks():
        [hidden] = _hidden_rows(model, tokens, torch.ones(1, len(block), dtype=torch.bool), [(0, len(block) - 1)],
                                prefill_chunk)
        logprobs, _ = _target_logprobs(model, hidden, tokens[0, 1:])
    return -logprobs.float()
