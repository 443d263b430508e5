"""A Llama checkpoint given an attention backend loads into the harness's RoPE model: the same
logits and greedy tokens as transformers' own Llama, in float64 on the CPU (the definition being
transformers' model), and one line for a config that model does not compute."""
import pytest
import torch

from path_eval.errors import PathEvalError
from path_eval.models.loading import load_network
from path_eval.models.modeling import CausalDecoder


def save_llama(path, **options):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, rope_theta=5000.0, rms_norm_eps=1e-5,
                         max_position_embeddings=256, **options)
    model = LlamaForCausalLM(config).to(torch.float64)
    for parameter in model.parameters():  # norms away from 1, so that a swapped norm weight shows
        torch.nn.init.normal_(parameter, std=0.3)
    model.save_pretrained(path)
    return model.eval()


@pytest.mark.parametrize("tied", [False, True])
def test_logits_and_greedy_tokens_equal_transformers_llama(tmp_path, tied):
    reference = save_llama(tmp_path, tie_word_embeddings=tied)
    ours = load_network(tmp_path, dtype=torch.float64, attention="torch")
    assert isinstance(ours, CausalDecoder) and ours.config.attention == "rope"
    ids = torch.randint(0, 96, (3, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected, got = reference(input_ids=ids).logits, ours(input_ids=ids).logits
    # transformers computes RoPE's angles in float32 whatever the model's dtype (the harness in the
    # model's): a float32-sized difference, where a misplaced tensor would be of the logits' own size
    assert (got - expected).abs().max() < 1e-6 * expected.abs().max()
    mask = torch.ones_like(ids)
    mask[0, :7] = 0  # a left-padded row
    with torch.no_grad():
        theirs = reference.generate(input_ids=ids, attention_mask=mask, max_new_tokens=12, do_sample=False,
                                    pad_token_id=0, eos_token_id=None)
        mine = ours.generate(ids, mask, max_new_tokens=12, pad_token_id=0, eos_token_id=None)
    assert torch.equal(mine[:, 40:], theirs[:, 40:])


@pytest.mark.parametrize("options,field", [
    ({"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, "rope"),
    ({"attention_bias": True}, "attention_bias"), ({"mlp_bias": True}, "mlp_bias"),
    ({"hidden_act": "gelu"}, "hidden_act")])
def test_a_config_the_harness_does_not_compute_is_one_line(tmp_path, options, field):
    save_llama(tmp_path, **options)
    with pytest.raises(PathEvalError, match=f"config.json sets {field}.*leave the attention backend unset") as error:
        load_network(tmp_path, dtype=torch.float64, attention="torch")
    assert "\n" not in str(error.value)
    assert load_network(tmp_path, dtype=torch.float64).config.model_type == "llama"  # transformers' own still loads
