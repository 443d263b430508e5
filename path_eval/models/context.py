"""The context length a checkpoint states, read beside the model config: the plan fixes each
model's length from it before any weights load, and the lm-eval adapter falls back on it. And the
tokens per forward of a long prompt, which the plan's memory rule reads before torch imports."""
from __future__ import annotations

from pathlib import Path

from path_eval.errors import PathEvalError

PREFILL_CHUNK = 8192  # tokens per forward of a long prompt, the cache carrying the earlier ones

LENGTH_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "max_seq_len")

NO_CONTEXT_LENGTH = ("the checkpoint's config.json states no context length: pass --max-length N (lm-eval's hf "
                     "model would silently use 2048)")


def checkpoint_max_length(config) -> int | None:
    """The context length a checkpoint's config states, if any."""
    for field in LENGTH_FIELDS:
        value = getattr(config, field, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def stated_context_length(path: Path) -> int | None:
    """The context length the checkpoint's config states, read as the model loader reads the config
    (no weights; a config.json that does not parse fails here, in one line). None where there is no
    config.json or its model type is unknown: loading then says why in one line."""
    from path_eval.models.config import PathEvalConfig
    from path_eval.models.loading import FLA_MODEL_TYPES, path_eval_config, read_config, transformers_config

    if not (path / "config.json").is_file():
        return None
    raw = read_config(path / "config.json")
    model_type = raw.get("model_type")
    if model_type == PathEvalConfig.model_type:
        config = path_eval_config(path, raw)
    elif model_type in FLA_MODEL_TYPES:  # of an fla config's length fields, the loader keeps this one
        config = PathEvalConfig(max_position_embeddings=raw.get("max_position_embeddings"))
    else:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        if model_type not in CONFIG_MAPPING:
            return None
        config = transformers_config(path)
    length = checkpoint_max_length(config)
    if not length:
        raise PathEvalError(NO_CONTEXT_LENGTH)
    return length
