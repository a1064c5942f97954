"""Chapter 2 panel: activation functions and their derivatives at one pre-activation z."""

from __future__ import annotations

from onelayer.activations import ACTIVATIONS
from onelayer.book.panels import PagePanel

# The activations the page offers, in the order of onelayer.activations (identity is no shape).
PAGE_ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid")


def activation_explorer() -> PagePanel:
    """Pick activations, the input range and one pre-activation z; see act(z) and act′(z).

    Computed in the page (``panels/activation.js``, the formulas of onelayer.activations and
    their derivatives written out); a test compares them with ``value_and_grad``.
    """
    missing = set(ACTIVATIONS) - {"identity", *PAGE_ACTIVATIONS}
    if missing:
        raise ValueError(f"页面面板缺少激活函数 {sorted(missing)}：在 panels/activation.js 中补上")
    return PagePanel("activation", {"selected": ["relu", "gelu", "silu"], "range": [-4.0, 4.0],
                                    "z": -2.3}, "激活函数的形状与导数")
