"""Chapter 4 panels: one token vector through LayerNorm and RMSNorm."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure

from onelayer.book.plotting import new_figure, show_with_alt
from onelayer.book.widgets.frames import frame_player
from onelayer.book.widgets.live import float_slider, live_output
from onelayer.data import TOKENS, sentence_x
from onelayer.norms import LayerNorm, RMSNorm, mean_and_biased_var


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


def _norm_steps(x: list[float], gamma: list[float], beta: list[float],
                kind: str) -> dict[str, torch.Tensor]:
    norm = LayerNorm(len(x)) if kind == "LayerNorm" else RMSNorm(len(x))
    with torch.no_grad():
        norm.weight.copy_(torch.tensor(gamma))
        if kind == "LayerNorm":
            norm.bias.copy_(torch.tensor(beta))
        xs = torch.tensor(x)
        output = "输出 y = γ⊙x̂ + β" if kind == "LayerNorm" else "输出 y = γ⊙x̂（无 β）"
        return {"输入 x": xs, "归一化 x̂": norm.normalized(xs), output: norm(xs)}


def _show_norm_steps(x: list[float], gamma: list[float], beta: list[float], kind: str) -> None:
    steps = _norm_steps(x, gamma, beta, kind)
    for name, v in steps.items():
        mean, var = mean_and_biased_var(v)
        rms = v.pow(2).mean().sqrt()
        print(f"{name}：均值 {mean.item():.4f}，有偏方差 {var.item():.4f}，RMS {rms.item():.4f}")
    # 图例不用 x̂：组合字符在 CJK 字体里缺字形
    rows = {name.split(" ")[0]: v for name, v in steps.items()}
    fig = norm_bars_figure(rows, f"{kind}：一个词元向量的输入、归一化与输出")
    show_with_alt(fig, f"分组柱状图：{kind} 下，输入 x、归一化后的 x̂ 和输出 y "
                       "在 4 个维度上的数值。")


def layernorm_explorer() -> widgets.VBox:
    """Edit a token vector and γ/β; see mean, variance and RMS before and after the norm."""
    X = sentence_x()
    token = widgets.ToggleButtons(options=list(TOKENS), value="鱼", description="词元")
    kind = widgets.ToggleButtons(options=["LayerNorm", "RMSNorm"], description="归一化")

    xs = [float_slider(round(v, 2), -3.0, 3.0, 0.1, f"x[{i}]") for i, v in enumerate(X[2].tolist())]
    gammas = [float_slider(1.0, -2.0, 2.0, 0.1, f"γ[{i}]") for i in range(4)]
    betas = [float_slider(0.0, -2.0, 2.0, 0.1, f"β[{i}]") for i in range(4)]

    def load_token(change: dict) -> None:
        for s, v in zip(xs, X[TOKENS.index(change["new"])].tolist()):
            s.value = round(v, 2)

    def toggle_beta(change: dict) -> None:
        for s in betas:
            s.disabled = change["new"] == "RMSNorm"

    token.observe(load_token, names="value")
    kind.observe(toggle_beta, names="value")

    def update(kind: str, **v: float) -> None:
        values = {p: [v[f"{p}{i}"] for i in range(4)] for p in "xgb"}
        _show_norm_steps(values["x"], values["g"], values["b"], kind)

    controls = {"kind": kind}
    for prefix, group in (("x", xs), ("g", gammas), ("b", betas)):
        controls.update({f"{prefix}{i}": s for i, s in enumerate(group)})
    out = live_output(update, controls)
    columns = widgets.HBox([widgets.VBox(xs), widgets.VBox(gammas), widgets.VBox(betas)])
    return widgets.VBox([token, kind, columns, out])


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
        return (f"柱状图：x_鱼 每一维加上 c = {c:+.1f} 后的输入（左）、LayerNorm 输出（中）"
                f"与 RMSNorm 输出（右）；LayerNorm 的柱子与 c 无关。")

    return frame_player(draw, shifts, "平移 c", alt, start=shifts.index(0.0))
