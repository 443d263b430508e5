"""`load_model`: fla / flame checkpoints, our own `save_pretrained` output, or any transformers
causal LM, from a local directory, with no conversion step.

fla checkpoints are read by their weight names, not by config flags that older config.json files
lack: a low-rank `w_proj` is recognised from `w_proj.0`, PaTH's q/k norm from `maybe_q_norm`, and a
FoX forget gate saved under its pre-2025-04 name `g_proj` (shape [heads, D], with a bias) is renamed.
"""
from __future__ import annotations

import logging
import math
import threading
from contextlib import contextmanager
from pathlib import Path

import torch

from path_eval.errors import PathEvalError
from path_eval.models.config import PathEvalConfig
from path_eval.models.config_file import FLA_MODEL_TYPES, read_config
from path_eval.models.devices import check_device_and_backend_names
from path_eval.models.modeling import CausalDecoder
from path_eval.models.nan_logits import refuse_nan_logits
from path_eval.models.precisions import AUTOCAST_NAMES, WEIGHT_DTYPE_NAMES, check_dtype_name, default_dtype_name
from path_eval.models.tokenizer import load_tokenizer

DTYPES = {name: getattr(torch, attribute) for name, attribute in WEIGHT_DTYPE_NAMES.items()}
AUTOCAST = {name: getattr(torch, attribute) for name, attribute in AUTOCAST_NAMES.items()}


def resolve_dtype(dtype, device) -> torch.dtype:
    """The weights' dtype. None: float32 on the CPU, bfloat16 on a GPU; an autocast precision: float32."""
    if dtype is None:
        return DTYPES[default_dtype_name(torch.device(device).type)]
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype in AUTOCAST:
        return torch.float32
    check_dtype_name(dtype)
    return DTYPES[dtype]


def autocast_dtype(dtype, device, weights: torch.dtype) -> torch.dtype | None:
    """The dtype forward passes autocast to under an autocast precision (None for a plain dtype), or
    one error line where autocast cannot give what it names: weights other than float32 (autocast
    would compute a float64 model's matmuls in bfloat16 and leave the rest float64), a GPU without
    bfloat16."""
    target = AUTOCAST.get(dtype) if isinstance(dtype, str) else None
    if target is None:
        return None
    if weights != torch.float32:
        raise PathEvalError(f"--dtype {dtype} runs float32 weights under autocast; this model's weights are "
                            f"{str(weights).removeprefix('torch.')}: give --dtype bfloat16 or float32, or a float32 model")
    if torch.device(device).type == "cuda" and not torch.cuda.is_bf16_supported():
        raise PathEvalError(f"--dtype {dtype}: this GPU has no bfloat16: give --dtype float32 or float16")
    return target


def check_device_and_backend(device: str, attention: str | None) -> None:
    """A device this machine has and an attention backend that runs on it, or one error line,
    before anything loads."""
    check_device_and_backend_names(device, attention)
    if torch.device(device).type == "cuda":
        if not torch.cuda.is_available():
            raise PathEvalError(f"--device {device}: this machine has no CUDA GPU that torch can use: give "
                                "--device cpu")
        index = torch.device(device).index
        if index is not None and index >= torch.cuda.device_count():
            raise PathEvalError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA GPU(s): "
                                f"give cuda:0 to cuda:{torch.cuda.device_count() - 1}")


def weight_files(root: Path) -> list[Path]:
    """The checkpoint's weight files, or a one-line error naming what is missing."""
    if (root / "model.safetensors").is_file():
        return [root / "model.safetensors"]
    index = root / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = [root / name for name in sorted(set(read_config(index)["weight_map"].values()))]
        except (KeyError, AttributeError, TypeError):
            raise PathEvalError(f"{index} has no weight_map of tensor names to files: copy the whole checkpoint "
                                "again") from None
        for shard in shards:
            if not shard.is_file():
                raise PathEvalError(f"{shard} is listed in {index.name} but missing: copy the whole checkpoint")
        return shards
    if (root / "pytorch_model.bin").is_file():
        return [root / "pytorch_model.bin"]
    raise PathEvalError(f"no weights in {root}: expected model.safetensors, a sharded model.safetensors.index.json, "
                        "or pytorch_model.bin: copy the checkpoint's weights there")


