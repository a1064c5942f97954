"""Chapter 1's experiments: one gradient-descent step, and FFNs of several widths fitted to
a random 'teacher' FFN."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.ffn import FeedForward
from onelayer.train import fit, seeded


def sgd_step(model: nn.Module, x: torch.Tensor, target: torch.Tensor, lr: float) -> float:
    """One plain gradient-descent step on the MSE loss; returns the loss before the step."""
    history = fit(model, lambda m: F.mse_loss(m(x), target), steps=1, lr=lr, optimizer="sgd")
    return history[0].item()


def teacher_task(
    d_model: int = 4, d_ff: int = 32, n: int = 256, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets from a random 'teacher' FFN: a nonlinear map to be learned."""
    generator = torch.Generator().manual_seed(seed)
    with seeded(seed):  # its random init is overwritten below
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
    steps: int = 600, lr: float = 0.03, seed: int = 0, optimizer: str = "adam",
) -> float:
    """Fit a fresh FFN of width ``d_ff`` (built from ``seed``) to (x, y) by full-batch
    training (Adam by default, or plain gradient descent "sgd"); returns the final MSE."""
    with seeded(seed):
        model = FeedForward(x.shape[-1], d_ff, activation=activation)
    fit(model, lambda m: F.mse_loss(m(x), y), steps, lr, optimizer=optimizer)
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()
