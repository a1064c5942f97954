"""Argument checks shared by every public onelayer function.

Each check raises ValueError naming the expected and the actual value, in Chinese,
so a reader's mistake in a notebook points at its cause.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` if it is an int > 0, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} 应为正整数，实际为 {value!r}")
    return value


def check_flag(name: str, value: object) -> bool:
    """Return ``value`` if it is True or False, else raise ValueError."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} 应为 True 或 False，实际为 {value!r}")
    return value


def check_eps(eps: float) -> float:
    """Return ``eps`` if it is a number > 0 (a norm's ε), else raise ValueError."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ValueError(f"eps 应为正数，实际为 {eps!r}")
    return float(eps)


def check_probability(name: str, value: float) -> float:
    """Return ``value`` if 0 <= value < 1 (a dropout rate), else raise ValueError."""
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} 应在 [0, 1) 之间，实际为 {value!r}")
    return value


def check_choice(name: str, value: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ValueError."""
    options = sorted(choices)
    if value not in options:
        raise ValueError(f"{name} 应为 {options} 之一，实际为 {value!r}")
    return value


def check_last_dim(x: torch.Tensor, expected: int, name: str = "d_model") -> torch.Tensor:
    """Return ``x`` if its last dimension is ``expected``, else raise ValueError."""
    if x.dim() == 0 or x.shape[-1] != expected:
        actual = tuple(x.shape)[-1] if x.dim() else "标量（0 维）"
        raise ValueError(
            f"最后一维应为 {name}={expected}，实际为 {actual}（输入形状 {list(x.shape)}）"
        )
    return x
