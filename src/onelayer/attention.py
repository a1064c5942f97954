"""Causal multi-head self-attention, with a key-value cache for generation.

Attention(Q, K, V) = softmax(Q·Kᵀ / √d_head + M)·V, with M = −∞ above the diagonal, so a
position sees itself and the positions before it. Heads split d_model into n_heads parts:
[B, T, d_model] → [B, n_heads, T, d_head] and back.

During generation the keys and values of earlier positions never change (the mask hides
every later position from them), so a ``LayerCache`` keeps them and each new token only
computes its own query, key and value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

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


def causal_mask(t: int, past: int = 0, device: torch.device | None = None) -> torch.Tensor:
    """Boolean [t, past + t], True where a query may look: new query i sits at position
    past + i and sees keys 0 … past + i."""
    return torch.ones(t, past + t, dtype=torch.bool, device=device).tril(past)


class LayerCache:
    """The keys and values one attention layer has seen, each [..., n_heads, T_seen, d_head]."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[-2]

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new positions' keys and values; return all of them."""
        if self.keys is not None:
            if k.shape[:-2] != self.keys.shape[:-2]:
                raise ValueError(f"缓存的批维应为 {list(self.keys.shape[:-3])}，"
                                 f"实际输入的批维为 {list(k.shape[:-3])}")
            k = torch.cat([self.keys, k], dim=-2)
            v = torch.cat([self.values, v], dim=-2)
        self.keys, self.values = k, v
        return k, v


class CausalSelfAttention(nn.Module):
    """``qkv`` projects x to queries, keys and values at once (in that order, as
    ``nn.MultiheadAttention.in_proj_weight`` does); ``proj`` maps the heads back to d_model.

    ``weights`` writes the attention matrix out (for teaching and plots); ``forward`` calls
    PyTorch's fused kernel (a test checks that both agree)."""

    def __init__(self, d_model: int, n_heads: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        check_heads(d_model, n_heads)
        self.d_model, self.n_heads = d_model, n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.cache: LayerCache | None = None  # set by ``caching``: then forward uses it

    @contextmanager
    def caching(self, cache: LayerCache) -> Iterator[LayerCache]:
        """Inside the ``with`` block every forward call reads and extends ``cache`` (so a
        block or a model can use it without passing it through)."""
        self.cache = cache
        try:
            yield cache
        finally:
            self.cache = None

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values, each [..., n_heads, T, d_head]."""
        check_last_dim(x, self.d_model)
        *batch, t, _ = x.shape
        d_head = self.d_model // self.n_heads
        return tuple(
            part.reshape(*batch, t, self.n_heads, d_head).transpose(-3, -2)
            for part in self.qkv(x).split(self.d_model, dim=-1)
        )

    def merge(self, heads: torch.Tensor) -> torch.Tensor:
        """[..., n_heads, T, d_head] → [..., T, d_model], then W_O."""
        return self.proj(heads.transpose(-3, -2).flatten(-2))

    @staticmethod
    def check_mask(mask: torch.Tensor, t: int, total: int) -> torch.Tensor:
        if mask.dtype != torch.bool or mask.shape != (t, total):
            raise ValueError(f"mask 应为布尔张量 [{t}, {total}]（查询数 × 键数），实际为 "
                             f"{mask.dtype}，形状 {list(mask.shape)}")
        return mask

    def weights(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The attention matrix softmax(Q·Kᵀ/√d_head + M), [..., n_heads, T, T], written out.

        ``mask`` [T, T] (True: may look) replaces the causal mask."""
        q, k, _ = self.heads(x)
        t = x.shape[-2]
        mask = causal_mask(t, device=x.device) if mask is None else self.check_mask(mask, t, t)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: LayerCache | None = None) -> torch.Tensor:
        """Output [..., T, d_model]. ``mask`` [T, T_past + T] (True: may look) replaces the
        causal mask; with ``cache`` (or inside ``caching``) the keys and values of earlier
        positions come from it, and this call's are appended to it."""
        q, k, v = self.heads(x)
        cache = cache if cache is not None else self.cache
        t, past = x.shape[-2], len(cache) if cache is not None else 0
        if cache is not None:
            k, v = cache.extend(k, v)
        if mask is not None:
            self.check_mask(mask, t, past + t)
        elif past:
            mask = causal_mask(t, past, device=x.device)    # 新的第 i 个查询在位置 past + i
        # the same as dropout(self.weights(x)) @ v (a test checks it), in one fused call
        p = self.dropout.p if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                             is_causal=mask is None)
        return self.merge(out)
