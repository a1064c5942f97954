"""Probes leave the model as they found it (onelayer.probes)."""

import pytest
import torch
from torch import nn

from onelayer import DeepMLP, FeedForward
from onelayer.norms import LayerNorm
from onelayer.probes import (
    evaluating,
    recorded,
    saved_activation_bytes,
    stream_rms,
    weight_grad_norms,
)


def test_recorded_counts_calls_and_removes_its_hook():
    ln = LayerNorm(4)
    x = torch.randn(2, 4)
    with recorded(ln) as outs:
        ln(x), ln(x), ln(2 * x)
    assert len(outs) == 3 and torch.equal(outs[0], outs[1])
    ln(x)
    assert len(outs) == 3 and not ln._forward_hooks


def test_saved_activation_bytes_grows_with_repeated_work():
    ln = LayerNorm(16)
    x = torch.randn(8, 16, requires_grad=True)
    once = saved_activation_bytes(lambda: ln(x).sum(), ln)
    thrice = saved_activation_bytes(lambda: (ln(x) + ln(x) + ln(x)).sum(), ln)
    assert once > 0 and thrice > 2 * once
    assert saved_activation_bytes(lambda: ln(x).sum(), ln) == once
    with torch.no_grad():
        assert saved_activation_bytes(lambda: ln(x), ln) == 0


def test_recorded_inputs_and_bad_choice():
    ffn = FeedForward(4, 8)
    x = torch.randn(3, 4)
    with recorded(ffn, which="input") as inputs:
        ffn(x)
    assert torch.equal(inputs[0], x)
    with pytest.raises(ValueError, match="which 应为"), recorded(ffn, which="both"):
        pass


def test_evaluating_restores_the_mode():
    net = nn.Dropout(0.5)
    with evaluating(net):
        assert not net.training
    assert net.training
    net.eval()
    with evaluating(net):
        pass
    assert not net.training


def test_weight_grad_norms_match_backward_and_leave_grad_alone():
    torch.manual_seed(8)
    net = DeepMLP(5, d_model=8)
    x = torch.randn(16, 2)
    weights = [f.w1.weight for f in net.layers]
    norms = weight_grad_norms(net(x).pow(2).mean(), weights)
    assert norms.dtype == torch.float64 and norms.shape == (5,)
    assert all(w.grad is None for w in weights)
    net(x).pow(2).mean().backward()
    assert torch.allclose(norms, torch.stack([w.grad.double().norm() for w in weights]))


def test_stream_rms_has_one_entry_per_state():
    torch.manual_seed(0)
    net = DeepMLP(6)
    x = torch.randn(32, 2)
    rms = stream_rms(net.stream(x))
    assert rms.shape == (7,)
    assert torch.isclose(rms[0], net.embed(x).pow(2).mean().sqrt())
