"""The decoder as a transformers `PreTrainedModel`: `save_pretrained`, `AutoModelForCausalLM`, and
the weight initialisation the random checkpoints (`random_checkpoint`, the tests') draw from.

The network and its forward are `path_eval.models.modeling`'s; these classes add transformers'
machinery around them. Evaluation loads the plain `CausalDecoder`, so that a run does not import
transformers' modeling code; importing this module registers 'path_eval' with the Auto classes.
"""
from __future__ import annotations

import torch.nn as nn
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel

from path_eval.models.config import PathEvalConfig
from path_eval.models.modeling import CausalDecoder, DecoderStack, RMSNorm


class PathEvalPreTrainedModel(PreTrainedModel):
    config_class = PathEvalConfig
    base_model_prefix = "model"
    _no_split_modules = ["DecoderLayer"]

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Conv1d, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, RMSNorm):
            nn.init.ones_(module.weight)


class PathEvalModel(DecoderStack, PathEvalPreTrainedModel):
    def __init__(self, config: PathEvalConfig):
        PathEvalPreTrainedModel.__init__(self, config)
        self.build(config)
        self.post_init()


class PathEvalForCausalLM(CausalDecoder, PathEvalPreTrainedModel):
    """`CausalDecoder` with transformers' `save_pretrained`, `from_pretrained` and initialisation.
    The backbone is built (and initialised by its own `post_init`) before the head, as the saved
    random checkpoints were drawn."""

    _tied_weights_keys = {"lm_head.weight": "model.embeddings.weight"}

    def __init__(self, config: PathEvalConfig):
        PathEvalPreTrainedModel.__init__(self, config)
        self.build(config, PathEvalModel(config))
        self.post_init()


AutoConfig.register(PathEvalConfig.model_type, PathEvalConfig, exist_ok=True)
AutoModelForCausalLM.register(PathEvalConfig, PathEvalForCausalLM, exist_ok=True)