def read_weight_file(file: Path, *, mmap: bool = False) -> dict[str, torch.Tensor]:
    """The tensors of one weight file by name, or one error line naming it. `mmap`: a pickled file's
    tensors are mapped from disk, not read (checking a file that transformers reads itself)."""
    import pickle
    import zipfile

    from safetensors.torch import load_file

    try:
        if file.suffix == ".safetensors":
            return load_file(file)
        state = torch.load(file, map_location="cpu", weights_only=True, mmap=mmap and zipfile.is_zipfile(file))
    except pickle.UnpicklingError:
        raise PathEvalError(f"{file} holds pickled objects other than tensors, and unpickling those could run code: "
                            "save the weights as safetensors (save_pretrained) where you trust the file") from None
    except Exception as err:  # SafetensorError; a pickle's RuntimeError (a broken zip), EOFError, KeyError...
        raise _unreadable(file, err) from None
    if not isinstance(state, dict):
        raise PathEvalError(f"{file} holds a pickled {type(state).__name__}, not tensors by name: copy the "
                            "checkpoint's weights again, or save them with save_pretrained")
    for key, value in state.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            raise PathEvalError(f"{file} holds {key!r}: {type(value).__name__}, not tensors by name: copy the "
                                "checkpoint's weights again, or save them with save_pretrained")
    return state


def _unreadable(file: Path, err: Exception) -> PathEvalError:
    return PathEvalError(f"{file} cannot be read as weights ({_first_line(err)}): it is truncated or corrupt; copy "
                         "the checkpoint again")


def _first_line(err: Exception, width: int = 120) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0][:width] if lines else 'no message'}"


def read_weights(root: Path) -> dict[str, torch.Tensor]:
    state = {}
    for file in weight_files(root):
        state.update(read_weight_file(file))
    return state


def check_weight_files(root: Path) -> None:
    """Every weight file of a checkpoint that transformers loads opens as weights, or one error line
    naming it (transformers would raise a different traceback for each way a file is broken):
    a safetensors file's header and length, a pickled file mapped from disk, so nothing is read twice."""
    from safetensors import SafetensorError, safe_open

    for file in weight_files(root):
        if file.suffix != ".safetensors":
            read_weight_file(file, mmap=True)
            continue
        try:
            with safe_open(file, framework="pt"):
                pass
        except (SafetensorError, OSError) as err:
            raise _unreadable(file, err) from None


@contextmanager
def config_errors(root: Path):
    """Building a model's config, or the model from it, where config.json parses as JSON but
    describes no model (a field of the wrong type, a zero size, an unknown variant): one line naming
    config.json, never the tokenizer that reads it too or the weights."""
    try:
        yield
    except PathEvalError:
        raise
    except Exception as err:  # TypeError, ValueError, ZeroDivisionError, transformers' validators' own classes
        detail = f"unknown name {err}" if isinstance(err, KeyError) else " ".join(str(err).split())[:200] or \
            type(err).__name__
        raise config_problem(root, detail) from None


def config_problem(root: Path, detail: str) -> PathEvalError:
    """The one line for a config.json that parses but describes no model: what is wrong, and the fix."""
    return PathEvalError(f"{root / 'config.json'} does not describe a model it can build ({detail}): fix that "
                         "field, or copy the checkpoint's config.json again")


# Sizes a config.json states under these names (transformers', fla's and our own families): each a
# whole number above 0 where it is given, or the model built from it is no model of these weights.
SIZE_FIELDS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
               "num_key_value_heads", "num_heads", "num_kv_heads", "head_dim")


# Constants a config.json states under these names, with the least each may be: a NaN or negative
# epsilon or RoPE base builds a model whose every logit is NaN (it would generate nothing and score 0).
NUMBER_FIELDS = {"rms_norm_eps": "of at least 0", "norm_eps": "of at least 0", "layer_norm_eps": "of at least 0",
                 "layer_norm_epsilon": "of at least 0", "rope_theta": "above 0"}


