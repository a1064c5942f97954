"""Chapter 8 panels: per-layer FFN gradients at initialisation, Post-LN against Pre-LN."""

from __future__ import annotations

from collections.abc import Mapping

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from onelayer.book.panels import PagePanel
from onelayer.book.plotting import new_figure, show_with_alt
from onelayer.book.widgets.frames import frame_player
from onelayer.book.widgets.live import live_output
from onelayer.chapters.ch08_norm_position import init_grad_norms
from onelayer.checks import check_last_dim
from onelayer.norms import LayerNorm

POSITION_NAMES = {"post": "Post-LN：LN(x + F(x))", "pre": "Pre-LN：x + F(LN(x))"}
POSITION_COLORS = {"post": "tab:orange", "pre": "tab:blue"}
GradNorms = Mapping[tuple[str, int], torch.Tensor]  # (norm_position, n_layers) → [seeds, n_layers]
GRAD_FRAME_DEPTHS = (2, 4, 6, 12, 24)               # norm_position_frames 预先画好的块数


def plot_grad_norms(ax, norms: Mapping[str, torch.Tensor]) -> None:
    """Per-layer ‖∂L/∂W2‖ of each arrangement: median over seeds (line) and their range (band)."""
    for position, rows in norms.items():
        layers = np.arange(1, rows.shape[1] + 1)
        color = POSITION_COLORS[position]
        ax.plot(layers, rows.median(0).values.tolist(), marker="o", markersize=3, color=color,
                label=POSITION_NAMES[position])
        ax.fill_between(layers, rows.min(0).values.tolist(), rows.max(0).values.tolist(),
                        color=color, alpha=0.2, linewidth=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("块的编号 l（1 = 最靠近输入）")
    ax.set_ylabel(r"$\|\partial L / \partial W_2\|$")


def norm_position_frames(known: GradNorms | None = None) -> widgets.VBox:
    """Chapter 8, without a kernel: slide the depth L; per-layer FFN gradients at init
    (Xavier init; 3 seeds unless ``known`` holds more), Post-LN vs Pre-LN. ``known`` holds
    results already computed."""
    depths = list(GRAD_FRAME_DEPTHS)
    cache = dict(known or {})

    def norms(position: str, n_layers: int) -> torch.Tensor:
        if (position, n_layers) not in cache:
            cache[position, n_layers] = init_grad_norms(n_layers, position)
        return cache[position, n_layers]

    # 所有帧共用一个纵轴范围，由数据定出：哪一帧都不会被截掉
    top = 1.08 * max(norms(pos, n).max().item() for pos in ("post", "pre") for n in depths)

    def draw(n_layers: float) -> Figure:
        n = int(n_layers)
        fig = new_figure(figsize=(6.4, 3.0))
        ax = fig.subplots()
        plot_grad_norms(ax, {pos: norms(pos, n) for pos in ("post", "pre")})
        ax.set_xlim(0.5, max(depths) + 0.5)
        ax.set_ylim(0, top)
        seeds = norms("post", n).shape[0]
        ax.set_title(f"L = {n} 块：初始化时每块 FFN 的梯度（Xavier 初始化，{seeds} 个种子）")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return fig

    def alt(n_layers: float) -> str:
        n = int(n_layers)
        ratio = (norms("post", n)[:, -1].median() / norms("pre", n)[:, -1].median()).item()
        return (f"折线图：{n} 块的模型在初始化时每一块 W2 的梯度范数，橙色为 Post-LN、蓝色为 "
                f"Pre-LN（线是种子的中位数）；最后一块上 Post-LN 约为 Pre-LN 的 {ratio:.1f} 倍。")

    return frame_player(draw, depths, "块数 L", alt, start=depths.index(12))


def norm_position_explorer(known: GradNorms | None = None) -> widgets.VBox:
    """Chapter 8: pick the depth, the arrangement and the init; redraw the per-layer
    ‖∂L/∂W2‖ at initialisation (3 seeds for what ``known``, the Xavier results already
    computed, does not hold)."""
    depth = widgets.IntSlider(value=12, min=2, max=24, step=2, description="块数 L")
    arrangement = widgets.ToggleButtons(
        options=[("两者", ("post", "pre")), ("Post-LN", ("post",)), ("Pre-LN", ("pre",))],
        value=("post", "pre"), description="摆法")
    init = widgets.ToggleButtons(options=[("Xavier", "xavier"), ("GPT-2", "gpt2")],
                                 value="xavier", description="初始化")
    cache = {(pos, n, "xavier"): rows for (pos, n), rows in (known or {}).items()}

    def update(n_layers: int, positions: tuple[str, ...], init_name: str) -> None:
        norms = {}
        for pos in positions:
            if (pos, n_layers, init_name) not in cache:
                cache[pos, n_layers, init_name] = init_grad_norms(n_layers, pos, init=init_name)
            norms[pos] = cache[pos, n_layers, init_name]
            print(f"{POSITION_NAMES[pos]:<22} 第 1 块 {norms[pos][:, 0].median():.3f}，"
                  f"第 {n_layers} 块 {norms[pos][:, -1].median():.3f}")
        if len(norms) == 2:
            ratio = (norms["post"][:, -1].median() / norms["pre"][:, -1].median()).item()
            print(f"最后一块：Post-LN / Pre-LN = {ratio:.2f}")
        fig = new_figure(figsize=(6.4, 3.0))
        ax = fig.subplots()
        plot_grad_norms(ax, norms)
        ax.set_yscale("log")
        ax.set_ylim(1e-2, 1.5)
        ax.set_ylabel(r"$\|\partial L / \partial W_2\|$（对数坐标）")
        ax.set_title(f"L = {n_layers} 块、{init.label} 初始化：每块 FFN 的梯度")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        seeds = next(iter(norms.values())).shape[0]
        show_with_alt(fig, f"对数坐标折线图：{n_layers} 块的模型（{init.label} 初始化）在初始化时"
                           f"每一块 W2 的梯度范数，{seeds} 个种子的中位数与范围。")

    out = live_output(
        update, {"n_layers": depth, "positions": arrangement, "init_name": init})
    return widgets.VBox([depth, arrangement, init, out])


def prepost_explorer(x: torch.Tensor, s: torch.Tensor, n_layers: int = 1) -> PagePanel:
    """The worked example in the page: x through ``n_layers`` copies of F(v) = v ⊙ s, as
    Post-Norm LN(x + F(x)) and as Pre-Norm x + F(LN(x)) (LayerNorm with γ = 1, β = 0).

    Computed in the page (``panels/prepost.js``) from the chapter's own ``x`` and ``s``,
    rounded to the sliders' step of 0.1.
    """
    for name, v in (("x", x), ("s", s)):
        if v.dim() != 1:
            raise ValueError(f"{name} 应为一维向量，实际形状为 {list(v.shape)}")
        check_last_dim(v, 4)
    if not 1 <= n_layers <= 12:
        raise ValueError(f"n_layers 应在 1 到 12 之间，实际为 {n_layers}")
    return PagePanel("prepost", {"x": [round(v, 1) for v in x.tolist()],
                                 "s": [round(v, 1) for v in s.tolist()], "L": n_layers,
                                 "eps": LayerNorm(4).eps}, "“鱼”的向量：后置与前置归一化")
