import math

import pytest
import torch
import torch.nn.functional as F

from onelayer import gelu, get_activation, relu
from onelayer.activations import (
    ACTIVATIONS,
    GLU_VARIANTS,
    TORCH_ACTIVATIONS,
    gated_unit,
    geglu,
    gelu_tanh,
    glu,
    normal_cdf,
    reglu,
    sigmoid,
    silu,
    swiglu,
    swish,
    value_and_grad,
)


def test_relu_matches_torch():
    x = torch.linspace(-5, 5, 1001)
    assert torch.equal(relu(x), F.relu(x))


def test_gelu_matches_torch_exact_gelu():
    x = torch.linspace(-8, 8, 2001, dtype=torch.float64)
    assert (gelu(x) - F.gelu(x)).abs().max() < 1e-12


def test_gelu_is_x_times_normal_cdf():
    x = torch.tensor([0.25, -2.3, 0.64, 0.18], dtype=torch.float64)
    phi = torch.distributions.Normal(0.0, 1.0).cdf(x)
    assert torch.allclose(gelu(x), x * phi)


def test_unknown_activation_raises():
    with pytest.raises(ValueError, match="activation 应为 .* 之一，实际为 'swish'"):
        get_activation("swish")


# --- Chapter 2: every activation against torch.nn.functional -------------------------------

GRID = torch.linspace(-10, 10, 4001, dtype=torch.float64)


@pytest.mark.parametrize(("ours", "reference"), [
    (gelu_tanh, lambda x: F.gelu(x, approximate="tanh")),
    (silu, F.silu),
    (sigmoid, torch.sigmoid),
    (normal_cdf, torch.special.ndtr),
])
def test_activation_matches_torch(ours, reference):
    assert (ours(GRID) - reference(GRID)).abs().max() < 1e-12


def test_float32_activations_match_torch_within_round_off():
    x = GRID.float()
    for name, reference in [("relu", F.relu), ("gelu", F.gelu), ("silu", F.silu),
                            ("gelu_tanh", lambda z: F.gelu(z, approximate="tanh"))]:
        assert (get_activation(name)(x) - reference(x)).abs().max() < 1e-5, name


def test_sigmoid_has_no_overflow_at_extremes():
    x = torch.tensor([-1000.0, -100.0, 0.0, 100.0, 1000.0])
    y = sigmoid(x)
    assert torch.isfinite(y).all()
    assert (y - torch.sigmoid(x)).abs().max() < 1e-30   # both underflow to (almost) 0
    grad = value_and_grad("sigmoid", x)[1]
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("beta", [0.5, 1.0, 1.702, 4.0])
def test_swish_is_x_times_sigmoid_beta_x(beta):
    assert (swish(GRID, beta) - GRID * torch.sigmoid(beta * GRID)).abs().max() < 1e-12


def test_silu_is_swish_with_beta_one():
    assert torch.equal(silu(GRID), swish(GRID, 1.0))


def test_tanh_gelu_uses_the_published_constants():
    x = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64)
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    assert torch.allclose(gelu_tanh(x), 0.5 * x * (1 + torch.tanh(inner)))


def test_gap_between_exact_and_tanh_gelu():
    x = torch.linspace(-6, 6, 120001, dtype=torch.float64)
    gap = (gelu(x) - gelu_tanh(x)).abs()
    assert 4.7e-4 < gap.max() < 4.8e-4
    assert abs(abs(x[gap.argmax()].item()) - 2.70) < 0.01
    assert gap.max() < F.gelu(x, approximate="tanh").sub(F.gelu(x)).abs().max() + 1e-12


def test_gelu_and_silu_minima():
    x = torch.linspace(-3, 0, 300001, dtype=torch.float64)
    g, s = gelu(x), silu(x)
    assert abs(x[g.argmin()].item() + 0.7518) < 1e-3 and abs(g.min().item() + 0.1700) < 1e-4
    assert abs(x[s.argmin()].item() + 1.2785) < 1e-3 and abs(s.min().item() + 0.2785) < 1e-4


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_value_and_grad_matches_autograd_of_torch(name):
    references = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "sigmoid": torch.sigmoid,
                  "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"), "identity": lambda z: z}
    x = torch.linspace(-5, 5, 1001, dtype=torch.float64)
    value, grad = value_and_grad(name, x)
    z = x.clone().requires_grad_(True)
    (expected_grad,) = torch.autograd.grad(references[name](z).sum(), z)
    assert (value - references[name](x)).abs().max() < 1e-12
    assert (grad - expected_grad).abs().max() < 1e-12


def test_gelu_derivative_closed_form():
    _, grad = value_and_grad("gelu", GRID)
    density = torch.exp(-GRID**2 / 2) / math.sqrt(2 * math.pi)
    assert (grad - (normal_cdf(GRID) + GRID * density)).abs().max() < 1e-12


def test_glu_matches_torch_glu():
    x = torch.randn(4, 3, 10, dtype=torch.float64)
    assert (glu(x) - F.glu(x, dim=-1)).abs().max() < 1e-12


@pytest.mark.parametrize(("fn", "gate_act"), [(reglu, F.relu), (geglu, F.gelu), (swiglu, F.silu)])
def test_glu_variants_are_activated_gate_times_value(fn, gate_act):
    x = torch.randn(5, 12, dtype=torch.float64)
    value, gate = x[:, :6], x[:, 6:]
    assert (fn(x) - gate_act(gate) * value).abs().max() < 1e-12
    assert fn(x).shape == (5, 6)


def test_bilinear_unit_is_a_plain_product():
    x = torch.randn(7, 8, dtype=torch.float64)
    assert torch.equal(gated_unit(x, "bilinear"), x[:, :4] * x[:, 4:])


def test_every_glu_variant_names_a_registered_activation():
    assert set(GLU_VARIANTS.values()) <= set(ACTIVATIONS)


@pytest.mark.parametrize("shape", [(3, 5), (7,), ()])
def test_glu_rejects_odd_or_missing_last_dimension(shape):
    with pytest.raises(ValueError, match="最后一维应为偶数"):
        glu(torch.randn(shape))


def test_unknown_glu_variant_raises():
    with pytest.raises(ValueError, match="variant 应为 .* 之一，实际为 'swishglu'"):
        gated_unit(torch.randn(2, 4), "swishglu")


def test_fused_activations_are_the_written_out_ones():
    assert TORCH_ACTIVATIONS.keys() == ACTIVATIONS.keys()
    x = torch.linspace(-6, 6, 1001, dtype=torch.float64)
    for name in ACTIVATIONS:
        fused, written = get_activation(name, fused=True), get_activation(name)
        assert fused is not written or name == "identity"
        assert torch.allclose(fused(x), written(x), atol=1e-12), name


def test_value_and_grad_of_sigmoid_at_zero():
    value, grad = value_and_grad("sigmoid", torch.tensor([0.0, 2.0, -2.0], dtype=torch.float64))
    expected = torch.sigmoid(torch.tensor([0.0, 2.0, -2.0], dtype=torch.float64))
    assert torch.allclose(value, expected)
    assert torch.allclose(grad, expected * (1 - expected))          # σ′(0) = 1/4
