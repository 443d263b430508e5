"""The configuration of the one decoder family; every variant differs only in its attention."""
from __future__ import annotations

from transformers import PretrainedConfig

from path_eval.models.config_file import PATH_EVAL_MODEL_TYPE

VARIANTS = ("rope", "nope", "fox", "path", "path_fox")


def default_intermediate_size(hidden_size: int, hidden_ratio: float) -> int:
    """fla's GatedMLP rule: 2/3 of hidden * ratio, rounded up to a multiple of 256."""
    size = int(hidden_size * hidden_ratio * 2 / 3)
    return 256 * ((size + 255) // 256)


class PathEvalConfig(PretrainedConfig):
    """Field names follow fla's configs so that fla checkpoints map onto it one to one.

    attention: rope | nope | fox | path | path_fox.
    qk_norm: per-head RMSNorm of q and k (eps 1e-5); PaTH names it maybe_q_norm/maybe_k_norm.
    use_output_gate: FoX's sigmoid output gate.  low_rank_w: PaTH's w_proj as D -> 32 -> kv_dim.
    """

    model_type = PATH_EVAL_MODEL_TYPE
    keys_to_ignore_at_inference = ["past_key_values"]

    def __init__(
        self,
        attention: str = "path",
        vocab_size: int = 32000,
        hidden_size: int = 2048,
        num_hidden_layers: int = 24,
        num_heads: int = 32,
        num_kv_heads: int | None = None,
        hidden_ratio: float = 4,
        intermediate_size: int | None = None,
        norm_eps: float = 1e-6,
        qk_norm: bool = False,
        qkv_bias: bool = False,
        use_output_gate: bool = False,
        low_rank_w: bool = True,
        w_rank: int = 32,
        use_w_shortconv: bool = True,
        conv_size: int = 3,
        conv_bias: bool = False,
        rope_theta: float = 10000.0,
        max_position_embeddings: int | None = None,
        bos_token_id: int = 1,
        eos_token_id: int = 2,
        pad_token_id: int | None = None,
        tie_word_embeddings: bool = False,
        **kwargs,
    ):
        if attention not in VARIANTS:
            raise ValueError(f"attention must be one of {VARIANTS}, got {attention!r}")
        self.attention = attention
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads or num_heads
        self.hidden_ratio = hidden_ratio
        self.intermediate_size = intermediate_size or default_intermediate_size(hidden_size, hidden_ratio)
        self.norm_eps = norm_eps
        self.qk_norm = qk_norm
        self.qkv_bias = qkv_bias
        self.use_output_gate = use_output_gate
        self.low_rank_w = low_rank_w
        self.w_rank = w_rank
        self.use_w_shortconv = use_w_shortconv
        self.conv_size = conv_size
        self.conv_bias = conv_bias
        self.rope_theta = rope_theta
        self.max_position_embeddings = max_position_embeddings
        super().__init__(bos_token_id=bos_token_id, eos_token_id=eos_token_id, pad_token_id=pad_token_id,
                         tie_word_embeddings=tie_word_embeddings, **kwargs)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads
