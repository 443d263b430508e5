"""The lm-eval model `path`: loglikelihood, loglikelihood_rolling and generate_until on top of
`path_eval.load_model`, for our model families and plain transformers causal LMs alike.

Request handling follows lm-eval's own `hf` model (tokenisation of context/continuation pairs,
left truncation to `max_length`, disjoint rolling windows, stop sequences), so numbers agree
with `lm_eval --model hf` wherever that model can run; the differences are where it fails:
no [T, vocab] log-softmax (scoring goes through `scoring.score_batch`), no cache-flag traps on fla
models, long inputs prefilled in chunks, and no silent default context length.

Chat templates (`--apply-chat-template`): `apply_chat_template` renders a chat as lm-eval's hf model does
(the template chosen by `TemplateLM.chat_template` from `chat_template_name`), for the tasks lm-eval
wraps; a generate_until request with the option `chat_user_turn` (LongBench's) is cut in the middle
first and put in the user turn after, as THUDM/LongBench's pred.py does.
"""
from __future__ import annotations

import logging
import os
import time
from contextlib import nullcontext

import numpy as np
import torch
from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model
from lm_eval.models.utils import Collator, handle_stop_sequences, normalize_gen_kwargs
from lm_eval.models.utils_hf import stop_sequences_criteria
from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

from path_eval.errors import PathEvalError
from path_eval.lm.distributed import DataParallel, launched_processes
from path_eval.lm.encodings import ENCODING_STORE, tokenizer_key
from path_eval.lm.padding import padded_batch
from path_eval.lm.progress import RequestProgress
from path_eval.lm.request_cache import RequestCache
from path_eval.lm.scoring import next_token_nll, score_batch
from path_eval.models import CausalDecoder
from path_eval.models.chat_template import render_chat, user_messages
from path_eval.models.context import NO_CONTEXT_LENGTH, PREFILL_CHUNK, checkpoint_max_length
from path_eval.models.generation import generate
from path_eval.models.loading import AUTOCAST, autocast_dtype, load_model

log = logging.getLogger("path_eval")



