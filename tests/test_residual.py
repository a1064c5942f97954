import math

import pytest
import torch
from torch import nn

from onelayer import FeedForward
from onelayer.data import two_spirals
from onelayer.residual import (
    VARIANTS,
    DeepMLP,
    MLPEnsemble,
    Residual,
    adam_fit,
    bce_loss,
    block_grad_norms,
    degradation_sweep,
    error_rate,
    gpt2_residual_std,
    he_init_,
    residual_add,
    seeded_mlp,
    stream_rms,
)


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny matrices: threads cost more than they save (and the notebooks use one)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_residual_adds_the_input_back():
    torch.manual_seed(0)
    ffn = FeedForward(4, 16)
    x = torch.randn(2, 3, 4)
    with torch.no_grad():
        assert torch.equal(Residual(ffn)(x), x + ffn(x))


def test_jacobian_of_residual_is_identity_plus_jacobian_of_branch():
    torch.manual_seed(1)
    ffn = FeedForward(4, 16)
    x = torch.randn(4)
    jac_residual = torch.autograd.functional.jacobian(Residual(ffn), x)
    jac_branch = torch.autograd.functional.jacobian(ffn, x)
    assert torch.allclose(jac_residual, torch.eye(4) + jac_branch, atol=1e-6)
    assert not torch.allclose(jac_branch, torch.zeros(4, 4))


@pytest.mark.parametrize("fx_shape", [(3, 16), (3, 1), (4,)])
def test_shape_mismatch_is_a_value_error_naming_both_shapes(fx_shape):
    x = torch.zeros(3, 4)
    with pytest.raises(ValueError, match=r"x 为 \[3, 4\]，f\(x\) 为 \[" + str(fx_shape[0])):
        residual_add(x, torch.zeros(fx_shape))


def test_torch_alone_would_broadcast_the_mismatch_silently():
    x, fx = torch.zeros(3, 4), torch.ones(3, 1)
    assert (x + fx).shape == (3, 4)  # no error from torch: the reason residual_add checks
    with pytest.raises(ValueError):
        residual_add(x, fx)


def test_gpt2_block_is_two_residual_adds():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=1, n_embd=32, n_head=4, vocab_size=16, n_positions=8,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )
    torch.manual_seed(2)
    block = transformers.GPT2Model(config).eval().h[0]
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        h = residual_add(x, block.attn(block.ln_1(x))[0])
        ours = residual_add(h, block.mlp(block.ln_2(h)))
        theirs = block(x)
        theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    assert (ours - theirs).abs().max() < 1e-6


@pytest.mark.parametrize("n_layer", [2, 12])
def test_gpt2_scaled_init_matches_transformers(n_layer):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=n_layer, n_embd=64, n_head=4, vocab_size=16,
                                     n_positions=8)
    torch.manual_seed(3)
    model = transformers.GPT2Model(config)
    expected = gpt2_residual_std(n_layer)
    assert expected == pytest.approx(0.02 / math.sqrt(2 * n_layer))
    for block in model.h:
        for proj in (block.attn.c_proj, block.mlp.c_proj):
            assert proj.weight.std().item() == pytest.approx(expected, rel=0.05)
        assert block.mlp.c_fc.weight.std().item() == pytest.approx(0.02, rel=0.05)


def test_plain_deep_mlp_matches_nn_sequential_with_shared_weights():
    torch.manual_seed(4)
    net = DeepMLP(3, d_model=8, d_ff=12, shortcut=False)
    layers = [net.embed]
    for block in net.blocks:
        layers += [block.w1, nn.ReLU(), block.w2]
    reference = nn.Sequential(*layers, net.head)
    x = torch.randn(10, 2)
    with torch.no_grad():
        assert torch.allclose(net(x), reference(x), atol=1e-6)


def test_residual_deep_mlp_adds_each_block_output():
    torch.manual_seed(5)
    net = DeepMLP(3, d_model=8, shortcut=True)
    x = torch.randn(10, 2)
    with torch.no_grad():
        h = net.embed(x)
        for block in net.blocks:
            h = h + block(h)
        assert torch.allclose(net(x), net.head(h), atol=1e-6)
        assert len(net.stream(x)) == 4


def test_same_seed_gives_plain_and_residual_the_same_weights():
    plain, residual = seeded_mlp("plain", 4, seed=7), seeded_mlp("residual", 4, seed=7)
    for p, q in zip(plain.parameters(), residual.parameters()):
        assert torch.equal(p, q)
    x = torch.randn(5, 2)
    assert not torch.allclose(plain(x), residual(x))


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


def test_block_grad_norms_match_backward():
    torch.manual_seed(8)
    x, y = two_spirals(64)
    net = DeepMLP(5, d_model=8)
    norms = block_grad_norms(net, x, y)
    assert all(b.w1.weight.grad is None for b in net.blocks)
    bce_loss(net(x), y).backward()
    expected = torch.stack([b.w1.weight.grad.double().norm() for b in net.blocks])
    assert torch.allclose(norms, expected)


