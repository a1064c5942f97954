"""Chapters 1 and 2: the FFN widens and narrows; each position goes through it alone; the
gated FFN beside the plain one."""

from __future__ import annotations

import torch

from onelayer.book.diagrams.canvas import INK, MUTED, SMALL, Diagram, drawing
from onelayer.data import TOKENS, sentence_ffn, sentence_x
from onelayer.ffn import FeedForward, trace_ffn

KEY_COLOUR = "#3b6aa8"
VALUE_COLOUR = "#c0612b"


def _column(d: Diagram, x: float, top: float, values: list[float], head: str,
            width: float = 0.46, height: float = 0.21) -> list[tuple[float, float]]:
    """A tensor as a column of cells under its heading; returns the cells' centres."""
    d.text(x, top + 0.32, head, size=SMALL)
    centre = top - len(values) * height / 2
    return [(x, y) for _, y in d.cells(x, centre, values, cell=height, across=width,
                                       digits=2, vertical=True)]


def _vector(values: list[float]) -> str:
    """Four numbers as the diagram's cells print them (two decimals, a true minus sign), on
    two lines so that they fit under a column."""
    shown = [f"{v:.2f}".replace("-", "−") for v in values]
    return f"[{shown[0]}, {shown[1]},\n{shown[2]}, {shown[3]}]"


@drawing
def ffn_diagram(token: str = "鱼", detector: int = 3) -> Diagram:
    """x_token (4 numbers) → 16 detectors (h = x·W1 + b1, each a column of W1: a key) →
    GELU → W2 (each row a value) → the output (4 numbers), with the chapter's own FFN; one
    detector's key and value drawn as lines."""
    ffn, x = sentence_ffn(), sentence_x()[TOKENS.index(token)]
    trace = trace_ffn(ffn, x)
    d = Diagram(4.6, 4.75, f"FFN 的升维与降维（{token}）")
    top = 4.1
    xs = (0.4, 1.72, 2.88, 4.2)
    ins = _column(d, xs[0], top - 1.26, x.tolist(), f"$x$（{token}）\n[4]")
    pre = _column(d, xs[1], top, trace.pre.tolist(), "$h = xW_1 + b_1$\n[16] 预激活值")
    post = _column(d, xs[2], top, trace.post.tolist(), "GELU($h$)\n[16]")
    out = _column(d, xs[3], top - 1.26, trace.out.tolist(), "FFN($x$)\n[4]")
    i = detector - 1
    for cx, cy in ins:  # detector i reads every dimension of x through its key
        d.line([(cx + 0.23, cy), (pre[i][0] - 0.23, pre[i][1])], color=KEY_COLOUR, width=0.9)
    for cx, cy in out:  # and writes GELU(h_i) times its value into every output dimension
        d.line([(post[i][0] + 0.23, post[i][1]), (cx - 0.23, cy)], color=VALUE_COLOUR,
               width=0.9)
    d.arrow((pre[i][0] + 0.26, pre[i][1]), (post[i][0] - 0.26, post[i][1]))
    for centres in (pre, post):
        cx, cy = centres[i]
        d.box(cx, cy, 0.54, 0.25, kind="stream", filled=False)
    key, value = ffn.w1.weight[i].tolist(), ffn.w2.weight[:, i].tolist()
    d.text(xs[0], ins[-1][1] - 0.62, f"键 $k_{detector}$\n$W_1$ 的第 {detector} 列\n"
           + _vector(key), size=SMALL, color=KEY_COLOUR)
    d.text(xs[3], out[-1][1] - 0.62, f"值 $v_{detector}$\n$W_2$ 的第 {detector} 行\n"
           + _vector(value), size=SMALL, color=VALUE_COLOUR)
    d.text(2.3, 0.25, "$W_1$ [4, 16] 升维：16 个探测器各算一个预激活值\n"
           "$W_2$ [16, 4] 降维：输出 = Σ GELU($h_i$)·$v_i$ + $b_2$", size=SMALL, color=MUTED)
    return d


@drawing
def position_wise_diagram() -> Diagram:
    """猫/吃/鱼 each through the same FFN, with no line between positions."""
    ffn, X = sentence_ffn(), sentence_x()
    with torch.no_grad():
        Y = ffn(X)
    d = Diagram(4.6, 2.7, "逐位置：每个词元各自过同一个 FFN")
    xs = (0.75, 2.3, 3.85)
    for x, token, row, y_row in zip(xs, TOKENS, X.tolist(), Y.tolist()):
        d.text(x, 2.5, token)
        d.cells(x, 2.15, row, cell=0.34)
        d.arrow((x, 1.94), (x, 1.62))
        d.box(x, 1.4, 1.2, 0.4, "FFN", kind="weight")
        d.arrow((x, 1.18), (x, 0.86))
        d.cells(x, 0.65, y_row, cell=0.34)
    d.box(2.3, 1.4, 4.5, 0.62, kind="note", dashed=True, filled=False)
    d.text(2.3, 0.2, "三个 FFN 是同一组 $W_1, b_1, W_2, b_2$；位置之间没有连线", size=SMALL,
           color=MUTED)
    return d


