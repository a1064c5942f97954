"""Chapter 4's experiment at initialisation: what a LayerNorm at the entrance of every layer
changes in chapter 3's 32-layer networks before any training.

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
    layer_grad_norms,
    mean_pairwise_cosine,
    seeded_mlp,
)
from onelayer.checks import check_choice


def _check_rows(h: torch.Tensor) -> torch.Tensor:
    if h.dim() != 2 or h.shape[0] < 2:
        raise ValueError(f"h 应为形状 [n, d]、n ≥ 2 的矩阵，实际形状为 {list(h.shape)}")
    return h.detach().double()


def relative_spread(h: torch.Tensor) -> float:
    """How far the rows of ``h`` [n, d] are from their mean row, relative to its size:
    mean over rows of ‖h_i − h̄‖, divided by ‖h̄‖ (0 when all rows are equal)."""
    h = _check_rows(h)
    mean = h.mean(0)
    return ((h - mean).norm(dim=-1).mean() / mean.norm().clamp_min(1e-300)).item()


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
