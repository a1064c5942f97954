"""Normalisation layers written out: LayerNorm, RMSNorm, and the statistics behind them.

LayerNorm(x) = γ ⊙ (x − μ) / √(σ² + ε) + β,   μ, σ² over the last dimension (σ² biased, ÷ d)
RMSNorm(x)   = γ ⊙ x / √(mean(x²) + ε)
"""

from __future__ import annotations

import torch
from torch import nn

from onelayer.checks import check_eps, check_input, check_positive_int


def mean_and_biased_var(
    x: torch.Tensor, dim: int | tuple[int, ...] = -1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and biased variance (divide by n, not n − 1) over ``dim``, kept for broadcasting."""
    mean = x.mean(dim=dim, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dim, keepdim=True)  # σ² = mean((x − μ)²)
    return mean, var


def standardize(
    x: torch.Tensor, dim: int | tuple[int, ...] = -1, eps: float = 1e-5
) -> torch.Tensor:
    """(x − μ) / √(σ² + ε) with μ, σ² taken over ``dim``.

    ``dim=-1`` is what LayerNorm does (each vector on its own); ``dim=0`` on a
    ``[batch, features]`` tensor is what BatchNorm does in training mode (each feature
    across the batch).
    """
    check_eps(eps)
    mean, var = mean_and_biased_var(x, dim)
    return (x - mean) / torch.sqrt(var + eps)


def root_mean_square(x: torch.Tensor) -> torch.Tensor:
    """√(mean(x²)) over the last dimension, kept for broadcasting."""
    return torch.sqrt((x**2).mean(dim=-1, keepdim=True))


class LayerNorm(nn.Module):
    """Layer normalisation over the last dimension, with learnable ``weight`` γ and ``bias`` β.

    Same parameters and defaults as ``torch.nn.LayerNorm(d_model)``: γ starts at 1, β at 0,
    ε = 1e-5, and σ² is the biased variance.
    """

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.eps = check_eps(eps)
        self.weight = nn.Parameter(torch.ones(d_model))  # γ
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None  # β

    def normalized(self, x: torch.Tensor) -> torch.Tensor:
        """x̂ = (x − μ) / √(σ² + ε), before γ and β; shape unchanged."""
        check_input(x, self.d_model, self.weight.dtype)
        return standardize(x, dim=-1, eps=self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.normalized(x) * self.weight  # γ ⊙ x̂
        return y + self.bias if self.bias is not None else y  # + β

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}, bias={self.bias is not None}"


class RMSNorm(nn.Module):
    """Root-mean-square normalisation: no mean subtracted, no β; learnable ``weight`` γ.

    ε defaults to 1e-6 as in Llama. ``torch.nn.RMSNorm`` defaults to ``eps=None``
    (the dtype's machine epsilon), so pass ε explicitly when comparing.
    """

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.eps = check_eps(eps)
        self.weight = nn.Parameter(torch.ones(d_model))  # γ

    def normalized(self, x: torch.Tensor) -> torch.Tensor:
        """x / √(mean(x²) + ε), before γ; shape unchanged."""
        check_input(x, self.d_model, self.weight.dtype)
        return x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.normalized(x) * self.weight  # γ ⊙ x / RMS(x)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
