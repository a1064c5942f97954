"""Causal multi-head self-attention, only as far as one Transformer block needs it.

Attention(Q, K, V) = softmax(Q·Kᵀ / √d_head + M)·V, with M = −∞ above the diagonal, so a
position sees itself and the positions before it. Heads split d_model into n_heads parts.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.checks import check_last_dim, check_positive_int, check_probability


def check_heads(d_model: int, n_heads: int) -> None:
    """d_model and n_heads must be positive and n_heads must divide d_model."""
    check_positive_int("d_model", d_model)
    check_positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"d_model 应能被 n_heads 整除，实际 d_model={d_model}，n_heads={n_heads}")


class CausalSelfAttention(nn.Module):
    """``qkv`` projects x to queries, keys and values at once (in that order, as
    ``nn.MultiheadAttention.in_proj_weight`` does); ``proj`` maps the heads back to d_model."""

    def __init__(self, d_model: int, n_heads: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        check_heads(d_model, n_heads)
        self.d_model, self.n_heads = d_model, n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values, each [..., n_heads, T, d_head]."""
        check_last_dim(x, self.d_model)
        *batch, t, _ = x.shape
        d_head = self.d_model // self.n_heads
        return tuple(
            part.reshape(*batch, t, self.n_heads, d_head).transpose(-3, -2)
            for part in self.qkv(x).split(self.d_model, dim=-1)
        )

    def weights(self, x: torch.Tensor) -> torch.Tensor:
        """The attention matrix softmax(Q·Kᵀ/√d_head + M), [..., n_heads, T, T], written out."""
        q, k, _ = self.heads(x)
        t = x.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        return scores.masked_fill(future, float("-inf")).softmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.heads(x)
        # the same as dropout(self.weights(x)) @ v (a test checks it), in one fused call
        p = self.dropout.p if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.proj(out.transpose(-3, -2).flatten(-2))
