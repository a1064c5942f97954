"""Causal multi-head self-attention, with a key-value cache for generation.

Attention(Q, K, V) = softmax(Q·Kᵀ / √d_head + M)·V, with M = −∞ above the diagonal, so a
position sees itself and the positions before it. Heads split d_model into n_heads parts:
[B, T, d_model] → [B, n_heads, T, d_head] and back.

During generation the keys and values of earlier positions never change (the mask hides
every later position from them), so a ``LayerCache`` keeps them and each new token only
computes its own query, key and value.

Options of today's open models (all off by default, which is the GPT-2 attention):
- ``n_kv_heads`` < n_heads: grouped-query attention (Ainslie et al. 2023); n_kv_heads = 1 is
  multi-query attention (Shazeer 2019). Query head h reads key/value head h // (n_heads /
  n_kv_heads), and the cache keeps only the n_kv_heads shared heads.
- ``rope_theta``: rotate queries and keys by position (``onelayer.rope``), the model's only
  position information.
- ``qk_norm``: RMSNorm over d_head on every head's query and key, before the rotation, with
  one weight [d_head] shared by the heads (Qwen3).
- ``qkv_bias``: a bias on the query/key/value projection only (Qwen2: ``bias=False,
  qkv_bias=True``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.checks import check_flag, check_input, check_positive_int, check_probability
from onelayer.norms import RMSNorm
from onelayer.rope import apply_rope, check_d_head, check_theta, rope_angles


def check_heads(d_model: int, n_heads: int) -> None:
    """d_model and n_heads must be positive and n_heads must divide d_model."""
    check_positive_int("d_model", d_model)
    check_positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"d_model 应能被 n_heads 整除，实际 d_model={d_model}，n_heads={n_heads}")


def check_kv_heads(n_heads: int, n_kv_heads: int | None) -> int:
    """The number of key/value heads: n_heads when None, else a positive divisor of n_heads."""
    if n_kv_heads is None:
        return n_heads
    check_positive_int("n_kv_heads", n_kv_heads)
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads 应能被 n_kv_heads 整除，实际 n_heads={n_heads}，"
                         f"n_kv_heads={n_kv_heads}")
    return n_kv_heads


def check_rope(d_model: int, n_heads: int, rope_theta: float | None) -> float | None:
    """None (no rotation), or a base θ > 0 for heads of even width."""
    if rope_theta is None:
        return None
    check_d_head(d_model // n_heads)
    return check_theta(rope_theta)


def causal_mask(t: int, past: int = 0, device: torch.device | None = None) -> torch.Tensor:
    """Boolean [t, past + t], True where a query may look: new query i sits at position
    past + i and sees keys 0 … past + i."""
    return torch.ones(t, past + t, dtype=torch.bool, device=device).tril(past)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[..., n_kv, T, d] → [..., n_kv·n_rep, T, d]: each key/value head repeated n_rep times in
    a row, so query head h meets key/value head h // n_rep."""
    if n_rep == 1:
        return x                                             # 每个查询头有自己的键和值
    return x.repeat_interleave(n_rep, dim=-3)                # 头 h 读第 h // n_rep 个


