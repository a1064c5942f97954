"""Several models of one shape trained as one, a member per seed: each weight gets a leading
member dimension and each linear layer becomes one batched matrix product, so a small model's
fixed cost per call is shared. Member m computes what the lone model built from its seed
computes (tests check it); training the stack on the sum of the members' losses trains each as
if alone, since they share no parameter and the optimisers' updates are element-wise.

- ``FeedForwardStack``: FFNs (chapters 1 and 2 train their seeds this way);
- ``TinyGPTStack``: TinyGPTs (chapters 7 and 8).

``TinyGPTStack`` is a hand-stacked copy of ``TinyGPT`` (tests check it against ``TinyGPT``
and ``train_lm`` model by model); it reuses the parts' formulas (``norm_sublayer``,
``standardize``). ``torch.func.stack_module_state`` + ``vmap`` over ``TinyGPT`` is slower
(``make bench``: tools/bench_ensembles.py), and ``vmap`` cannot run the model's token checks
(they branch on tensor values).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.attention import repeat_kv
from onelayer.checks import check_input
from onelayer.ffn import FeedForward
from onelayer.model import TinyGPT, check_token_ids
from onelayer.norms import standardize
from onelayer.residual import Sublayer, norm_sublayer
from onelayer.rope import apply_rope, rope_angles
from onelayer.train import seeded


class FeedForwardStack(nn.Module):
    """M independent ``FeedForward`` members (with biases) as one module: x [n, d_model] →
    [M, n, d_model]. Weights are stored as x·W ([M, d_in, d_out]), biases as [M, 1, d_out]."""

    def __init__(self, members: Sequence[FeedForward]) -> None:
        super().__init__()
        if not members:
            raise ValueError("members 应至少有一个 FeedForward，实际为 0 个")
        first = members[0]
        shape = (first.d_model, first.d_ff, first.activation, first.gated)
        for member in members:
            got = (member.d_model, member.d_ff, member.activation, member.gated)
            if got != shape:
                raise ValueError(f"成员的 (d_model, d_ff, activation, gated) 应都为 {shape}，"
                                 f"实际有 {got}")
            if member.w1.bias is None:
                raise ValueError("成员应带偏置（bias=True），实际为 bias=False")
        self.d_model, self.d_ff, self.activation, self.gated = shape
        self.act = first.act

        def stack(get):
            return nn.Parameter(torch.stack([get(m).detach().clone() for m in members]))

        self.w1 = stack(lambda m: m.w1.weight.T)  # [M, d_model, d_ff]
        self.b1 = stack(lambda m: m.w1.bias[None])  # [M, 1, d_ff]
        self.w2 = stack(lambda m: m.w2.weight.T)  # [M, d_ff, d_model]
        self.b2 = stack(lambda m: m.w2.bias[None])  # [M, 1, d_model]
        if self.gated:
            self.w3 = stack(lambda m: m.w3.weight.T)  # [M, d_model, d_ff]
            self.b3 = stack(lambda m: m.w3.bias[None])  # [M, 1, d_ff]

    @classmethod
    def from_seeds(cls, variant: str, d_model: int, d_ff: int,
                   seeds: Sequence[int]) -> FeedForwardStack:
        """One ``FeedForward.from_variant(variant, d_model, d_ff)`` per seed, each built
        inside ``seeded(seed)``."""
        members = []
        for seed in seeds:
            with seeded(seed):
                members.append(FeedForward.from_variant(variant, d_model, d_ff))
        return cls(members)

    def pre_activation(self, x: torch.Tensor) -> torch.Tensor:
        """x·W1 + b1 of every member: [M, n, d_ff]."""
        check_input(x, self.d_model, self.w1.dtype)
        return torch.baddbmm(self.b1, x.expand(len(self.w1), -1, -1), self.w1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.pre_activation(x))
        if self.gated:
            h = h * torch.baddbmm(self.b3, x.expand(len(self.w1), -1, -1), self.w3)
        return torch.baddbmm(self.b2, h, self.w2)


class TinyGPTStack(nn.Module):
    """Several TinyGPTs of one config computed as one: each weight gets a leading member axis
    and every linear layer becomes one batched matmul. Member i computes what TinyGPT i
    computes; only the speed differs (a small model pays a fixed cost per call, which the
    members now share).
    Supports the plain blocks the book trains: LayerNorm, biases, no gating, no dropout; an
    attention-only block (d_ff = 0) too, and grouped-query attention, RoPE and QK-norm."""

    def __init__(self, members: Sequence[TinyGPT]) -> None:
        super().__init__()
        if not members:
            raise ValueError("members 不能为空：至少要有 1 个 TinyGPT")
        self.config = members[0].config
        for m in members:
            if m.config != self.config:
                raise ValueError(f"所有成员的配置应相同，实际为 {self.config} 与 {m.config}")
        block = self.config.block
        wanted = {"norm": "layernorm", "bias": True, "qkv_has_bias": True, "gated": False,
                  "dropout": 0.0}
        for name, value in wanted.items():
            if getattr(block, name) != value:
                raise ValueError(f"TinyGPTStack 要求 {name}={value!r}，实际为 "
                                 f"{getattr(block, name)!r}")
        self.names = [name for name, _ in members[0].named_parameters()]
        stacked = [torch.stack([dict(m.named_parameters())[n].detach() for m in members])
                   for n in self.names]
        self.weights = nn.ParameterList(nn.Parameter(w) for w in stacked)
        self.index = {name: i for i, name in enumerate(self.names)}
        mlp = members[0].blocks[0].mlp
        self.act = mlp.act if mlp is not None else None     # 与 FeedForward 用同一个激活函数

    def per_member(self, values: torch.Tensor) -> list[torch.Tensor]:
        """``values`` [M] shaped to broadcast against each parameter (members on dim 0)."""
        if values.shape != (len(self),):
            raise ValueError(f"每个成员一个值：形状应为 [{len(self)}]，实际为 {list(values.shape)}")
        return [values.to(w.dtype).view(-1, *[1] * (w.dim() - 1)) for w in self.weights]

    def __len__(self) -> int:
        return len(self.weights[0])

    def _p(self, name: str) -> torch.Tensor:
        return self.weights[self.index[name]]

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        w, b = self._p(name + ".weight"), self._p(name + ".bias")  # [M, out, in], [M, out]
        out = torch.baddbmm(b[:, None, :], x.flatten(1, -2), w.transpose(1, 2))
        return out.view(*x.shape[:-1], -1)

    def _norm(self, name: str) -> Sublayer:
        gamma, beta = self._p(name + ".weight"), self._p(name + ".bias")
        eps = self.config.block.eps
        return lambda x: standardize(x, eps=eps) * gamma[:, None, None] + beta[:, None, None]

    def _head_norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        gamma = self._p(name + ".weight")[:, None, None, None]          # [M, 1, 1, 1, d_head]
        return x / torch.sqrt((x**2).mean(dim=-1, keepdim=True) + self.config.block.eps) * gamma

    def _attn(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        m, b, t, d = x.shape
        block = self.config.block
        heads, kv_heads, d_head = block.n_heads, block.kv_heads, d // block.n_heads
        q, k, v = self._linear(x, prefix + "attn.qkv").split(
            [d, kv_heads * d_head, kv_heads * d_head], dim=-1)
        if block.qk_norm:                               # 每个头的 q、k 各做一次 RMSNorm
            q = self._head_norm(q.view(m, b, t, heads, d_head), prefix + "attn.q_norm")
            k = self._head_norm(k.view(m, b, t, kv_heads, d_head), prefix + "attn.k_norm")
        q, k, v = (part.reshape(m * b, t, n, d_head).transpose(1, 2)        # 4 维：融合内核
                   for part, n in ((q, heads), (k, kv_heads), (v, kv_heads)))
        if block.rope_theta is not None:
            cos, sin = rope_angles(torch.arange(t, device=x.device), d_head, block.rope_theta)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k, v = repeat_kv(k, heads // kv_heads), repeat_kv(v, heads // kv_heads)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self._linear(out.transpose(1, 2).reshape(m, b, t, d), prefix + "attn.proj")

    def _mlp(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        hidden = self.act(self._linear(x, prefix + "mlp.w1"))
        return self._linear(hidden, prefix + "mlp.w2")

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits [M, B, T, vocab_size] for token ids ``idx`` [M, B, T] (one batch per member)."""
        check_token_ids(idx, self.config, dims=(3,))            # int64、长度、编号范围
        if idx.shape[0] != len(self):
            raise ValueError(f"词元编号的形状应为 [M={len(self)}, B, T]，实际为 {list(idx.shape)}")
        tok = self._p("tok.weight")
        h = tok[torch.arange(len(self))[:, None, None], idx]
        if "pos.weight" in self.index:                                 # 不旋转：加位置嵌入
            h = h + self._p("pos.weight")[:, None, :idx.shape[-1]]
        position = self.config.block.norm_position
        for i in range(self.config.n_layers):
            p = f"blocks.{i}."
            attn, mlp = partial(self._attn, prefix=p), partial(self._mlp, prefix=p)
            h = norm_sublayer(h, attn, self._norm(p + "ln_1"), position)
            if self.config.block.ffn_width:                               # d_ff = 0：只有注意力
                h = norm_sublayer(h, mlp, self._norm(p + "ln_2"), position)
        if position == "pre":
            h = self._norm("ln_f")(h)
        m, b, t, d = h.shape                        # 输出层与词嵌入共享：每个成员一次矩阵乘
        return (h.reshape(m, b * t, d) @ tok.transpose(1, 2)).view(m, b, t, -1)

    def member(self, i: int) -> TinyGPT:
        """Member ``i`` as an ordinary TinyGPT (in eval mode)."""
        model = TinyGPT(self.config)
        model.load_state_dict({name: w[i].detach().clone()
                               for name, w in zip(self.names, self.weights)})
        return model.eval()
