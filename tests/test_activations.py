import pytest
import torch
import torch.nn.functional as F

from onelayer import gelu, get_activation, relu


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
