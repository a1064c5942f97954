"""Worked-example tensors, in one place for the chapters and the tests.

Functions return fresh tensors, so a notebook that edits one cannot change another's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from onelayer.checks import check_positive_int
from onelayer.ffn import FeedForward

# 猫吃鱼 (seed article 003): three tokens, d_model = 4, values after attention + LayerNorm.
TOKENS = ("猫", "吃", "鱼")


def sentence_x() -> torch.Tensor:
    """X for 猫/吃/鱼, shape [3, 4] (one row per token)."""
    return torch.tensor(
        [
            [0.9, -0.3, 0.1, -0.7],  # 猫
            [-0.4, 1.0, -0.6, 0.2],  # 吃
            [0.6, -0.5, 0.8, -0.4],  # 鱼
        ]
    )


def shown_w1_columns() -> torch.Tensor:
    """The four columns of W1 the article shows, shape [4, 4] = [d_model, 4 detectors]."""
    return torch.tensor(
        [
            [0.5, -1.0, 0.3, -0.6],
            [0.5, 1.0, -0.2, -0.6],
            [0.5, -1.0, 0.4, 0.6],
            [0.5, 1.0, -0.1, 0.6],
        ]
    )


def sentence_ffn(activation: str = "gelu", d_ff: int = 16, seed: int = 0) -> FeedForward:
    """The full 猫吃鱼 FFN: seeded W1/W2 whose first four detectors are the shown columns.

    b1 is zero, as in the article's hand calculation, so ``x_鱼·W1`` starts with
    ``[0.25, -2.30, 0.64, 0.18]``.
    """
    generator = torch.Generator().manual_seed(seed)
    ffn = FeedForward(4, d_ff, activation=activation)
    with torch.no_grad():
        for p in ffn.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
        ffn.w1.weight[:4] = shown_w1_columns().T  # nn.Linear stores W1 transposed
        ffn.w1.bias.zero_()
    return ffn


@dataclass(frozen=True)
class TinyExample:
    """Seed article 004's smallest FFN: d_model = 2, d_ff = 3, one output."""

    x: torch.Tensor
    w1: torch.Tensor
    b1: torch.Tensor
    w2: torch.Tensor
    b2: torch.Tensor


def tiny_example() -> TinyExample:
    """x = [1, 2], W1 [2, 3], b1 = [0, 0, 1], W2 = [1, -1, 2]ᵀ, b2 = 0.5."""
    return TinyExample(
        x=torch.tensor([1.0, 2.0]),
        w1=torch.tensor([[1.0, 0.0, -1.0], [2.0, 1.0, 0.0]]),
        b1=torch.tensor([0.0, 0.0, 1.0]),
        w2=torch.tensor([[1.0], [-1.0], [2.0]]),
        b2=torch.tensor([0.5]),
    )


# 两条交错的螺旋线（第 3 章）：一个浅网络不容易、深网络才分得开的二维分类任务。
def two_spirals(
    n: int = 160, turns: float = 1.5, noise: float = 0.0, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two interleaved spirals in the plane: x [n, 2] in about [-2, 2]², labels y [n] in {0, 1}.

    Point i belongs to spiral i % 2; the second spiral is the first rotated by 180°.
    """
    check_positive_int("n", n)
    generator = torch.Generator().manual_seed(seed)
    span = turns * 2 * math.pi
    t = torch.rand(n, generator=generator) * span + 0.3  # 角度；从 0.3 起，避开原点
    y = (torch.arange(n) % 2).float()
    angle = t + math.pi * y
    radius = 2 * t / (span + 0.3)
    x = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    x = x + noise * torch.randn(x.shape, generator=generator)
    return x, y
