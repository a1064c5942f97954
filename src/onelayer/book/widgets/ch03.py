"""Chapter 3 panels: the gradient of every FFN layer of a deep MLP at initialisation."""

from __future__ import annotations

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from onelayer.book.plotting import new_figure, show_with_alt
from onelayer.book.widgets.frames import frame_player
from onelayer.book.widgets.live import live_output
from onelayer.chapters.ch03_residual import layer_grad_norms
from onelayer.data import two_spirals
from onelayer.mlp import DeepMLP
from onelayer.train import seeded

SHORTCUT_NAMES = {True: "有捷径 h + f(h)", False: "无捷径 f(h)"}
INIT_NAMES = {"default": "PyTorch 默认", "he": "He"}


def grad_norms_at_init(n_layers: int, shortcut: bool, init: str = "default") -> torch.Tensor:
    """‖∂L/∂W1‖ of every layer of the seed-0 network on the two spirals."""
    x, y = two_spirals()
    with seeded(0):
        net = DeepMLP(n_layers, shortcut=shortcut, init=init)
    return layer_grad_norms(net, x, y)


def grad_norms_figure(curves: dict[str, torch.Tensor], title: str) -> Figure:
    """One log-scale line per network: ‖∂L/∂W1‖ against the layer number."""
    fig = new_figure(figsize=(6.4, 3.0))
    ax = fig.subplots()
    for label, norms in curves.items():
        ax.semilogy(range(1, len(norms) + 1), norms.tolist(), marker="o", markersize=3,
                    label=label)
    ax.set_ylim(1e-36, 1e4)
    ax.set_xlabel("块的编号（1 = 最靠近输入）")
    ax.set_ylabel(r"$\|\partial L / \partial W_1\|$（对数坐标）")
    ax.set_title(title)
    if len(curves) > 1:
        ax.legend(fontsize=8)
    return fig


def residual_gradient_explorer() -> widgets.VBox:
    """Pick depth, shortcut on/off and init; redraw ‖∂L/∂W1‖ of every layer at init."""
    depth = widgets.IntSlider(value=16, min=2, max=48, step=2, description="块数")
    shortcut = widgets.ToggleButtons(options=[(v, k) for k, v in SHORTCUT_NAMES.items()],
                                     value=True, description="残差")
    init = widgets.ToggleButtons(options=[(v, k) for k, v in INIT_NAMES.items()],
                                 value="default", description="初始化")

    def update(n_layers: int, use_shortcut: bool, init_name: str) -> None:
        norms = grad_norms_at_init(n_layers, use_shortcut, init_name)
        ratio = (norms[0] / norms[-1]).item()
        print(f"第 1 块与第 {n_layers} 块的梯度范数之比: {ratio:.1e}")
        kind, init_label = SHORTCUT_NAMES[use_shortcut].split()[0], INIT_NAMES[init_name]
        title = f"{n_layers} 块、{kind}、{init_label} 初始化：每块的梯度大小"
        alt = (f"对数坐标折线图：{n_layers} 块的网络（{kind}，{init_label} 初始化）在初始化时"
               f"每一块 W1 的梯度范数；第 1 块与最后一块之比为 {ratio:.1e}。")
        show_with_alt(grad_norms_figure({kind: norms}, title), alt)

    out = live_output(
        update, {"n_layers": depth, "use_shortcut": shortcut, "init_name": init}
    )
    return widgets.VBox([depth, shortcut, init, out])


def residual_frames() -> widgets.VBox:
    """Without a kernel: slide the depth; per-layer gradients with and without shortcuts."""
    depths = [2, 4, 8, 16, 32, 48]

    def draw(n_layers: float) -> Figure:
        n = int(n_layers)
        curves = {label: grad_norms_at_init(n, shortcut)
                  for shortcut, label in SHORTCUT_NAMES.items()}
        return grad_norms_figure(curves, f"{n} 块、PyTorch 默认初始化：每块的梯度大小")

    def alt(n_layers: float) -> str:
        return (f"对数坐标折线图：{int(n_layers)} 块的网络在初始化时每一块 W1 的梯度范数，"
                f"有捷径的一条近乎水平，无捷径的一条越靠近输入越小。")

    return frame_player(draw, depths, "块数", alt, start=depths.index(16))
