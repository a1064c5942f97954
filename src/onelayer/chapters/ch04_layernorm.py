"""Chapter 4's experiments: where BatchNorm and LayerNorm differ on the 猫吃鱼 batch
(``batch_vs_layer_norm``), and what a LayerNorm at the entrance of every layer changes in
chapter 3's 32-layer networks before any training (``init_stats``); the print helpers
``tidy`` and ``row`` format the chapter's small tensors.

Two things are measured for each network: how the gradient reaching the first layer compares
with the one reaching the last (``layer_grad_norms``), and whether the inputs still look
different after the last layer (chapter 3's ``mean_pairwise_cosine`` of the representations,
and their ``relative_spread`` around the common mean). The training runs reuse chapter 3's
``degradation_sweep``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from onelayer.chapters.ch03_residual import (
    VARIANTS,
    display_width,
    layer_grad_norms,
    mean_pairwise_cosine,
    relative_spread,
    seeded_mlp,
)
from onelayer.checks import check_choice
from onelayer.norms import standardize


def tidy(t: torch.Tensor | float) -> torch.Tensor:
    """``t`` rounded to 4 decimals, with the −0.0 that rounding errors leave shown as 0.0."""
    return torch.as_tensor(t).round(decimals=4) + 0.0


def row(t: torch.Tensor) -> str:
    """The values of a 1-d tensor at fixed precision, e.g. ``" 0.6000 -0.5000"``."""
    return " ".join(f"{v:7.4f}" for v in tidy(t).tolist())


def padded_batch(x: torch.Tensor, token: torch.Tensor, length: int) -> torch.Tensor:
    """Two sentences as one batch [2, length, d]: sentence 1 is ``x`` [T, d], sentence 2 is the
    single vector ``token`` [d]; every other position is the all-zero padding vector."""
    if x.dim() != 2 or token.shape != x.shape[-1:] or length < x.shape[0]:
        raise ValueError(f"x 应为 [T, d]、token 应为 [d]、length ≥ T，实际为 {list(x.shape)}、"
                         f"{list(token.shape)}、{length}")
    b = torch.zeros(2, length, x.shape[-1], dtype=x.dtype)
    b[0, : x.shape[0]] = x
    b[1, 0] = token
    return b


@dataclass(frozen=True)
class NormContrast:
    """How much the output of one row of a batch changes, under BatchNorm and under LayerNorm
    (no γ, β), in each of ``cases``: the largest absolute change of any component against
    the output in the original batch. ``None``: BatchNorm refuses to compute (training mode,
    one value per feature). ``buffers``: the state each module keeps between calls."""

    cases: tuple[str, ...]
    batchnorm: tuple[float | None, ...]
    layernorm: tuple[float, ...]
    buffers: dict[str, list[str]]

    def table(self) -> str:
        """The four cases as aligned text, 4 decimals ("算不了" where BatchNorm refuses)."""
        width = max(display_width(c) for c in self.cases) + 2
        lines = ["情形" + " " * (width - 4) + f"{'BatchNorm':>11}{'LayerNorm':>11}"]
        for case, bn, ln in zip(self.cases, self.batchnorm, self.layernorm):
            shown = "算不了" if bn is None else f"{bn:.4f}"
            pad = " " * (width - display_width(case) + 11 - display_width(shown))
            lines.append(f"{case}{pad}{shown}{ln:>11.4f}")
        return "\n".join(lines)


def batch_vs_layer_norm(x: torch.Tensor, i: int, length: int = 10) -> NormContrast:
    """Row ``i`` of the batch ``x`` [n, d] (batch A) through BatchNorm1d and LayerNorm in four
    situations: another batch (its own: x_i alone with two random rows, with the other rows of
    A and 3·x_i, twice itself), the sequence padded from n to ``length`` positions (sentence 2
    is x_i alone), training versus inference mode (BatchNorm's running statistics from 100
    random batches), and a batch of that single vector (training mode)."""
    if x.dim() != 2 or not 0 <= i < x.shape[0] or x.shape[0] < 2:
        raise ValueError(f"x 应为 [n, d]、n ≥ 2、0 ≤ i < n，实际形状 {list(x.shape)}、i = {i}")
    d = x.shape[-1]
    token = x[i]
    bn_mod = torch.nn.BatchNorm1d(d, affine=False)
    ln_mod = torch.nn.LayerNorm(d, elementwise_affine=False)

    def bn(b: torch.Tensor) -> torch.Tensor:   # 训练模式，每次用这一批自己的统计量
        return torch.nn.BatchNorm1d(d, affine=False)(b)

    def change(outs: list[torch.Tensor], ref: torch.Tensor) -> float:
        return max((o - ref).abs().max().item() for o in outs)

    g = torch.Generator().manual_seed(0)
    others = [(torch.cat([token[None], torch.randn(2, d, generator=g)]), 0),
              (torch.cat([x[:i], x[i + 1:], 3 * token[None]]), x.shape[0] - 1),
              (torch.stack([token, token]), 0)]
    with torch.no_grad():
        bn_ref, ln_ref = bn(x)[i], ln_mod(x)[i]
        swap = (change([bn(b)[k] for b, k in others], bn_ref),
                change([ln_mod(b)[k] for b, k in others], ln_ref))
        seq = [padded_batch(x, token, t) for t in range(x.shape[0], length + 1)]
        bn_seq = [standardize(b, dim=(0, 1), eps=bn_mod.eps)[0, i] for b in seq]   # 沿批和位置
        pad = (change(bn_seq, bn_seq[0]), change([ln_mod(b)[0, i] for b in seq], ln_ref))
        g = torch.Generator().manual_seed(1)
        for _ in range(100):
            bn_mod(torch.randn(8, d, generator=g) * 0.6)   # 训练模式：记下 running 统计量
        bn_mod.eval()
        ln_mod.eval()
        modes = (change([bn_mod(x)[i]], bn_ref), change([ln_mod(x)[i]], ln_ref))
        single_ln = change([ln_mod(token[None])[0]], ln_ref)
        try:
            single_bn: float | None = change([bn(token[None])[0]], bn_ref)
        except ValueError:   # 训练模式下每个特征只有 1 个值
            single_bn = None
    buffers = {name: [b for b, _ in m.named_buffers()]
               for name, m in (("BatchNorm", bn_mod), ("LayerNorm", ln_mod))}
    return NormContrast(
        cases=("换一批（批 B、C、D）", f"补齐（T 从 {x.shape[0]} 到 {length}）",
               "训练模式 → 推理模式", "批里只有它一个（训练模式）"),
        batchnorm=(swap[0], pad[0], modes[0], single_bn),
        layernorm=(swap[1], pad[1], modes[1], single_ln),
        buffers=buffers,
    )


@dataclass(frozen=True)
class InitStats:
    """Per variant, tensors of shape [seeds]: ``grad_ratio`` = ‖∂L/∂W1‖ of the first layer
    divided by that of the last; ``cosine`` and ``spread`` of the representations after the
    last layer (``mean_pairwise_cosine``, ``relative_spread``)."""

    variants: tuple[str, ...]
    seeds: tuple[int, ...]
    grad_ratio: dict[str, torch.Tensor]
    cosine: dict[str, torch.Tensor]
    spread: dict[str, torch.Tensor]


def init_stats(x: torch.Tensor, y: torch.Tensor, variants: Sequence[str],
               seeds: Sequence[int], n_layers: int = 32) -> InitStats:
    """Measure every variant of chapter 3's ``VARIANTS`` at initialisation, one network per seed."""
    if not seeds:
        raise ValueError("seeds 应至少有 1 个种子，实际为 0 个")
    ratio, cosine, spread = {}, {}, {}
    for v in variants:
        check_choice("variant", v, VARIANTS)
        r, c, s = [], [], []
        for seed in seeds:
            net = seeded_mlp(v, n_layers, seed)
            grads = layer_grad_norms(net, x, y)
            r.append((grads[0] / grads[-1]).item())
            with torch.no_grad():
                last = net.stream(x)[-1]
            c.append(mean_pairwise_cosine(last).item())
            s.append(relative_spread(last))
        ratio[v], cosine[v], spread[v] = (torch.tensor(t, dtype=torch.float64) for t in (r, c, s))
    return InitStats(tuple(variants), tuple(seeds), ratio, cosine, spread)