@register_model("path")
class PathEvalLM(TemplateLM):
    """lm-eval model: `lm_eval.simple_evaluate(model="path", model_args="pretrained=DIR,...")` after
    `import path_eval.lm`, or `simple_evaluate(model=PathEvalLM(...))`."""

    def __init__(self, pretrained: str | None = None, *, model=None, tokenizer=None, device: str = "cpu",
                 dtype: str | None = None, attention: str | None = None, batch_size: int | str = 1,
                 max_length: int | None = None, max_gen_toks: int = 256, prefill_chunk: int = PREFILL_CHUNK,
                 max_batch_size: int | None = None, parallel: DataParallel | None = None,
                 chat_template_name: str | None = None, system_instruction: str | None = None, **unused):
        """parallel: the run's process group when the caller made it before loading the model (else
        made here under a launcher). chat_template_name: the tokenizer's template `apply_chat_template`
        renders with (None: its default); system_instruction: the system turn of the chats the adapter
        makes itself (lm-eval gets its own from `simple_evaluate`)."""
        super().__init__()
        self.started = time.perf_counter()  # this segment's wall time counts from here, loading included
        if unused:
            raise PathEvalError(f"unknown option(s) for the path model: {', '.join(sorted(unused))}")
        # lm-eval sees one process (rank 0 of 1): the processes share the requests here instead
        self.parallel = parallel or (DataParallel(device) if launched_processes() > 1 else None)
        if self.parallel is not None:
            device = self.parallel.model_device(device)
        if model is None:
            if pretrained is None:
                raise PathEvalError("the path model needs pretrained=CHECKPOINT_DIR")
            model, tokenizer = load_model(pretrained, device=device, dtype=dtype, attention=attention)
        self.model, self.tokenizer = model, tokenizer
        self._device = torch.device(device)
        self.autocast = autocast_dtype(dtype, device, next(model.parameters()).dtype)
        self.pretrained = pretrained
        if str(batch_size).startswith("auto"):
            raise PathEvalError("batch_size=auto is not supported (it probes at the full max_length): give a number")
        self.batch_size_per_gpu = int(batch_size)
        self._max_length = int(max_length) if max_length else checkpoint_max_length(model.config)
        if not self._max_length:
            raise PathEvalError(NO_CONTEXT_LENGTH)
        self._max_gen_toks = int(max_gen_toks)
        self.prefill_chunk = int(prefill_chunk)
        self.tokens_processed = 0
        self.seconds = 0.0
        self.truncated_requests = 0
        self.requests_computed = 0
        self.request_cache: RequestCache | None = None
        self.shared_encodings: dict[tuple, object] = {}  # one request call's tokens, tokenised by all processes
        self.tokenizer_key = tokenizer_key(self.tokenizer)  # an earlier model's encodings under this key are reused
        self.chat_template_name = chat_template_name
        self.system_instruction = system_instruction

    def use_request_cache(self, path) -> None:
        """Read finished requests from, and record new ones in, the resume cache at `path` (JSON rows,
        never pickles: see `request_cache`)."""
        self.request_cache = RequestCache(path, progress=self.counters)
        self.set_cache_hook(self.request_cache)

    def _answer(self, kind: str, requests, compute, costs: list[int] | None = None):
        """The answers to `requests`: finished ones from the resume cache, the rest from `compute`.
        Under data parallelism each process computes its share (balanced by `costs`, the requests'
        tokens) and every process returns all answers."""
        def answer(part):
            if self.request_cache is None:
                return compute(part)
            return self.request_cache.answer(kind, part, compute)

        try:
            if self.parallel is None:
                return answer(requests)
            return self.parallel.shared_answers(costs, lambda share: answer([requests[i] for i in share]))
        finally:
            self.shared_encodings = {}

    # ----------------------------------------------------------------- data parallelism
    @property
    def process_index(self) -> int:
        """This process among the launched ones (0 when run plainly): the first alone writes."""
        return self.parallel.rank if self.parallel else 0

    @property
    def process_count(self) -> int:
        return self.parallel.world_size if self.parallel else 1

    def gather_object(self, obj) -> list:
        """Every process's `obj` in rank order (a one-element list when run plainly)."""
        return self.parallel.gather_object(obj) if self.parallel else [obj]

    def token_costs(self, kind: str, requests, key, encode_many, cost) -> list[int] | None:
        """Under data parallelism, each request's cost in tokens: cost(tokens, request), with the tokens
        of every distinct key encoded in batches (`encode_many`), each process taking every world_size-th
        key, and shared; the tokens are kept for the request call under way (`encoded_many`), so no process
        tokenises a request twice."""
        if self.parallel is None:
            return None
        keys = list(dict.fromkeys(key(r) for r in requests))
        encoded = self.parallel.map_strided(encode_many, keys)
        self.shared_encodings = {(kind, k): tokens for k, tokens in zip(keys, encoded)}
        return [cost(self.shared_encodings[(kind, key(r))], r) for r in requests]

    def encoded_many(self, kind: str, keys: list[tuple], encode_many) -> dict[tuple, object]:
        """Each key's tokens: what `token_costs` got for it, else `encode_many` of the rest, in one batch."""
        missing = [k for k in keys if (kind, k) not in self.shared_encodings]
        fresh = dict(zip(missing, encode_many(missing))) if missing else {}
        return {k: fresh[k] if k in fresh else self.shared_encodings[(kind, k)] for k in keys}

    # ----------------------------------------------------------------- lm-eval properties
    @property
    def eot_token_id(self) -> int:
        return self.tokenizer.eos_token_id

    @property
    def prefix_token_id(self) -> int:
        return self.tokenizer.bos_token_id if self.tokenizer.bos_token_id is not None else self.eot_token_id

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def max_gen_toks(self) -> int:
        return self._max_gen_toks

    @property
    def batch_size(self) -> int:
        return self.batch_size_per_gpu

    @property
    def device(self):
        return self._device

    @property
    def tokenizer_name(self) -> str:
        return self.tokenizer.name_or_path.replace("/", "__")

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return pad if pad is not None else self.eot_token_id

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, **kwargs) -> list[int]:
        """As lm-eval's hf model: the tokenizer's default special tokens unless told otherwise, and
        none added when the string already starts with the BOS text."""
        return self.tok_encode_many([string], add_special_tokens)[0]

    def tok_encode_many(self, strings: list[str], add_special_tokens: bool | None = None,
                        arrays: bool = False) -> list:
        """`tok_encode` of each string, by one tokenizer call per option set (a fast tokenizer encodes a
        batch on every core), each string's tokens the same as its own call's; strings an earlier model
        of the process encoded with the same tokenizer are not encoded again (`lm.encodings`). `arrays`:
        read-only int32 arrays instead of lists, for the adapter's own use (lm-eval gets lists)."""
        bos = self.tokenizer.bos_token
        starts_with_bos = [add_special_tokens is None and bool(bos) and s.startswith(bos) for s in strings]
        tokens: list = [[] for _ in strings]
        for bos_text in (False, True):
            chosen = [i for i, flag in enumerate(starts_with_bos) if flag is bos_text]
            if not chosen:
                continue
            special = False if bos_text else add_special_tokens
            options = {} if special is None else {"add_special_tokens": special}
            def encode(texts, options=options):
                return self.tokenizer(texts, return_attention_mask=False, return_token_type_ids=False,
                                      **options)["input_ids"]

            encoded = ENCODING_STORE.encode(self.tokenizer_key, special, [strings[i] for i in chosen], encode, arrays)
            for i, ids in zip(chosen, encoded):
                tokens[i] = ids
        return tokens

    def tok_decode(self, tokens: list[int], skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=skip_special_tokens)

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """lm-eval's hf model's rendering (`models.chat_template.render_chat`) through the template
        TemplateLM's `chat_template` resolution picks by `chat_template_name`."""
        return render_chat(self.tokenizer, self.chat_template(self.chat_template_name or True), chat_history,
                           add_generation_prompt)

    # ----------------------------------------------------------------- scoring
    def loglikelihood(self, requests, disable_tqdm: bool = False):
        """lm-eval's tokenisation of (context, continuation) pairs; its progress bar obeys TQDM_DISABLE."""
        quiet = disable_tqdm or os.environ.get("TQDM_DISABLE") == "1"
        costs = self.token_costs("pair", requests, lambda r: r.args,
                                 lambda pairs: [self._pair_tokens(*pair) for pair in pairs],
                                 lambda pair, _: min(sum(map(len, pair)), self.max_length + 1))
        return self._answer("loglikelihood", requests, lambda rest: super(PathEvalLM, self).loglikelihood(
            rest, disable_tqdm=quiet), costs)

    def _pair_tokens(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """The tokens lm-eval's tokenisation gives a pair (an empty context: the prefix token)."""
        if context == "":
            return [self.prefix_token_id], self.tok_encode(continuation, add_special_tokens=False)
        return super()._encode_pair(context, continuation)

    def _encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        known = self.shared_encodings.get(("pair", (context, continuation)))  # lm-eval asks pair by pair
        return super()._encode_pair(context, continuation) if known is None else known

    @property
    def precision(self) -> str:
        """The weights' dtype, or the autocast precision they run under ("autocast-bf16")."""
        if self.autocast is not None:
            return next(name for name, target in AUTOCAST.items() if target == self.autocast)
        return str(next(self.model.parameters()).dtype).removeprefix("torch.")

    def timed(self, fn, *args, tokens: int):
        """Run fn(*args), counting its seconds and `tokens` toward the throughput in the provenance;
        under an autocast precision inside torch.autocast (every model call goes through here)."""
        start = time.perf_counter()
        with torch.autocast(self._device.type, dtype=self.autocast, enabled=self.autocast is not None):
            out = fn(*args)
        self.seconds += time.perf_counter() - start
        self.tokens_processed += tokens
        return out

    def counters(self) -> dict:
        """This process's work in this segment: tokens through the model, their seconds, prompts cut to
        fit, requests computed (not taken from the resume cache), wall time since the model began loading."""
        return {"tokens": self.tokens_processed, "seconds": self.seconds, "truncated": self.truncated_requests,
                "requests": self.requests_computed, "wall": time.perf_counter() - self.started}

    def total_counters(self) -> dict:
        """This process's work over every segment of the run: the earlier ones kept in the resume cache."""
        segments = [*(self.request_cache.earlier_segments() if self.request_cache else []), self.counters()]
        return {name: sum(segment.get(name, 0) for segment in segments) for name in segments[-1]}

    def save_progress(self) -> None:
        """Commit this segment's counters to the resume cache (after work it does not hold as requests)."""
        if self.request_cache is not None:
            self.request_cache.save_progress()

    def next_token_nll(self, tokens: list[int]) -> torch.Tensor:
        """Per-position NLL of one block (`scoring.next_token_nll`), counted as one computed request."""
        nll = self.timed(next_token_nll, self.model, tokens, self.prefill_chunk, tokens=len(tokens))
        self.requests_computed += 1
        return nll

    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, override_bs: int | None = None):
        """requests: ((context, continuation), context_tokens, continuation_tokens)."""
        def order(req):
            tokens = req[1] + req[2]
            return -len(tokens), tuple(tokens)

        collated = Collator(requests, sort_fn=order)
        results = []
        with RequestProgress(self, "loglikelihood", len(requests), enabled=not disable_tqdm) as bar:
            for batch in collated.get_batched(n=override_bs or self.batch_size):
                results += self._score_batch(batch)
                bar.advance(len(batch))
        return collated.get_original(results)

    def _score_batch(self, batch) -> list[tuple[float, bool]]:
        """(log-likelihood, is_greedy) of each request of one batch, cached as computed."""
        inputs, targets = [], []
        for _, context, continuation in batch:
            whole = (context + continuation)[-(self.max_length + 1):]
            inputs.append(whole[:-1])
            targets.append(continuation[-(len(whole) - 1):])
        scores = self.timed(score_batch, self.model, inputs, targets, self.pad_id, self.prefill_chunk,
                             tokens=sum(map(len, inputs)))
        with self.one_commit():
            for (key, _, _), score in zip(batch, scores):
                if key is not None:  # rolling windows are cached as whole documents instead
                    self.cache_hook.add_partial("loglikelihood", key, score)
                self.requests_computed += 1  # after its row: never a count without it
        return scores

    def one_commit(self):
        """The resume cache's rows of one batch committed together (`RequestCache.one_commit`), with
        the counters that count them."""
        return self.request_cache.one_commit() if self.request_cache is not None else nullcontext()

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        """Disjoint windows of max_length tokens, each predicted with one token of context (the
        previous window's last, or the prefix token first): lm-eval's definition."""
        costs = self.token_costs("text", requests, lambda r: r.args[0], self.tok_encode_many,
                                 lambda tokens, _: len(tokens))
        return self._answer("loglikelihood_rolling", requests, self._rolling, costs)

    def _rolling(self, requests) -> list[float]:
        totals = []
        texts = [r.args[0] for r in requests]
        encodings = self.encoded_many("text", list(dict.fromkeys(texts)), self.tok_encode_many)
        with RequestProgress(self, "loglikelihood_rolling (documents)", len(requests)) as bar:
            for text in texts:
                windows = [(None,) + make_disjoint_window(w) for w in get_rolling_token_windows(
                    token_list=encodings[text], prefix_token=self.prefix_token_id,
                    max_seq_len=self.max_length, context_len=1)]
                scores = self._loglikelihood_tokens(windows, disable_tqdm=True, override_bs=self.batch_size)
                total = sum(score for score, _ in scores)
                totals.append(total)
                self.cache_hook.add_partial("loglikelihood_rolling", (text,), total)
                bar.advance()
        return totals

    # ----------------------------------------------------------------- generation
    def prompt_tokens(self, keys: list[tuple[str, int | None, bool]]) -> list[np.ndarray]:
        """The tokens of each prompt key (text, keep, user_turn), encoded in batches, as read-only int32
        arrays (`tok_encode_many(arrays=True)`: they go into a batch's array as they are). With `keep` (a
        task's `truncate_middle` generation option) a longer prompt keeps its first and last keep/2
        tokens as THUDM/LongBench's pred.py does: both halves decoded to text, joined and encoded again
        (so the count can differ from `keep` by a token or two), the middle being where its tasks put
        the least crucial text. With `user_turn` (the option `chat_user_turn`) the text so cut goes in a
        chat's user turn, as pred.py's `build_chat` after its cut. The final text alone is encoded for
        the result (a long prompt's encoding costs as much as the rest of its handling)."""
        texts = [text for text, _, _ in keys]
        done: dict[int, np.ndarray] = {}
        cut = [i for i, (_, keep, _) in enumerate(keys) if keep is not None]
        for i, tokens in zip(cut, self.tok_encode_many([texts[i] for i in cut], arrays=True)):
            _, keep, user_turn = keys[i]
            if len(tokens) > keep:
                half = keep // 2
                texts[i] = self.tok_decode(tokens[:half]) + self.tok_decode(tokens[-half:])
            elif not user_turn:
                done[i] = tokens
        for i, (_, _, user_turn) in enumerate(keys):
            if user_turn:
                texts[i] = self.apply_chat_template(user_messages(texts[i], self.system_instruction))
        rest = [i for i in range(len(keys)) if i not in done]
        done.update(zip(rest, self.tok_encode_many([texts[i] for i in rest], arrays=True)))
        return [done[i] for i in range(len(keys))]

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        costs = self.token_costs("prompt", requests, lambda r: _prompt_key(r.args), self.prompt_tokens,
                                 lambda tokens, r: self._generation_cost(len(tokens), r.args[1]))
        return self._answer("generate_until", requests, self._generate_requests, costs)

    def _generation_cost(self, prompt_tokens: int, gen_kwargs: dict) -> int:
        """Tokens a generate_until request puts through the model at most: its prompt as cut to fit,
        and its new tokens."""
        max_gen = normalize_gen_kwargs(dict(gen_kwargs), self.max_gen_toks)["max_gen_toks"]
        return min(prompt_tokens, max(self.max_length - max_gen, 0)) + max_gen

    def _generate_requests(self, requests) -> list[str]:
        encodings = self.encoded_many("prompt", list(dict.fromkeys(_prompt_key(r.args) for r in requests)),
                                      self.prompt_tokens)
        collated = Collator([r.args for r in requests], sort_fn=lambda a: (-len(encodings[_prompt_key(a)]), a[0]),
                            group_by="gen_kwargs", group_fn=lambda a: a[1])
        eos_text = self.tok_decode([self.eot_token_id], skip_special_tokens=False)
        results = []
        with RequestProgress(self, "generate_until", len(requests)) as bar:
            for batch in collated.get_batched(n=self.batch_size):
                results += self._generate_batch(batch, encodings, eos_text)
                bar.advance(len(batch))
        return collated.get_original(results)

    def _generate_batch(self, batch, encodings: dict[tuple, np.ndarray], eos_text: str) -> list[str]:
        """One batch of generate_until requests (same generation options): the generated texts."""
        contexts, all_kwargs = zip(*batch)
        kwargs = normalize_gen_kwargs(all_kwargs[0], self.max_gen_toks)
        keep = kwargs.pop("truncate_middle", None)
        user_turn = kwargs.pop("chat_user_turn", False)
        until = handle_stop_sequences(kwargs.pop("until", None), eos=eos_text)
        max_gen = kwargs.pop("max_gen_toks")
        do_sample = bool(kwargs.pop("do_sample", False))
        temperature = float(kwargs.pop("temperature", 0.0) or 0.0)
        if kwargs:
            raise PathEvalError(f"unsupported generation options {sorted(kwargs)}: path-eval decodes greedily "
                                "or samples with a temperature")
        max_context = self.max_length - max_gen
        if max_context <= 0:
            raise PathEvalError(f"max_gen_toks={max_gen} leaves no room for context in max_length={self.max_length}")
        encoded = []
        for text in contexts:
            tokens = encodings[(text, keep, user_turn)]
            if len(tokens) > max_context:
                self.truncated_requests += 1
                log.warning("a %d-token prompt exceeds max_length - max_gen_toks = %d: keeping its last %d "
                            "tokens (as lm-eval's hf model does)", len(tokens), max_context, max_context)
                tokens = tokens[-max_context:]
            encoded.append(tokens)
        new_tokens = self.timed(self._generate, encoded, until, max_gen, do_sample, temperature,
                                tokens=sum(map(len, encoded)))
        texts = []
        with self.one_commit():
            for tokens, context in zip(new_tokens, contexts):
                text = self.tok_decode(tokens)
                for stop in until:
                    if stop:
                        text = text.split(stop)[0]
                texts.append(text)
                self.cache_hook.add_partial("generate_until", (context, all_kwargs[0]), text)
                self.requests_computed += 1  # after its row: never a count without it
        return texts

    def _generate(self, prompts: list[np.ndarray], until: list[str], max_gen: int, do_sample: bool,
                  temperature: float) -> list[list[int]]:
        """Left-padded batch generation; returns each row's new tokens (stop text cut later)."""
        ids, mask = padded_batch(prompts, self.pad_id, left=True)
        width = ids.shape[1]
        ids, mask = ids.to(self.device), mask.to(self.device)
        sampling = {"do_sample": True, "temperature": temperature} if do_sample and temperature > 0 else {}
        if isinstance(self.model, CausalDecoder):
            def reached_stop(new: torch.Tensor) -> torch.Tensor:  # `new` is on the host already
                texts = self.tokenizer.batch_decode(new.tolist())
                return torch.tensor([any(s and s in t for s in until) for t in texts])

            out = generate(self.model, ids, mask, max_new_tokens=max_gen, eos_token_id=self.eot_token_id,
                           pad_token_id=self.pad_id, prefill_chunk_size=self.prefill_chunk,
                           should_stop=reached_stop, **sampling)
        else:
            out = self.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_gen,
                                      stopping_criteria=stop_sequences_criteria(self.tokenizer, until, width, len(prompts)),
                                      pad_token_id=self.pad_id, use_cache=True, **(sampling or {"do_sample": False}))
        self.tokens_processed += int((out[:, width:] != self.pad_id).sum())
        return out[:, width:].tolist()  # one copy from the device, not one a row


def _prompt_key(args: tuple) -> tuple[str, int | None, bool]:
    """A generate_until request's prompt, middle-truncation length and chat wrapping: what fixes its tokens."""
    context, gen_kwargs = args
    return context, gen_kwargs.get("truncate_middle"), gen_kwargs.get("chat_user_turn", False)
