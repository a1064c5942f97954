"""ipywidgets panels for the chapters.

Two kinds: ``*_explorer`` panels recompute on every change and need a running kernel
(in the HTML book they show their stored state); ``frame_player`` panels show figures drawn
in advance and are linked in the browser, so they also work in the static HTML book.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from onelayer.activations import ACTIVATIONS, value_and_grad
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.book.plotting import figure_html, show_with_alt
from onelayer.data import TOKENS, FactsCorpus, sentence_ffn, sentence_x, two_spirals
from onelayer.ffn import trace_ffn
from onelayer.model import TinyGPT
from onelayer.norm_position import init_grad_norms
from onelayer.norms import LayerNorm, RMSNorm, mean_and_biased_var
from onelayer.params import block_flops, block_parameter_breakdown
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


# 第 6 章：组装一个 Transformer Block
BLOCK_PART_NAMES = {"attention": "注意力", "ffn": "FFN", "norms": "归一化"}
BLOCK_FLOP_NAMES = {"attention_proj": "注意力的投影", "attention_scores": "注意力打分与加权",
                    "ffn": "FFN"}
BLOCK_COLORS = {"attention": "tab:blue", "attention_proj": "tab:blue",
                "attention_scores": "lightsteelblue", "ffn": "tab:orange", "norms": "tab:green"}


def meta_block(d_model: int, ratio: float, gated: bool, norm: str = "layernorm",
               bias: bool = True, d_head: int = 64) -> TransformerBlock:
    """A block on the meta device (shapes only, no memory): d_ff = round(ratio·d_model),
    n_heads = d_model / d_head (at least 1); GELU when plain, SwiGLU when gated."""
    n_heads = max(1, d_model // d_head)
    d_ff = max(1, round(ratio * d_model))
    cfg = BlockConfig(d_model, n_heads, d_ff, "silu" if gated else "gelu", gated, norm,
                      bias=bias)
    with torch.device("meta"):
        return TransformerBlock(cfg)


def _shares(parts: dict[str, int]) -> dict[str, float]:
    total = sum(parts.values())
    return {k: v / total for k, v in parts.items()}


def _stacked_bars(ax, rows: dict[str, dict[str, float]], names: dict[str, str]) -> None:
    """One horizontal bar per row, its parts stacked to 100 %, labelled when wide enough."""
    for i, shares in enumerate(rows.values()):
        left = 0.0
        for key, share in shares.items():
            ax.barh(i, share * 100, left=left, height=0.6, color=BLOCK_COLORS[key],
                    label=names[key] if i == 0 else None)
            if share >= 0.08:
                ax.text(left + share * 50, i, f"{share:.0%}", ha="center", va="center",
                        fontsize=9, color="black" if key == "attention_scores" else "white")
            left += share * 100
    ax.set_xlim(0, 100)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # 第一行在上
    ax.grid(False)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=3, fontsize=8,
              frameon=False, handlelength=1.2, columnspacing=1.0)


def block_breakdown_figure(blocks: dict[str, TransformerBlock], seq_len: int,
                           title: str) -> Figure:
    """Left: each block's parameters by part; right: its forward FLOPs by part at seq_len."""
    fig, (ax_p, ax_f) = plt.subplots(1, 2, figsize=(9.6, 1.7 + 0.45 * len(blocks)),
                                     layout="constrained")
    _stacked_bars(ax_p, {k: _shares(block_parameter_breakdown(b)) for k, b in blocks.items()},
                  BLOCK_PART_NAMES)
    _stacked_bars(ax_f, {k: _shares(block_flops(b, seq_len)) for k, b in blocks.items()},
                  BLOCK_FLOP_NAMES)
    ax_p.set_yticks(range(len(blocks)), list(blocks))
    ax_f.set_yticks(range(len(blocks)), [])
    ax_p.set_xlabel("参数占比（%）")
    ax_f.set_xlabel(f"前向 FLOPs 占比（%），T = {seq_len}")
    fig.suptitle(title)
    return fig


def block_ratio_frames(d_model: int = 768, seq_len: int = 1024) -> widgets.VBox:
    """Chapter 6, without a kernel: slide d_ff/d_model; parameter and FLOP shares of a plain
    GELU block and a SwiGLU block of the same d_ff."""
    ratios = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0]
    kinds = {"GELU + LayerNorm": (False, "layernorm", True),
             "SwiGLU + RMSNorm": (True, "rmsnorm", False)}

    def blocks(ratio: float) -> dict[str, TransformerBlock]:
        return {name: meta_block(d_model, ratio, *flags) for name, flags in kinds.items()}

    def draw(ratio: float) -> Figure:
        return block_breakdown_figure(
            blocks(ratio), seq_len, f"d_ff = {ratio:g}·d_model（d_model = {d_model}）")

    def alt(ratio: float) -> str:
        shares = [_shares(block_parameter_breakdown(b))["ffn"] for b in blocks(ratio).values()]
        return (f"两组堆叠横条：d_ff = {ratio:g}·d_model 时，GELU 块与 SwiGLU 块的参数"
                f"（左）和 T = {seq_len} 时前向 FLOPs（右）在注意力、FFN、归一化之间的占比；"
                f"FFN 的参数占比分别为 {shares[0]:.0%} 和 {shares[1]:.0%}。")

    return frame_player(draw, ratios, "d_ff 倍数", alt, start=ratios.index(4.0))