def _count(gated: bool, d_model: int, d_ff: int) -> int:
    ffn = FeedForward(d_model, d_ff, activation="silu" if gated else "gelu", gated=gated,
                      bias=False)
    return sum(p.numel() for p in ffn.parameters())


@drawing
def gated_ffn_diagram(d_model: int = 512, d_ff: int = 2048) -> Diagram:
    """The plain FFN (W1 → activation → W2) beside the gated one (gate_proj and up_proj →
    ⊙ → down_proj), each with its parameter count (no biases) under it."""
    plain, gated = _count(False, d_model, d_ff), _count(True, d_model, d_ff)
    d = Diagram(4.6, 3.9, "普通 FFN 与门控 FFN")
    left, right = 1.0, 3.4
    shape_up, shape_down = f"[{d_model}, {d_ff}]", f"[{d_ff}, {d_model}]"
    d.text(left, 3.7, "普通 FFN")
    d.text(right, 3.7, "门控 FFN（SwiGLU）")
    # Plain: x → W1 → GELU → W2 → y
    d.box(left, 3.3, 0.9, 0.3, "$x$", kind="stream")
    d.arrow((left, 3.15), (left, 2.95))
    d.box(left, 2.75, 1.8, 0.38, f"$W_1$ {shape_up}", kind="weight", size=SMALL)
    d.arrow((left, 2.56), (left, 2.32))
    d.box(left, 2.12, 1.1, 0.36, "GELU", kind="activation", size=SMALL)
    d.arrow((left, 1.94), (left, 1.34))
    d.box(left, 1.14, 1.8, 0.38, f"$W_2$ {shape_down}", kind="weight", size=SMALL)
    d.arrow((left, 0.95), (left, 0.75))
    d.box(left, 0.58, 0.9, 0.3, "$y$", kind="stream")
    # Gated: x → gate_proj → SiLU ┐
    #        x → up_proj ────────┴→ ⊙ → down_proj → y
    gate, up = right - 0.6, right + 0.6
    d.box(right, 3.3, 0.9, 0.3, "$x$", kind="stream")
    d.arrow((right - 0.2, 3.15), (gate, 2.95))
    d.arrow((right + 0.2, 3.15), (up, 2.95))
    for centre, name in ((gate, "gate_proj（$W_1$）"), (up, "up_proj（$W_3$）")):
        d.box(centre, 2.75, 1.1, 0.38, f"{name}\n{shape_up}", kind="weight", size=SMALL)
    d.arrow((gate, 2.56), (gate, 2.32))
    d.box(gate, 2.12, 0.8, 0.36, "SiLU", kind="activation", size=SMALL)
    d.op(right, 1.66, "*")
    d.arrow((gate, 1.94), (right - 0.12, 1.72))
    d.arrow((up, 2.56), (right + 0.12, 1.72))
    d.arrow((right, 1.52), (right, 1.34))
    d.box(right, 1.14, 1.8, 0.38, f"down_proj（$W_2$）{shape_down}", kind="weight", size=SMALL)
    d.arrow((right, 0.95), (right, 0.75))
    d.box(right, 0.58, 0.9, 0.3, "$y$", kind="stream")
    d.text(left, 0.17, f"2·{d_model}·{d_ff} = {plain:,} 个参数", size=SMALL, color=INK)
    d.text(right, 0.17, f"3·{d_model}·{d_ff} = {gated:,} 个（+{gated / plain - 1:.0%}）",
           size=SMALL, color=INK)
    return d


@drawing
def teacher_student_diagram(teacher_width: int = 32, widths: tuple[int, ...] = (4, 16, 32),
                            budget: int = 600, longer: int = 3000) -> Diagram:
    """Chapter 1's width experiment: a random teacher FFN turns 256 inputs into targets;
    students of several widths learn the same map, judged by their mean squared error after
    ``budget`` and after ``longer`` steps."""
    d = Diagram(4.6, 3.3, "老师与学生：同一个映射，不同的宽度")
    d.box(0.5, 1.75, 0.8, 0.55, "输入 $x$\n[256, 4]", kind="stream", size=SMALL)
    d.box(2.15, 2.75, 1.75, 0.55, f"老师 FFN\n$d_{{ff}}$ = {teacher_width}，随机权重",
          kind="weight", size=SMALL)
    d.box(3.95, 2.75, 0.9, 0.55, "目标 $y$\n（标准化）", kind="stream", size=SMALL)
    d.arrow((0.9, 1.95), (1.27, 2.6))
    d.arrow((3.03, 2.75), (3.5, 2.75))
    for k, width in enumerate(widths):
        y = 1.45 - 0.48 * k
        d.box(2.15, y, 1.75, 0.38, f"学生 $d_{{ff}}$ = {width}", kind="weight", size=SMALL,
              dashed=width < teacher_width)
        d.arrow((0.9, 1.6), (1.27, y))
        d.arrow((3.03, y), (3.5, y))
        d.box(3.95, y, 0.9, 0.38, "预测 $\\hat y$", kind="stream", size=SMALL)
    d.arrow((3.95, 1.7), (3.95, 2.47), label="均方误差", label_at=(4.05, 2.08), size=SMALL)
    d.text(2.3, 0.1, f"虚线：比老师窄，表示不了老师；Adam，全批量，{budget} 步与 {longer} 步",
           size=SMALL, color=MUTED)
    return d