class LayerCache:
    """The keys and values one attention layer has seen, each [..., n_kv_heads, T_seen, d_head]
    (keys already rotated, when the attention rotates)."""

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
    ``nn.MultiheadAttention.in_proj_weight`` does): d_model outputs for the queries, then
    n_kv_heads·d_head for the keys and as many for the values. ``proj`` maps the heads back
    to d_model.

    ``weights`` writes the attention matrix out (for teaching and plots); ``forward`` calls
    PyTorch's fused kernel (a test checks that both agree)."""

    def __init__(self, d_model: int, n_heads: int, bias: bool = True, dropout: float = 0.0, *,
                 n_kv_heads: int | None = None, rope_theta: float | None = None,
                 qk_norm: bool = False, qkv_bias: bool | None = None, eps: float = 1e-6):
        super().__init__()
        check_heads(d_model, n_heads)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.n_kv_heads = check_kv_heads(n_heads, n_kv_heads)
        self.rope_theta = check_rope(d_model, n_heads, rope_theta)
        check_flag("bias", bias)
        qkv_bias = bias if qkv_bias is None else check_flag("qkv_bias", qkv_bias)
        kv_width = self.n_kv_heads * self.d_head
        self.qkv = nn.Linear(d_model, d_model + 2 * kv_width, bias=qkv_bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.q_norm = self.k_norm = None
        if check_flag("qk_norm", qk_norm):          # 每个头的 q、k 各自归一化，头之间共用 γ
            self.q_norm, self.k_norm = RMSNorm(self.d_head, eps), RMSNorm(self.d_head, eps)
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

    def split_heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        """[..., T, n·d_head] → [..., n, T, d_head]."""
        *batch, t, _ = x.shape
        return x.reshape(*batch, t, n, self.d_head).transpose(-3, -2)

    def heads(self, x: torch.Tensor, past: int = 0
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries [..., n_heads, T, d_head], keys and values [..., n_kv_heads, T, d_head], as
        the scores use them: queries and keys normalised (``qk_norm``) and rotated to positions
        past … past + T − 1 (``rope_theta``)."""
        check_input(x, self.d_model, self.qkv.weight.dtype, sequence=True)
        kv_width = self.n_kv_heads * self.d_head
        q, k, v = self.qkv(x).split([self.d_model, kv_width, kv_width], dim=-1)
        q, k = self.split_heads(q, self.n_heads), self.split_heads(k, self.n_kv_heads)
        v = self.split_heads(v, self.n_kv_heads)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)        # RMSNorm over d_head，在旋转之前
        if self.rope_theta is not None:
            positions = torch.arange(past, past + x.shape[-2], device=x.device)
            cos, sin = rope_angles(positions, self.d_head, self.rope_theta)
            cos, sin = cos.to(x.dtype), sin.to(x.dtype)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)   # 位置 t 转 t·ω_j
        return q, k, v

    def merge(self, heads: torch.Tensor) -> torch.Tensor:
        """[..., n_heads, T, d_head] → [..., T, d_model], then W_O."""
        return self.proj(heads.transpose(-3, -2).flatten(-2))

    def shared(self, kv: torch.Tensor) -> torch.Tensor:
        """Keys or values [..., n_kv_heads, T, d_head] → [..., n_heads, T, d_head]."""
        return repeat_kv(kv, self.n_heads // self.n_kv_heads)

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
        k = self.shared(k)
        t = x.shape[-2]
        mask = causal_mask(t, device=x.device) if mask is None else self.check_mask(mask, t, t)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: LayerCache | None = None) -> torch.Tensor:
        """Output [..., T, d_model]. ``mask`` [T, T_past + T] (True: may look) replaces the
        causal mask; with ``cache`` (or inside ``caching``) the keys and values of earlier
        positions come from it, and this call's are appended to it."""
        cache = cache if cache is not None else self.cache
        past = len(cache) if cache is not None else 0
        q, k, v = self.heads(x, past)                   # 新的位置接着缓存里的往后数
        t = x.shape[-2]
        if cache is not None:
            k, v = cache.extend(k, v)                   # 缓存只存 n_kv_heads 个头
        if mask is not None:
            self.check_mask(mask, t, past + t)
        elif past:
            mask = causal_mask(t, past, device=x.device)    # 新的第 i 个查询在位置 past + i
        # the same as dropout(self.weights(x)) @ v (a test checks it), in one fused call
        p = self.dropout.p if self.training else 0.0
        out = F.scaled_dot_product_attention(q, self.shared(k), self.shared(v), attn_mask=mask,
                                             dropout_p=p, is_causal=mask is None)
        return self.merge(out)
