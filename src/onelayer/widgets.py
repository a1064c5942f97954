"""ipywidgets panels for the chapters (live in Jupyter; stored state in the HTML book)."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from onelayer.data import TOKENS, sentence_ffn, sentence_x
from onelayer.ffn import trace_ffn
from onelayer.plotting import show_with_alt


def _plot_trace(x: list[float], activation: str) -> None:
    ffn = sentence_ffn(activation)
    t = trace_ffn(ffn, torch.tensor(x))
    print("x·W1 + b1（前 4 个探测器）:", [round(v, 3) for v in t.pre[:4].tolist()])
    print(f"{activation}(·)（前 4 个探测器）:", [round(v, 3) for v in t.post[:4].tolist()])
    print("FFN 输出 [4]:", [round(v, 3) for v in t.out.tolist()])
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    idx = range(ffn.d_ff)
    ax.bar(idx, t.pre.tolist(), color="lightgray", label="激活前 x·W1+b1")
    ax.bar(idx, t.post.tolist(), width=0.5, color="tab:orange", label=f"激活后 {activation}")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("探测器编号（d_ff = 16）")
    ax.set_ylabel("数值")
    ax.set_title("“鱼”的 16 个探测器：激活前后")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    alt = f"柱状图：“鱼”的 16 个探测器在 {activation} 激活前（灰）与激活后（橙）的数值。"
    show_with_alt(fig, alt)


def ffn_explorer() -> widgets.VBox:
    """Edit the four numbers of x_鱼, pick ReLU or GELU, watch h, act(h) and the output."""
    fish = sentence_x()[TOKENS.index("鱼")].tolist()
    sliders = [
        widgets.FloatSlider(
            value=round(v, 2), min=-2.0, max=2.0, step=0.1, description=f"x_鱼[{i}]"
        )
        for i, v in enumerate(fish)
    ]
    act = widgets.ToggleButtons(options=["gelu", "relu"], value="gelu", description="激活函数")

    def update(activation: str, **xs: float) -> None:
        _plot_trace([xs[f"x{i}"] for i in range(4)], activation)

    out = widgets.interactive_output(
        update, {"activation": act, **{f"x{i}": s for i, s in enumerate(sliders)}}
    )
    return widgets.VBox([widgets.HBox([widgets.VBox(sliders), act]), out])
