"""Chapter 2's dead-ReLU study: the bad update and the retraining after it."""

import pytest
import torch
import torch.nn.functional as F

from onelayer import FeedForward
from onelayer.chapters.ch01_ffn import teacher_task
from onelayer.chapters.ch02_activation import damage_and_retrain, silent_units
from onelayer.stack import FeedForwardStack
from onelayer.train import seeded

X, Y = teacher_task(d_model=4, d_ff=32, n=64, seed=0)


def lone_run(activation, seed, shift, before, after, lr=0.1):
    """The same experiment on one plain FeedForward, as the study page's visible cell runs it
    (torch.optim.SGD without momentum is plain gradient descent)."""
    torch.manual_seed(seed)
    model = FeedForward(4, 16, activation=activation)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(before + after):
        if step == before:
            with torch.no_grad():
                model.w1.bias -= shift
        loss = F.mse_loss(model(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_every_member_trains_like_a_lone_ffn(activation):
    runs = damage_and_retrain(X, Y, activation, seeds=(3, 4), shift=2.5, before=20, after=30,
                              every=10)
    assert runs.top_pre.shape == (4, 2, 16) and runs.check_steps.tolist() == [0, 10, 20, 30]
    for j, seed in enumerate(runs.seeds):
        model = lone_run(activation, seed, 2.5, 20, 30)
        with torch.no_grad():
            pre = model.w1(X)
        assert torch.allclose(runs.top_pre[-1, j], pre.amax(dim=0), atol=1e-5)
        assert torch.equal(runs.silent_after[j], silent_units(pre) & runs.hit[j])


def test_relu_units_silenced_by_the_update_never_move_and_gelu_units_do():
    relu = damage_and_retrain(X, Y, "relu", seeds=(0, 1), shift=3.0, before=20, after=20)
    gelu = damage_and_retrain(X, Y, "gelu", seeds=(0, 1), shift=3.0, before=20, after=20)
    assert relu.hit.any() and gelu.hit.any()
    assert (relu.grad_w1[relu.hit] == 0).all() and (relu.moved[relu.hit] == 0).all()
    assert (relu.grad_w2[relu.hit] == 0).all() and (relu.n_revived == 0).all()
    assert (gelu.grad_w1[gelu.hit] > 0).all() and (gelu.moved[gelu.hit] > 0).all()
    # a silenced ReLU unit's curve is flat: its weights never change
    flat = relu.top_pre[:, relu.hit]
    assert torch.equal(flat, flat[:1].expand_as(flat)) and (flat <= 0).all()


def test_silent_units_needs_every_input_at_or_below_zero():
    pre = torch.tensor([[-1.0, 0.0, 2.0], [-3.0, -1.0, -1.0]])
    assert silent_units(pre).tolist() == [True, True, False]


@pytest.mark.parametrize("variant", ["gelu", "swiglu"])
def test_stack_members_compute_what_their_feedforwards_compute(variant):
    members = []
    for seed in (5, 6, 7):
        with seeded(seed):
            members.append(FeedForward.from_variant(variant, 8, 12))
    stack = FeedForwardStack.from_seeds(variant, 8, 12, (5, 6, 7))
    x = torch.randn(10, 8)
    with torch.no_grad():
        expected = torch.stack([m(x) for m in members])
        assert torch.allclose(stack(x), expected, atol=1e-6)
        assert torch.allclose(stack.pre_activation(x), torch.stack([m.w1(x) for m in members]),
                              atol=1e-6)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"shift": 0.0}, "shift 应为正数"),
    ({"seeds": ()}, "至少有一个值"),
    ({"before": 0}, "before"),
    ({"after": 25}, "整数倍"),
    ({"activation": "swish"}, "activation"),
])
def test_bad_arguments_name_expected_and_actual(kwargs, message):
    args = {"activation": "relu", "seeds": (0,)} | kwargs
    with pytest.raises(ValueError, match=message):
        damage_and_retrain(X, Y, **args)


def test_stack_refuses_members_that_differ():
    with pytest.raises(ValueError, match="d_ff"):
        FeedForwardStack([FeedForward(4, 8), FeedForward(4, 6)])
    with pytest.raises(ValueError, match="bias"):
        FeedForwardStack([FeedForward(4, 8, bias=False)])
    with pytest.raises(ValueError, match="至少有一个"):
        FeedForwardStack([])
