import pytest
import torch
from torch import nn

from onelayer import norm_position as npos
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.data import facts_corpus
from onelayer.experiments import train_lm
from onelayer.norms import LayerNorm


@pytest.fixture(scope="module")
def corpus():
    return facts_corpus()


def attention_only_block(position: str, seed: int = 0) -> TransformerBlock:
    torch.manual_seed(seed)
    block = TransformerBlock(BlockConfig(d_model=8, n_heads=2, d_ff=0, norm_position=position))
    with torch.no_grad():  # γ, β away from 1, 0 so that a misplaced norm shows
        block.ln_1.weight.uniform_(0.5, 1.5)
        block.ln_1.bias.normal_()
    return block.eval()


@pytest.mark.parametrize("position", ["pre", "post"])
def test_one_line_arrangements_match_the_block(position):
    block = attention_only_block(position)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        ours = npos.norm_sublayer(x, block.attn, block.ln_1, position)
        assert torch.allclose(ours, block(x), atol=1e-6)
        flipped = "post" if position == "pre" else "pre"
        other = npos.norm_sublayer(x, block.attn, block.ln_1, flipped)
        assert (other - block(x)).abs().max() > 0.1


def test_post_norm_output_is_normalised_pre_norm_output_is_not():
    torch.manual_seed(0)
    f, ln = nn.Linear(6, 6), LayerNorm(6)
    x = torch.randn(4, 6) * 3 + 1
    with torch.no_grad():
        post, pre = npos.post_norm(x, f, ln), npos.pre_norm(x, f, ln)
    assert torch.allclose(post.mean(-1), torch.zeros(4), atol=1e-5)
    assert torch.allclose(post.var(-1, correction=0), torch.ones(4), atol=1e-3)
    assert (pre.var(-1, correction=0) - 1).abs().max() > 0.5


def test_bad_arguments_raise_clear_errors():
    x = torch.randn(3, 4)
    with pytest.raises(ValueError, match="position 应为"):
        npos.norm_sublayer(x, nn.Identity(), nn.Identity(), "middle")
    with pytest.raises(ValueError, match="形状相同"):
        npos.pre_norm(x, nn.Linear(4, 2), nn.Identity())
    with pytest.raises(ValueError, match="alpha 应 ≥ 1"):
        npos.deep_norm(x, nn.Identity(), nn.Identity(), alpha=0.5)
    with pytest.raises(ValueError, match="n_layers 应为正整数"):
        npos.deepnorm_constants(0)


def test_deep_norm_and_sandwich_reduce_to_the_two_arrangements():
    torch.manual_seed(1)
    f, ln, ln2 = nn.Linear(5, 5), LayerNorm(5), LayerNorm(5)
    x = torch.randn(3, 5)
    with torch.no_grad():
        assert torch.equal(npos.deep_norm(x, f, ln, alpha=1.0), npos.post_norm(x, f, ln))
        assert not torch.allclose(npos.deep_norm(x, f, ln, alpha=2.0), npos.post_norm(x, f, ln))
        sandwich = npos.sandwich_norm(x, f, ln, nn.Identity())
        assert torch.equal(sandwich, npos.pre_norm(x, f, ln))
        branch = npos.sandwich_norm(x, f, ln, ln2) - x      # the branch output is normalised
        assert torch.allclose(branch.mean(-1), torch.zeros(3), atol=1e-5)


def test_deepnorm_constants():
    for n in (1, 6, 1000):
        alpha, beta = npos.deepnorm_constants(n)
        assert alpha**4 == pytest.approx(2 * n) and beta**-4 == pytest.approx(8 * n)
        assert alpha > 1 > beta


def test_recorded_outputs_counts_calls_and_removes_its_hook():
    ln = LayerNorm(4)
    x = torch.randn(2, 4)
    with npos.recorded_outputs(ln) as outs:
        ln(x), ln(x), ln(2 * x)
    assert len(outs) == 3 and torch.equal(outs[0], outs[1])
    ln(x)
    assert len(outs) == 3 and not ln._forward_hooks


