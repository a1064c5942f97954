"""Parameter counting, read from the module itself."""

from __future__ import annotations

from torch import nn


def count_parameters(module: nn.Module) -> int:
    """Number of trainable scalars in ``module``."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
