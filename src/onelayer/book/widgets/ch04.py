"""Chapter 4 panels: one token vector through LayerNorm and RMSNorm."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure

from onelayer.book.panels import PagePanel
from onelayer.book.plotting import new_figure
from onelayer.book.widgets.frames import frame_player
from onelayer.data import TOKENS, sentence_x
from onelayer.norms import LayerNorm, RMSNorm


def norm_bars_figure(rows: dict[str, torch.Tensor], title: str) -> Figure:
    """Grouped bars: one group per dimension, one bar per row (input, normalised, output …)."""
    fig = new_figure(figsize=(6.4, 2.8))
    ax = fig.subplots()
    width = 0.8 / len(rows)
    idx = np.arange(len(next(iter(rows.values()))))
    for k, (label, values) in enumerate(rows.items()):
        ax.bar(idx + (k - (len(rows) - 1) / 2) * width, values.tolist(), width, label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylim(-3.0, 3.0)
    ax.set_xticks(idx, [f"第 {i + 1} 维" for i in idx])
    ax.set_ylabel("数值")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig


def layernorm_explorer() -> PagePanel:
    """Edit a token vector and γ/β; see mean, variance and RMS before and after the norm.

    Computed in the page (``panels/layernorm.js``) with the ε of onelayer's LayerNorm and
    RMSNorm; the token vectors are ``sentence_x()`` rounded to the sliders' step.
    """
    X = sentence_x()
    return PagePanel("layernorm", {
        "tokens": {t: [round(v, 1) for v in X[i].tolist()] for i, t in enumerate(TOKENS)},
        "token": "鱼",
        "eps": {"LayerNorm": LayerNorm(4).eps, "RMSNorm": RMSNorm(4).eps},
    }, "一个词元向量经过 LayerNorm / RMSNorm")


def layernorm_frames() -> widgets.VBox:
    """Without a kernel: shift x_鱼 by c; LayerNorm's output stays, RMSNorm's moves."""
    fish = sentence_x()[TOKENS.index("鱼")]
    layer_norm, rms_norm = LayerNorm(4), RMSNorm(4)
    shifts = [round(-2.0 + 0.5 * i, 1) for i in range(9)]

    def draw(c: float) -> Figure:
        x = fish + c
        with torch.no_grad():
            rows = {"输入 x_鱼 + c": x, "LayerNorm": layer_norm(x), "RMSNorm": rms_norm(x)}
        return norm_bars_figure(rows, f"整体平移 c = {c:+.1f}：LayerNorm 不变，RMSNorm 改变")

    def alt(c: float) -> str:
        return (f"柱状图：x_鱼 每一维加上 c = {c:+.1f}，每一维三根柱：输入（蓝）、"
                f"LayerNorm（橙）、RMSNorm（绿）；LayerNorm 的柱子与 c 无关。")

    return frame_player(draw, shifts, "平移 c", alt, start=shifts.index(0.0))
