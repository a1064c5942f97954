import pytest
import torch
from torch import nn

from onelayer.checks import check_eps
from onelayer.data import TOKENS, sentence_x
from onelayer.norms import (
    LayerNorm,
    RMSNorm,
    mean_and_biased_var,
    root_mean_square,
    standardize,
)
from onelayer.params import count_parameters


def randomize(*modules: nn.Module, seed: int = 0) -> None:
    """Give every module the same random parameters (γ, β away from 1 and 0)."""
    generator = torch.Generator().manual_seed(seed)
    params = [dict(m.named_parameters()) for m in modules]
    with torch.no_grad():
        for name, p in params[0].items():
            p.copy_(torch.randn(p.shape, generator=generator))
            for other in params[1:]:
                other[name].copy_(p)


@pytest.mark.parametrize("bias", [True, False])
def test_layernorm_matches_torch_with_shared_weights(bias):
    ours, ref = LayerNorm(8, bias=bias), nn.LayerNorm(8, bias=bias)
    randomize(ours, ref)
    x = torch.randn(2, 5, 8) * 3 + 1
    with torch.no_grad():
        assert (ours(x) - ref(x)).abs().max() < 1e-5


def test_layernorm_defaults_match_torch():
    ours, ref = LayerNorm(6), nn.LayerNorm(6)
    assert ours.eps == ref.eps
    assert torch.equal(ours.weight, ref.weight) and torch.equal(ours.bias, ref.bias)
    assert count_parameters(ours) == count_parameters(ref) == 12


@pytest.mark.parametrize("eps", [1e-6, 1e-5])
def test_rmsnorm_matches_torch_and_llama(eps):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    ours, ref, llama = RMSNorm(8, eps=eps), nn.RMSNorm(8, eps=eps), LlamaRMSNorm(8, eps=eps)
    randomize(ours, ref, llama)
    x = torch.randn(2, 5, 8) * 3 + 1
    with torch.no_grad():
        assert (ours(x) - ref(x)).abs().max() < 1e-5
        assert (ours(x) - llama(x)).abs().max() < 1e-5
    assert count_parameters(ours) == count_parameters(llama) == 8


def test_rmsnorm_eps_matters_for_small_inputs():
    x = torch.full((1, 4), 1e-3)
    loose, tight = RMSNorm(4, eps=1e-6), RMSNorm(4, eps=1e-12)
    with torch.no_grad():
        assert torch.allclose(tight(x), torch.ones(1, 4), atol=1e-5)
        assert (loose(x) - tight(x)).abs().max() > 0.1


def test_hand_calculation_for_fish_uses_biased_variance():
    x = sentence_x()[TOKENS.index("鱼")].double()
    mean, var = mean_and_biased_var(x)
    assert mean.item() == pytest.approx(0.125)
    assert var.item() == pytest.approx(0.336875)
    assert torch.var(x).item() == pytest.approx(0.336875 * 4 / 3)  # torch default: n − 1
    expected = (x - 0.125) / (0.336875 + 1e-5) ** 0.5
    with torch.no_grad():
        got = LayerNorm(4).double()(x)
    assert torch.allclose(got, expected)


def test_layernorm_output_has_zero_mean_and_unit_biased_variance():
    x = torch.randn(10, 16, dtype=torch.float64) * 5 - 2
    with torch.no_grad():
        y = LayerNorm(16, eps=1e-12).double()(x)
    mean, var = mean_and_biased_var(y)
    assert mean.abs().max() < 1e-12
    assert (var - 1).abs().max() < 1e-9
    assert (torch.var(y, dim=-1) - 16 / 15).abs().max() < 1e-9  # unbiased: n/(n − 1)