def _show_block_breakdown(d_model: int, ratio: float, gated: bool, norm: str, bias: bool,
                          seq_len: int) -> None:
    block = meta_block(d_model, ratio, gated, norm, bias)
    cfg = block.config
    params, flops = block_parameter_breakdown(block), block_flops(block, seq_len)
    print(f"d_model = {cfg.d_model}，n_heads = {cfg.n_heads}，d_ff = {cfg.hidden}，"
          f"{'SwiGLU' if gated else 'GELU'}，{norm}，偏置 {'有' if bias else '无'}")
    total_p, total_f = sum(params.values()), sum(flops.values())
    for key, n in params.items():
        print(f"  参数 {BLOCK_PART_NAMES[key]:<6} {n:>14,}  {n / total_p:6.1%}")
    print(f"  参数 合计   {total_p:>14,}")
    for key, n in flops.items():
        print(f"  FLOPs {BLOCK_FLOP_NAMES[key]:<9} {n:>16,}  {n / total_f:6.1%}")
    fig = block_breakdown_figure({"这个块": block}, seq_len, "一个块的参数与计算量")
    ffn_share = params["ffn"] / total_p
    show_with_alt(fig, f"两条堆叠横条：这个块的参数（左，FFN 占 {ffn_share:.0%}）和 "
                       f"T = {seq_len} 时的前向 FLOPs（右）按部件的占比。")


def block_explorer() -> widgets.VBox:
    """Pick d_model, d_ff/d_model, plain or gated, the norm, biases and T; see where one
    block's parameters and FLOPs go (blocks built on the meta device: instant at any size)."""
    d_model = widgets.Dropdown(options=[64, 256, 768, 1024, 2048, 4096], value=768,
                               description="d_model")
    ratio = widgets.FloatSlider(value=4.0, min=0.5, max=8.0, step=0.5,
                                description="d_ff/d_model", style={"description_width": "initial"})
    gated = widgets.ToggleButtons(options=[("普通 GELU", False), ("SwiGLU", True)],
                                  value=False, description="FFN")
    norm = widgets.ToggleButtons(options=["layernorm", "rmsnorm"], description="归一化")
    bias = widgets.Checkbox(value=True, description="偏置")
    seq_len = widgets.SelectionSlider(options=[2**k for k in range(6, 17)], value=1024,
                                      description="序列长度 T")
    out = widgets.interactive_output(
        _show_block_breakdown, {"d_model": d_model, "ratio": ratio, "gated": gated,
                                "norm": norm, "bias": bias, "seq_len": seq_len})
    controls = widgets.VBox([d_model, ratio, gated, norm, bias, seq_len])
    return widgets.VBox([controls, out])


# 第 7 章：小 GPT
def _next_token_figure(model: TinyGPT, corpus: FactsCorpus, prompt: str, temperature: float,
                       top: int = 10) -> Figure:
    """Bar chart of the most likely next tokens after ``prompt`` at ``temperature``."""
    with torch.no_grad():
        model.eval()
        logits = model(torch.tensor(corpus.encode(prompt)))[-1]
    probs = (logits / temperature).softmax(-1)
    best = probs.topk(top)
    labels = [corpus.vocab[i] for i in best.indices.tolist()]
    truth = corpus.facts.get((prompt[-2], prompt[-1])) if len(prompt) >= 2 else None
    colors = ["tab:orange" if c == truth else "tab:blue" for c in labels]
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    ax.bar(range(top), best.values.tolist(), color=colors)
    ax.set_xticks(range(top), labels)
    ax.set_ylim(0, 1)
    ax.set_ylabel("概率")
    ax.set_title(f"“{prompt}”之后的下一个字，温度 τ = {temperature:g}（橙色：表里的事实）")
    return fig


def temperature_frames(model: TinyGPT, corpus: FactsCorpus, prompt: str) -> widgets.VBox:
    """Chapter 7, without a kernel: the next-token distribution as the temperature changes."""
    values = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0]

    def alt(t: float) -> str:
        return (f"柱状图：提示“{prompt}”之后概率最高的 10 个字在温度 {t:g} 下的概率；"
                "温度越低，概率越集中在第一名上，温度越高越平。")

    return frame_player(lambda t: _next_token_figure(model, corpus, prompt, t), values,
                        "温度 τ", alt, start=values.index(1.0))


