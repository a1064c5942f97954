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
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
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


def check_tensor(name: str, value: object) -> torch.Tensor:
    """Return ``value`` if it is a torch.Tensor, else raise ValueError."""
    if not isinstance(value, torch.Tensor):
        space = " " if name.isascii() else ""  # "logits 应为"，"输入应为"
        raise ValueError(f"{name}{space}应为 torch.Tensor，实际为 {type(value).__name__}"
                         "（可用 torch.tensor(...) 转换）")
    return value


# How a tensor or a module is converted to a dtype, for the hint in the error message.
CONVERSIONS = {torch.float32: "float()", torch.float64: "double()", torch.float16: "half()",
               torch.bfloat16: "bfloat16()"}


def _conversion(dtype: torch.dtype) -> str:
    return CONVERSIONS.get(dtype, f"to({dtype})")


def check_dtype(x: torch.Tensor, expected: torch.dtype) -> torch.Tensor:
    """Return ``x`` if its dtype is ``expected`` (the module's parameters'), else raise
    ValueError saying how to convert the input, or the module to a floating input's dtype."""
    if x.dtype != expected:
        fix = f"把输入转成 x.{_conversion(expected)}"
        if x.is_floating_point():
            fix += f"，或把模块转成 module.{_conversion(x.dtype)}"
        raise ValueError(f"输入的数据类型应与模块的参数相同，为 {expected}，实际为 {x.dtype}"
                         f"（{fix}）")
    return x


def check_input(x: torch.Tensor, expected: int, dtype: torch.dtype, name: str = "d_model",
                sequence: bool = False) -> torch.Tensor:
    """Return ``x`` if it is what a module's forward reads: a tensor whose last dimension is
    ``expected`` and whose dtype is the module's ``dtype`` (and, with ``sequence``, that has a
    sequence axis: [..., T, expected]), else raise ValueError."""
    check_last_dim(check_tensor("输入", x), expected, name)
    if sequence and x.dim() < 2:
        raise ValueError(f"输入应为序列 [..., T, {name}]（至少 2 维），实际形状为 "
                         f"{list(x.shape)}（一个词元的序列写成 x[None]）")
    return check_dtype(x, dtype)


def check_id_range(name: str, ids: torch.Tensor, size: int) -> torch.Tensor:
    """Return ``ids`` if every id is in [0, size) (one pass over the ids), else raise
    ValueError naming the range found."""
    if ids.numel():
        low, high = (int(v) for v in ids.aminmax())
        if low < 0 or high >= size:
            space = " " if name.isascii() else ""  # "targets 应在"，"词元编号应在"
            raise ValueError(f"{name}{space}应在 [0, {size}) 内，实际范围 [{low}, {high}]")
    return ids


def check_type(name: str, value: object, cls: type) -> object:
    """Return ``value`` if it is a ``cls``, else raise ValueError naming both types."""
    if not isinstance(value, cls):
        raise ValueError(f"{name} 应为 {cls.__name__}，实际为 {type(value).__name__}")
    return value
