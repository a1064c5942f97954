"""One optimiser, two loops (onelayer.train)."""

import pytest
import torch
import torch.nn.functional as F

from onelayer import DeepMLP, FeedForward
from onelayer.block import BlockConfig
from onelayer.chapters.ch07_tiny_gpt import fact_recall
from onelayer.data import facts_corpus
from onelayer.model import GPTConfig, TinyGPT
from onelayer.train import experiment_seeds, fit, seeded, train_lm, warmup_lr


def mse(x, y):
    return lambda model: F.mse_loss(model(x), y)


def train_with_torch(model, optimizer, loss_fn, steps):
    for _ in range(steps):
        optimizer.zero_grad()
        loss_fn(model).backward()
        optimizer.step()


def test_fit_with_adam_matches_torch_optim_adam():
    torch.manual_seed(9)
    x, y = torch.randn(64, 2), torch.randn(64, 1)
    ours = DeepMLP(3, d_model=8)
    theirs = DeepMLP(3, d_model=8)
    theirs.load_state_dict(ours.state_dict())
    history = fit(ours, mse(x, y), steps=25, lr=1e-2)
    train_with_torch(theirs, torch.optim.Adam(theirs.parameters(), lr=1e-2), mse(x, y), 25)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert torch.allclose(p, q, atol=1e-5)
    assert history.shape == (25,) and history[-1] < history[0]


def test_fit_with_gradient_descent_matches_torch_optim_sgd():
    torch.manual_seed(10)
    x, y = torch.randn(32, 4), torch.randn(32, 4)
    ours, theirs = FeedForward(4, 8), FeedForward(4, 8)
    theirs.load_state_dict(ours.state_dict())
    fit(ours, mse(x, y), steps=5, lr=0.1, optimizer="sgd")
    train_with_torch(theirs, torch.optim.SGD(theirs.parameters(), lr=0.1), mse(x, y), 5)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"lr": 0.0}, "lr 应为正数"),
    ({"lr": torch.tensor([1e-3, 1e-3])}, "只适用于一叠模型"),
    ({"optimizer": "lion"}, "optimizer 应为"),
    ({"steps": 0}, "steps 应为正整数"),
])
def test_fit_rejects_bad_arguments(kwargs, message):
    args = {"steps": 1, "lr": 1e-3, **kwargs}
    with pytest.raises(ValueError, match=message):
        fit(FeedForward(2, 4), mse(torch.zeros(1, 2), torch.zeros(1, 2)), **args)


def test_seeded_builds_the_same_model_and_leaves_the_global_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(1)
    torch.manual_seed(5)
    with seeded(3):
        a = FeedForward(4, 8)
    with seeded(3):
        b = FeedForward(4, 8)
    assert torch.equal(torch.rand(1), expected)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_warmup_ramps_linearly():
    assert [warmup_lr(s, 1.0, 4) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert warmup_lr(0, 1.0, 0) == 1.0


def test_training_learns_the_facts():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    torch.manual_seed(0)
    block = BlockConfig(d_model=32, n_heads=2)
    model = TinyGPT(GPTConfig(len(corpus.vocab), 12, n_layers=1, block=block))
    before = fact_recall(model, corpus)
    losses = train_lm(model, corpus, steps=150, lr=3e-3, batch_size=16)
    assert losses[-10:].mean() < corpus.best_loss() + 0.1 < losses[0]
    assert fact_recall(model, corpus) == 1.0 > before


def test_train_lm_rejects_bad_warmups_and_member_counts():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    with seeded(0):
        model = TinyGPT(GPTConfig(len(corpus.vocab), 8, 1, BlockConfig(d_model=8, n_heads=2)))
    with pytest.raises(ValueError, match="warmup 应为非负整数"):
        train_lm(model, corpus, 2, warmup=-1)
    with pytest.raises(ValueError, match="lr 应有 2 个值"):
        train_lm(model, corpus, 2, lr=[1e-3], seed=[0, 1])
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="hold 应为非负整数"):
            train_lm(model, corpus, 2, hold=bad)
    with pytest.raises(ValueError, match="lr 应为正数"):
        train_lm(model, corpus, 2, lr=0.0)
    with pytest.raises(ValueError, match="betas 应为两个"):
        train_lm(model, corpus, 2, betas=(0.9, 1.0))


def test_hold_moves_no_weight_then_trains_as_adam_with_filled_moments():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    with seeded(0):
        model = TinyGPT(GPTConfig(len(corpus.vocab), 8, 1, BlockConfig(d_model=8, n_heads=2)))
    start = [p.detach().clone() for p in model.parameters()]
    held = train_lm(model, corpus, 3, lr=1e-2, batch_size=4, hold=3)
    assert all(torch.equal(a, b) for a, b in zip(start, model.parameters()))
    # the same batches without holding: the first loss is the same, the weights then move
    with seeded(0):
        moving = TinyGPT(GPTConfig(len(corpus.vocab), 8, 1, BlockConfig(d_model=8, n_heads=2)))
    losses = train_lm(moving, corpus, 3, lr=1e-2, batch_size=4)
    assert losses[0] == held[0] and not torch.equal(losses, held)


def test_train_lm_passes_betas_to_adam():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    runs = []
    for betas in ((0.9, 0.999), (0.9, 0.9), None):
        with seeded(0):
            model = TinyGPT(GPTConfig(len(corpus.vocab), 8, 1, BlockConfig(d_model=8, n_heads=2)))
        kwargs = {} if betas is None else {"betas": betas}
        runs.append(train_lm(model, corpus, 4, lr=1e-2, batch_size=4, **kwargs))
    assert torch.equal(runs[0], runs[2]) and not torch.equal(runs[0], runs[1])