def check_sizes(root: Path, raw: dict) -> None:
    """config.json's sizes and constants, before a model is built from them: a size that is no
    positive whole number (`"4"`, `-1`, `true`), a hidden size that its heads do not divide, or an
    epsilon or RoPE base that is not a finite number of at least its least (NaN, -1) is one line
    naming the field (building would fail deep inside torch, or give NaN logits)."""
    rope = next((raw[key] for key in ("rope_parameters", "rope_scaling") if isinstance(raw.get(key), dict)), {})
    for field, wanted in NUMBER_FIELDS.items():
        for value in (raw.get(field), rope.get(field)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or
                                      not math.isfinite(value) or value < 0 or (value == 0 and wanted == "above 0")):
                raise config_problem(root, f"{field} is {value!r}, not a finite number {wanted}")
    for field in SIZE_FIELDS:
        value = raw.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise config_problem(root, f"{field} is {value!r}, not a whole number above 0")
    heads = raw.get("num_attention_heads") or raw.get("num_heads")
    kv_heads = raw.get("num_key_value_heads") or raw.get("num_kv_heads")
    if heads and raw.get("head_dim") is None and raw.get("hidden_size") and raw["hidden_size"] % heads:
        raise config_problem(root, f"hidden_size {raw['hidden_size']} is not divisible by its {heads} attention heads")
    if heads and kv_heads and heads % kv_heads:
        raise config_problem(root, f"the {heads} attention heads do not divide into groups of the {kv_heads} "
                                   "key-value heads")


def path_eval_config(root: Path, raw: dict) -> PathEvalConfig:
    """Our own config.json as PathEvalConfig, or one line naming config.json."""
    with config_errors(root):
        return PathEvalConfig.from_dict({k: v for k, v in raw.items() if k != "model_type"})


def transformers_config(root: Path):
    """A transformers checkpoint's config, or one line naming config.json."""
    from transformers import AutoConfig

    with config_errors(root):
        return AutoConfig.from_pretrained(root, local_files_only=True)


def embedding_rows(root: Path) -> int | None:
    """The rows of the token embedding the checkpoint's config.json states (its vocab_size; the
    loader refuses weights of another shape), or None where there is no config.json or its model
    type is unknown (loading says why). A config.json that does not describe a model fails here, in
    one line naming it."""
    if not (root / "config.json").is_file():
        return None
    raw = read_config(root / "config.json")
    check_sizes(root, raw)
    model_type = raw.get("model_type")
    if model_type == PathEvalConfig.model_type:
        return path_eval_config(root, raw).vocab_size
    if model_type in FLA_MODEL_TYPES:  # a vocab_size the loader drops (null) is PathEvalConfig's default
        return raw.get("vocab_size") or PathEvalConfig().vocab_size
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # its import reads every model's source

    if model_type not in CONFIG_MAPPING:
        return None
    rows = getattr(transformers_config(root).get_text_config(), "vocab_size", None)
    return rows if isinstance(rows, int) else None


def _has(state, suffix: str) -> bool:
    return f"model.layers.0.{suffix}" in state


