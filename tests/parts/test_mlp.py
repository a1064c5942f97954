"""The deep MLP of FFN layers, with and without shortcuts (onelayer.mlp)."""

import math

import pytest
import torch
from torch import nn

from onelayer import DeepMLP, FeedForward
from onelayer.mlp import he_init_


def test_plain_deep_mlp_matches_nn_sequential_with_shared_weights():
    torch.manual_seed(4)
    net = DeepMLP(3, d_model=8, d_ff=12, shortcut=False)
    layers = [net.embed]
    for ffn in net.layers:
        layers += [ffn.w1, nn.ReLU(), ffn.w2]
    reference = nn.Sequential(*layers, net.head)
    x = torch.randn(10, 2)
    with torch.no_grad():
        assert torch.allclose(net(x), reference(x), atol=1e-6)


def test_residual_deep_mlp_adds_each_layer_output():
    torch.manual_seed(5)
    net = DeepMLP(3, d_model=8, shortcut=True)
    x = torch.randn(10, 2)
    with torch.no_grad():
        h = net.embed(x)
        for ffn in net.layers:
            h = h + ffn(h)
        assert torch.allclose(net(x), net.head(h), atol=1e-6)
        assert len(net.stream(x)) == 4


def test_he_init_keeps_the_signal_size_through_a_plain_relu_stack():
    torch.manual_seed(6)
    ffn = he_init_(FeedForward(256, 512, activation="relu"))
    assert ffn.w1.weight.std().item() == pytest.approx(math.sqrt(2 / 256), rel=0.05)
    assert ffn.w2.weight.std().item() == pytest.approx(math.sqrt(1 / 512), rel=0.05)
    assert ffn.w1.bias.abs().max() == 0
    x = torch.randn(2000, 256)
    with torch.no_grad():
        ratio = ffn(x).pow(2).mean().sqrt() / x.pow(2).mean().sqrt()
    assert 0.85 < ratio < 1.15


@pytest.mark.parametrize(("call", "message"), [
    (lambda: DeepMLP(0), "n_layers 应为正整数，实际为 0"),
    (lambda: DeepMLP(2, init="xavier"), "init 应为"),
    (lambda: DeepMLP(2)(torch.zeros(5, 3)), "最后一维应为 d_in=2，实际为 3"),
])
def test_bad_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_norm_puts_a_layernorm_at_the_entrance_of_every_layer():
    torch.manual_seed(7)
    net = DeepMLP(3, d_model=8, shortcut=True, norm=True)
    with torch.no_grad():
        for ln in net.norms:
            ln.weight.normal_()
            ln.bias.normal_()
    x = torch.randn(10, 2)
    with torch.no_grad():
        h = net.embed(x)
        for ln, ffn in zip(net.norms, net.layers):
            h = h + ffn(nn.functional.layer_norm(h, (8,), ln.weight, ln.bias, eps=1e-5))
        assert torch.allclose(net(x), net.head(h), atol=1e-5)


def test_norm_draws_no_random_numbers():
    torch.manual_seed(3)
    plain = DeepMLP(4, d_model=8, shortcut=False)
    torch.manual_seed(3)
    normed = DeepMLP(4, d_model=8, shortcut=False, norm=True)
    for p, q in zip(plain.parameters(), normed.parameters()):
        assert torch.equal(p, q)
    assert plain.norms is None and len(normed.norms) == 4
