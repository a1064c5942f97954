"""Chapter 4's experiment at initialisation: LayerNorm in chapter 3's deep networks."""

import pytest
import torch

from onelayer.chapters.ch03_residual import (
    layer_grad_norms,
    mean_pairwise_cosine,
    relative_spread,
    seeded_mlp,
)
from onelayer.chapters.ch04_layernorm import (
    batch_vs_layer_norm,
    init_stats,
    padded_batch,
    row,
    tidy,
)
from onelayer.data import TOKENS, sentence_x, two_spirals


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


def test_padded_batch_puts_the_sentences_first_and_zeros_after():
    x = torch.arange(6.0).view(3, 2)
    b = padded_batch(x, torch.tensor([7.0, 8.0]), 5)
    assert b.shape == (2, 5, 2)
    assert torch.equal(b[0, :3], x) and torch.equal(b[1, 0], torch.tensor([7.0, 8.0]))
    assert b[0, 3:].abs().sum() == 0 and b[1, 1:].abs().sum() == 0
    with pytest.raises(ValueError, match="length"):
        padded_batch(x, torch.zeros(2), 2)


def test_batch_vs_layer_norm_on_the_fish():
    x = sentence_x()
    fish = TOKENS.index("鱼")
    c = batch_vs_layer_norm(x, fish)
    assert len(c.cases) == len(c.batchnorm) == len(c.layernorm) == 4
    swap, padded, modes, single = c.batchnorm
    assert swap > 0.5 and padded > 0.5 and modes > 0.1 and single is None
    assert max(c.layernorm) < 1e-4
    assert c.buffers == {"BatchNorm": ["running_mean", "running_var", "num_batches_tracked"],
                         "LayerNorm": []}
    # the padding row: BatchNorm over batch and positions, as nn.BatchNorm1d on [B, C, T]
    b = padded_batch(x, x[fish], 10)
    with torch.no_grad():
        ref = torch.nn.BatchNorm1d(4, affine=False)(b.transpose(1, 2)).transpose(1, 2)
        start = torch.nn.BatchNorm1d(4, affine=False)(
            padded_batch(x, x[fish], 3).transpose(1, 2)).transpose(1, 2)
    assert (ref[0, fish] - start[0, fish]).abs().max().item() == pytest.approx(padded, abs=1e-5)
    assert "算不了" in c.table() and c.table().count("\n") == 4


def test_batch_vs_layer_norm_names_the_expected_shape():
    with pytest.raises(ValueError, match=r"\[n, d\]"):
        batch_vs_layer_norm(torch.randn(4), 0)
    with pytest.raises(ValueError, match="i = 3"):
        batch_vs_layer_norm(torch.randn(3, 4), 3)