def test_layernorm_is_scale_and_shift_invariant_rmsnorm_only_scale():
    x = torch.randn(4, 8, dtype=torch.float64)
    ln, rms = LayerNorm(8, eps=1e-12).double(), RMSNorm(8, eps=1e-12).double()
    randomize(ln, seed=1)
    randomize(rms, seed=2)
    with torch.no_grad():
        for alpha, shift in [(3.0, 0.0), (0.1, -2.0), (50.0, 7.0)]:
            assert torch.allclose(ln(alpha * x + shift), ln(x), atol=1e-9)
        assert torch.allclose(rms(3.0 * x), rms(x), atol=1e-9)
        assert (rms(x + 2.0) - rms(x)).abs().max() > 0.1
        assert torch.allclose(ln(-x), -ln(x) + 2 * ln.bias, atol=1e-9)  # α < 0 flips x̂


def test_gamma_sigma_beta_mu_recovers_one_vector_only():
    X = sentence_x()
    fish = TOKENS.index("鱼")
    ln = LayerNorm(4)
    mean, var = mean_and_biased_var(X[fish])
    with torch.no_grad():
        ln.weight.fill_(torch.sqrt(var + ln.eps).item())
        ln.bias.fill_(mean.item())
        out = ln(X)
    assert (out[fish] - X[fish]).abs().max() < 1e-6
    assert (out[0] - X[0]).abs().max() > 0.01


def test_standardize_over_batch_is_batchnorm_in_training_mode():
    x = torch.randn(6, 4) * 2 + 1
    bn = nn.BatchNorm1d(4, affine=False)
    bn.train()
    assert (standardize(x, dim=0, eps=bn.eps) - bn(x)).abs().max() < 1e-5
    ln = nn.LayerNorm(4, elementwise_affine=False)
    assert (standardize(x, dim=-1) - ln(x)).abs().max() < 1e-5


def test_batchnorm_output_depends_on_the_batch_layernorm_does_not():
    X = sentence_x()
    fish = X[TOKENS.index("鱼")]
    others = torch.randn(3, 4)
    batch_a, batch_b = X, torch.cat([others, fish[None]])
    bn, ln = nn.BatchNorm1d(4, affine=False), LayerNorm(4)
    with torch.no_grad():
        assert (bn(batch_a)[2] - bn(batch_b)[3]).abs().max() > 0.01
        assert (ln(batch_a)[2] - ln(batch_b)[3]).abs().max() < 1e-6
        bn.eval()
        assert (bn(batch_a)[2] - standardize(batch_a, dim=0, eps=bn.eps)[2]).abs().max() > 0.01


def test_root_mean_square():
    x = torch.tensor([[3.0, -4.0], [1.0, 1.0]])
    assert torch.allclose(root_mean_square(x), torch.tensor([[12.5**0.5], [1.0]]))


def test_weights_are_learnable():
    ln, rms = LayerNorm(4), RMSNorm(4)
    x = torch.randn(3, 4)
    (ln(x).pow(2).sum() + (rms(x) * torch.arange(4.0)).sum()).backward()
    assert ln.weight.grad.abs().sum() > 0 and ln.bias.grad is not None
    assert rms.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("module", [LayerNorm(4), RMSNorm(4)], ids=["LayerNorm", "RMSNorm"])
@pytest.mark.parametrize("shape", [(3, 5), (5,), ()])
def test_wrong_last_dimension_names_expected_and_actual(module, shape):
    with pytest.raises(ValueError, match="最后一维应为 d_model=4，实际为"):
        module(torch.randn(shape))


@pytest.mark.parametrize("cls", [LayerNorm, RMSNorm])
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_model": 0}, "d_model 应为正整数，实际为 0"),
        ({"d_model": 4, "eps": 0.0}, "eps 应为正数，实际为 0.0"),
        ({"d_model": 4, "eps": -1e-5}, "eps 应为正数，实际为 -1e-05"),
    ],
)
def test_bad_arguments_raise_value_error(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


def test_check_eps_rejects_non_numbers():
    with pytest.raises(ValueError, match="eps 应为正数"):
        check_eps("1e-5")
    with pytest.raises(ValueError, match="eps 应为正数"):
        check_eps(float("nan"))