def test_saved_activation_bytes_grows_with_repeated_work():
    ln = LayerNorm(16)
    x = torch.randn(8, 16, requires_grad=True)
    once = npos.saved_activation_bytes(lambda: ln(x).sum(), ln)
    thrice = npos.saved_activation_bytes(lambda: (ln(x) + ln(x) + ln(x)).sum(), ln)
    assert once > 0 and thrice > 2 * once
    assert npos.saved_activation_bytes(lambda: ln(x).sum(), ln) == once
    with torch.no_grad():
        assert npos.saved_activation_bytes(lambda: ln(x), ln) == 0


def test_tiny_lm_depends_only_on_the_seed(corpus):
    a = npos.tiny_lm(corpus, 2, "pre", seed=3)
    b = npos.tiny_lm(corpus, 2, "pre", seed=3)
    c = npos.tiny_lm(corpus, 2, "pre", seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.blocks[0].mlp.w2.weight, c.blocks[0].mlp.w2.weight)
    assert isinstance(npos.tiny_lm(corpus, 2, "post", seed=3).ln_f, nn.Identity)


def test_residual_stream_grows_in_pre_norm_and_not_in_post_norm(corpus):
    x, _ = corpus.batch(4, 16, torch.Generator().manual_seed(0))
    pre = npos.residual_stream_rms(npos.tiny_lm(corpus, 8, "pre", seed=0), x)
    post = npos.residual_stream_rms(npos.tiny_lm(corpus, 8, "post", seed=0), x)
    assert pre.shape == post.shape == (9,)
    assert pre[-1] > 2 * pre[1] and torch.all(pre[2:] > pre[1:-1])
    assert torch.allclose(post[1:], torch.ones(8), atol=1e-3)  # LN output, γ = 1, β = 0


def test_init_grad_norms_shape_and_xiong_direction(corpus):
    norms = {pos: npos.init_grad_norms(12, pos, seeds=(0, 1), corpus=corpus)
             for pos in ("post", "pre")}
    assert norms["post"].shape == (2, 12)
    assert torch.all(norms["post"][:, -1] > 1.5 * norms["pre"][:, -1])
    with pytest.raises(ValueError, match="seeds 不能为空"):
        npos.init_grad_norms(2, "pre", seeds=())


def stack_members(corpus, position="post", seeds=(0, 1, 2)):
    return [npos.tiny_lm(corpus, 2, position, s, d_model=8, n_heads=2, block_size=8)
            for s in seeds]


@pytest.mark.parametrize("position", ["pre", "post"])
def test_stack_computes_what_each_member_computes(corpus, position):
    members = stack_members(corpus, position)
    stack = npos.TinyGPTStack(members)
    x = torch.stack([corpus.batch(3, 8, torch.Generator().manual_seed(s))[0] for s in range(3)])
    with torch.no_grad():
        logits = stack(x)
        for i, m in enumerate(members):
            assert torch.allclose(logits[i], m(x[i]), atol=1e-5)
            back = stack.member(i)
            assert all(torch.equal(p, q) for p, q in zip(back.parameters(), m.parameters()))


def test_stack_trains_like_train_lm_member_by_member(corpus):
    seeds, warmups, lrs = (0, 0, 1), (0, 3, 0), (3e-3, 3e-3, 1e-3)
    stack = npos.TinyGPTStack(stack_members(corpus, "post", seeds))
    losses = npos.train_stack(stack, corpus, 5, lrs, warmups, seeds, batch_size=4, seq_len=8)
    for i, (seed, w, lr) in enumerate(zip(seeds, warmups, lrs)):
        single = stack_members(corpus, "post", (seed,))[0]
        expected = train_lm(single, corpus, 5, lr=lr, warmup=w, batch_size=4, seq_len=8,
                            seed=seed)
        assert torch.allclose(losses[i], expected, atol=1e-5)
        # Compare what the models compute, not every weight: a weight whose gradient is
        # zero in exact arithmetic (the key bias, softmax ignores it) gets round-off
        # gradients, and Adam turns any of them into a step of ±lr.
        x, _ = corpus.batch(4, 8, torch.Generator().manual_seed(99))
        with torch.no_grad():
            assert torch.allclose(stack.member(i)(x), single.eval()(x), atol=1e-4)