def config_from_fla(raw: dict, state: dict[str, torch.Tensor]) -> PathEvalConfig:
    """Translate an fla config.json (+ the weight names present) into ours."""
    model_type = raw["model_type"]
    for field, allowed in (("attnres_block_size", None), ("window_size", None)):
        if raw.get(field) is not allowed:
            raise PathEvalError(f"config.json sets {field}={raw[field]!r}: path-eval supports only {field}=null")
    if raw.get("hidden_act", "swish") not in ("swish", "silu"):
        raise PathEvalError(f"config.json sets hidden_act={raw['hidden_act']!r}: only swish (SwiGLU) is supported")
    if raw.get("elementwise_affine", True) is False:
        raise PathEvalError("config.json sets elementwise_affine=false: only norms with weights are supported")
    common = {name: raw[name] for name in (
        "vocab_size", "hidden_size", "num_hidden_layers", "num_heads", "num_kv_heads", "hidden_ratio",
        "intermediate_size", "norm_eps", "bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings",
        "qkv_bias", "max_position_embeddings") if raw.get(name) is not None}
    if model_type == "path_attn":
        return PathEvalConfig(
            attention="path_fox" if raw.get("use_forget_gate") else "path", **common,
            low_rank_w=_has(state, "attn.w_proj.0.weight"),
            use_w_shortconv=_has(state, "attn.w_conv1d.weight"),
            conv_bias=_has(state, "attn.w_conv1d.bias"),
            qk_norm=_has(state, "attn.maybe_q_norm.weight"))
    if model_type == "forgetting_transformer":
        return PathEvalConfig(attention="fox", **common, qk_norm=_has(state, "attn.q_norm.weight"),
                              use_output_gate=_has(state, "attn.g_proj.weight") and _has(state, "attn.f_proj.weight"))
    theta = raw.get("rope_theta", 10000.0)
    return PathEvalConfig(attention="nope" if theta is None else "rope", rope_theta=theta or 10000.0, **common,
                          qk_norm=_has(state, "attn.q_norm.weight"))


# transformers' Llama names -> the harness's (fla's) for the same tensors
LLAMA_NAMES = (("model.embed_tokens.", "model.embeddings."), (".input_layernorm.", ".attn_norm."),
               (".self_attn.", ".attn."), (".post_attention_layernorm.", ".mlp_norm."))


