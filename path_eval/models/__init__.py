"""The model family (rope, nope, fox, path, path_fox), its cache, loading and generation."""
from path_eval.models.cache import DecoderCache
from path_eval.models.config import VARIANTS, PathEvalConfig
from path_eval.models.modeling import PathEvalForCausalLM

__all__ = ["VARIANTS", "PathEvalConfig", "PathEvalForCausalLM", "DecoderCache"]


def _register_with_transformers() -> None:
    """AutoConfig / AutoModelForCausalLM learn 'path_eval' (fla's own names are left to fla)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    AutoConfig.register(PathEvalConfig.model_type, PathEvalConfig, exist_ok=True)
    AutoModelForCausalLM.register(PathEvalConfig, PathEvalForCausalLM, exist_ok=True)


_register_with_transformers()
