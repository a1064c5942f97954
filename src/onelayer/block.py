"""One Transformer block: attention and FFN sublayers, each with a residual and a norm.

Pre-Norm:  x = x + Attn(LN₁(x));  x = x + FFN(LN₂(x))     (GPT-2, LLaMA …)
Post-Norm: x = LN₁(x + Attn(x));  x = LN₂(x + FFN(x))     (the 2017 Transformer)

Both come from ``onelayer.residual.norm_sublayer``, where the two formulas are written.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import nn

from onelayer.activations import get_activation
from onelayer.attention import CausalSelfAttention, check_heads, check_kv_heads, check_rope
from onelayer.checks import (
    check_choice,
    check_eps,
    check_flag,
    check_positive_int,
    check_probability,
    check_type,
)
from onelayer.ffn import FeedForward
from onelayer.norms import LayerNorm, RMSNorm
from onelayer.residual import NORM_POSITIONS, norm_sublayer

NORMS = {"layernorm": LayerNorm, "rmsnorm": RMSNorm}
TORCH_NORMS = {"layernorm": nn.LayerNorm, "rmsnorm": nn.RMSNorm}  # same state_dict keys
MODERN_ATTENTION = ("n_kv_heads", "rope_theta", "qk_norm", "qkv_bias")  # chapter 9's options


@dataclass(frozen=True)
class BlockConfig:
    """Everything that varies between the blocks the book compares."""

    d_model: int = 64
    n_heads: int = 4
    d_ff: int | None = None  # None: 4·d_model; 0: no FFN sublayer (attention only)
    activation: str = "gelu"
    gated: bool = False
    norm: str = "layernorm"
    norm_position: str = "pre"
    bias: bool = True
    dropout: float = 0.0
    eps: float = 1e-5
    fused: bool = False  # True: PyTorch's norm and activation kernels, same maths, faster
    n_kv_heads: int | None = None  # None: n_heads; fewer: grouped-query attention (GQA)
    rope_theta: float | None = None  # None: no rotation; θ: RoPE with base θ
    qk_norm: bool = False  # RMSNorm on each head's q and k (Qwen3)
    qkv_bias: bool | None = None  # None: as bias; Qwen2: bias=False, qkv_bias=True

    def __post_init__(self) -> None:
        check_heads(self.d_model, self.n_heads)
        if self.d_ff is not None and self.d_ff != 0:
            check_positive_int("d_ff", self.d_ff)
        get_activation(self.activation)
        check_flag("gated", self.gated)
        check_flag("bias", self.bias)
        check_choice("norm", self.norm, NORMS)
        check_choice("norm_position", self.norm_position, NORM_POSITIONS)
        check_probability("dropout", self.dropout)
        check_eps(self.eps)
        check_flag("fused", self.fused)
        check_kv_heads(self.n_heads, self.n_kv_heads)
        check_rope(self.d_model, self.n_heads, self.rope_theta)
        check_flag("qk_norm", self.qk_norm)
        if self.qkv_bias is not None:
            check_flag("qkv_bias", self.qkv_bias)

    def __repr__(self) -> str:
        """Every field, except chapter 9's attention options while they are off: a block of
        the earlier chapters prints only what those chapters teach."""
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                 if f.name not in MODERN_ATTENTION or getattr(self, f.name) != f.default]
        return f"BlockConfig({', '.join(shown)})"

    @property
    def ffn_width(self) -> int:
        """The FFN's d_ff: 4·d_model unless given; 0 for an attention-only block."""
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    @property
    def kv_heads(self) -> int:
        """The number of key/value heads: n_kv_heads, or n_heads when not given."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def qkv_has_bias(self) -> bool:
        """Whether the query/key/value projection has a bias: qkv_bias, or bias when not given."""
        return self.bias if self.qkv_bias is None else self.qkv_bias

    def make_norm(self) -> nn.Module:
        norms = TORCH_NORMS if self.fused else NORMS
        return norms[self.norm](self.d_model, eps=self.eps)


class TransformerBlock(nn.Module):
    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        self.config = check_type("config", config, BlockConfig)
        self.ln_1 = config.make_norm()
        self.attn = CausalSelfAttention(
            config.d_model, config.n_heads, config.bias, config.dropout,
            n_kv_heads=config.n_kv_heads, rope_theta=config.rope_theta, qk_norm=config.qk_norm,
            qkv_bias=config.qkv_bias, eps=config.eps)
        self.drop = nn.Dropout(config.dropout)
        self.ln_2 = self.mlp = None  # d_ff = 0: the block is attention only
        if config.ffn_width:
            self.ln_2 = config.make_norm()
            self.mlp = FeedForward(config.d_model, config.ffn_width, config.activation,
                                   bias=config.bias, gated=config.gated, fused=config.fused)

    def attention_branch(self, h: torch.Tensor) -> torch.Tensor:
        return self.drop(self.attn(h))

    def ffn_branch(self, h: torch.Tensor) -> torch.Tensor:
        return self.drop(self.mlp(h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        position = self.config.norm_position     # "pre": x + F(LN(x))；"post": LN(x + F(x))
        x = norm_sublayer(x, self.attention_branch, self.ln_1, position)
        if self.mlp is None:                      # d_ff = 0：只有注意力
            return x
        return norm_sublayer(x, self.ffn_branch, self.ln_2, position)
