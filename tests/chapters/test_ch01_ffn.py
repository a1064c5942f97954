"""Chapter 1's experiments: gradient descent on an FFN, fitting a teacher FFN."""

import torch

from onelayer import FeedForward
from onelayer.chapters.ch01_ffn import fit_ffn, sgd_step, teacher_task


def test_sgd_step_lowers_the_loss():
    torch.manual_seed(0)
    ffn = FeedForward(8, 16, activation="relu")
    x, target = torch.randn(1, 3, 8), torch.randn(1, 3, 8)
    losses = [sgd_step(ffn, x, target, lr=0.01) for _ in range(2)]
    assert losses[1] < losses[0]


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
