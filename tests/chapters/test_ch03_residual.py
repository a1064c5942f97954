"""Chapter 3's experiments: gradients with and without shortcuts, the degradation sweep."""

import pytest
import torch

from onelayer import DeepMLP
from onelayer.chapters.ch03_residual import (
    CH3_VARIANTS,
    VARIANTS,
    MLPEnsemble,
    bce_loss,
    degradation_sweep,
    display_width,
    error_rate,
    layer_grad_norms,
    mean_pairwise_cosine,
    relative_spread,
    seed_table,
    seeded_mlp,
)
from onelayer.data import two_spirals
from onelayer.train import fit


def bce(x, y):
    return lambda model: bce_loss(model(x), y)


def test_same_seed_gives_plain_and_residual_the_same_weights():
    plain, residual = seeded_mlp("plain", 4, seed=7), seeded_mlp("residual", 4, seed=7)
    for p, q in zip(plain.parameters(), residual.parameters()):
        assert torch.equal(p, q)
    x = torch.randn(5, 2)
    assert not torch.allclose(plain(x), residual(x))


def test_he_variants_share_their_weights_and_differ_only_in_the_shortcut():
    plain, residual = seeded_mlp("plain_he", 4, seed=7), seeded_mlp("residual_he", 4, seed=7)
    assert residual.shortcut and not plain.shortcut and residual.init == plain.init == "he"
    for p, q in zip(plain.parameters(), residual.parameters()):
        assert torch.equal(p, q)
    with torch.random.fork_rng(devices=[]):     # seeded_mlp = DeepMLP built in seeded(seed)
        torch.manual_seed(7)
        again = DeepMLP(4, shortcut=True, init="he")
    for p, q in zip(again.parameters(), residual.parameters()):
        assert torch.equal(p, q)


def test_relative_spread_is_the_mean_distance_to_the_mean_row_over_its_length():
    h = torch.tensor([[1.0, 0.0], [3.0, 0.0]])          # 平均 [2, 0]，每行离它 1
    assert relative_spread(h) == pytest.approx(0.5)
    assert relative_spread(torch.ones(4, 3)) == 0.0
    with pytest.raises(ValueError, match="n ≥ 2"):
        relative_spread(torch.ones(1, 3))


def test_layer_grad_norms_match_backward():
    torch.manual_seed(8)
    x, y = two_spirals(64)
    net = DeepMLP(5, d_model=8)
    norms = layer_grad_norms(net, x, y)
    assert all(f.w1.weight.grad is None for f in net.layers)
    bce_loss(net(x), y).backward()
    expected = torch.stack([f.w1.weight.grad.double().norm() for f in net.layers])
    assert torch.allclose(norms, expected)


def test_gradients_vanish_without_shortcuts_but_not_with_them():
    x, y = two_spirals(128)
    plain = layer_grad_norms(seeded_mlp("plain", 16, seed=0), x, y)
    residual = layer_grad_norms(seeded_mlp("residual", 16, seed=0), x, y)
    assert plain[0] / plain[-1] < 1e-6
    assert residual[0] / residual[-1] > 0.1


def test_error_rate_and_loss_shapes():
    y = torch.tensor([0.0, 1.0, 1.0, 0.0])
    logits = torch.tensor([[-1.0], [2.0], [-3.0], [0.5]])
    assert error_rate(logits, y).item() == 0.5
    assert bce_loss(logits, y).shape == ()
    assert bce_loss(torch.stack([logits, logits]), y).shape == (2,)


def test_ensemble_matches_its_members_before_and_after_training():
    x, y = two_spirals(64)
    members = [seeded_mlp(v, 4, s, d_model=8) for v in CH3_VARIANTS for s in (0, 1)]
    ensemble = MLPEnsemble(members)
    with torch.no_grad():
        out = ensemble(x)
        for i, member in enumerate(members):
            assert torch.allclose(out[i], member(x), atol=1e-6)
            assert torch.allclose(ensemble.member(i)(x), member(x), atol=1e-6)
    fit(ensemble, bce(x, y), steps=10, lr=5e-3)
    for i, member in enumerate(members):
        fit(member, bce(x, y), steps=10, lr=5e-3)
        for p, q in zip(ensemble.member(i).parameters(), member.parameters()):
            assert torch.allclose(p, q, atol=1e-5)


