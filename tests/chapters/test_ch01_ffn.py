"""Chapter 1's experiment: FFN students fitted to a teacher FFN, each seed's student trained
as if alone; and the FFN's error for a wrong last dimension."""

import pytest
import torch
import torch.nn.functional as F

from onelayer import FeedForward
from onelayer.chapters.ch01_ffn import fit_students, teacher_task
from onelayer.stack import FeedForwardStack
from onelayer.train import fit, seeded


def fit_one(x, y, d_ff, seed=0, steps=600, lr=0.03, optimizer="adam"):
    """One student trained alone: what each member of fit_students's stack should match."""
    with seeded(seed):
        model = FeedForward(x.shape[-1], d_ff, activation="relu")
    fit(model, lambda m: F.mse_loss(m(x), y), steps, lr, optimizer=optimizer)
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()


def test_plain_gradient_descent_fit_lowers_the_loss():
    x, y = teacher_task()
    start = fit_one(x, y, d_ff=16, steps=1, lr=0.01, optimizer="sgd")
    assert fit_one(x, y, d_ff=16, steps=50, lr=0.01, optimizer="sgd") < start


def test_wider_students_fit_the_teacher_better():
    x, y = teacher_task()
    narrow, wide = fit_students(x, y, d_ff=2, seeds=[0], steps=100)[-1], \
        fit_students(x, y, d_ff=32, seeds=[0], steps=100)[-1]
    assert wide < 0.5 * narrow


def test_teacher_task_and_fit_students_leave_the_global_random_state_alone():
    torch.manual_seed(11)
    expected = torch.rand(1)
    torch.manual_seed(11)
    x, y = teacher_task()
    fit_students(x, y, d_ff=4, seeds=[0, 1], steps=2)
    assert torch.equal(torch.rand(1), expected)


def test_the_teacher_is_a_plain_relu_ffn_with_standard_normal_weights():
    # The lesson builds it as nn.Sequential(Linear, ReLU, Linear): same parameter order.
    generator = torch.Generator().manual_seed(0)
    teacher = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
        x = torch.randn(256, 4, generator=generator)
        y = teacher(x)
    x_lib, y_lib = teacher_task()
    assert torch.equal(x, x_lib)
    assert torch.equal((y - y.mean(0)) / y.std(0), y_lib)


def test_a_stack_of_students_trains_each_as_if_alone():
    x, y = teacher_task(n=64)
    history = fit_students(x, y, d_ff=8, seeds=[0, 5], steps=40)
    assert history.shape == (41, 2)
    alone = torch.tensor([fit_one(x, y, d_ff=8, seed=s, steps=40) for s in (0, 5)])
    assert torch.allclose(history[-1], alone, rtol=1e-4, atol=1e-6)
    with seeded(5), torch.no_grad():  # row 0: member 1 before any step is seed 5's FFN
        start = ((FeedForward(4, 8, activation="relu")(x) - y) ** 2).mean()
    assert torch.allclose(history[0, 1], start, rtol=1e-5)
    assert (history[-1] < history[0]).all()


def test_a_stack_needs_a_seed():
    x, y = teacher_task(n=8)
    with pytest.raises(ValueError, match="至少有一个"):
        FeedForwardStack.from_seeds("relu", 4, 8, seeds=[])


def test_wrong_last_dimension_names_expected_actual_and_shape():
    # The chapter used to show this message in a validation demo; the check lives here now.
    with pytest.raises(ValueError, match=r"最后一维应为 d_model=4，实际为 5（输入形状 \[3, 5\]）"):
        FeedForward(4, 16)(torch.randn(3, 5))