def config_from_llama(raw: dict) -> PathEvalConfig:
    """A Llama config.json as the harness's RoPE model: only what that model computes the same way
    (rotate-half RoPE of unscaled frequencies, bias-free projections, SwiGLU, RMSNorm), else one line."""
    heads = raw["num_attention_heads"]
    unsupported = [(field, raw[field]) for field in ("rope_scaling", "attention_bias", "mlp_bias") if raw.get(field)]
    rope = raw.get("rope_parameters")
    if isinstance(rope, dict) and rope.get("rope_type", "default") != "default":
        unsupported.append(("rope_parameters.rope_type", rope["rope_type"]))
    if raw.get("hidden_act", "silu") not in ("silu", "swish"):
        unsupported.append(("hidden_act", raw["hidden_act"]))
    if raw.get("head_dim") not in (None, raw["hidden_size"] // heads):
        unsupported.append(("head_dim", raw["head_dim"]))
    if unsupported:
        field, value = unsupported[0]
        raise PathEvalError(f"config.json sets {field}={value!r}, which the harness's RoPE model does not compute: "
                            "leave the attention backend unset to load it through transformers")
    theta = raw.get("rope_theta", (rope or {}).get("rope_theta", 10000.0))
    return PathEvalConfig(
        attention="rope", rope_theta=theta, vocab_size=raw["vocab_size"], hidden_size=raw["hidden_size"],
        num_hidden_layers=raw["num_hidden_layers"], num_heads=heads,
        num_kv_heads=raw.get("num_key_value_heads") or heads, intermediate_size=raw["intermediate_size"],
        norm_eps=raw.get("rms_norm_eps", 1e-6), tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        max_position_embeddings=raw.get("max_position_embeddings"),
        **{name: raw[name] for name in ("bos_token_id", "eos_token_id", "pad_token_id") if isinstance(raw.get(name), int)})


def rename_llama(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    renamed = {}
    for key, value in state.items():
        for old, new in LLAMA_NAMES:
            key = key.replace(old, new)
        renamed[key] = value
    return renamed


def rename_legacy_fox_gate(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """fla checkpoints saved before 2025-04 hold FoX's forget gate as `attn.g_proj` (with a bias),
    under fla's current name `attn.f_proj` here."""
    if _has(state, "attn.f_proj.weight") or not _has(state, "attn.g_proj.bias"):
        return state
    return {key.replace(".attn.g_proj.", ".attn.f_proj."): value for key, value in state.items()}


def tensor_mismatch(root: Path, missing, unexpected, what: str) -> PathEvalError | None:
    """One line naming (the first few of) the tensors `what` (config.json's architecture) needs and
    the weights lack, and those the weights hold and it has no place for; None where both are empty.
    Loading would otherwise start the missing ones from random values."""
    missing, unexpected = sorted(missing), sorted(unexpected)
    if not missing and not unexpected:
        return None
    parts = []
    if missing:
        parts.append(f"lack tensors that {what} implies ({_some(missing)})")
    if unexpected:
        parts.append(f"hold tensors this architecture has no place for ({_some(unexpected)})")
    return PathEvalError(f"the weights in {root} {' and '.join(parts)}: config.json and the weights do not belong "
                         "together; give the config.json saved with these weights, or copy the whole checkpoint again")


def _some(names: list[str], shown: int = 3) -> str:
    return f"{len(names)}, e.g. {', '.join(names[:shown])}{', ...' if len(names) > shown else ''}"


def shape_mismatch(root: Path, key: str, found, implied) -> PathEvalError:
    return PathEvalError(f"{key} in {root} has shape {list(found)} but config.json implies {list(implied)}: the "
                         "weights do not match the config; give the config.json saved with these weights, or copy "
                         "the whole checkpoint again")


# torch.nn.init's in-place initialisers as torch defines them, taken once: what `uninitialised_modules`
# puts back, whatever else had patched them when it began.
TORCH_INITIALISERS = {name: function for name, function in vars(torch.nn.init).items()
                      if name.endswith("_") and not name.startswith("_") and callable(function)}
_initialisers_replaced = threading.Lock()


def _left_as_is(tensor, *args, **kwargs):
    return tensor


@contextmanager
def uninitialised_modules():
    """torch's modules built without their random initialisation, for a network whose every weight
    is assigned from a checkpoint next: on the meta device each init function runs through a
    reference implementation whose first call imports torch._dynamo (1.5 s on a 2-core CPU). The
    initialisers are process-wide names: one holder at a time, and at the end each name this
    replaced is torch's own again (one another patch put there meanwhile is left to its owner)."""
    with _initialisers_replaced:
        for name in TORCH_INITIALISERS:
            setattr(torch.nn.init, name, _left_as_is)
        try:
            yield
        finally:
            for name, function in TORCH_INITIALISERS.items():
                if getattr(torch.nn.init, name) is _left_as_is:
                    setattr(torch.nn.init, name, function)


def build_model(config: PathEvalConfig, state: dict[str, torch.Tensor], root: Path, dtype, device) -> CausalDecoder:
    with config_errors(root), torch.device("meta"), uninitialised_modules():
        model = CausalDecoder(config)
    expected = {key: tuple(p.shape) for key, p in model.state_dict().items()}
    if config.tie_word_embeddings:
        expected.pop("lm_head.weight", None)
        state = {k: v for k, v in state.items() if k != "lm_head.weight"}
    mismatch = tensor_mismatch(root, [key for key in expected if key not in state],
                               [key for key in state if key not in expected], "config.json")
    if mismatch:
        raise mismatch
    for key, shape in expected.items():
        if tuple(state[key].shape) != shape:
            raise shape_mismatch(root, key, state[key].shape, shape)
    model.load_state_dict({k: v.to(dtype) for k, v in state.items()}, strict=False, assign=True)
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embeddings.weight
    return model.to(device).eval()


def load_model(path, *, device="cpu", dtype=None, attention: str | None = None):
    """Load the checkpoint in directory `path` -> (model, tokenizer).

    attention: a path-eval backend name ("torch", "reference", ...); None picks the fastest for
    `device`. Plain transformers models (Llama, Mistral, Qwen...) load through transformers and
    keep their own attention; a Llama given a backend loads into the harness's RoPE model instead
    (its kernels and its decoding), where its config is one that model computes.
    """
    return load_network(path, device=device, dtype=dtype, attention=attention), load_tokenizer(Path(path))


def load_network(path, *, device="cpu", dtype=None, attention: str | None = None):
    """`load_model`'s model without its tokenizer, for a caller that holds the tokenizer already."""
    root = Path(path)
    if not root.is_dir():
        raise PathEvalError(f"model path {path} is not a directory: give a checkpoint folder with config.json and weights")
    if not (root / "config.json").is_file():
        raise PathEvalError(f"{root} has no config.json: give the checkpoint folder itself")
    raw = read_config(root / "config.json")
    check_sizes(root, raw)
    model_type = raw.get("model_type")
    dtype = resolve_dtype(dtype, device)
    check_device_and_backend(str(device), attention)

    if model_type in FLA_MODEL_TYPES or model_type == PathEvalConfig.model_type:
        state = read_weights(root)
        if model_type == "forgetting_transformer":
            state = rename_legacy_fox_gate(state)
        if model_type == PathEvalConfig.model_type:
            config = path_eval_config(root, raw)
        else:
            with config_errors(root):
                config = config_from_fla(raw, state)
        model = build_model(config, state, root, dtype, device)
        model.attention_backend = attention
    elif model_type == "llama" and attention is not None:  # opted in: the harness's kernels and decoding
        with config_errors(root):
            config = config_from_llama(raw)
        model = build_model(config, rename_llama(read_weights(root)), root, dtype, device)
        model.attention_backend = attention
    else:
        model = _load_transformers_model(root, model_type, dtype, device, attention)
    refuse_nan_logits(model, root)
    return model


def _load_transformers_model(root: Path, model_type, dtype, device, attention):
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if model_type not in CONFIG_MAPPING or model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise PathEvalError(
            f"unknown model_type {model_type!r} in {root / 'config.json'}: path-eval loads fla's "
            f"{', '.join(FLA_MODEL_TYPES)}, its own '{PathEvalConfig.model_type}', and transformers causal LMs "
            "(llama, mistral, qwen2, ...): give a checkpoint of one of these")
    if attention is not None:
        raise PathEvalError(f"attention backend {attention!r} applies to path-eval model families and Llama; {root} "
                            f"is a transformers {model_type!r} model, which keeps its own attention: leave it unset")
    config = transformers_config(root)
    architectures = [config.architectures] if isinstance(config.architectures, str) else config.architectures or []
    not_causal = [name for name in architectures if name not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values()]
    if not_causal:
        raise PathEvalError(f"{root / 'config.json'} names the architecture {not_causal[0]}, which is not a causal "
                            "language model transformers knows: path-eval scores causal LMs; give a causal LM "
                            "checkpoint (its config.json names an architecture such as LlamaForCausalLM)")
    check_weight_files(root)
    with _quiet_transformers_loading(), config_errors(root):  # the weights were read above: what fails is the config
        model, info = AutoModelForCausalLM.from_pretrained(root, config=config, dtype=dtype, local_files_only=True,
                                                           output_loading_info=True, ignore_mismatched_sizes=True)
    # transformers leaves out of these what is tied or a buffer by definition (a tied lm_head, rotary inv_freq)
    mismatch = tensor_mismatch(root, info["missing_keys"], info["unexpected_keys"], f"config.json's {model_type} model")
    if mismatch:
        raise mismatch
    if info["mismatched_keys"]:
        key, found, implied = sorted(info["mismatched_keys"])[0]
        raise shape_mismatch(root, key, found, implied)
    return model.to(device).eval()


class _LoadReportFilter(logging.Filter):
    """transformers' load report (a table of missing, unexpected and resized tensors): every key it
    lists is refused in one line after loading."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "LOAD REPORT" not in record.getMessage()


@contextmanager
def _quiet_transformers_loading():
    """No load report and no "Loading weights" bar: a refused checkpoint prints one line, and our own
    families load without a bar too."""
    from transformers.utils import logging as transformers_logging

    logger = logging.getLogger("transformers.modeling_utils")
    report = _LoadReportFilter()
    bar = transformers_logging.is_progress_bar_enabled()
    logger.addFilter(report)
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        logger.removeFilter(report)
        if bar:
            transformers_logging.enable_progress_bar()
