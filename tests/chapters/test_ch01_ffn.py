"""Chapter 1's experiments: gradient descent on an FFN, fitting a teacher FFN; the worked
example's written-out dot product and the FFN's error for a wrong last dimension."""

import pytest
import torch

from onelayer import FeedForward
from onelayer.chapters.ch01_ffn import fit_ffn, fit_students, teacher_task, written_dot
from onelayer.stack import FeedForwardStack
from onelayer.train import seeded


def test_plain_gradient_descent_fit_lowers_the_loss():
    x, y = teacher_task()
    start = fit_ffn(x, y, d_ff=16, steps=1, lr=0.01, optimizer="sgd")
    assert fit_ffn(x, y, d_ff=16, steps=50, lr=0.01, optimizer="sgd") < start


def test_wider_ffn_fits_the_teacher_better():
    x, y = teacher_task()
    narrow, wide = fit_ffn(x, y, d_ff=2, steps=100), fit_ffn(x, y, d_ff=32, steps=100)
    assert wide < 0.5 * narrow


def test_teacher_task_and_fit_leave_the_global_random_state_alone():
    torch.manual_seed(11)
    expected = torch.rand(1)
    torch.manual_seed(11)
    x, y = teacher_task()
    fit_ffn(x, y, d_ff=4, steps=2)
    assert torch.equal(torch.rand(1), expected)


def test_a_stack_of_students_trains_each_as_if_alone():
    x, y = teacher_task(n=64)
    history = fit_students(x, y, d_ff=8, seeds=[0, 5], steps=40)
    assert history.shape == (41, 2)
    alone = torch.tensor([fit_ffn(x, y, d_ff=8, seed=s, steps=40) for s in (0, 5)])
    assert torch.allclose(history[-1], alone, rtol=1e-4, atol=1e-6)
    with seeded(5), torch.no_grad():  # row 0: member 1 before any step is seed 5's FFN
        start = ((FeedForward(4, 8, activation="relu")(x) - y) ** 2).mean()
    assert torch.allclose(history[0, 1], start, rtol=1e-5)
    assert (history[-1] < history[0]).all()


def test_a_stack_needs_a_seed():
    x, y = teacher_task(n=8)
    with pytest.raises(ValueError, match="至少有一个"):
        FeedForwardStack.from_seeds("relu", 4, 8, seeds=[])


def test_written_dot_puts_negative_numbers_in_brackets():
    text = written_dot(torch.tensor([0.6, -0.5]), torch.tensor([-1.0, 0.3]))
    assert text == "0.6×(-1.0) + (-0.5)×0.3"


def test_wrong_last_dimension_names_expected_actual_and_shape():
    # The chapter used to show this message in a validation demo; the check lives here now.
    with pytest.raises(ValueError, match=r"最后一维应为 d_model=4，实际为 5（输入形状 \[3, 5\]）"):
        FeedForward(4, 16)(torch.randn(3, 5))