def test_experiment_seeds_follow_the_offset(monkeypatch):
    monkeypatch.delenv("ONELAYER_SEED_OFFSET", raising=False)
    assert experiment_seeds(3) == (0, 1, 2)
    monkeypatch.setenv("ONELAYER_SEED_OFFSET", "40")
    assert experiment_seeds(2) == (40, 41)
    for bad in ("-1", "x", "1.5"):
        monkeypatch.setenv("ONELAYER_SEED_OFFSET", bad)
        with pytest.raises(ValueError, match="ONELAYER_SEED_OFFSET 应为非负整数"):
            experiment_seeds(2)


# --- the AdamW loop of chapter 10 -------------------------------------------------------------

def test_warmup_cosine_ramps_up_then_decays_to_the_floor():
    from onelayer.train import warmup_cosine

    factors = [warmup_cosine(s, 100, 20) for s in range(100)]
    assert factors[0] == pytest.approx(1 / 20) and factors[19] == factors[20] == 1.0
    assert factors[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(factors[20:], factors[21:]))   # 预热之后只降不升
    assert warmup_cosine(0, 10, 0) == 1.0
    with pytest.raises(ValueError, match="warmup 应在"):
        warmup_cosine(0, 10, 10)


def test_adamw_decays_matrices_and_embeddings_only():
    from onelayer.train import adamw

    with seeded(0):
        model = TinyGPT(GPTConfig(vocab_size=7, block_size=4, block=BlockConfig(d_model=8)))
    decay, keep = adamw(model, 1e-3).param_groups
    names = {id(p): n for n, p in model.named_parameters()}
    assert decay["weight_decay"] == 0.1 and keep["weight_decay"] == 0.0
    assert {names[id(p)] for p in keep["params"]} == {
        n for n, _ in model.named_parameters() if n.endswith("bias") or ".ln_" in n or "ln_f" in n}
    assert "tok.weight" in {names[id(p)] for p in decay["params"]}


def test_a_stack_trained_with_adamw_is_its_members_trained_alone():
    """Each member of a stack gets its own batches, its own clipping and AdamW: member i ends
    where a TinyGPT trained alone from the same seed ends."""
    from onelayer.stack import TinyGPTStack
    from onelayer.train import train_adamw

    corpus = facts_corpus(n_subjects=4, n_relations=2)
    config = GPTConfig(len(corpus.vocab), 8, block=BlockConfig(d_model=16, n_heads=2))
    members = []
    for seed in (0, 1):
        with seeded(seed):
            members.append(TinyGPT(config))
    stack = TinyGPTStack(members)
    settings = dict(steps=6, lr=3e-2, warmup=2, batch_size=4, seq_len=8, max_norm=0.05)
    stack_losses, _ = train_adamw(stack, corpus, seed=[10, 11], **settings)
    for i, seed in enumerate((10, 11)):
        alone_losses, evaluations = train_adamw(members[i], corpus, seed=seed, every=3,
                                                evaluate=lambda m: m.training, **settings)
        assert torch.allclose(stack_losses[i], alone_losses, atol=1e-5)
        assert evaluations == {0: False, 3: False, 6: False}       # 评估时在验证模式
        assert members[i].training
        for name, w in zip(stack.names, stack.weights):
            # 键的偏置不影响 softmax，梯度只是舍入误差，Adam 把它放大到 1e-5 上下
            assert torch.allclose(w[i], dict(members[i].named_parameters())[name], atol=1e-4)


def test_clip_gradients_clips_each_member_to_its_own_norm():
    from onelayer.stack import TinyGPTStack
    from onelayer.train import clip_gradients

    config = GPTConfig(vocab_size=7, block_size=4, block=BlockConfig(d_model=8))
    members = []
    for seed in (0, 1):
        with seeded(seed):
            members.append(TinyGPT(config))
    stack = TinyGPTStack(members)
    for w in stack.weights:
        w.grad = torch.ones_like(w) * torch.tensor([1.0, 1e-4]).view(-1, *[1] * (w.dim() - 1))
    clip_gradients(stack, 1.0)
    norms = torch.stack([w.grad.pow(2).flatten(1).sum(1) for w in stack.weights]).sum(0).sqrt()
    assert norms[0] == pytest.approx(1.0, rel=1e-4)       # 大的裁到 1
    assert norms[1] < 0.1                                 # 小的不动


def test_train_adamw_runs_the_first_steps_of_the_same_schedule_when_cut_short():
    import itertools

    from onelayer.train import train_adamw

    corpus = facts_corpus(n_subjects=4, n_relations=2)
    config = GPTConfig(len(corpus.vocab), 8, block=BlockConfig(d_model=16, n_heads=2))
    settings = dict(steps=6, lr=3e-2, warmup=2, batch_size=4, seq_len=8, seed=3,
                    evaluate=lambda m: 0, every=2)
    runs = []
    for progress in (None, lambda steps: itertools.islice(steps, 4)):
        with seeded(0):
            model = TinyGPT(config)
        runs.append(train_adamw(model, corpus, progress=progress, **settings))
    (full, full_eval), (first, first_eval) = runs
    assert torch.equal(first[:4], full[:4]) and first[4:].isnan().all()
    assert sorted(full_eval) == [0, 2, 4, 6] and sorted(first_eval) == [0, 2, 4]
