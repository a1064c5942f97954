"""Activation functions written from their formulas.

Each one is checked against ``torch.nn.functional`` in ``tests/test_activations.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from onelayer.checks import check_choice


def relu(x: torch.Tensor) -> torch.Tensor:
    """ReLU(x) = max(0, x)：负数清零，正数原样通过。"""
    return torch.where(x > 0, x, torch.zeros_like(x))


def gelu(x: torch.Tensor) -> torch.Tensor:
    """GELU(x) = x·Φ(x)，Φ 为标准正态分布的累积分布函数。"""
    phi = 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
    return x * phi


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": relu,
    "gelu": gelu,
    "identity": lambda x: x,
}


def get_activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """Look an activation up by name; unknown names raise ValueError."""
    return ACTIVATIONS[check_choice("activation", name, ACTIVATIONS)]
