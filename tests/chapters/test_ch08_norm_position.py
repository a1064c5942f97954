"""Chapter 8's experiments: Pre-Norm vs Post-Norm at initialisation and in training."""

import pytest
import torch
from torch import nn

from onelayer.block import BlockConfig
from onelayer.chapters import ch08_norm_position as npos
from onelayer.data import facts_corpus
from onelayer.model import GPTConfig, TinyGPT, lm_loss
from onelayer.probes import stream_rms
from onelayer.stack import TinyGPTStack
from onelayer.train import experiment_seeds, train_lm


@pytest.fixture(scope="module")
def corpus():
    return facts_corpus()


def test_tiny_lm_depends_only_on_the_seed(corpus):
    a = npos.tiny_lm(corpus, 2, "pre", seed=3)
    b = npos.tiny_lm(corpus, 2, "pre", seed=3)
    c = npos.tiny_lm(corpus, 2, "pre", seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.blocks[0].mlp.w2.weight, c.blocks[0].mlp.w2.weight)
    assert isinstance(npos.tiny_lm(corpus, 2, "post", seed=3).ln_f, nn.Identity)


def test_residual_stream_grows_in_pre_norm_and_not_in_post_norm(corpus):
    x, _ = corpus.batch(4, 16, torch.Generator().manual_seed(0))
    pre = stream_rms(npos.tiny_lm(corpus, 8, "pre", seed=0).hidden_states(x))
    post = stream_rms(npos.tiny_lm(corpus, 8, "post", seed=0).hidden_states(x))
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
    stack = TinyGPTStack(members)
    x = torch.stack([corpus.batch(3, 8, torch.Generator().manual_seed(s))[0] for s in range(3)])
    with torch.no_grad():
        logits = stack(x)
        for i, m in enumerate(members):
            assert torch.allclose(logits[i], m(x[i]), atol=1e-5)
            back = stack.member(i)
            assert all(torch.equal(p, q) for p, q in zip(back.parameters(), m.parameters()))