def test_ensemble_with_layernorm_members_matches_its_members():
    """Members with and without LayerNorm in one ensemble: same outputs and gradients, and
    the same losses while training (Adam turns round-off in near-zero gradients into
    visible weight differences after a few steps, so weights are not compared)."""
    x, y = two_spirals(64)
    members = [seeded_mlp(v, 4, s, d_model=8) for v in VARIANTS for s in (0, 1)]
    with torch.no_grad():
        for m in members:
            for ln in m.norms or ():
                ln.weight.normal_()
                ln.bias.normal_()
    ensemble = MLPEnsemble(members)
    grads = torch.autograd.grad(bce_loss(ensemble(x), y).sum(), list(ensemble.parameters()))
    for i, member in enumerate(members):
        with torch.no_grad():
            assert torch.allclose(ensemble(x)[i], member(x), atol=1e-6)
        own = torch.autograd.grad(bce_loss(member(x), y), [f.w1.weight for f in member.layers])
        assert torch.allclose(grads[2][:, i].transpose(-1, -2), torch.stack(own), atol=1e-6)
        restored = ensemble.member(i)
        assert (restored.norms is None) == (member.norms is None)
        for p, q in zip(restored.parameters(), member.parameters()):
            assert torch.equal(p, q)
    history = fit(ensemble, bce(x, y), steps=10, lr=5e-3)
    for i, member in enumerate(members):
        assert torch.allclose(history[:, i], fit(member, bce(x, y), steps=10, lr=5e-3), atol=1e-3)


def test_ensemble_with_one_learning_rate_per_member():
    x, y = two_spirals(64)
    members = [seeded_mlp("residual", 3, s, d_model=8) for s in (0, 1, 2)]
    lrs = torch.tensor([1e-3, 5e-3, 2e-2])
    ensemble = MLPEnsemble(members)
    fit(ensemble, bce(x, y), steps=10, lr=lrs)
    for i, member in enumerate(members):
        fit(member, bce(x, y), steps=10, lr=lrs[i].item())
        for p, q in zip(ensemble.member(i).parameters(), member.parameters()):
            assert torch.allclose(p, q, atol=1e-5)
    with pytest.raises(ValueError, match="形状应为 \\[3\\]"):
        fit(ensemble, bce(x, y), steps=1, lr=torch.tensor([1e-3, 1e-3]))
    with pytest.raises(ValueError, match="只适用于一叠模型"):
        fit(members[0], bce(x, y), steps=1, lr=lrs)


def test_ensemble_rejects_members_of_different_shapes():
    with pytest.raises(ValueError, match="n_layers, d_model, d_ff, d_in"):
        MLPEnsemble([DeepMLP(2), DeepMLP(3)])


def test_member_does_not_consume_the_global_random_state():
    ensemble = MLPEnsemble([DeepMLP(2), DeepMLP(2)])
    torch.manual_seed(10)
    ensemble.member(1)
    after = torch.rand(1)
    torch.manual_seed(10)
    assert torch.equal(after, torch.rand(1))


def test_sweep_shows_degradation_without_shortcuts():
    x, y = two_spirals(128)
    result = degradation_sweep(x, y, depths=(2, 16), seeds=(0,), variants=("residual", "plain"),
                               steps=150)
    assert result.error.shape == (2, 1, 2, 1) and result.history.shape == (2, 150, 2, 1, 1)
    residual_deep, plain_deep = result.error[0, 0, 1, 0], result.error[1, 0, 1, 0]
    assert plain_deep > 0.3 and residual_deep < 0.05
    net = result.network("plain", 16, 0)
    with torch.no_grad():
        assert error_rate(net(x), y) == plain_deep


