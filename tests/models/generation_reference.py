"""The decoding loop as first written, eagerly: the tokens `path_eval.models.generation.generate`
must give. Each step appends the chosen token to the sequence, finishes rows that chose an end,
asks `should_stop` every STOP_CHECK_EVERY steps and notes the first step after which every row had
finished; the ids end there."""
import torch

from path_eval.models.generation import STOP_CHECK_EVERY, prefill


@torch.no_grad()
def reference_generate(model, input_ids, attention_mask, *, max_new_tokens, eos_token_id, pad_token_id,
                       do_sample=False, temperature=1.0, top_k=None, generator=None, should_stop=None,
                       prefill_chunk_size=None):
    stops = torch.tensor(list(eos_token_id), dtype=torch.long)
    pad = pad_token_id
    sequences = input_ids
    logits, cache = prefill(model, input_ids, attention_mask.long(), prefill_chunk_size)
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool)
    ended = -1
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
        if ended < 0 and bool(finished.all()):
            ended = step
        if step == max_new_tokens - 1 or ((step + 1) % STOP_CHECK_EVERY == 0 and ended >= 0):
            break
        logits = model(token[:, None], past_key_values=cache, use_cache=True).logits
    return sequences if ended < 0 else sequences[:, : input_ids.shape[1] + ended + 1]