def test_stack_trains_like_train_lm_member_by_member(corpus):
    seeds, warmups, lrs = (0, 0, 1), (0, 3, 0), (3e-3, 3e-3, 1e-3)
    stack = TinyGPTStack(stack_members(corpus, "post", seeds))
    losses = train_lm(stack, corpus, 5, lrs, warmups, batch_size=4, seq_len=8,
                      seed=list(seeds))
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
        TinyGPTStack([])
    with pytest.raises(ValueError, match="配置应相同"):
        TinyGPTStack([*stack_members(corpus, "post", (0,)),
                           *stack_members(corpus, "pre", (0,))])
    gated = BlockConfig(d_model=8, n_heads=2, activation="silu", gated=True)
    with pytest.raises(ValueError, match="gated=False"):
        TinyGPTStack([TinyGPT(GPTConfig(len(corpus.vocab), 8, 1, gated))])
    stack = TinyGPTStack(stack_members(corpus))
    with pytest.raises(ValueError, match=r"形状应为 \[M=3, B, T\]"):
        stack(torch.zeros(2, 4, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="lr 应有 3 个值"):
        train_lm(stack, corpus, 2, lr=[1e-3], seed=[0, 1, 2])


def test_warmup_experiment_runs_and_shapes(corpus):
    runs = npos.warmup_experiment(corpus, n_layers=2, seeds=(0, 1), steps=4, warmups=(0, 2),
                                  d_model=8, n_heads=2, batch_size=4, seq_len=8)
    assert set(runs.losses) == {("post", 0), ("post", 2), ("pre", 0), ("pre", 2)}
    assert runs.losses["pre", 2].shape == (2, 4) and runs.final("pre", 2, last=2).shape == (2,)
    model = npos.tiny_lm(corpus, 2, "post", seed=1, d_model=8, n_heads=2, block_size=8)
    expected = train_lm(model, corpus, 4, lr=3e-3, warmup=2, batch_size=4, seq_len=8, seed=1)
    assert torch.allclose(runs.losses["post", 2][1], expected, atol=1e-5)
    x, _ = corpus.batch(4, 8, torch.Generator().manual_seed(99))
    with torch.no_grad():
        assert torch.allclose(runs.models["post", 2][1](x), model.eval()(x), atol=1e-4)
    for bad in ((0, 5), (), (1.5,), (2, 2), (True,), 2):
        with pytest.raises(ValueError, match="warmups 应为 0..steps=4 之间互不相同的整数"):
            npos.warmup_experiment(corpus, steps=4, warmups=bad)


def test_warmup_experiment_passes_adams_betas(corpus):
    # 研究页 08a 的对照：β2 = 0.9 而预热，与直接调用 train_lm(betas=…) 一致
    kw = dict(n_layers=2, seeds=(0, 1), steps=5, warmups=(2,), d_model=8, n_heads=2,
              batch_size=4, seq_len=8, positions=("post",))
    runs = npos.warmup_experiment(corpus, betas=(0.9, 0.9), **kw)
    model = npos.tiny_lm(corpus, 2, "post", seed=1, d_model=8, n_heads=2, block_size=8)
    direct = train_lm(model, corpus, 5, lr=3e-3, warmup=2, batch_size=4, seq_len=8, seed=1,
                      betas=(0.9, 0.9))
    assert torch.allclose(runs.losses["post", 2][1], direct, atol=1e-5)
    default = npos.warmup_experiment(corpus, **kw)
    assert not torch.allclose(default.losses["post", 2][:, 3:], runs.losses["post", 2][:, 3:],
                              atol=1e-4)
    with pytest.raises(ValueError, match="betas 应为两个"):
        npos.warmup_experiment(corpus, betas=(0.9, 1.0), **kw)


def test_stall_followup_long_run_and_estimated_moments(corpus):
    kw = dict(n_layers=2, seeds=(0, 1), d_model=8, n_heads=2, batch_size=4, seq_len=8)
    runs = npos.stall_followup(corpus, steps=5, estimate=3, **kw)
    assert runs["long"].shape == runs["estimated"].shape == (2, 5)
    cold = npos.warmup_experiment(corpus, steps=5, warmups=(0,), positions=("post",), **kw)
    assert torch.allclose(runs["long"], cold.losses["post", 0], atol=1e-5)
    # 前 3 步学习率为 0：参数不动，损失就是初始模型在这 3 批上的损失
    model = npos.tiny_lm(corpus, 2, "post", 1, d_model=8, n_heads=2, block_size=8)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        first = [lm_loss(model(x), y).item() for x, y in (corpus.batch(4, 8, g) for _ in range(3))]
    assert torch.allclose(runs["estimated"][1, :3], torch.tensor(first), atol=1e-5)
    assert not torch.allclose(runs["estimated"][:, 3:], runs["long"][:, 3:], atol=1e-3)
    # "estimated" 用 Adam 的 estimate_betas（默认 β2 = 0.9），与直接调用 train_lm 一致
    stack = TinyGPTStack([npos.tiny_lm(corpus, 2, "post", s, d_model=8, n_heads=2, block_size=8)
                          for s in (0, 1)])
    direct = train_lm(stack, corpus, 5, 3e-3, batch_size=4, seq_len=8, seed=[0, 1], hold=3,
                      betas=(0.9, 0.9))
    assert torch.allclose(runs["estimated"], direct, atol=1e-5)
    default_betas = npos.stall_followup(corpus, steps=5, estimate=3,
                                        estimate_betas=(0.9, 0.999), **kw)
    assert not torch.allclose(default_betas["estimated"][:, 3:], runs["estimated"][:, 3:],
                              atol=1e-4)
    for bad in (0, 5, 2.5, True):
        with pytest.raises(ValueError, match="estimate 应为 1..steps-1=4 之间的整数"):
            npos.stall_followup(corpus, steps=5, estimate=bad, **kw)
    with pytest.raises(ValueError, match="seeds 不能为空"):
        npos.stall_followup(corpus, seeds=(), steps=5, estimate=3)


def test_prediction_spread_is_zero_for_an_input_blind_model(corpus):
    model = npos.tiny_lm(corpus, 2, "post", seed=0).eval()
    x, _ = corpus.batch(4, 16, torch.Generator().manual_seed(0))
    assert npos.prediction_spread(model, x) > 0.01
    with torch.no_grad():
        model.pos.weight.zero_()
        for block in model.blocks:           # every block's output is the same constant
            block.ln_2.weight.zero_()
    assert npos.prediction_spread(model, x) < 1e-5


def test_ffn_grad_norms_one_per_block(corpus):
    model = npos.tiny_lm(corpus, 3, "pre", seed=0, d_model=16, n_heads=2, block_size=8)
    x, y = corpus.batch(2, 8, torch.Generator().manual_seed(0))
    norms = npos.ffn_grad_norms(model, x, y)
    assert norms.shape == (3,) and torch.all(norms > 0)


@pytest.mark.slow
def test_exercise_5_shorter_warmup_and_smaller_learning_rate(corpus):
    # 第 8 章练习 5 的答案，用 5 个种子检查（只训练 Post-LN，只训练答案用到的那组）
    unigram, seeds = corpus.unigram_loss(), experiment_seeds(5)
    short = npos.warmup_experiment(corpus, seeds=seeds, warmups=(15,), positions=("post",))
    stalled = (short.final("post", 15) - unigram).abs() < 0.05
    assert stalled.any()                                  # 预热 15 步：至少一个种子仍然停住
    slow = npos.warmup_experiment(corpus, seeds=seeds, warmups=(0,), lr=1e-3,
                                  positions=("post",))
    learned = slow.final("post", 0) < unigram - 0.3
    assert learned.sum() >= len(seeds) - 1               # 1e-3 不预热：几乎每个种子都学得动


def test_tiny_lm_embedding_scale(corpus):
    x, _ = corpus.batch(8, 16, torch.Generator().manual_seed(0))
    scaled = npos.tiny_lm(corpus, 2, "pre", seed=0, embedding_std=0.5 ** 0.5)
    default = npos.tiny_lm(corpus, 2, "pre", seed=0)
    assert 0.9 < stream_rms(scaled.hidden_states(x))[0] < 1.1
    assert stream_rms(default.hidden_states(x))[0] < 0.05
    assert torch.equal(scaled.blocks[0].mlp.w1.weight, default.blocks[0].mlp.w1.weight)
    with pytest.raises(ValueError, match="embedding_std 应 > 0"):
        npos.tiny_lm(corpus, 2, "pre", seed=0, embedding_std=0.0)
