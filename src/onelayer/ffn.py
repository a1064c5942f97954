"""The position-wise feed-forward network: FFN(x) = act(x·W1 + b1)·W2 + b2."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from onelayer.activations import get_activation
from onelayer.checks import check_last_dim, check_positive_int, check_probability


class FeedForward(nn.Module):
    """Position-wise FFN: up-project to ``d_ff``, activate, project back to ``d_model``.

    ``w1`` and ``w2`` are ``nn.Linear`` layers, so their ``weight`` tensors are stored
    transposed: ``w1.weight`` has shape ``[d_ff, d_model]`` (one row per detector, the
    "keys"), ``w2.weight`` has shape ``[d_model, d_ff]`` (one column per detector, the
    "values").
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        activation: str = "gelu",
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.d_ff = check_positive_int("d_ff", d_ff)
        self.activation = activation
        self.act = get_activation(activation)
        self.w1 = nn.Linear(d_model, d_ff, bias=bias)  # 升维 W1: d_model → d_ff
        self.w2 = nn.Linear(d_ff, d_model, bias=bias)  # 降维 W2: d_ff → d_model
        self.dropout = nn.Dropout(check_probability("dropout", dropout))

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The detector activations act(x·W1 + b1), shape [..., d_ff]."""
        check_last_dim(x, self.d_model)
        return self.act(self.w1(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.dropout(self.hidden(x)))  # act(x·W1 + b1)·W2 + b2

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}"


def ffn_parameter_formula(d_model: int, d_ff: int, bias: bool = True) -> int:
    """2·d_model·d_ff weights, plus d_ff + d_model biases when ``bias``."""
    check_positive_int("d_model", d_model)
    check_positive_int("d_ff", d_ff)
    return 2 * d_model * d_ff + (d_ff + d_model if bias else 0)


@dataclass(frozen=True)
class FFNTrace:
    """Every intermediate of one FFN pass: pre = x·W1 + b1, post = act(pre), out."""

    pre: torch.Tensor
    post: torch.Tensor
    out: torch.Tensor


@torch.no_grad()
def trace_ffn(ffn: FeedForward, x: torch.Tensor) -> FFNTrace:
    """Run ``ffn`` on ``x`` (dropout off) and keep the intermediates."""
    check_last_dim(x, ffn.d_model)
    pre = ffn.w1(x)
    post = ffn.act(pre)
    return FFNTrace(pre=pre, post=post, out=ffn.w2(post))
