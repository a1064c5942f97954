"""The gated FFN against Hugging Face transformers' LLaMA MLP, given the same weights.

transformers' model classes are imported inside the tests: at the top of the module they
would cost every test process about 4 s before its first test.
"""

import pytest
import torch

from onelayer import FeedForward, count_parameters, ffn_parameter_formula
from onelayer.activations import get_activation
from onelayer.ffn import gated_d_ff


def llama_mlp_with_our_weights(ffn: FeedForward):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP

    config = LlamaConfig(
        hidden_size=ffn.d_model, intermediate_size=ffn.d_ff, num_attention_heads=2,
        num_key_value_heads=2, hidden_act="silu", mlp_bias=ffn.w1.bias is not None,
    )
    mlp = LlamaMLP(config)
    mlp.gate_proj.load_state_dict(ffn.w1.state_dict())
    mlp.up_proj.load_state_dict(ffn.w3.state_dict())
    mlp.down_proj.load_state_dict(ffn.w2.state_dict())
    return mlp


@pytest.mark.parametrize(("d_model", "d_ff", "bias"), [(8, 21, False), (16, 48, False),
                                                        (8, 12, True)])
def test_swiglu_matches_llama_mlp_with_copied_weights(d_model, d_ff, bias):
    torch.manual_seed(0)
    ffn = FeedForward(d_model, d_ff, activation="silu", gated=True, bias=bias)
    mlp = llama_mlp_with_our_weights(ffn)
    x = torch.randn(3, 7, d_model)
    with torch.no_grad():
        err = (ffn(x) - mlp(x)).abs().max().item()
    assert err < 1e-6
    assert count_parameters(ffn) == count_parameters(mlp)


def test_swiglu_differs_from_llama_mlp_when_a_weight_is_not_copied():
    torch.manual_seed(1)
    ffn = FeedForward(8, 16, activation="silu", gated=True, bias=False)
    mlp = llama_mlp_with_our_weights(ffn)
    with torch.no_grad():
        mlp.up_proj.weight.copy_(ffn.w1.weight)     # gate and value swapped by mistake
        x = torch.randn(4, 8)
        assert (ffn(x) - mlp(x)).abs().max() > 1e-3


def test_llama_7b_width_and_parameter_count():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP

    config = LlamaConfig()  # defaults are LLaMA-7B's
    assert (config.hidden_size, config.hidden_act) == (4096, "silu")
    assert config.intermediate_size == gated_d_ff(config.hidden_size, multiple_of=256) == 11008
    with torch.device("meta"):
        mlp = LlamaMLP(config)
    assert count_parameters(mlp) == ffn_parameter_formula(4096, 11008, bias=False, gated=True)


@pytest.mark.parametrize(("hf_name", "ours"), [("gelu", "gelu"), ("gelu_new", "gelu_tanh"),
                                                ("gelu_pytorch_tanh", "gelu_tanh"),
                                                ("silu", "silu"), ("relu", "relu"),
                                                ("sigmoid", "sigmoid")])
def test_transformers_activations_match_ours(hf_name, ours):
    from transformers.activations import ACT2FN

    x = torch.linspace(-8, 8, 2001, dtype=torch.float64)
    assert (ACT2FN[hf_name](x) - get_activation(ours)(x)).abs().max() < 1e-12


def test_gpt2_uses_the_tanh_gelu():
    from transformers import GPT2Config

    assert GPT2Config().activation_function == "gelu_new"
