"""Chapter 9's smaller pictures: a query and a key turned by RoPE keeping their angle when
both positions shift, where QK-norm sits in an attention head (Qwen3's order), and the causal
mask beside a sliding window."""

from __future__ import annotations

import math

from matplotlib.patches import Arc, Rectangle

from onelayer.book.diagrams.canvas import KINDS, MUTED, SMALL, Diagram, drawing

Q_COLOUR, K_COLOUR = "#6d5ba8", "#c0612b"


def _plane(d: Diagram, cx: float, cy: float, radius: float, q_angle: float, k_angle: float,
           m: int, n: int) -> None:
    """One pair of dimensions as a plane: the query turned to ``q_angle``, the key to
    ``k_angle``, and the arc of the angle between them."""
    d.ax.add_patch(Arc((cx, cy), 2 * radius, 2 * radius, color=KINDS["note"][0],
                       linewidth=0.8))
    d.line([(cx - radius, cy), (cx + radius, cy)], color=KINDS["note"][0], width=0.5)
    d.line([(cx, cy - radius), (cx, cy + radius)], color=KINDS["note"][0], width=0.5)
    for angle, colour, name in ((q_angle, Q_COLOUR, f"$q$（位置 {m}）"),
                                (k_angle, K_COLOUR, f"$k$（位置 {n}）")):
        tip = (cx + radius * math.cos(angle), cy + radius * math.sin(angle))
        d.arrow((cx, cy), tip, color=colour)
        d.text(cx + (radius + 0.16) * math.cos(angle), cy + (radius + 0.12) * math.sin(angle),
               name, size=SMALL, color=colour)
    low, high = sorted((k_angle, q_angle))
    d.ax.add_patch(Arc((cx, cy), 0.5 * radius, 0.5 * radius, theta1=math.degrees(low),
                       theta2=math.degrees(high), color="#222222", linewidth=1.0))


@drawing
def rope_shift_diagram(omega: float = 0.35, m: int = 3, n: int = 1, shift: int = 3,
                       q_start: float = 0.2, k_start: float = 0.0) -> Diagram:
    """One pair of dimensions: the query at position m is turned by m·ω, the key at n by
    n·ω. Shift both positions by the same amount: both arrows turn further by shift·ω, the
    angle between them, (m − n)·ω plus their angle before turning, stays the same — and so
    does their dot product."""
    d = Diagram(4.6, 2.25, "两个位置一起平移，夹角不变")
    radius = 0.62
    centres = (1.15, 3.45)
    for cx, offset in zip(centres, (0, shift)):
        _plane(d, cx, 1.2, radius, q_start + (m + offset) * omega,
               k_start + (n + offset) * omega, m + offset, n + offset)
    d.text(centres[0], 2.12, f"查询在位置 {m}，键在位置 {n}", size=SMALL)
    d.text(centres[1], 2.12, f"两者都往后挪 {shift} 个位置", size=SMALL)
    d.arrow((1.95, 1.2), (2.65, 1.2), label=f"各多转 {shift}ω", label_at=(2.3, 1.02),
            ha="center")
    d.text(2.3, 0.22, "两支箭头多转了同一个角：夹角（图中小弧）不变，点积 $q\\cdot k$ 就不变；"
           "\n夹角只取决于距离 $m-n$", size=SMALL, color=MUTED)
    return d


@drawing
def qk_norm_diagram() -> Diagram:
    """One attention head with QK-norm in Qwen3's order: q and k are each RMS-normalised over
    the head's d_head dimensions (one γ shared by the heads), then turned by RoPE, then
    multiplied; v is neither normalised nor turned."""
    d = Diagram(4.6, 2.35, "QK 归一化在一个头里的位置")
    rows = (("$q = xW_Q$", 1.85), ("$k = xW_K$", 1.25), ("$v = xW_V$", 0.55))
    for label, y in rows:
        d.box(0.5, y, 0.78, 0.3, label, kind="weight", size=SMALL)
    for _, y in rows[:2]:
        d.arrow((0.9, y), (1.15, y))
        d.box(1.72, y, 1.1, 0.3, "RMSNorm（$\\gamma$）", kind="norm", size=SMALL)
        d.arrow((2.28, y), (2.5, y))
        d.box(2.85, y, 0.66, 0.3, "RoPE", kind="note", size=SMALL)
    d.arrow((3.19, 1.85), (3.62, 1.6))
    d.arrow((3.19, 1.25), (3.62, 1.45))
    d.box(4.05, 1.53, 0.8, 0.36, "$\\hat q\\cdot\\hat k/\\sqrt{d}$", kind="attention",
          size=SMALL)
    d.arrow((0.9, 0.55), (3.62, 0.55), label="不归一化、不转", label_at=(2.3, 0.7),
            ha="center")
    d.box(4.05, 0.55, 0.8, 0.3, "softmax · $v$", kind="attention", size=SMALL)
    d.arrow((4.05, 1.34), (4.05, 0.72))
    d.text(1.72, 2.22, "每个头的 $d_\\mathrm{head}$ 维一起归一化", size=SMALL, color=MUTED)
    d.text(2.3, 0.12, "归一化之后 $\\|\\hat q\\| = \\|\\hat k\\| = \\sqrt{d}$（$\\gamma = 1$ 时）："
           "$W_Q$、$W_K$ 再大，分数也有上界", size=SMALL, color=MUTED)
    return d


def _mask(d: Diagram, x: float, top: float, size: int, window: int | None, cell: float,
          head: str) -> None:
    """A [size, size] mask centred on x: query rows, key columns; seen cells filled."""
    d.text(x, top + 0.2, head, size=SMALL)
    for i in range(size):
        for j in range(size):
            seen = j <= i and (window is None or i - j < window)
            left = x + (j - size / 2) * cell
            d.ax.add_patch(Rectangle((left, top - (i + 1) * cell), cell, cell,
                                     facecolor=KINDS["attention"][0] if seen else "#eeeeee",
                                     edgecolor="white", linewidth=0.8))


@drawing
def sliding_window_diagram(size: int = 8, window: int = 3) -> Diagram:
    """The causal mask (each query sees every earlier position) beside a sliding window of
    ``window`` positions (each query sees itself and the window − 1 positions before it):
    rows are queries, columns keys, filled cells are seen."""
    if not 1 <= window < size:
        raise ValueError(f"window 应在 1 到 size − 1 之间，实际为 {window}（size = {size}）")
    d = Diagram(4.6, 2.4, "因果掩码与滑动窗口")
    cell = 0.2
    top = 1.95
    _mask(d, 1.2, top, size, None, cell, "因果：看见全部前文")
    _mask(d, 3.4, top, size, window, cell, f"滑动窗口：只看最近 {window} 个位置")
    d.text(2.3, top - size * cell / 2, "→", size=12)
    d.text(0.1, top - cell / 2, "查询", size=SMALL, color=MUTED, ha="left")
    d.text(2.3, 0.1, f"每层的 KV 缓存最多存 {window} 个位置；更远的信息要靠一层层往上传",
           size=SMALL, color=MUTED)
    return d
