"""Chapter 2's experiment: the bad update and the retraining after it."""

import pytest
import torch
import torch.nn.functional as F

from onelayer import FeedForward
from onelayer.chapters.ch01_ffn import teacher_task
from onelayer.chapters.ch02_activation import damage_and_retrain, silent_units
from onelayer.train import seeded

X, Y = teacher_task(d_model=4, d_ff=32, n=64, seed=0)


def lone_run(activation, seed, shift, before, after, lr=0.1):
    """The same experiment on one plain FeedForward, the way the chapter describes it."""
    with seeded(seed):
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
    with torch.no_grad():
        return model, F.mse_loss(model(X), Y).item()


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_every_member_trains_like_a_lone_ffn(activation):
    runs = damage_and_retrain(X, Y, activation, seeds=(3, 4), shifts=(1.0, 2.5), before=20,
                              after=30)
    assert runs.loss_final.shape == (2, 2) and runs.losses.shape == (50, 2, 2)
    for i, shift in enumerate(runs.shifts):
        for j, seed in enumerate(runs.seeds):
            model, final = lone_run(activation, seed, shift, 20, 30)
            assert abs(runs.loss_final[i, j].item() - final) < 1e-5
            with torch.no_grad():
                silent = silent_units(model.w1(X))
            assert torch.equal(runs.silent_after[i, j], silent & runs.hit[i, j])


def test_relu_units_silenced_by_the_update_never_move_and_gelu_units_do():
    relu = damage_and_retrain(X, Y, "relu", seeds=(0, 1), shifts=(3.0,), before=20, after=20)
    gelu = damage_and_retrain(X, Y, "gelu", seeds=(0, 1), shifts=(3.0,), before=20, after=20)
    assert relu.hit.any() and gelu.hit.any()
    assert (relu.grad_w1[relu.hit] == 0).all() and (relu.moved[relu.hit] == 0).all()
    assert (relu.grad_w2[relu.hit] == 0).all() and (relu.n_revived == 0).all()
    assert (gelu.grad_w1[gelu.hit] > 0).all() and (gelu.moved[gelu.hit] > 0).all()


def test_silent_units_needs_every_input_at_or_below_zero():
    pre = torch.tensor([[-1.0, 0.0, 2.0], [-3.0, -1.0, -1.0]])
    assert silent_units(pre).tolist() == [True, True, False]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"shifts": (0.0,)}, "shifts 应全为正数"),
    ({"seeds": ()}, "至少有一个值"),
    ({"before": 0}, "before"),
    ({"activation": "swish"}, "activation"),
])
def test_bad_arguments_name_expected_and_actual(kwargs, message):
    args = {"activation": "relu", "seeds": (0,)} | kwargs
    with pytest.raises(ValueError, match=message):
        damage_and_retrain(X, Y, **args)
