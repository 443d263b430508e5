"""Prefill (optionally in chunks) and token-by-token decoding on the model's cache."""
from __future__ import annotations

import torch

from path_eval.models.cache import DecoderCache
from path_eval.models.decode_graph import CapturedDecodeStep, graph_decoding, reserve_decoding
from path_eval.models.nan_logits import deferred_nan_checks, immediate_nan_checks


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
    starts = range(0, T, step)
    padded: list[bool | None] = [None] * len(starts)  # None: not read here, the model reads it
    if attention_mask is not None and len(starts) > 1:
        # Which chunks hold padding, read at once: the model would read each chunk's mask on the host
        # to skip an all-valid one, and each read after the first chunk's would wait for the chunk before.
        columns = attention_mask[:, -T:]  # the prompt's, as the model reads each chunk's
        padded = torch.stack([(columns[:, start:start + step] == 0).any() for start in starts]).tolist()
    pieces = []
    for start, holes in zip(starts, padded):
        stop = min(start + step, T)
        mask = None if attention_mask is None or holes is False else attention_mask[:, : cached + stop]
        out = model(input_ids[:, start:stop], attention_mask=mask, past_key_values=cache, use_cache=True,
                    logits_to_keep=0 if logits_to_keep == 0 else min(logits_to_keep, stop - start),
                    mask_has_padding=holes)
        pieces.append(out.logits)
    logits = torch.cat(pieces, 1) if logits_to_keep == 0 else pieces[-1]
    return logits, cache


# Decoding steps between the host's looks at the new tokens (stop strings, every row finished).
STOP_CHECK_EVERY = 8


def late_looks(device: torch.device, do_sample: bool) -> bool:
    """Whether a look reads its window one window late: the host copies the window's tokens when it
    is queued and reads them once the next window is queued too, so that the GPU decodes while the
    host decodes text. Only on a GPU and greedy: elsewhere nothing runs beside the host, so the extra
    window a late look may cost is only lost; sampling would draw that window from the generator,
    which would change every later call's samples."""
    return device.type == "cuda" and not do_sample


class TokenChooser:
    """Each decoding step's token chosen from the logits and written in place into buffers that live
    for the whole generation, so that the choice can be recorded in a CUDA graph beside the model's
    step and replayed with it: a small model's step is shorter than the dozen launches of choosing
    issued from Python. `token` [B] is the last chosen token (the next step's input), `new` [B, N]
    the chosen tokens, `finished` the rows that ended, and `finish_at` [B] the step each row ended
    at (N: not yet). A row stopped late (`stop_rows` a window after its step) may hold tokens past
    its end in `new`; `tokens` pads them."""

    def __init__(self, batch: int, max_new_tokens: int, stops: torch.Tensor, pad: int, device,
                 do_sample: bool, temperature: float, top_k: int | None, generator: torch.Generator | None):
        self.stops, self.pad = stops, pad
        self.sampling = (temperature, top_k, generator) if do_sample else None
        self.token = torch.full((batch,), pad, dtype=torch.long, device=device)
        self.new = torch.full((batch, max_new_tokens), pad, dtype=torch.long, device=device)
        self.finished = torch.zeros(batch, dtype=torch.bool, device=device)
        self.finish_at = torch.full((batch,), max_new_tokens, dtype=torch.long, device=device)
        self.step = torch.zeros(1, dtype=torch.long, device=device)  # the column the next choice goes to

    def choose(self, logits: torch.Tensor) -> None:
        """The token after each row's last logits (padding in finished rows), appended at `step`;
        rows that chose an end-of-sequence token finish there. Device work only, unless sampling."""
        scores = logits[:, -1].float()
        if self.sampling is not None:
            temperature, top_k, generator = self.sampling
            scores = scores / temperature
            if top_k is not None:
                kth = scores.topk(top_k, dim=-1).values[:, -1:]
                scores = scores.masked_fill(scores < kth, float("-inf"))
            chosen = torch.multinomial(scores.softmax(-1), 1, generator=generator).squeeze(1)
        else:
            chosen = scores.argmax(-1)
        chosen = torch.where(self.finished, torch.full_like(chosen, self.pad), chosen)
        self.new.index_copy_(1, self.step, chosen[:, None])
        ends = (chosen[:, None] == self.stops).any(-1) & ~self.finished
        self.finish_at.copy_(torch.where(ends, self.step, self.finish_at))
        self.finished |= ends
        self.token.copy_(chosen)
        self.step += 1

    def stop_rows(self, rows: torch.Tensor, step: int) -> None:
        """Finish `rows` (bool [B], on the CPU) at `step`, as if they had chosen an end there (rows
        that ended earlier keep their step). To a GPU through pinned memory: a copy from pageable
        memory would wait for the steps queued before it."""
        device = self.finished.device
        rows = rows.to(torch.bool).pin_memory().to(device, non_blocking=True) if device.type == "cuda" \
            else rows.to(device, torch.bool)
        self.finish_at.copy_(torch.where(rows & (self.finish_at > step), step, self.finish_at))
        self.finished |= rows

    def look(self, step: int) -> "Look":
        """The tokens of steps 0..`step` and each row's end so far, copied to the host without waiting."""
        return Look(step, self.new[:, :step + 1], self.finish_at)

    def tokens(self, columns: int) -> torch.Tensor:
        """The first `columns` chosen tokens, padding after each row's end."""
        past_end = torch.arange(columns, device=self.new.device) > self.finish_at[:, None]
        return self.new[:, :columns].masked_fill(past_end, self.pad)


