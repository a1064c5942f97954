import pytest
import torch
from torch import nn

from onelayer import FeedForward, count_parameters, ffn_parameter_formula, trace_ffn


def shared_weight_reference(ffn: FeedForward, act: nn.Module) -> nn.Sequential:
    ref = nn.Sequential(nn.Linear(ffn.d_model, ffn.d_ff), act, nn.Linear(ffn.d_ff, ffn.d_model))
    ref[0].load_state_dict(ffn.w1.state_dict())
    ref[2].load_state_dict(ffn.w2.state_dict())
    return ref


@pytest.mark.parametrize(("activation", "torch_act"), [("relu", nn.ReLU()), ("gelu", nn.GELU())])
def test_matches_nn_sequential_with_shared_weights(activation, torch_act):
    torch.manual_seed(0)
    ffn = FeedForward(8, 32, activation=activation)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        err = (ffn(x) - shared_weight_reference(ffn, torch_act)(x)).abs().max().item()
    assert err < 1e-6


def test_matches_formula_written_by_hand():
    torch.manual_seed(1)
    ffn = FeedForward(4, 16, activation="relu")
    x = torch.randn(3, 4)
    W1, b1 = ffn.w1.weight.T, ffn.w1.bias
    W2, b2 = ffn.w2.weight.T, ffn.w2.bias
    expected = torch.clamp(x @ W1 + b1, min=0) @ W2 + b2
    with torch.no_grad():
        assert torch.allclose(ffn(x), expected, atol=1e-6)


def test_trace_keeps_every_intermediate():
    torch.manual_seed(2)
    ffn = FeedForward(4, 16)
    x = torch.randn(2, 3, 4)
    t = trace_ffn(ffn, x)
    assert t.pre.shape == t.post.shape == (2, 3, 16)
    assert torch.allclose(t.out, ffn(x).detach())


@pytest.mark.parametrize(("d_model", "d_ff", "bias", "expected"), [
    (512, 2048, True, 2_099_712),
    (512, 2048, False, 2_097_152),
    (768, 3072, True, 4_722_432),
])
def test_parameter_count_module_and_formula(d_model, d_ff, bias, expected):
    assert count_parameters(FeedForward(d_model, d_ff, bias=bias)) == expected
    assert ffn_parameter_formula(d_model, d_ff, bias=bias) == expected


def test_position_wise_no_mixing_between_tokens():
    torch.manual_seed(3)
    ffn = FeedForward(4, 16)
    x = torch.randn(5, 4)
    jac = torch.autograd.functional.jacobian(ffn, x)  # [5, 4, 5, 4]
    off_diagonal = jac.permute(0, 2, 1, 3)[~torch.eye(5, dtype=torch.bool)]
    assert off_diagonal.abs().max() == 0
    perm = torch.tensor([4, 0, 3, 1, 2])
    with torch.no_grad():
        assert torch.equal(ffn(x[perm]), ffn(x)[perm])


def test_dropout_is_active_only_in_training():
    torch.manual_seed(4)
    ffn = FeedForward(4, 64, dropout=0.5)
    x = torch.randn(8, 4)
    ffn.eval()
    assert torch.equal(ffn(x), ffn(x))
    ffn.train()
    assert not torch.equal(ffn(x), ffn(x))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"d_model": 0, "d_ff": 16}, "d_model 应为正整数，实际为 0"),
    ({"d_model": 4, "d_ff": -1}, "d_ff 应为正整数，实际为 -1"),
    ({"d_model": 4.0, "d_ff": 16}, "d_model 应为正整数，实际为 4.0"),
    ({"d_model": 4, "d_ff": 16, "activation": "tanh"}, "activation 应为"),
    ({"d_model": 4, "d_ff": 16, "dropout": 1.0}, "dropout 应在 [0, 1) 之间，实际为 1.0"),
])
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace(")", r"\)")):
        FeedForward(**kwargs)


def test_unknown_activation_names_the_choices():
    with pytest.raises(ValueError) as info:
        FeedForward(4, 16, activation="tanh")
    assert "'gelu'" in str(info.value) and "'tanh'" in str(info.value)


@pytest.mark.parametrize("shape", [(3, 5), (5,), ()])
def test_wrong_last_dimension_names_expected_and_actual(shape):
    ffn = FeedForward(4, 16)
    with pytest.raises(ValueError, match="最后一维应为 d_model=4"):
        ffn(torch.randn(shape))
