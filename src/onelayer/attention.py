"""Causal multi-head self-attention, only as far as one Transformer block needs it.

Attention(Q, K, V) = softmax(Q·Kᵀ / √d_head + M)·V, with M = −∞ above the diagonal, so a
position sees itself and the positions before it. Heads split d_model into n_heads parts.
"""

from __future__ import annotations

import math

import torch
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_last_dim(x, self.d_model)
        *batch, t, _ = x.shape
        d_head = self.d_model // self.n_heads
        q, k, v = (
            part.reshape(*batch, t, self.n_heads, d_head).transpose(-3, -2)  # [..., h, T, d_head]
            for part in self.qkv(x).split(self.d_model, dim=-1)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)  # [..., h, T, T]
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        weights = self.dropout(scores.masked_fill(future, float("-inf")).softmax(dim=-1))
        heads = (weights @ v).transpose(-3, -2).reshape(*batch, t, self.d_model)
        return self.proj(heads)