def test_gradients_vanish_without_shortcuts_but_not_with_them():
    x, y = two_spirals(128)
    plain = block_grad_norms(seeded_mlp("plain", 16, seed=0), x, y)
    residual = block_grad_norms(seeded_mlp("residual", 16, seed=0), x, y)
    assert plain[0] / plain[-1] < 1e-6
    assert residual[0] / residual[-1] > 0.1


def test_stream_rms_has_one_entry_per_state():
    x, _ = two_spirals(32)
    net = seeded_mlp("residual", 6, seed=0)
    rms = stream_rms(net, x)
    assert rms.shape == (7,)
    assert torch.isclose(rms[0], net.embed(x).pow(2).mean().sqrt())


def test_two_spirals_is_balanced_deterministic_and_point_symmetric():
    x, y = two_spirals(200, seed=3)
    assert x.shape == (200, 2) and y.shape == (200,)
    assert y.sum() == 100
    assert torch.equal(x, two_spirals(200, seed=3)[0])
    assert not torch.equal(x, two_spirals(200, seed=4)[0])
    assert x.abs().max() <= 2.0
    with pytest.raises(ValueError, match="n 应为正整数"):
        two_spirals(0)


def test_error_rate_and_loss_shapes():
    y = torch.tensor([0.0, 1.0, 1.0, 0.0])
    logits = torch.tensor([[-1.0], [2.0], [-3.0], [0.5]])
    assert error_rate(logits, y).item() == 0.5
    assert bce_loss(logits, y).shape == ()
    assert bce_loss(torch.stack([logits, logits]), y).shape == (2,)


def test_adam_fit_matches_torch_optim_adam():
    torch.manual_seed(9)
    x, y = two_spirals(64)
    ours = DeepMLP(3, d_model=8)
    theirs = DeepMLP(3, d_model=8)
    theirs.load_state_dict(ours.state_dict())
    history = adam_fit(ours, x, y, steps=25, lr=1e-2)
    optimizer = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    for _ in range(25):
        optimizer.zero_grad()
        bce_loss(theirs(x), y).backward()
        optimizer.step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert torch.allclose(p, q, atol=1e-5)
    assert history.shape == (25,) and history[-1] < history[0]


def test_ensemble_matches_its_members_before_and_after_training():
    x, y = two_spirals(64)
    members = [seeded_mlp(v, 4, s, d_model=8) for v in VARIANTS for s in (0, 1)]
    ensemble = MLPEnsemble(members)
    with torch.no_grad():
        out = ensemble(x)
        for i, member in enumerate(members):
            assert torch.allclose(out[i], member(x), atol=1e-6)
            assert torch.allclose(ensemble.member(i)(x), member(x), atol=1e-6)
    adam_fit(ensemble, x, y, steps=10)
    for i, member in enumerate(members):
        adam_fit(member, x, y, steps=10)
        for p, q in zip(ensemble.member(i).parameters(), member.parameters()):
            assert torch.allclose(p, q, atol=1e-5)


def test_ensemble_with_one_learning_rate_per_member():
    x, y = two_spirals(64)
    members = [seeded_mlp("residual", 3, s, d_model=8) for s in (0, 1, 2)]
    lrs = torch.tensor([1e-3, 5e-3, 2e-2])
    ensemble = MLPEnsemble(members)
    adam_fit(ensemble, x, y, steps=10, lr=lrs)
    for i, member in enumerate(members):
        adam_fit(member, x, y, steps=10, lr=lrs[i].item())
        for p, q in zip(ensemble.member(i).parameters(), member.parameters()):
            assert torch.allclose(p, q, atol=1e-5)
    with pytest.raises(ValueError, match="形状应为 \\[3\\]"):
        adam_fit(ensemble, x, y, steps=1, lr=torch.tensor([1e-3, 1e-3]))
    with pytest.raises(ValueError, match="只适用于 MLPEnsemble"):
        adam_fit(members[0], x, y, steps=1, lr=lrs)


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


@pytest.mark.parametrize(("call", "message"), [
    (lambda: DeepMLP(0), "n_layers 应为正整数，实际为 0"),
    (lambda: DeepMLP(2, init="xavier"), "init 应为"),
    (lambda: seeded_mlp("deep", 2, 0), "variant 应为"),
    (lambda: gpt2_residual_std(0), "n_layer 应为正整数"),
    (lambda: adam_fit(DeepMLP(1), torch.zeros(2, 2), torch.zeros(2), lr=0.0), "lr 应为正数"),
    (lambda: DeepMLP(2)(torch.zeros(5, 3)), "最后一维应为 d_in=2，实际为 3"),
])
def test_bad_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
