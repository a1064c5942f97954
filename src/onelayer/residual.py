"""Residual connections, x + f(x), and the places a norm can sit around one (chapters 3, 5).

post_norm(x, f, norm) = norm(x + f(x))          the 2017 Transformer
pre_norm(x, f, norm)  = x + f(norm(x))          GPT-2, Llama …
deep_norm             = norm(α·x + f(x))        Wang et al. 2022 (α > 1, with a down-scaled init)
sandwich_norm         = x + norm₂(f(norm₁(x)))  Ding et al. 2021 (CogView)

``TransformerBlock`` builds its two sublayers with ``norm_sublayer``: the Pre/Post formula
is written here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from onelayer.checks import check_choice, check_positive_int

Sublayer = Callable[[torch.Tensor], torch.Tensor]
NORM_POSITIONS = ("pre", "post")


def residual_add(x: torch.Tensor, fx: torch.Tensor) -> torch.Tensor:
    """x + f(x), refusing shapes that differ (torch would broadcast some of them silently)."""
    if fx.shape != x.shape:
        raise ValueError(
            f"残差相加要求 f(x) 与 x 形状相同：x 为 {list(x.shape)}，f(x) 为 {list(fx.shape)}"
            "（子层的输出应回到 d_model）"
        )
    return x + fx


class Residual(nn.Module):
    """Wrap a sublayer f so that the module computes x + f(x)."""

    def __init__(self, sublayer: nn.Module) -> None:
        super().__init__()
        self.sublayer = sublayer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return residual_add(x, self.sublayer(x))


def post_norm(x: torch.Tensor, sublayer: Sublayer, norm: Sublayer) -> torch.Tensor:
    """Post-Norm: LN(x + F(x)). The residual stream is normalised after every add."""
    return norm(residual_add(x, sublayer(x)))


def pre_norm(x: torch.Tensor, sublayer: Sublayer, norm: Sublayer) -> torch.Tensor:
    """Pre-Norm: x + F(LN(x)). Only the sublayer's input is normalised, the stream is not."""
    return residual_add(x, sublayer(norm(x)))


def norm_sublayer(x: torch.Tensor, sublayer: Sublayer, norm: Sublayer,
                  position: str) -> torch.Tensor:
    """One residual sublayer with its norm placed at ``position`` ('pre' or 'post')."""
    check_choice("position", position, NORM_POSITIONS)
    return (pre_norm if position == "pre" else post_norm)(x, sublayer, norm)


def deep_norm(x: torch.Tensor, sublayer: Sublayer, norm: Sublayer, alpha: float) -> torch.Tensor:
    """DeepNorm: LN(α·x + F(x)), a Post-Norm whose shortcut is weighted by α ≥ 1."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha >= 1:
        raise ValueError(f"DeepNorm 的 alpha 应 ≥ 1，实际为 {alpha!r}")
    return post_norm(alpha * x, lambda _: sublayer(x), norm)


def sandwich_norm(x: torch.Tensor, sublayer: Sublayer, norm_in: Sublayer,
                  norm_out: Sublayer) -> torch.Tensor:
    """Sandwich-LN: x + LN₂(F(LN₁(x))), a Pre-Norm with a second norm on the branch output."""
    return pre_norm(x, lambda h: norm_out(sublayer(h)), norm_in)


def deepnorm_constants(n_layers: int) -> tuple[float, float]:
    """DeepNorm's (α, β) for an encoder-only or decoder-only stack of ``n_layers`` blocks:
    α = (2N)^¼ weights the shortcut, β = (8N)^-¼ scales the init of the branch weights."""
    check_positive_int("n_layers", n_layers)
    return (2 * n_layers) ** 0.25, (8 * n_layers) ** -0.25
