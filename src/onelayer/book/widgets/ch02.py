"""Chapter 2 panels: activation functions and their derivatives at one pre-activation z."""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from onelayer.activations import ACTIVATIONS, value_and_grad
from onelayer.book.panels import PagePanel
from onelayer.book.plotting import new_figure
from onelayer.book.widgets.frames import frame_player


def _activation_figure(names: Sequence[str], lo: float, hi: float, z: float) -> Figure:
    """Value (left) and derivative (right) of each activation on [lo, hi], z marked."""
    xs = torch.linspace(lo, hi, 401, dtype=torch.float64)
    point = torch.tensor([z], dtype=torch.float64)
    fig = new_figure(figsize=(8.4, 3.2))
    ax_value, ax_grad = fig.subplots(1, 2)
    for name in names:
        ys, grads = value_and_grad(name, xs)
        y0, g0 = value_and_grad(name, point)
        (line,) = ax_value.plot(xs, ys, label=name)
        ax_grad.plot(xs, grads, color=line.get_color(), label=name)
        ax_value.plot([z], [y0.item()], "o", color=line.get_color())
        ax_grad.plot([z], [g0.item()], "o", color=line.get_color())
    for ax, title, ylabel in (
        (ax_value, "函数值", "act(z)"),
        (ax_grad, "导数（梯度）", "act′(z)"),
    ):
        ax.axvline(z, color="gray", linestyle=":", linewidth=1)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(f"{title}（z = {z:+.2f}）")
        ax.set_xlabel("预激活值 z")
        ax.set_ylabel(ylabel)
    ax_grad.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def _activation_alt(names: Sequence[str], lo: float, hi: float, z: float) -> str:
    return (
        f"两幅曲线图：{'、'.join(names)} 在 [{lo:.1f}, {hi:.1f}] 上的函数值（左）与导数（右），"
        f"圆点标出 z = {z:.2f} 处的值与梯度。"
    )


def activation_frames() -> widgets.VBox:
    """Chapter 2, without a kernel: slide z and compare ReLU, GELU and SiLU at that point."""
    names, lo, hi = ("relu", "gelu", "silu"), -4.0, 3.0
    values = [float(z) for z in range(-4, 4)]
    return frame_player(
        lambda z: _activation_figure(names, lo, hi, z), values, "z",
        lambda z: _activation_alt(names, lo, hi, z), start=values.index(-2.0),
    )


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
