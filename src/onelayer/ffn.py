"""The position-wise feed-forward network, plain or gated.

plain:  FFN(x) = act(x·W1 + b1)·W2 + b2
gated:  FFN(x) = (act(x·W1 + b1) ⊙ (x·W3 + b3))·W2 + b2     (GLU, ReGLU, GEGLU, SwiGLU …)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from onelayer.activations import GLU_VARIANTS, get_activation
from onelayer.checks import (
    check_choice,
    check_flag,
    check_input,
    check_positive_int,
    check_probability,
)

# Every FFN the book builds, by name: (activation, gated).
FFN_VARIANTS: dict[str, tuple[str, bool]] = {
    "relu": ("relu", False),
    "gelu": ("gelu", False),
    "silu": ("silu", False),
    **{name: (act, True) for name, act in GLU_VARIANTS.items()},
}


class FeedForward(nn.Module):
    """Position-wise FFN: up-project to ``d_ff``, activate, project back to ``d_model``.

    One class covers the variants through its flags: ``activation`` names the element-wise
    function, ``gated=True`` adds a third matrix ``w3`` whose output multiplies the
    activated one (SwiGLU is ``activation="silu", gated=True``), ``bias`` switches every
    bias on or off.

    The layers are ``nn.Linear``, so their ``weight`` tensors are stored transposed:
    ``w1.weight`` has shape ``[d_ff, d_model]`` (one row per detector, the "keys"),
    ``w2.weight`` has shape ``[d_model, d_ff]`` (one column per detector, the "values").
    Gated names: ``w1`` is the gate (Hugging Face ``gate_proj``), ``w3`` the value
    (``up_proj``), ``w2`` the down-projection (``down_proj``), as in Meta's LLaMA code.
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        activation: str = "gelu",
        bias: bool = True,
        dropout: float = 0.0,
        gated: bool = False,
        fused: bool = False,
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.d_ff = check_positive_int("d_ff", d_ff)
        self.activation = activation
        self.act = get_activation(activation, fused=check_flag("fused", fused))
        self.gated = check_flag("gated", gated)
        check_flag("bias", bias)
        self.w1 = nn.Linear(d_model, d_ff, bias=bias)  # 升维 W1: d_model → d_ff（门控时是门）
        self.w2 = nn.Linear(d_ff, d_model, bias=bias)  # 降维 W2: d_ff → d_model
        # 门控时的第三个矩阵 W3（值）: d_model → d_ff；不门控时没有这个参数
        self.w3 = nn.Linear(d_model, d_ff, bias=bias) if gated else None
        self.dropout = nn.Dropout(check_probability("dropout", dropout))

    @classmethod
    def from_variant(cls, variant: str, d_model: int, d_ff: int, **kwargs: object) -> FeedForward:
        """Build a named variant: "relu", "gelu", "silu", "glu", "reglu", "geglu", "swiglu" …"""
        activation, gated = FFN_VARIANTS[check_choice("variant", variant, FFN_VARIANTS)]
        return cls(d_model, d_ff, activation=activation, gated=gated, **kwargs)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """What W2 reads, shape [..., d_ff]: act(x·W1 + b1), times (x·W3 + b3) when gated."""
        check_input(x, self.d_model, self.w1.weight.dtype)
        h = self.act(self.w1(x))  # act(x·W1 + b1)
        if self.w3 is not None:
            h = h * self.w3(x)  # act(x·W1 + b1) ⊙ (x·W3 + b3)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.dropout(self.hidden(x)))  # hidden(x)·W2 + b2

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}, gated={self.gated}"


def ffn_parameter_formula(
    d_model: int, d_ff: int, bias: bool = True, gated: bool = False
) -> int:
    """Weights: 2·d_model·d_ff (3·d_model·d_ff when gated); biases: one per output."""
    check_positive_int("d_model", d_model)
    check_positive_int("d_ff", d_ff)
    check_flag("bias", bias)
    n_up = 2 if check_flag("gated", gated) else 1  # W1 (and W3) map d_model → d_ff
    weights = (n_up + 1) * d_model * d_ff
    biases = n_up * d_ff + d_model if bias else 0
    return weights + biases


def gated_d_ff(d_model: int, expansion: int = 4, multiple_of: int = 1) -> int:
    """Width of a gated FFN with about the weights of a plain one of width expansion·d_model.

    3·d_model·d_ff = 2·d_model·(expansion·d_model) gives d_ff = ⅔·expansion·d_model; the
    result is truncated to an integer and then rounded up to a multiple of ``multiple_of``,
    as in Meta's LLaMA code (d_model = 4096, multiple_of = 256 gives 11008).
    """
    check_positive_int("d_model", d_model)
    check_positive_int("expansion", expansion)
    check_positive_int("multiple_of", multiple_of)
    d_ff = 2 * expansion * d_model // 3
    return -(-d_ff // multiple_of) * multiple_of  # round up to a multiple


@dataclass(frozen=True)
class FFNTrace:
    """Every intermediate of one FFN pass.

    pre = x·W1 + b1; post = what W2 reads (act(pre), or act(pre) ⊙ up when gated);
    out = post·W2 + b2; up = x·W3 + b3 for a gated FFN, else None.
    """

    pre: torch.Tensor
    post: torch.Tensor
    out: torch.Tensor
    up: torch.Tensor | None = None


@torch.no_grad()
def trace_ffn(ffn: FeedForward, x: torch.Tensor) -> FFNTrace:
    """Run ``ffn`` on ``x`` (dropout off) and keep the intermediates."""
    check_input(x, ffn.d_model, ffn.w1.weight.dtype)
    pre = ffn.w1(x)
    post = ffn.act(pre)
    up = None
    if ffn.w3 is not None:
        up = ffn.w3(x)
        post = post * up
    return FFNTrace(pre=pre, post=post, out=ffn.w2(post), up=up)
