"""Chapter 4's experiment helpers: what a LayerNorm at the entrance of every layer changes in
chapter 3's 32-layer networks before any training (``init_stats``, study page 04b); the print
helpers ``tidy`` and ``row`` format small tensors (chapters 5 and 8 use them).

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
    relative_spread,
    seeded_mlp,
)
from onelayer.checks import check_choice


def tidy(t: torch.Tensor | float) -> torch.Tensor:
    """``t`` rounded to 4 decimals, with the −0.0 that rounding errors leave shown as 0.0."""
    return torch.as_tensor(t).round(decimals=4) + 0.0


def row(t: torch.Tensor) -> str:
    """The values of a 1-d tensor at fixed precision, e.g. ``" 0.6000 -0.5000"``."""
    return " ".join(f"{v:7.4f}" for v in tidy(t).tolist())


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
