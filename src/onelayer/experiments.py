"""Small training loops and probes used by the chapters' experiments."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.checks import check_positive_int
from onelayer.ffn import FeedForward


def sgd_step(model: nn.Module, x: torch.Tensor, target: torch.Tensor, lr: float) -> float:
    """One plain gradient-descent step on the MSE loss; returns the loss before the step."""
    loss = F.mse_loss(model(x), target)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad  # θ ← θ − lr·∂L/∂θ
    return loss.item()


def teacher_task(
    d_model: int = 4, d_ff: int = 32, n: int = 256, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets from a random 'teacher' FFN: a nonlinear map to be learned."""
    generator = torch.Generator().manual_seed(seed)
    teacher = FeedForward(d_model, d_ff, activation="relu")
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
        x = torch.randn(n, d_model, generator=generator)
        y = teacher(x)
        y = (y - y.mean(0)) / y.std(0)  # unit-variance targets: loss 1.0 = predicting the mean
    return x, y


def fit_ffn(
    x: torch.Tensor, y: torch.Tensor, d_ff: int, activation: str = "relu",
    steps: int = 200, lr: float = 0.5, seed: int = 0,
) -> float:
    """Fit a fresh FFN of width ``d_ff`` to (x, y) by full-batch gradient descent.

    Returns the final MSE. Plain gradient descent (the same step as ``sgd_step``) keeps
    the loop short and avoids torch.optim, whose first use costs seconds of imports.
    """
    check_positive_int("steps", steps)
    torch.manual_seed(seed)
    model = FeedForward(x.shape[-1], d_ff, activation=activation)
    for _ in range(steps):
        sgd_step(model, x, y, lr)
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()
