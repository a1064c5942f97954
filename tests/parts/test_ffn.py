import pytest
import torch
import torch.nn.functional as F
from torch import nn

from onelayer import FeedForward, count_parameters, ffn_parameter_formula, trace_ffn
from onelayer.ffn import FFN_VARIANTS, gated_d_ff


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


# --- Chapter 2: the gated option -----------------------------------------------------------

GATE_ACTS = {"glu": torch.sigmoid, "bilinear": lambda z: z, "reglu": F.relu, "geglu": F.gelu,
             "swiglu": F.silu}


def test_plain_ffn_keeps_its_two_layers_in_order():
    # sentence_ffn seeds weights by parameter order: the plain FFN must not gain parameters.
    names = [n for n, _ in FeedForward(4, 16).named_parameters()]
    assert names == ["w1.weight", "w1.bias", "w2.weight", "w2.bias"]
    assert FeedForward(4, 16).w3 is None


@pytest.mark.parametrize("variant", sorted(GATE_ACTS))
@pytest.mark.parametrize("bias", [True, False])
def test_gated_ffn_matches_formula_written_by_hand(variant, bias):
    torch.manual_seed(5)
    ffn = FeedForward.from_variant(variant, 6, 10, bias=bias)
    assert ffn.gated
    x = torch.randn(2, 3, 6)
    W1, W3, W2 = ffn.w1.weight.T, ffn.w3.weight.T, ffn.w2.weight.T
    b1, b3, b2 = ((layer.bias if bias else 0.0) for layer in (ffn.w1, ffn.w3, ffn.w2))
    expected = (GATE_ACTS[variant](x @ W1 + b1) * (x @ W3 + b3)) @ W2 + b2
    with torch.no_grad():
        assert (ffn(x) - expected).abs().max() < 1e-6


def test_swiglu_keyword_form_equals_variant_form():
    torch.manual_seed(6)
    a = FeedForward(8, 16, activation="silu", gated=True, bias=False)
    b = FeedForward.from_variant("swiglu", 8, 16, bias=False)
    b.load_state_dict(a.state_dict())
    x = torch.randn(4, 8)
    with torch.no_grad():
        assert torch.equal(a(x), b(x))


@pytest.mark.parametrize(("variant", "activation", "gated"), [
    ("relu", "relu", False), ("gelu", "gelu", False), ("glu", "sigmoid", True),
    ("reglu", "relu", True), ("geglu", "gelu", True), ("swiglu", "silu", True),
])
def test_variant_table(variant, activation, gated):
    assert FFN_VARIANTS[variant] == (activation, gated)
    ffn = FeedForward.from_variant(variant, 4, 8)
    assert (ffn.activation, ffn.gated) == (activation, gated)


def test_trace_of_gated_ffn_keeps_every_intermediate():
    torch.manual_seed(7)
    ffn = FeedForward(4, 16, activation="silu", gated=True)
    x = torch.randn(2, 3, 4)
    t = trace_ffn(ffn, x)
    assert t.pre.shape == t.up.shape == t.post.shape == (2, 3, 16)
    assert torch.allclose(t.post, F.silu(t.pre) * t.up)
    assert torch.allclose(t.out, ffn(x).detach())
    assert trace_ffn(FeedForward(4, 16), x).up is None


def test_gated_ffn_is_position_wise():
    torch.manual_seed(8)
    ffn = FeedForward(4, 8, activation="silu", gated=True)
    x = torch.randn(5, 4)
    jac = torch.autograd.functional.jacobian(ffn, x)
    assert jac.permute(0, 2, 1, 3)[~torch.eye(5, dtype=torch.bool)].abs().max() == 0


@pytest.mark.parametrize(("d_model", "d_ff", "bias", "expected"), [
    (512, 2048, False, 3 * 512 * 2048),
    (512, 2048, True, 3 * 512 * 2048 + 2 * 2048 + 512),
    (4096, 11008, False, 135_266_304),
])
def test_gated_parameter_count_module_and_formula(d_model, d_ff, bias, expected):
    assert ffn_parameter_formula(d_model, d_ff, bias=bias, gated=True) == expected
    with torch.device("meta"):
        ffn = FeedForward(d_model, d_ff, activation="silu", gated=True, bias=bias)
    assert count_parameters(ffn) == expected


@pytest.mark.parametrize("d_model", [64, 512, 768, 4096])
def test_gating_at_the_same_width_costs_fifty_percent(d_model):
    plain = ffn_parameter_formula(d_model, 4 * d_model, bias=False)
    gated = ffn_parameter_formula(d_model, 4 * d_model, bias=False, gated=True)
    assert gated * 2 == plain * 3                    # +50 %
    assert gated != round(plain * 5 / 3)             # not the seed article's "+2/3"


@pytest.mark.parametrize("d_model", [96, 512, 768, 4096, 5120])
def test_two_thirds_width_restores_parity(d_model):
    plain = ffn_parameter_formula(d_model, 4 * d_model, bias=False)
    width = gated_d_ff(d_model)
    gated = ffn_parameter_formula(d_model, width, bias=False, gated=True)
    assert gated <= plain < ffn_parameter_formula(d_model, width + 1, bias=False, gated=True)
    assert abs(gated / plain - 1) < 1e-3


def test_shazeer_widths_have_exactly_equal_parameters():
    assert gated_d_ff(768) == 2048
    assert ffn_parameter_formula(768, 3072, bias=False) == ffn_parameter_formula(
        768, 2048, bias=False, gated=True)


@pytest.mark.parametrize(("d_model", "expected"), [(4096, 11008), (5120, 13824), (6656, 17920),
                                                    (8192, 22016)])
def test_llama_widths_from_d_model(d_model, expected):
    # LLaMA-7B/13B/33B/65B: ⅔·4·d_model rounded up to a multiple of 256.
    assert gated_d_ff(d_model, multiple_of=256) == expected


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"d_model": 4, "d_ff": 16, "gated": "yes"}, "gated 应为 True 或 False，实际为 'yes'"),
    ({"d_model": 4, "d_ff": 16, "gated": 1}, "gated 应为 True 或 False，实际为 1"),
    ({"d_model": 4, "d_ff": 16, "bias": None}, "bias 应为 True 或 False，实际为 None"),
    ({"d_model": 4, "d_ff": 16, "activation": "swish", "gated": True}, "activation 应为"),
])
def test_bad_gated_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FeedForward(**kwargs)


def test_unknown_variant_names_the_choices():
    with pytest.raises(ValueError) as info:
        FeedForward.from_variant("swishglu", 4, 16)
    assert "'swiglu'" in str(info.value) and "'swishglu'" in str(info.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"d_model": 4096, "multiple_of": 0}, "multiple_of 应为正整数，实际为 0"),
    ({"d_model": -1}, "d_model 应为正整数，实际为 -1"),
    ({"d_model": 8, "expansion": 2.5}, "expansion 应为正整数，实际为 2.5"),
])
def test_gated_d_ff_checks_its_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gated_d_ff(**kwargs)


def test_parameter_formula_checks_flags():
    with pytest.raises(ValueError, match="gated 应为 True 或 False"):
        ffn_parameter_formula(4, 16, gated="no")


def test_gated_ffn_rejects_wrong_last_dimension():
    ffn = FeedForward(4, 16, activation="silu", gated=True)
    with pytest.raises(ValueError, match="最后一维应为 d_model=4，实际为 5"):
        ffn(torch.randn(3, 5))
    with pytest.raises(ValueError, match="最后一维应为 d_model=4"):
        trace_ffn(ffn, torch.randn(5))
