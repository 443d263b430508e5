"""Prefill (optionally in chunks) and token-by-token decoding on the model's cache."""
from __future__ import annotations

import torch

from path_eval.models.cache import DecoderCache
from path_eval.models.decode_graph import CapturedDecodeStep, graph_decoding, reserve_decoding


@torch.no_grad()
def prefill(model, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None,
            chunk_size: int | None = None, cache: DecoderCache | None = None,
            logits_to_keep: int = 1) -> tuple[torch.Tensor, DecoderCache]:
    """Feed `input_ids` through the model `chunk_size` tokens at a time (None: all at once),
    continuing `cache` if given. Returns the logits of the last `logits_to_keep` positions of the
    last chunk (0: all positions of all chunks, concatenated) and the cache."""
    T = input_ids.shape[1]
    step = chunk_size or max(T, 1)
    cache = cache if cache is not None else DecoderCache(model.config.num_hidden_layers)
    cached = cache.get_seq_length()
    pieces = []
    for start in range(0, T, step):
        stop = min(start + step, T)
        mask = None if attention_mask is None else attention_mask[:, : cached + stop]
        out = model(input_ids[:, start:stop], attention_mask=mask, past_key_values=cache, use_cache=True,
                    logits_to_keep=0 if logits_to_keep == 0 else min(logits_to_keep, stop - start))
        pieces.append(out.logits)
    logits = torch.cat(pieces, 1) if logits_to_keep == 0 else pieces[-1]
    return logits, cache


# Decoding steps between the host's looks at the new tokens (stop strings, every row finished): each
# look waits for the GPU, which a small model's step leaves idle for as long as the look takes;
# between looks the steps are queued without waiting.
STOP_CHECK_EVERY = 8


@torch.no_grad()
def generate(model, input_ids: torch.LongTensor, attention_mask: torch.Tensor | None = None, *,
             max_new_tokens: int | None = None, max_length: int | None = None, do_sample: bool = False,
             temperature: float = 1.0, top_k: int | None = None, eos_token_id: int | list[int] | None = None,
             pad_token_id: int | None = None, prefill_chunk_size: int | None = None,
             generator: torch.Generator | None = None, use_cache: bool = True,
             should_stop=None, cuda_graph: bool | None = None) -> torch.LongTensor:
    """Like transformers' `generate`: returns [B, prompt + new] token ids; rows that produced an
    end-of-sequence token are filled with `pad_token_id` afterwards. Prompts of a batch are
    left-padded, with `attention_mask` 0 on the padding. `should_stop(new_tokens [B, n])` may
    end rows early too (e.g. when a stop string appeared); it is asked every STOP_CHECK_EVERY tokens,
    so a row may run up to STOP_CHECK_EVERY - 1 tokens past the step its stop string appeared in (the
    caller cuts its text at the stop, as lm-eval does). The host waits for the GPU only then; the
    returned ids end at the step after which every row had finished, as if every step had looked.
    `cuda_graph` replays one recorded
    decoding step per token (`decode_graph`); None: wherever the model allows it (on CUDA, with the
    triton backend)."""
    if not use_cache:
        raise ValueError("generation always uses the cache: it gives the same tokens as full forwards")
    if max_new_tokens is None:
        if max_length is None:
            raise ValueError("give max_new_tokens or max_length")
        max_new_tokens = max_length - input_ids.shape[1]
    if eos_token_id is None:
        eos_token_id = model.config.eos_token_id
    stops = torch.tensor([eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id or []),
                         device=input_ids.device, dtype=torch.long)
    pad = pad_token_id if pad_token_id is not None else (stops[0].item() if len(stops) else 0)
    B = input_ids.shape[0]
    mask = attention_mask.long() if attention_mask is not None else torch.ones_like(input_ids)
    sequences = input_ids
    if max_new_tokens <= 0:
        return sequences
    graph = graph_decoding(model, cuda_graph) and max_new_tokens > 2  # (an impossible request fails before the prefill)
    logits, cache = prefill(model, input_ids, mask, prefill_chunk_size)
    if max_new_tokens > 1:
        reserve_decoding(cache, max_new_tokens - 1)
    captured = None  # with `graph`: the first step runs eagerly (it allocates the tail, compiles), the rest replay
    finished = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
    ended = torch.full((), -1, device=input_ids.device)  # the first step after which every row had finished
    for step in range(max_new_tokens):
        scores = logits[:, -1].float()
        if do_sample:
            scores = scores / temperature
            if top_k is not None:
                kth = scores.topk(top_k, dim=-1).values[:, -1:]
                scores = scores.masked_fill(scores < kth, float("-inf"))
            token = torch.multinomial(scores.softmax(-1), 1, generator=generator).squeeze(1)
        else:
            token = scores.argmax(-1)
        token = torch.where(finished, torch.full_like(token, pad), token)
        sequences = torch.cat([sequences, token[:, None]], 1)
        finished |= torch.isin(token, stops)
        if (step + 1) % STOP_CHECK_EVERY == 0 and should_stop is not None:
            finished |= should_stop(sequences[:, input_ids.shape[1]:])
        ended = torch.where((ended < 0) & finished.all(), step, ended)
        if step == max_new_tokens - 1:
            break
        if (step + 1) % STOP_CHECK_EVERY == 0 and bool(ended >= 0):  # the host waits for the GPU here only
            break
        # The new token is never padding (the cache keeps the prompt's), so a decoding step takes no mask.
        if captured is not None:
            logits = captured(token)
            continue
        logits = model(token[:, None], past_key_values=cache, use_cache=True).logits
        if graph:  # the last token needs no step
            captured = CapturedDecodeStep(model, cache, max_new_tokens - 2)
    last = int(ended)  # as if every step had looked: no column after the step every row had finished in
    return sequences if last < 0 else sequences[:, : input_ids.shape[1] + last + 1]
