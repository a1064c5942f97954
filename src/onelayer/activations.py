"""Activation functions written from their formulas.

Each one is checked against ``torch.nn.functional`` in ``tests/test_activations.py``.

Two families live here:

- element-wise activations ``act(z)`` (ReLU, GELU, SiLU …), looked up by name with
  ``get_activation``; the names are PyTorch's (``"silu"``, not ``"swish"``);
- gated linear units (GLU, ReGLU, GEGLU, SwiGLU, bilinear): ``act(gate) ⊙ value``. As
  functions of one tensor they split its last dimension in two halves, value first and gate
  second, the layout of ``torch.nn.functional.glu``. Inside an FFN the two halves come from
  two weight matrices (``FeedForward(..., gated=True)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F

from onelayer.checks import check_choice

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)  # √(2/π) in the tanh form of GELU
GELU_TANH_CUBIC = 0.044715  # the cubic coefficient in the tanh form of GELU


def relu(x: torch.Tensor) -> torch.Tensor:
    """ReLU(x) = max(0, x)：负数清零，正数原样通过。"""
    return torch.where(x > 0, x, torch.zeros_like(x))


def normal_cdf(x: torch.Tensor) -> torch.Tensor:
    """Φ(x) = ½·(1 + erf(x/√2))：标准正态分布的累积分布函数。"""
    return 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu(x: torch.Tensor) -> torch.Tensor:
    """GELU(x) = x·Φ(x)，Φ 为标准正态分布的累积分布函数。"""
    return x * normal_cdf(x)


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU 的 tanh 近似：½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))。

    The form in OpenAI's released GPT-1 and GPT-2 code (their papers only say "GELU");
    ``transformers`` calls it ``"gelu_new"``.
    """
    inner = SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * x**3)
    return 0.5 * x * (1.0 + torch.tanh(inner))


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    """σ(x) = 1 / (1 + e^(−x))。

    For x < 0 it is computed as e^x / (1 + e^x), so e^(−x) never overflows. Each branch
    exponentiates its own clamped input, so autograd also gets σ′(0) = 1/4 right.
    """
    e_neg = torch.exp(-x.clamp(min=0))  # e^(−x) where x ≥ 0, else 1
    e_pos = torch.exp(x.clamp(max=0))  # e^x where x < 0, else 1
    return torch.where(x >= 0, 1.0 / (1.0 + e_neg), e_pos / (1.0 + e_pos))


def swish(x: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """Swish_β(x) = x·σ(β·x)；β = 1 时就是 SiLU。"""
    return x * sigmoid(beta * x)


def silu(x: torch.Tensor) -> torch.Tensor:
    """SiLU(x) = x·σ(x)，即 β = 1 的 Swish。

    Named SiLU by Hendrycks & Gimpel (2016), reused under that name by Elfwing et al. (2018);
    Ramachandran et al. (2017) call x·σ(βx) Swish.
    """
    return swish(x, 1.0)


def identity(x: torch.Tensor) -> torch.Tensor:
    """恒等映射：没有非线性（门控时得到“双线性” bilinear 单元）。"""
    return x


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": relu,
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "silu": silu,
    "sigmoid": sigmoid,
    "identity": identity,
}


# The same functions as PyTorch's fused kernels: one op forward and backward instead of a chain
# of element-wise ops (a test checks they agree). Used when a block is built with fused=True.
TORCH_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": partial(F.gelu, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "identity": identity,
}


def get_activation(name: str, fused: bool = False) -> Callable[[torch.Tensor], torch.Tensor]:
    """Look an activation up by name (written out, or PyTorch's kernel if ``fused``)."""
    table = TORCH_ACTIVATIONS if fused else ACTIVATIONS
    return table[check_choice("activation", name, ACTIVATIONS)]


def value_and_grad(name: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """act(x) and its derivative act′(x), element-wise, by autograd on the formula above."""
    act = get_activation(name)
    z = x.detach().clone().requires_grad_(True)
    y = act(z)
    (grad,) = torch.autograd.grad(y.sum(), z)
    return y.detach(), grad


# Gated linear units: the activation applied to the gate half.
GLU_VARIANTS: dict[str, str] = {
    "glu": "sigmoid",  # Dauphin et al. 2017
    "bilinear": "identity",
    "reglu": "relu",
    "geglu": "gelu",
    "swiglu": "silu",
}


def split_value_gate(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split the last dimension into (value, gate) halves; it must be even."""
    if x.dim() == 0 or x.shape[-1] % 2:
        actual = x.shape[-1] if x.dim() else "标量（0 维）"
        raise ValueError(
            f"最后一维应为偶数（前一半是值，后一半是门），实际为 {actual}"
            f"（输入形状 {list(x.shape)}）"
        )
    value, gate = x.chunk(2, dim=-1)
    return value, gate


def gated_unit(x: torch.Tensor, variant: str) -> torch.Tensor:
    """act(gate) ⊙ value for one of ``GLU_VARIANTS``; output's last dim is half the input's."""
    act = get_activation(GLU_VARIANTS[check_choice("variant", variant, GLU_VARIANTS)])
    value, gate = split_value_gate(x)
    return act(gate) * value


def glu(x: torch.Tensor) -> torch.Tensor:
    """GLU = σ(gate) ⊙ value（与 torch.nn.functional.glu 的切分方式相同）。"""
    return gated_unit(x, "glu")


def reglu(x: torch.Tensor) -> torch.Tensor:
    """ReGLU = ReLU(gate) ⊙ value。"""
    return gated_unit(x, "reglu")


def geglu(x: torch.Tensor) -> torch.Tensor:
    """GEGLU = GELU(gate) ⊙ value。"""
    return gated_unit(x, "geglu")


def swiglu(x: torch.Tensor) -> torch.Tensor:
    """SwiGLU = SiLU(gate) ⊙ value。"""
    return gated_unit(x, "swiglu")
