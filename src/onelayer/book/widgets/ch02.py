"""Chapter 2 panels: activation functions and their derivatives at one pre-activation z."""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from onelayer.activations import ACTIVATIONS, value_and_grad
from onelayer.book.plotting import new_figure, show_with_alt
from onelayer.book.widgets.frames import frame_player
from onelayer.book.widgets.live import float_slider, live_output, readout_format


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


def _plot_activation_curves(names: tuple[str, ...], x_range: tuple[float, float], z: float) -> None:
    if not names:
        print("请至少选一个激活函数。")
        return
    lo, hi = min(x_range[0], z), max(x_range[1], z)
    print(f"预激活值 z = {z:+.2f}")
    print("激活函数      act(z)     act′(z)")
    for name in names:
        y0, g0 = value_and_grad(name, torch.tensor([z], dtype=torch.float64))
        print(f"{name:10s} {y0.item():+9.4f}  {g0.item():+9.4f}")
    show_with_alt(_activation_figure(names, lo, hi, z), _activation_alt(names, lo, hi, z))


def activation_frames() -> widgets.VBox:
    """Chapter 2, without a kernel: slide z and compare ReLU, GELU and SiLU at that point."""
    names, lo, hi = ("relu", "gelu", "silu"), -4.0, 3.0
    values = [float(z) for z in range(-4, 4)]
    return frame_player(
        lambda z: _activation_figure(names, lo, hi, z), values, "z",
        lambda z: _activation_alt(names, lo, hi, z), start=values.index(-2.0),
    )


def activation_explorer() -> widgets.VBox:
    """Pick activations, the input range and one pre-activation z; see act(z) and act′(z)."""
    names = widgets.SelectMultiple(
        options=[n for n in ACTIVATIONS if n != "identity"],
        value=("relu", "gelu", "silu"),
        rows=5,
        description="激活函数",
    )
    x_range = widgets.FloatRangeSlider(
        value=(-4.0, 4.0), min=-8.0, max=8.0, step=0.5, description="输入范围",
        readout_format=readout_format(0.5),
    )
    z = float_slider(-2.3, -8.0, 8.0, 0.05, "预激活 z")
    out = live_output(
        lambda names, x_range, z: _plot_activation_curves(tuple(names), x_range, z),
        {"names": names, "x_range": x_range, "z": z},
    )
    return widgets.VBox([widgets.HBox([names, widgets.VBox([x_range, z])]), out])
