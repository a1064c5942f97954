"""Chapter 1's experiment: FFN students of several widths fitted to a random 'teacher' FFN
(the lesson trains them 600 steps; its study page 01a trains the same students 3000 steps)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from onelayer.ffn import FeedForward
from onelayer.stack import FeedForwardStack
from onelayer.train import fit, seeded


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


def fit_students(
    x: torch.Tensor, y: torch.Tensor, d_ff: int, seeds: Sequence[int], steps: int = 600,
    lr: float = 0.03, activation: str = "relu",
) -> torch.Tensor:
    """Fit one FFN student of width ``d_ff`` per seed to (x, y) with full-batch Adam, all at
    once; returns the MSE after 0, 1, …, ``steps`` steps: [steps + 1, len(seeds)]."""
    model = FeedForwardStack.from_seeds(activation, x.shape[-1], d_ff, seeds)

    def losses(m: nn.Module) -> torch.Tensor:
        return ((m(x) - y) ** 2).mean(dim=(1, 2))   # one MSE per member

    history = fit(model, losses, steps, lr, optimizer="adam")
    with torch.no_grad():
        return torch.cat([history, losses(model)[None]])