class Look:
    """A window's tokens and ends on their way to the host: copied when the window is queued, read
    (`wait`) then or, with `late_looks`, after the next window is queued."""

    def __init__(self, step: int, new: torch.Tensor, finish_at: torch.Tensor):
        self.step = step
        cuda = new.is_cuda  # a copy from the GPU lands in pinned memory, read once the event has passed
        # on the CPU, copies too: the buffers change under later steps
        self.new, self.finish_at = (t.to("cpu", non_blocking=cuda, copy=True) for t in (new, finish_at))
        self.done = None
        if cuda:  # on the copies' stream: the model's GPU, which need not be the current one
            with torch.cuda.device(new.device):
                self.done = torch.cuda.Event()
                self.done.record()

    def wait(self) -> "Look":
        if self.done is not None:
            self.done.synchronize()
        return self


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
    on a CPU tensor (finished rows padded), and a row it stops ends at the step it was asked at: a
    row may run up to STOP_CHECK_EVERY - 1 tokens past the step its stop string appeared in (the
    caller cuts its text at the stop, as lm-eval does). The ids are those of a loop that looks after
    every window and stops once every row has finished, ending at the step after which every row had
    finished; on a GPU, greedy, the loop here looks one window late (`late_looks`) and so may run up
    to one window more, whose tokens it drops. `cuda_graph` replays one recorded decoding step per
    token (`decode_graph`), greedy choice of the next token included; None: wherever the model allows
    it (on CUDA, with the triton backend)."""
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
    mask = attention_mask.long() if attention_mask is not None else torch.ones_like(input_ids)
    if max_new_tokens <= 0:
        return input_ids
    graph = graph_decoding(model, cuda_graph) and max_new_tokens > 2  # (an impossible request fails before the prefill)
    # Greedy, a NaN logit gives a token like any other, so the NaN checks wait for the tokens' own read.
    with immediate_nan_checks() if do_sample else deferred_nan_checks():
        return _decode(model, input_ids, mask, max_new_tokens, stops, pad, do_sample, temperature, top_k, generator,
                       prefill_chunk_size, should_stop, graph)


def _decode(model, input_ids, mask, max_new_tokens, stops, pad, do_sample, temperature, top_k, generator,
            prefill_chunk_size, should_stop, graph) -> torch.LongTensor:
    """`generate`'s prefill and decoding loop, its arguments checked."""
    logits, cache = prefill(model, input_ids, mask, prefill_chunk_size)
    if max_new_tokens > 1:
        reserve_decoding(cache, max_new_tokens - 1)
    chooser = TokenChooser(input_ids.shape[0], max_new_tokens, stops, pad, input_ids.device, do_sample, temperature,
                           top_k, generator)
    chooser.choose(logits)
    stopped_at = torch.full((input_ids.shape[0],), max_new_tokens, dtype=torch.long)  # each row's end the host knows

    def every_row_ended(ends: torch.Tensor) -> int | None:
        """The step after which every row had ended (`ends` [B] on the CPU), None while one runs on."""
        return int(ends.max()) if bool((ends < max_new_tokens).all()) else None

    def read(look: Look) -> int | None:
        """Apply a look: rows `should_stop` ends finish at its step. Returns the step after which
        every row had finished, or None while some row runs on."""
        look.wait()
        ends = torch.minimum(look.finish_at, stopped_at)
        if should_stop is not None:
            past_end = torch.arange(look.step + 1) > ends[:, None]
            rows = should_stop(look.new.masked_fill(past_end, pad)).to("cpu", torch.bool)
            fresh = rows & (ends > look.step)  # rows that had not ended: the rest keep their step
            if bool(fresh.any()):
                stopped_at.masked_fill_(fresh, look.step)
                ends = torch.minimum(ends, stopped_at)
                chooser.stop_rows(fresh, look.step)
        return every_row_ended(ends)

    late = late_looks(input_ids.device, do_sample)
    captured = None  # with `graph`: the first step runs eagerly (it allocates the tail, compiles), the rest replay
    waiting: Look | None = None  # with `late`: the last window's look, read after the next window is queued
    ended = None
    for step in range(max_new_tokens):  # here the tokens of steps 0..step are queued
        last = step == max_new_tokens - 1
        if (step + 1) % STOP_CHECK_EVERY == 0:
            queued, waiting = (waiting, chooser.look(step)) if late else (chooser.look(step), None)
            if queued is not None and (ended := read(queued)) is not None:
                break
        if last:
            break
        # The new token is never padding (the cache keeps the prompt's), so a decoding step takes no mask.
        if captured is not None:
            logits = captured()
            if do_sample:  # chosen outside the graph: a replayed draw would need the generator's state registered
                chooser.choose(logits)
            continue
        logits = model(chooser.token[:, None], past_key_values=cache, use_cache=True).logits
        chooser.choose(logits)
        if graph:  # the last token needs no step
            captured = CapturedDecodeStep(model, cache, max_new_tokens - 2, token=chooser.token,
                                          then=None if do_sample else chooser.choose,
                                          shared_pool=True)
    if ended is None and waiting is not None:
        ended = read(waiting)
    if ended is None:  # ends chosen after the last look count too (the host's stops are in finish_at)
        ended = every_row_ended(chooser.finish_at.cpu())
    if ended is None:
        ended = step
    return torch.cat([input_ids, chooser.tokens(ended + 1)], 1)
