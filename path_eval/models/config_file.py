"""A checkpoint's config.json read as data, without torch or transformers: the plan stage reads it
before the model stack imports (the context length it states, the sizes that bound a run's
memory), and the loader reads it the same way."""
from __future__ import annotations

import json
from pathlib import Path

from path_eval.errors import PathEvalError

FLA_MODEL_TYPES = {"path_attn": "PaTH / PaTH-FoX", "forgetting_transformer": "FoX", "transformer": "Transformer (RoPE)"}
PATH_EVAL_MODEL_TYPE = "path_eval"  # our own save_pretrained output (PathEvalConfig.model_type)


def read_config(file: Path) -> dict:
    """A checkpoint's config.json as a dict, or one error line naming the file."""
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PathEvalError(f"{file} is not valid JSON ({err}): copy the checkpoint's config.json again") from None
    if not isinstance(raw, dict):
        raise PathEvalError(f"{file} is not a JSON object: copy the checkpoint's config.json again")
    return raw