def test_stack_refuses_what_it_cannot_compute(corpus):
    with pytest.raises(ValueError, match="members 不能为空"):
        npos.TinyGPTStack([])
    with pytest.raises(ValueError, match="配置应相同"):
        npos.TinyGPTStack([*stack_members(corpus, "post", (0,)),
                           *stack_members(corpus, "pre", (0,))])
    gated = BlockConfig(d_model=8, n_heads=2, activation="silu", gated=True)
    from onelayer.model import GPTConfig, TinyGPT
    with pytest.raises(ValueError, match="gated=False"):
        npos.TinyGPTStack([TinyGPT(GPTConfig(len(corpus.vocab), 8, 1, gated))])
    stack = npos.TinyGPTStack(stack_members(corpus))
    with pytest.raises(ValueError, match=r"形状应为 \[M=3, B, T\]"):
        stack(torch.zeros(2, 4, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="长度都应为成员数 3"):
        npos.train_stack(stack, corpus, 2, [1e-3], [0], [0])


def test_warmup_experiment_runs_and_shapes(corpus):
    runs = npos.warmup_experiment(corpus, n_layers=2, seeds=(0, 1), steps=4, warmup=2,
                                  d_model=8, n_heads=2, batch_size=4, seq_len=8)
    assert set(runs.losses) == {("post", 0), ("post", 2), ("pre", 0), ("pre", 2)}
    assert runs.losses["pre", 2].shape == (2, 4) and runs.final("pre", 2, last=2).shape == (2,)
    model = npos.tiny_lm(corpus, 2, "post", seed=1, d_model=8, n_heads=2, block_size=8)
    expected = train_lm(model, corpus, 4, lr=3e-3, warmup=2, batch_size=4, seq_len=8, seed=1)
    assert torch.allclose(runs.losses["post", 2][1], expected, atol=1e-5)
    x, _ = corpus.batch(4, 8, torch.Generator().manual_seed(99))
    with torch.no_grad():
        assert torch.allclose(runs.models["post", 2][1](x), model.eval()(x), atol=1e-4)
    with pytest.raises(ValueError, match="warmup 应 ≤ steps"):
        npos.warmup_experiment(corpus, steps=4, warmup=5)


def test_prediction_spread_is_zero_for_an_input_blind_model(corpus):
    model = npos.tiny_lm(corpus, 2, "post", seed=0).eval()
    x, _ = corpus.batch(4, 16, torch.Generator().manual_seed(0))
    assert npos.prediction_spread(model, x) > 0.01
    with torch.no_grad():
        model.pos.weight.zero_()
        for block in model.blocks:           # every block's output is the same constant
            block.ln_2.weight.zero_()
    assert npos.prediction_spread(model, x) < 1e-5


def test_norm_position_checker(capsys):
    from onelayer.book.exercises import check_norm_position

    def right(x, f, ln, position):
        return ln(x + f(x)) if position == "post" else x + f(ln(x))

    assert check_norm_position(right)
    assert capsys.readouterr().out.startswith("✓ 通过")
    wrong = {
        "写反": lambda x, f, ln, p: right(x, f, ln, "pre" if p == "post" else "post"),
        "残差": lambda x, f, ln, p: ln(f(x)) if p == "post" else f(ln(x)),
        "相加之后": lambda x, f, ln, p: x + ln(f(x)) if p == "post" else x + f(ln(x)),
        "外面不再套": lambda x, f, ln, p: right(x, f, ln, p) if p == "post" else ln(x + f(ln(x))),
        "原样相加": lambda x, f, ln, p: right(x, f, ln, p) if p == "post" else ln(x) + f(ln(x)),
    }
    for hint, fn in wrong.items():
        assert not check_norm_position(fn)
        assert hint in capsys.readouterr().out, hint
    assert not check_norm_position(lambda *args: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out