def test_sweep_over_learning_rates_indexes_members_consistently():
    x, y = two_spirals(64)
    result = degradation_sweep(x, y, depths=(3,), seeds=(0, 1), variants=("residual", "plain"),
                               lrs=(1e-3, 1e-2), steps=5)
    assert result.error.shape == (2, 2, 1, 2)
    for v, variant in enumerate(result.variants):
        for r, lr in enumerate(result.lrs):
            for s, seed in enumerate(result.seeds):
                net = result.network(variant, 3, seed, lr=lr)
                assert net.shortcut == (variant == "residual")
                with torch.no_grad():
                    loss = bce_loss(net(x), y)
                assert torch.isclose(loss, result.loss[v, r, 0, s], atol=1e-6)


def test_layernorm_variants_share_the_ffn_weights_of_their_plain_versions():
    for name in ("residual", "plain"):
        bare, normed = seeded_mlp(name, 4, seed=3), seeded_mlp(f"{name}_ln", 4, seed=3)
        assert normed.norms is not None and normed.shortcut == bare.shortcut
        for p, q in zip(bare.parameters(), normed.parameters()):
            assert torch.equal(p, q)


def test_sweep_records_gradients_and_stream_sizes_during_training():
    x, y = two_spirals(64)
    result = degradation_sweep(x, y, depths=(4,), seeds=(0, 1), variants=("plain", "residual_ln"),
                               steps=6, record_every=3)
    assert result.trace_steps == (0, 3)
    assert result.grad_w1[0].shape == (2, 4, 2, 1, 2)
    assert result.stream_rms[0].shape == (2, 5, 2, 1, 2)
    for v, variant in enumerate(result.variants):
        for s, seed in enumerate(result.seeds):
            start = seeded_mlp(variant, 4, seed)  # 第 0 步记录的是训练之前的网络
            expected = layer_grad_norms(start, x, y).float()
            assert torch.allclose(result.grad_w1[0][0, :, v, 0, s], expected, rtol=1e-4)
            with torch.no_grad():
                rms = torch.stack([h.pow(2).mean().sqrt() for h in start.stream(x)])
            assert torch.allclose(result.stream_rms[0][0, :, v, 0, s], rms, rtol=1e-5)
    untraced = degradation_sweep(x, y, depths=(2,), seeds=(0,), steps=2)
    assert untraced.trace_steps == () and untraced.grad_w1 == ()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"record_every": -1}, "record_every 应为非负整数，实际为 -1"),
    ({"variants": ("residual", "deep")}, "variant 应为"),
])
def test_sweep_rejects_bad_arguments(kwargs, message):
    x, y = two_spirals(16)
    with pytest.raises(ValueError, match=message):
        degradation_sweep(x, y, depths=(2,), seeds=(0,), steps=1, **kwargs)


def test_seeded_mlp_rejects_an_unknown_variant():
    with pytest.raises(ValueError, match="variant 应为"):
        seeded_mlp("deep", 2, 0)


def test_mean_pairwise_cosine_matches_the_cosine_matrix():
    h = torch.randn(3, 10, 4)
    unit = torch.nn.functional.normalize(h.double(), dim=-1)
    cosines = unit @ unit.transpose(-1, -2)
    expected = (cosines.sum((-1, -2)) - 10) / (10 * 9)
    assert torch.allclose(mean_pairwise_cosine(h), expected)
    same_direction = torch.rand(5, 1) * torch.ones(5, 4)        # 长短不同、方向相同
    assert mean_pairwise_cosine(same_direction).item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="n ≥ 2"):
        mean_pairwise_cosine(torch.randn(1, 4))


def test_seed_table_shows_median_min_max_aligned_for_cjk():
    values = torch.tensor([[[1.0, 2.0, 30.0]], [[0.0, 0.0, 0.0]]])   # [2 行, 1 列, 3 个种子]
    table = seed_table(values, [1, 32], ["普通（He 初始化）"], corner="块数")
    lines = table.splitlines()
    assert lines[1].endswith("2.0 [1, 30]") and lines[2].endswith("0.0 [0, 0]")
    assert len({display_width(line) for line in lines}) == 1
    assert display_width("残差 a") == 6
    with pytest.raises(ValueError, match="形状应为"):
        seed_table(values, [1], ["a"])
