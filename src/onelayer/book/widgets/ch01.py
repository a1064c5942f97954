"""Chapter 1 panels: the 16 detectors of “鱼” before and after the activation."""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure

from onelayer.book.panels import PagePanel
from onelayer.book.plotting import new_figure
from onelayer.book.widgets.frames import frame_player
from onelayer.data import TOKENS, sentence_ffn, sentence_x
from onelayer.ffn import trace_ffn

COLORS = {"gelu": "tab:orange", "relu": "tab:blue"}
LABELS = {"gelu": "GELU", "relu": "ReLU"}


def detector_figure(x: torch.Tensor, activations: Sequence[str], title: str) -> Figure:
    """Bars of x·W1 + b1 (grey) and of act(·) for each activation, for the 16 detectors."""
    traces = {name: trace_ffn(sentence_ffn(name), x) for name in activations}
    fig = new_figure(figsize=(6.4, 2.6))
    ax = fig.subplots()
    idx = np.arange(1, 17)  # 探测器从 1 数起，与正文的 h1、h2…… 一致
    ax.bar(idx, traces[activations[0]].pre.tolist(), color="lightgray", label="激活前 x·W1+b1")
    width = 0.8 / len(activations)
    for k, (name, trace) in enumerate(traces.items()):
        offset = (k - (len(activations) - 1) / 2) * width
        ax.bar(idx + offset, trace.post.tolist(), width=width, color=COLORS[name],
               label=LABELS[name])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylim(-4.0, 4.6)
    ax.set_xlabel("探测器编号 1–16（d_ff = 16）")
    ax.set_ylabel("数值")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return fig


def _alt(x1: str, activations: Sequence[str]) -> str:
    shown = "、".join(f"{LABELS[name]} 后（{'橙' if name == 'gelu' else '蓝'}）"
                     for name in activations)
    return f"柱状图：{x1}时，“鱼”的 16 个探测器激活前（灰）与 {shown}的数值。"


def ffn_explorer() -> PagePanel:
    """Edit the four numbers of x_鱼, pick ReLU or GELU, watch h, act(h) and the output.

    Computed in the page (``panels/ffn.js``) from the weights of ``sentence_ffn``, written
    here as JSON; ``ffn_panel_data`` is what the page receives.
    """
    return PagePanel("ffn", ffn_panel_data(), "“鱼”的 FFN：改输入、换激活函数")


def ffn_panel_data() -> dict:
    """x_鱼 (rounded to the sliders' step) and W1, b1, W2, b2 of the 猫吃鱼 FFN, as lists,
    with W stored as [in, out] so that the page computes x·W + b."""
    ffn = sentence_ffn("gelu")
    fish = sentence_x()[TOKENS.index("鱼")].tolist()
    return {
        "x": [round(v, 1) for v in fish],
        "W1": ffn.w1.weight.detach().T.tolist(), "b1": ffn.w1.bias.detach().tolist(),
        "W2": ffn.w2.weight.detach().T.tolist(), "b2": ffn.w2.bias.detach().tolist(),
    }


def fish_frames() -> widgets.VBox:
    """Without a kernel: slide the 2nd component of x_鱼 from −2 to 4 and watch detector 2
    switch on under ReLU, its bar growing from 0 past the threshold 1.8 to 2.2 (components and
    detectors are numbered from 1, as in the chapter)."""
    fish = sentence_x()[TOKENS.index("鱼")]
    values = [round(-2.0 + 0.5 * i, 1) for i in range(13)]

    def draw(x1: float) -> Figure:
        x = fish.clone()
        x[1] = x1  # 第 2 维（Python 下标从 0 数）
        return detector_figure(x, ["gelu", "relu"], f"x_鱼 第 2 维 = {x1:g}：16 个探测器激活前后")

    def alt(x1: float) -> str:
        return _alt(f"x_鱼 的第 2 维为 {x1:g} ", ["gelu", "relu"])

    return frame_player(draw, values, "x_鱼 第 2 维", alt, start=values.index(-0.5))