def generation_explorer(model: TinyGPT, corpus: FactsCorpus) -> widgets.VBox:
    """Type a prompt, pick temperature, top-k and a seed; see a sample and the distribution."""
    prompt = widgets.Text(value="猫吃", description="提示")
    temperature = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                                         description="温度 τ")
    top_k = widgets.IntSlider(value=len(corpus.vocab), min=1, max=len(corpus.vocab),
                              description="top-k")
    seed = widgets.IntSlider(value=0, min=0, max=20, description="随机种子")

    def update(prompt: str, temperature: float, top_k: int, seed: int) -> None:
        try:
            ids = model.generate(corpus.encode(prompt), 12, temperature, top_k,
                                 torch.Generator().manual_seed(seed))
        except ValueError as err:
            print("ValueError:", err)
            return
        print("生成：", corpus.decode(ids))
        fig = _next_token_figure(model, corpus, prompt, temperature)
        show_with_alt(fig, f"柱状图：提示“{prompt}”之后概率最高的 10 个字，"
                           f"温度 {temperature:.2g}。")

    out = widgets.interactive_output(
        update, {"prompt": prompt, "temperature": temperature, "top_k": top_k, "seed": seed})
    return widgets.VBox([widgets.HBox([prompt, seed]), widgets.HBox([temperature, top_k]), out])


# 第 5 章：前置归一化与后置归一化
POSITION_NAMES = {"post": "Post-LN：LN(x + F(x))", "pre": "Pre-LN：x + F(LN(x))"}
POSITION_COLORS = {"post": "tab:orange", "pre": "tab:blue"}
GradNorms = Mapping[tuple[str, int], torch.Tensor]  # (norm_position, n_layers) → [seeds, n_layers]
GRAD_FRAME_DEPTHS = (2, 4, 6, 12, 24)               # norm_position_frames 预先画好的块数


def plot_grad_norms(ax, norms: Mapping[str, torch.Tensor]) -> None:
    """Per-layer ‖∂L/∂W2‖ of each arrangement: mean over seeds (line) and their range (band)."""
    for position, rows in norms.items():
        layers = np.arange(1, rows.shape[1] + 1)
        color = POSITION_COLORS[position]
        ax.plot(layers, rows.mean(0).tolist(), marker="o", markersize=3, color=color,
                label=POSITION_NAMES[position])
        ax.fill_between(layers, rows.min(0).values.tolist(), rows.max(0).values.tolist(),
                        color=color, alpha=0.2, linewidth=0)
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_xlabel("块的编号 l（1 = 最靠近输入）")
    ax.set_ylabel(r"$\|\partial L / \partial W_2\|$")


def norm_position_frames(known: GradNorms | None = None) -> widgets.VBox:
    """Chapter 5, without a kernel: slide the depth L; per-layer FFN gradients at init
    (Xavier init, 3 seeds), Post-LN vs Pre-LN. ``known`` holds results already computed."""
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
        fig, ax = plt.subplots(figsize=(6.4, 3.0))
        plot_grad_norms(ax, {pos: norms(pos, n) for pos in ("post", "pre")})
        ax.set_xlim(0.5, max(depths) + 0.5)
        ax.set_ylim(0, top)
        ax.set_title(f"L = {n} 块：初始化时每块 FFN 的梯度（Xavier 初始化，3 个种子）")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return fig

    def alt(n_layers: float) -> str:
        n = int(n_layers)
        ratio = (norms("post", n)[:, -1].mean() / norms("pre", n)[:, -1].mean()).item()
        return (f"折线图：{n} 块的模型在初始化时每一块 W2 的梯度范数，橙色为 Post-LN、蓝色为 "
                f"Pre-LN；最后一块上 Post-LN 约为 Pre-LN 的 {ratio:.1f} 倍。")

    return frame_player(draw, depths, "块数 L", alt, start=depths.index(12))


def norm_position_explorer(known: GradNorms | None = None) -> widgets.VBox:
    """Chapter 5: pick the depth, the arrangement and the init; redraw the per-layer
    ‖∂L/∂W2‖ at initialisation (3 seeds). ``known`` holds Xavier results already computed."""
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
            print(f"{POSITION_NAMES[pos]:<22} 第 1 块 {norms[pos][:, 0].mean():.3f}，"
                  f"第 {n_layers} 块 {norms[pos][:, -1].mean():.3f}")
        if len(norms) == 2:
            ratio = (norms["post"][:, -1].mean() / norms["pre"][:, -1].mean()).item()
            print(f"最后一块：Post-LN / Pre-LN = {ratio:.2f}")
        fig, ax = plt.subplots(figsize=(6.4, 3.0))
        plot_grad_norms(ax, norms)
        ax.set_yscale("log")
        ax.set_ylim(1e-2, 1.5)
        ax.set_ylabel(r"$\|\partial L / \partial W_2\|$（对数坐标）")
        ax.set_title(f"L = {n_layers} 块、{init.label} 初始化：每块 FFN 的梯度")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        show_with_alt(fig, f"对数坐标折线图：{n_layers} 块的模型（{init.label} 初始化）在初始化时"
                           f"每一块 W2 的梯度范数，3 个种子的均值与范围。")

    out = widgets.interactive_output(
        update, {"n_layers": depth, "positions": arrangement, "init_name": init})
    return widgets.VBox([depth, arrangement, init, out])
