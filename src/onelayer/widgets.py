"""ipywidgets panels for the chapters.

Two kinds: ``*_explorer`` panels recompute on every change and need a running kernel
(in the HTML book they show their stored state); ``frame_player`` panels show figures drawn
in advance and are linked in the browser, so they also work in the static HTML book.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from onelayer.activations import ACTIVATIONS, value_and_grad
from onelayer.data import TOKENS, sentence_ffn, sentence_x, two_spirals
from onelayer.ffn import trace_ffn
from onelayer.norms import LayerNorm, RMSNorm, mean_and_biased_var
from onelayer.plotting import figure_html, show_with_alt
from onelayer.residual import DeepMLP, block_grad_norms


# 通用：预先画好的帧 + 浏览器端联动的滑块
def frame_player(
    draw: Callable[[float], Figure],
    values: Sequence[float],
    description: str,
    alt: Callable[[float], str],
    start: int = 0,
) -> widgets.VBox:
    """A slider over figures drawn in advance, one per value, linked in the browser.

    Unlike an interactive_output panel it needs no Python once drawn: the slider and the
    stack of frames are linked with jslink, so it also works in the static HTML book.
    """
    frames = [widgets.HTML(figure_html(draw(v), alt(v))) for v in values]
    stack = widgets.Stack(frames, selected_index=start)
    slider = widgets.SelectionSlider(
        options=[(f"{v:g}", i) for i, v in enumerate(values)], index=start,
        description=description, continuous_update=True,
    )
    widgets.jslink((slider, "index"), (stack, "selected_index"))
    note = widgets.HTML(f"<i>{len(values)} 帧预先算好的图：在 HTML 书中也可以拖动。</i>")
    player = widgets.VBox([note, slider, stack])
    player.add_class("frame-player")  # the browser tests find the players by this class
    return player


# 第 1 章：逐位置前馈网络
def _plot_trace(x: list[float], activation: str) -> None:
    ffn = sentence_ffn(activation)
    t = trace_ffn(ffn, torch.tensor(x))
    print("x·W1 + b1（前 4 个探测器）:", [round(v, 3) for v in t.pre[:4].tolist()])
    print(f"{activation}(·)（前 4 个探测器）:", [round(v, 3) for v in t.post[:4].tolist()])
    print("FFN 输出 [4]:", [round(v, 3) for v in t.out.tolist()])
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    idx = range(1, ffn.d_ff + 1)  # 探测器从 1 数起，与正文的 h1、h2…… 一致
    ax.bar(idx, t.pre.tolist(), color="lightgray", label="激活前 x·W1+b1")
    ax.bar(idx, t.post.tolist(), width=0.5, color="tab:orange",
           label=f"激活后 {activation.upper()}")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("探测器编号 1–16（d_ff = 16）")
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


def fish_frames() -> widgets.VBox:
    """Chapter 1, without a kernel: slide x_鱼[1] and watch detector 2 switch on under ReLU."""
    fish = sentence_x()[TOKENS.index("鱼")]
    ffns = {name: sentence_ffn(name) for name in ("gelu", "relu")}

    def draw(x1: float) -> Figure:
        x = fish.clone()
        x[1] = x1
        traces = {name: trace_ffn(ffn, x) for name, ffn in ffns.items()}
        fig, ax = plt.subplots(figsize=(6.4, 2.6))
        idx = np.arange(1, 17)  # 探测器从 1 数起，与正文的 h1、h2…… 一致
        ax.bar(idx, traces["gelu"].pre.tolist(), color="lightgray", label="激活前 x·W1+b1")
        ax.bar(idx - 0.2, traces["gelu"].post.tolist(), width=0.4, color="tab:orange",
               label="GELU")
        ax.bar(idx + 0.2, traces["relu"].post.tolist(), width=0.4, color="tab:blue",
               label="ReLU")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_ylim(-3.5, 3.5)
        ax.set_xlabel("探测器编号 1–16（d_ff = 16）")
        ax.set_ylabel("数值")
        ax.set_title(f"x_鱼[1] = {x1:g}：16 个探测器激活前后")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return fig

    values = [round(-2.0 + 0.5 * i, 1) for i in range(9)]

    def alt(x1: float) -> str:
        return (f"柱状图：x_鱼[1] = {x1:g} 时，“鱼”的 16 个探测器激活前（灰）、"
                f"GELU 后（橙）与 ReLU 后（蓝）的数值。")

    return frame_player(draw, values, "x_鱼[1]", alt, start=values.index(-0.5))


# 第 2 章：激活函数
def _activation_figure(names: Sequence[str], lo: float, hi: float, z: float) -> Figure:
    """Value (left) and derivative (right) of each activation on [lo, hi], z marked."""
    xs = torch.linspace(lo, hi, 401, dtype=torch.float64)
    point = torch.tensor([z], dtype=torch.float64)
    fig, (ax_value, ax_grad) = plt.subplots(1, 2, figsize=(8.4, 3.2))
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
        value=(-4.0, 4.0), min=-8.0, max=8.0, step=0.5, description="输入范围"
    )
    z = widgets.FloatSlider(value=-2.3, min=-8.0, max=8.0, step=0.05, description="预激活 z")
    out = widgets.interactive_output(
        lambda names, x_range, z: _plot_activation_curves(tuple(names), x_range, z),
        {"names": names, "x_range": x_range, "z": z},
    )
    return widgets.VBox([widgets.HBox([names, widgets.VBox([x_range, z])]), out])


# 第 3 章：残差连接
def residual_gradient_explorer() -> widgets.VBox:
    """Chapter 3: pick depth, shortcut on/off and init; redraw ‖∂L/∂W1‖ of every block at init."""
    x, y = two_spirals()
    depth = widgets.IntSlider(value=16, min=2, max=48, step=2, description="块数")
    shortcut = widgets.ToggleButtons(
        options=[("有捷径 h + f(h)", True), ("无捷径 f(h)", False)], value=True,
        description="残差",
    )
    init = widgets.ToggleButtons(
        options=[("PyTorch 默认", "default"), ("He", "he")], value="default",
        description="初始化",
    )

    def update(n_layers: int, use_shortcut: bool, init_name: str) -> None:
        torch.manual_seed(0)
        net = DeepMLP(n_layers, shortcut=use_shortcut, init=init_name)
        norms = block_grad_norms(net, x, y)
        ratio = (norms[0] / norms[-1]).item()
        print(f"第 1 块与第 {n_layers} 块的梯度范数之比: {ratio:.1e}")
        kind = "有捷径" if use_shortcut else "无捷径"
        init_label = {"default": "PyTorch 默认", "he": "He"}[init_name]
        fig, ax = plt.subplots(figsize=(6.4, 3.0))
        ax.semilogy(range(1, n_layers + 1), norms.tolist(), marker="o", markersize=3)
        ax.set_ylim(1e-32, 1e4)
        ax.set_xlabel("块的编号（1 = 最靠近输入）")
        ax.set_ylabel(r"$\|\partial L / \partial W_1\|$（对数坐标）")
        ax.set_title(f"{n_layers} 块、{kind}、{init_label} 初始化：每块的梯度大小")
        alt = (
            f"对数坐标折线图：{n_layers} 块的网络（{kind}，{init_label} 初始化）在初始化时"
            f"每一块 W1 的梯度范数；第 1 块与最后一块之比为 {ratio:.1e}。"
        )
        show_with_alt(fig, alt)

    out = widgets.interactive_output(
        update, {"n_layers": depth, "use_shortcut": shortcut, "init_name": init}
    )
    return widgets.VBox([depth, shortcut, init, out])


def residual_frames() -> widgets.VBox:
    """Chapter 3, without a kernel: slide the depth; per-block gradients with/without shortcuts."""
    x, y = two_spirals()
    depths = [2, 4, 8, 16, 32, 48]

    def draw(n_layers: float) -> Figure:
        fig, ax = plt.subplots(figsize=(6.4, 3.0))
        for shortcut, label in ((True, "有捷径 h + f(h)"), (False, "无捷径 f(h)")):
            torch.manual_seed(0)
            norms = block_grad_norms(DeepMLP(int(n_layers), shortcut=shortcut), x, y)
            ax.semilogy(range(1, int(n_layers) + 1), norms.tolist(), marker="o", markersize=3,
                        label=label)
        ax.set_ylim(1e-32, 1e4)
        ax.set_xlabel("块的编号（1 = 最靠近输入）")
        ax.set_ylabel(r"$\|\partial L / \partial W_1\|$（对数坐标）")
        ax.set_title(f"{int(n_layers)} 块、PyTorch 默认初始化：每块的梯度大小")
        ax.legend(fontsize=8)
        return fig

    def alt(n_layers: float) -> str:
        return (f"对数坐标折线图：{int(n_layers)} 块的网络在初始化时每一块 W1 的梯度范数，"
                f"有捷径的一条近乎水平，无捷径的一条越靠近输入越小。")

    return frame_player(draw, depths, "块数", alt, start=depths.index(16))


# 第 4 章：层归一化
def _plot_norm_step(x: list[float], gamma: list[float], beta: list[float], kind: str) -> None:

    norm = LayerNorm(len(x)) if kind == "LayerNorm" else RMSNorm(len(x))
    with torch.no_grad():
        norm.weight.copy_(torch.tensor(gamma))
        if kind == "LayerNorm":
            norm.bias.copy_(torch.tensor(beta))
        xs = torch.tensor(x)
        steps = {"输入 x": xs, "归一化 x̂": norm.normalized(xs), "输出 y = γ⊙x̂ + β": norm(xs)}
    if kind == "RMSNorm":
        steps["输出 y = γ⊙x̂（无 β）"] = steps.pop("输出 y = γ⊙x̂ + β")
    for name, v in steps.items():
        mean, var = mean_and_biased_var(v)
        rms = v.pow(2).mean().sqrt()
        print(f"{name}：均值 {mean.item():.4f}，有偏方差 {var.item():.4f}，RMS {rms.item():.4f}")
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    width = 0.27
    for k, (name, v) in enumerate(steps.items()):
        label = name.split(" ")[0]  # 图例不用 x̂：组合字符在 CJK 字体里缺字形
        ax.bar([i + (k - 1) * width for i in range(len(x))], v.tolist(), width, label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(x)), [f"第{i + 1}维" for i in range(len(x))])
    ax.set_ylabel("数值")
    ax.set_title(f"{kind}：一个词元向量的输入、归一化与输出")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    alt = f"分组柱状图：{kind} 下，输入 x、归一化后的 x̂ 和输出 y 在 4 个维度上的数值。"
    show_with_alt(fig, alt)


def layernorm_explorer() -> widgets.VBox:
    """Edit a token vector and γ/β; see mean, variance and RMS before and after the norm."""
    X = sentence_x()
    token = widgets.ToggleButtons(options=list(TOKENS), value="鱼", description="词元")
    kind = widgets.ToggleButtons(options=["LayerNorm", "RMSNorm"], description="归一化")

    def slider(label: str, value: float, low: float, high: float) -> widgets.FloatSlider:
        return widgets.FloatSlider(
            value=value, min=low, max=high, step=0.1, description=label, readout_format=".1f"
        )

    xs = [slider(f"x[{i}]", round(v, 2), -3.0, 3.0) for i, v in enumerate(X[2].tolist())]
    gammas = [slider(f"γ[{i}]", 1.0, -2.0, 2.0) for i in range(4)]
    betas = [slider(f"β[{i}]", 0.0, -2.0, 2.0) for i in range(4)]

    def load_token(change: dict) -> None:
        for s, v in zip(xs, X[TOKENS.index(change["new"])].tolist()):
            s.value = round(v, 2)

    def toggle_beta(change: dict) -> None:
        for s in betas:
            s.disabled = change["new"] == "RMSNorm"

    token.observe(load_token, names="value")
    kind.observe(toggle_beta, names="value")

    def update(kind: str, **v: float) -> None:
        _plot_norm_step(
            [v[f"x{i}"] for i in range(4)],
            [v[f"g{i}"] for i in range(4)],
            [v[f"b{i}"] for i in range(4)],
            kind,
        )

    controls = {"kind": kind}
    for prefix, group in (("x", xs), ("g", gammas), ("b", betas)):
        controls.update({f"{prefix}{i}": s for i, s in enumerate(group)})
    out = widgets.interactive_output(update, controls)
    columns = widgets.HBox([widgets.VBox(xs), widgets.VBox(gammas), widgets.VBox(betas)])
    return widgets.VBox([token, kind, columns, out])


def layernorm_frames() -> widgets.VBox:
    """Chapter 4, without a kernel: shift x_鱼 by c; LayerNorm's output stays, RMSNorm's moves."""
    fish = sentence_x()[TOKENS.index("鱼")]
    layer_norm, rms_norm = LayerNorm(4), RMSNorm(4)
    shifts = [round(-2.0 + 0.5 * i, 1) for i in range(9)]

    def draw(c: float) -> Figure:
        x = fish + c
        with torch.no_grad():
            rows = {"输入 x_鱼 + c": x, "LayerNorm": layer_norm(x), "RMSNorm": rms_norm(x)}
        fig, ax = plt.subplots(figsize=(6.4, 2.8))
        idx = np.arange(4)
        for k, (label, values) in enumerate(rows.items()):
            ax.bar(idx + 0.27 * (k - 1), values.tolist(), width=0.27, label=label)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_ylim(-3.0, 3.0)
        ax.set_xticks(idx, [f"第 {i + 1} 维" for i in idx])
        ax.set_ylabel("数值")
        ax.set_title(f"整体平移 c = {c:+.1f}：LayerNorm 不变，RMSNorm 改变")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return fig

    def alt(c: float) -> str:
        return (f"柱状图：x_鱼 每一维加上 c = {c:+.1f} 后的输入（左）、LayerNorm 输出（中）"
                f"与 RMSNorm 输出（右）；LayerNorm 的柱子与 c 无关。")

    return frame_player(draw, shifts, "平移 c", alt, start=shifts.index(0.0))
