"""Chapter 4's experiment at initialisation: LayerNorm in chapter 3's deep networks."""

import pytest
import torch

from onelayer.chapters.ch03_residual import (
    layer_grad_norms,
    mean_pairwise_cosine,
    relative_spread,
    seeded_mlp,
)
from onelayer.chapters.ch04_layernorm import init_stats, row, tidy
from onelayer.data import two_spirals


def test_init_stats_matches_the_networks_measured_one_by_one():
    x, y = two_spirals(40)
    stats = init_stats(x, y, ("plain_ln", "residual"), seeds=(3, 5), n_layers=4)
    assert stats.seeds == (3, 5) and stats.variants == ("plain_ln", "residual")
    for v in stats.variants:
        for k, seed in enumerate(stats.seeds):
            net = seeded_mlp(v, 4, seed)
            grads = layer_grad_norms(net, x, y)
            with torch.no_grad():
                last = net.stream(x)[-1]
            assert stats.grad_ratio[v][k].item() == pytest.approx((grads[0] / grads[-1]).item())
            assert stats.cosine[v][k].item() == pytest.approx(mean_pairwise_cosine(last).item())
            assert stats.spread[v][k].item() == pytest.approx(relative_spread(last))


def test_init_stats_refuses_unknown_variants_and_no_seeds():
    x, y = two_spirals(8)
    with pytest.raises(ValueError, match="variant"):
        init_stats(x, y, ("plane",), seeds=(0,))
    with pytest.raises(ValueError, match="seeds"):
        init_stats(x, y, ("plain",), seeds=())


def test_print_helpers_round_to_four_decimals_without_negative_zero():
    assert str(tidy(torch.tensor(-1e-9)).item()) == "0.0"
    assert row(torch.tensor([0.6, -0.5, 1e-7])) == " 0.6000 -0.5000  0.0000"
