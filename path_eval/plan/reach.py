"""Lengths a run cannot reach, refused before the model loads: a length whose samples need more
memory than the device has would otherwise start the run and die of it (on Linux the OOM killer's
SIGKILL: no line, no clean exit), and a length past the Triton kernels' int32 token counts would
index wrong.

The memory rule compares a LOWER bound on what scoring one sample certainly holds at once
(`memory_bound`, from config.json alone) with the memory available: the CPU's before torch imports
(`check_reach`), a GPU's once torch has imported and before the model loads (`check_gpu_reach`).
A refusal is therefore never wrong; a run that passes may still not fit.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from path_eval.errors import PathEvalError
from path_eval.kinds import KINDS
from path_eval.models.config_file import FLA_MODEL_TYPES, PATH_EVAL_MODEL_TYPE, read_config
from path_eval.models.context import PREFILL_CHUNK
from path_eval.models.precisions import AUTOCAST_NAMES, WEIGHT_DTYPE_NAMES, default_dtype_name

if TYPE_CHECKING:
    from path_eval.plan import ResolvedPlan

GIB = 2**30

# The Triton kernels number a sample's rows (program id times block) and the cache's lengths in
# int32: a sample of 2**31 tokens or more would index wrong.
TRITON_TOKEN_LIMIT = 2**31

# Bytes per element of each torch dtype a --dtype name stands for (path_eval/models/precisions.py).
DTYPE_BYTES = {"float32": 4, "float64": 8, "bfloat16": 2, "float16": 2}
TOKEN_ID_BYTES = 8  # int64


def element_bytes(dtype: str | None, device: str) -> tuple[int, int] | None:
    """(bytes per weight, bytes per activation) of a run's --dtype on `device` (None: the loader's
    default there). None for a name the loader refuses itself."""
    dtype = dtype or default_dtype_name(device)
    if dtype in AUTOCAST_NAMES:  # float32 weights, projections computed in the autocast dtype
        return 4, DTYPE_BYTES[AUTOCAST_NAMES[dtype]]
    if dtype in WEIGHT_DTYPE_NAMES:
        return DTYPE_BYTES[WEIGHT_DTYPE_NAMES[dtype]], DTYPE_BYTES[WEIGHT_DTYPE_NAMES[dtype]]
    return None


def _size(raw: dict, field: str) -> int | None:
    """A positive whole number the config states, else None (a size it leaves to a default, or one
    the loader refuses: that term of the bound is left out)."""
    value = raw.get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True)
class ModelShape:
    """The sizes of config.json that the bound reads; None: not stated (its terms are left out).
    `own_family`: path-eval's decoder (fla / flame or path-eval configs), scored by our own code;
    otherwise a transformers causal LM, scored by one forward of its base model."""

    own_family: bool
    hidden: int | None
    layers: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    vocab: int | None = None
    intermediate: int | None = None
    tied: bool = True
    head_dim: int | None = None  # a transformers config's own, where it states one (else hidden / heads)
    embedding_width: int | None = None  # a transformers model's token embedding (OPT's is narrower than hidden)

    @classmethod
    def of(cls, raw: dict) -> ModelShape:
        """From a config.json as read (our families' field names, which fla's share, or a
        transformers config's, whose text model a multimodal config nests under text_config)."""
        if raw.get("model_type") in (PATH_EVAL_MODEL_TYPE, *FLA_MODEL_TYPES):
            heads = _size(raw, "num_heads")
            return cls(own_family=True, hidden=_size(raw, "hidden_size"), layers=_size(raw, "num_hidden_layers"),
                       heads=heads, kv_heads=_size(raw, "num_kv_heads") or heads,  # the loader's rule when null
                       vocab=_size(raw, "vocab_size"), intermediate=_size(raw, "intermediate_size"),
                       tied=raw.get("tie_word_embeddings") is not False)
        text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
        heads = _size(text, "num_attention_heads")
        return cls(own_family=False, hidden=_size(text, "hidden_size"), layers=_size(text, "num_hidden_layers"),
                   heads=heads, kv_heads=_size(text, "num_key_value_heads") or heads, vocab=_size(text, "vocab_size"),
                   intermediate=_size(text, "intermediate_size"), head_dim=_size(text, "head_dim"),
                   embedding_width=_size(text, "word_embed_proj_dim") or _size(text, "hidden_size"))

    def weights(self) -> int:
        """Elements of the weights certainly in the model. Our family: the token embedding (and an
        lm_head of its own when config.json says untied), each layer's q, k, v, o projections and, when
        config.json states intermediate_size, its MLP's three matrices; norms, gates and PaTH's w are
        left out. A transformers model, where config.json states its hidden size, layers and heads: the
        token embedding (`word_embed_proj_dim` wide where stated, as OPT's), each layer's q, k, v, o
        projections and, where it states intermediate_size, two MLP matrices (every causal LM's MLP has
        at least an up and a down projection); an untied lm_head, biases and norms left out."""
        if None in (self.hidden, self.layers, self.heads, self.vocab):
            return 0
        head_dim = self.head_dim or self.hidden // self.heads
        attention = 2 * self.hidden * self.heads * head_dim + 2 * self.hidden * self.kv_heads * head_dim
        if not self.own_family:
            mlp = 2 * self.hidden * self.intermediate if self.intermediate else 0
            return self.vocab * self.embedding_width + self.layers * (attention + mlp)
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        mlp = 3 * self.hidden * self.intermediate if self.intermediate else 0
        return embeddings + self.layers * (attention + mlp)

    def cache_per_token(self) -> int:
        """Elements per cached token: keys and values of every layer."""
        if not self.own_family or None in (self.hidden, self.layers, self.heads):
            return 0
        return 2 * self.layers * self.kv_heads * (self.hidden // self.heads)

    def one_pass_per_token(self) -> int:
        """Elements per token a forward over the whole sample holds at once in the first layer's
        attention call: for our family the residual stream (the embedding), its norm, q, k and v; for a
        transformers model the residual stream alone."""
        if self.hidden is None:
            return 0
        if not self.own_family or self.heads is None:
            return self.hidden
        head_dim = self.hidden // self.heads
        return 2 * self.hidden + (self.heads + 2 * self.kv_heads) * head_dim


def held_tokens(tokens: int, chunk: int = PREFILL_CHUNK) -> int:
    """The tokens of a `tokens`-long sample the bound counts: all but the last prefill chunk. Chunked
    prefill holds exactly these in the cache while it scores the last chunk; and a generated sample
    fills its length only to within its answer and one haystack step (path_eval/tasks/ruler), far
    less than a chunk."""
    return chunk * ((tokens - 1) // chunk) if tokens > 0 else 0


def memory_bound(shape: ModelShape, tokens: int, weight_bytes: int, activation_bytes: int, one_pass: bool,
                 chunk: int = PREFILL_CHUNK) -> int:
    """Bytes the model certainly holds at once while it scores one sample of `tokens` tokens. Each
    term is memory our code allocates on the device and keeps until the last chunk's forward (see
    path_eval/lm/scoring.py, path_eval/models/modeling.py), with P = `held_tokens(tokens)`:

      weights       `ModelShape.weights()` elements in the run's weight dtype (the loader converts
                    every tensor to it);
      token ids     the sample's ids and its attention mask, int64, 16 bytes a token of P;
      our family    the key/value cache of every layer over P tokens (chunked prefill builds it
                    over every chunk before the last), in the activation dtype (the torch backend's
                    PaTH keys are float32, the bound counts the activation dtype); where the Triton
                    backend may score the sample in one pass without a cache (`one_pass`: a GPU),
                    the smaller of that cache and the one pass's residual stream, norm, q, k, v
                    over P tokens;
      transformers  one forward of the base model over the sample: its residual stream, P x hidden.

    Left out, so the bound stays below what a run takes: the last chunk's activations, the logits
    (1024 rows at a time), the weights as read from disk, torch's own memory, the Python process."""
    held = held_tokens(tokens, chunk)
    cache = shape.cache_per_token()
    if not shape.own_family:
        per_token = shape.one_pass_per_token()
    else:
        per_token = min(cache, shape.one_pass_per_token()) if one_pass else cache
    return shape.weights() * weight_bytes + held * (2 * TOKEN_ID_BYTES + per_token * activation_bytes)


def largest_reachable(shape: ModelShape, available: int, weight_bytes: int, activation_bytes: int, one_pass: bool,
                      chunk: int = PREFILL_CHUNK) -> int | None:
    """The most tokens a sample may have with its bound within `available` bytes (the bound grows a
    chunk at a time); None where the weights alone exceed it."""
    fixed = memory_bound(shape, 0, weight_bytes, activation_bytes, one_pass, chunk)
    if fixed > available:
        return None
    per_chunk = memory_bound(shape, chunk + 1, weight_bytes, activation_bytes, one_pass, chunk) - fixed
    return chunk * ((available - fixed) // per_chunk + 1) if per_chunk else None


def cpu_available_memory() -> tuple[int, str]:
    """Bytes the CPU's memory has available and what that figure is: MemAvailable of /proc/meminfo
    (what the kernel can give without swapping) plus SwapFree (a run that swaps is slow, not
    killed), else the total memory where there is no /proc."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
        if "MemAvailable" in fields:
            kib = int(fields["MemAvailable"].split()[0]) + int(fields.get("SwapFree", "0 kB").split()[0])
            return kib * 1024, "available now, swap included (other processes may take some of it)"
    except (OSError, ValueError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "in all"


def triton_may_run(device: str, attention: str | None) -> bool:
    """Whether our family may run on the Triton kernels: the CUDA default, or asked for."""
    return attention == "triton" or (device.startswith("cuda") and attention is None)


def longest_samples(plan: ResolvedPlan) -> dict[str, tuple[int, int]]:
    """Per model name, the tokens of its longest sample (the kind's `context` of the item's length)
    and that length; items of a kind without lengths (lm-eval tasks) are not counted."""
    longest: dict[str, tuple[int, int]] = {}
    for item in plan.items:
        context = KINDS[item.kind].context
        if item.length is None or context is None:
            continue
        for name in item.models:
            if context(item.length) > longest.get(name, (0, 0))[0]:
                longest[name] = (context(item.length), item.length)
    return longest


def check_index_width(plan: ResolvedPlan, device: str, attention: str | None) -> None:
    """A sample within the Triton kernels' int32 token counts wherever they may run, or one line."""
    if not triton_may_run(device, attention):
        return
    longest = longest_samples(plan)
    for model in plan.models:
        tokens, length = longest.get(model.name, (0, 0))
        if tokens >= TRITON_TOKEN_LIMIT and ModelShape.of(folder_config(model.path)).own_family:
            raise PathEvalError(f"length {length} gives samples of {tokens} tokens, and the triton attention "
                                f"kernels count tokens in int32 (below {TRITON_TOKEN_LIMIT}): give shorter --lengths")


def folder_config(folder: Path) -> dict:
    """The config.json of a checkpoint folder as read; {} where there is none (a hub model's cache)."""
    file = Path(folder) / "config.json"
    return read_config(file) if file.is_file() else {}


def check_memory(plan: ResolvedPlan, device: str, dtype: str | None, attention: str | None, available: int,
                 what: str) -> None:
    """Each model's longest sample within `available` bytes by `memory_bound`, or one error line
    with both figures and the largest length that fits."""
    one_pass = device.startswith("cuda") and triton_may_run(device, attention)
    longest = longest_samples(plan)
    for model in plan.models:
        tokens, length = longest.get(model.name, (0, 0))
        check_model_memory(model.name, ModelShape.of(folder_config(model.path)), tokens, tokens - length, device,
                           dtype, (available, what), one_pass=one_pass, doing=f"score a sample of length {length}",
                           option="--lengths (or --max-length)")


def check_model_memory(name: str, shape: ModelShape, tokens: int, extra: int, device: str, dtype: str | None,
                       memory: tuple[int, str], *, one_pass: bool, doing: str, option: str) -> None:
    """One model's `tokens`-long sequence within the available `memory` (bytes, what that figure is),
    or one error line with both figures and the largest `option` that fits (`extra`: the tokens the
    sequence holds beyond that option's value, a BOS say)."""
    sizes = element_bytes(dtype, device)
    if sizes is None:
        return  # an unknown --dtype: the loader names the choices
    available, what = memory
    need = memory_bound(shape, tokens, *sizes, one_pass)
    if need <= available:
        return
    where = f"{device} has {available / GIB:.2f} GiB {what}"
    precision = dtype or f"{default_dtype_name(device)}, the {device} default"
    most = largest_reachable(shape, available, *sizes, one_pass)
    if most is None or most - extra < 1:
        raise PathEvalError(f"model {name}'s weights alone need at least {need / GIB:.2f} GiB in {precision}, and "
                            f"{where}: run it on a device with more memory")
    raise PathEvalError(f"model {name} needs at least {need / GIB:.2f} GiB to {doing} in {precision} (the rule: "
                        f"docs/models.md#memory), and {where}: give {option} of at most {most - extra}, or a "
                        "device with more memory")


def available_memory(device: str) -> tuple[int, str]:
    """Bytes `device` has for a run and what that figure is; for a GPU this imports torch."""
    if device == "cpu":
        return cpu_available_memory()
    import torch

    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return free, "free"


def check_generation_reach(name: str, folder: Path, new_tokens: int, device: str, dtype: str | None) -> None:
    """A generation of `new_tokens` tokens (after at least one prompt token) within `device`'s memory:
    decoding keeps every token in the cache, so the bound is a sample of that many tokens."""
    check_model_memory(name, ModelShape.of(folder_config(folder)), new_tokens + 1, 1, device, dtype,
                       available_memory(device), one_pass=False, doing=f"generate {new_tokens} tokens",
                       option="--max-new-tokens")


def check_weights_reach(name: str, folder: Path, device: str, dtype: str | None) -> None:
    """The weights config.json states within `device`'s memory before they are allocated (`inspect`;
    a run's own check counts them with its samples): a config of a million layers would otherwise
    build for minutes and then die of memory."""
    check_model_memory(name, ModelShape.of(folder_config(folder)), 0, 0, device, dtype, available_memory(device),
                       one_pass=False, doing="load", option="")


# What each sample of a sampled task certainly costs in the host's memory, which holds a (task, length,
# seed)'s samples at once (lm-eval builds a task's documents together): its document, a Python dict
# (sys.getsizeof({}) is 64 bytes), its text and tokens not counted.
SAMPLE_BYTES = 64


def check_sample_counts(plan: ResolvedPlan) -> None:
    """Each sampled task's samples per seed within the host's memory, or one error line: a count
    no machine holds would otherwise generate until killed."""
    available, what = cpu_available_memory()
    for item in plan.items:
        if item.samples is not None and item.samples * SAMPLE_BYTES > available:
            raise PathEvalError(f"task {item.task} makes {item.samples} samples per seed, which need at least "
                                f"{item.samples * SAMPLE_BYTES / GIB:.2f} GiB of the host's memory (a document of "
                                f"{SAMPLE_BYTES} bytes each at the least), and it has {available / GIB:.2f} GiB {what}: "
                                f"give the suite's `samples:` (or --limit) of at most {available // SAMPLE_BYTES}")


def check_reach(plan: ResolvedPlan, device: str, dtype: str | None = None, attention: str | None = None) -> None:
    """Before torch imports: the samples the host holds, the kernels' index width, and on the CPU
    its memory."""
    check_sample_counts(plan)
    check_index_width(plan, device, attention)
    if device == "cpu":
        check_memory(plan, device, dtype, attention, *cpu_available_memory())


def check_gpu_reach(plan: ResolvedPlan, device: str, dtype: str | None = None, attention: str | None = None) -> None:
    """Once torch has imported and before the model loads: on a GPU, its free memory."""
    if device.startswith("cuda"):
        check_memory(plan, device, dtype, attention, *available_memory(device))
