"""Chapter 5: one attention head on 猫吃鱼, step by step; several heads, each on its own
columns of Q, K and V."""

from __future__ import annotations

import math

from onelayer.attention import causal_mask
from onelayer.book.diagrams.canvas import MUTED, SMALL, Diagram, drawing
from onelayer.data import TOKENS, sentence_x

HEAD_COLOURS = ("#6d5ba8", "#c0612b")


def _matrix(d: Diagram, x: float, top: float, rows: list[list[float]], head: str,
            cell: float = 0.3, digits: int = 2, tokens: bool = True) -> float:
    """A small matrix as rows of cells centred on x under its heading, the tokens to the
    left of its rows; returns the y of its bottom edge."""
    d.text(x, top + 0.22, head, size=SMALL)
    for i, values in enumerate(rows):
        y = top - cell * (i + 0.5)
        d.cells(x, y, values, cell=cell, across=cell, digits=digits)
        if tokens:
            d.text(x - cell * len(values) / 2 - 0.06, y, TOKENS[i], size=SMALL, ha="right")
    return top - cell * len(rows)


@drawing
def attention_diagram() -> Diagram:
    """One head on 猫吃鱼 with the chapter's first example (W_Q = W_K = W_V = I, d_k = 4):
    X → Q, K, V → QKᵀ/√d_k → causal mask → softmax → the weights A → A·V, the numbers
    those of the hand calculation."""
    X = sentence_x()
    scores = X @ X.T / math.sqrt(X.shape[1])
    A = scores.masked_fill(~causal_mask(len(X)), float("-inf")).softmax(-1)
    d = Diagram(4.6, 4.05, "一个注意力头")
    left = 0.95
    bottom = _matrix(d, left, 3.75, X.tolist(), "输入 $X$ [3, 4]", cell=0.3, digits=1)
    y_w, y_qkv = bottom - 0.42, bottom - 0.82
    columns = (left - 0.52, left, left + 0.52)
    for name, out, cx in zip(("$W_Q$", "$W_K$", "$W_V$"), ("$Q$", "$K$", "$V$"), columns):
        d.arrow((left, bottom - 0.04), (cx, y_w + 0.15))
        d.box(cx, y_w, 0.42, 0.3, name, kind="weight", size=SMALL)
        d.arrow((cx, y_w - 0.15), (cx, y_qkv + 0.1))
        d.text(cx, y_qkv, out, size=SMALL)
    chain = (("分数 $QK^\\top/\\sqrt{d_k}$", "attention"), ("加因果掩码 $M$", "attention"),
             ("softmax（每行）", "activation"))
    ys = [y_qkv - 0.5 - 0.45 * i for i in range(len(chain))]
    for cx in columns[:2]:
        d.arrow((cx, y_qkv - 0.1), (left - 0.26 + (cx - left) * 0.3, ys[0] + 0.16))
    for y, (label, kind) in zip(ys, chain):
        d.box(left - 0.26, y, 1.3, 0.32, label, kind=kind, size=SMALL)
    for above, below in zip(ys, ys[1:]):
        d.arrow((left - 0.26, above - 0.16), (left - 0.26, below + 0.16))
    cell = 0.32
    a_x, a_top = 2.2, ys[-1] + 1.5 * cell
    _matrix(d, a_x, a_top, A.tolist(), "权重 $A$ [3, 3]", cell=cell)
    d.arrow((left + 0.4, ys[-1]), (a_x - 1.5 * cell - 0.22, ys[-1]))
    times, out_x = 2.98, 3.93
    d.box(times, ys[-1], 0.36, 0.3, "$\\cdot\\,V$", kind="attention", size=SMALL)
    d.arrow((a_x + 1.5 * cell + 0.02, ys[-1]), (times - 0.18, ys[-1]))
    d.line([(columns[2] + 0.12, y_qkv), (times, y_qkv)], color=MUTED)
    d.arrow((times, y_qkv), (times, ys[-1] + 0.15), color=MUTED)
    d.arrow((times + 0.18, ys[-1]), (out_x - 0.68, ys[-1]))
    _matrix(d, out_x, ys[-1] + 1.5 * 0.33, (A @ X).tolist(), "输出 $AV$ [3, 4]", cell=0.33,
            tokens=False)
    d.text(2.2, 3.8, "本例 $W_Q = W_K = W_V = I$，$d_k = 4$\n"
           "$A$ 的第 $i$ 行：词元 $i$ 分给各词元的\n权重，和为 1；右上三角被掩码，权重为 0",
           size=SMALL, color=MUTED, ha="left", va="top")
    return d


@drawing
def head_split_diagram() -> Diagram:
    """Two heads on d = 4: W_Q, W_K and W_V each give 4 columns, cut into 2 groups of
    d_k = 2; head i (counted from 0, as in the code) attends with its own group of Q, K and
    V; the heads' outputs are concatenated back to 4 columns and multiplied by W_O."""
    d_model, d_k = 4, 2
    d = Diagram(4.6, 4.3, "多头注意力的切段")
    centre = 2.3
    d.box(centre, 4.05, 1.3, 0.3, f"输入 $X$ [3, {d_model}]", kind="stream", size=SMALL)
    columns = (0.85, 2.3, 3.75)
    heads = (1.15, 3.45)
    y_w, y_parts, y_heads = 3.45, 2.8, 1.8
    for cx, name in zip(columns, "QKV"):
        d.arrow((centre + (cx - centre) * 0.25, 3.9), (cx, y_w + 0.16))
        d.box(cx, y_w, 0.95, 0.3, f"$W_{name}$ [{d_model}, {d_model}]", kind="weight",
              size=SMALL)
        d.arrow((cx, y_w - 0.15), (cx, y_parts + 0.16))
        for i, (offset, colour) in enumerate(zip((-0.29, 0.29), HEAD_COLOURS)):
            d.box(cx + offset, y_parts, 0.56, 0.3, f"${name}^{{({i})}}$", kind="attention",
                  size=SMALL)
            d.line([(cx + offset, y_parts - 0.15),
                    (heads[i] + (cx - centre) * 0.4, y_heads + 0.36)], color=colour)
    for n, (hx, colour) in enumerate(zip(heads, HEAD_COLOURS)):
        d.box(hx, y_heads, 1.95, 0.72, kind="attention", filled=False)
        d.text(hx, y_heads + 0.2, f"头 {n}", size=SMALL, color=colour)
        d.text(hx, y_heads - 0.01, f"$A^{{({n})}} = $ softmax$(Q^{{({n})}}K^{{({n})\\top}}"
               f"/\\sqrt{{{d_k}}} + M)$", size=SMALL)
        d.text(hx, y_heads - 0.22, f"$A^{{({n})}}V^{{({n})}}$：[3, {d_k}]", size=SMALL)
        d.arrow((hx, y_heads - 0.36), (centre + (hx - centre) * 0.3, 1.08))
    d.box(centre, 0.92, 2.3, 0.3, f"拼接：[3, {d_k}] 与 [3, {d_k}] → [3, {d_model}]",
          kind="stream", size=SMALL)
    d.arrow((centre, 0.77), (centre, 0.6))
    d.box(centre, 0.45, 1.1, 0.3, f"$W_O$ [{d_model}, {d_model}]", kind="weight", size=SMALL)
    d.arrow((centre, 0.3), (centre, 0.13))
    d.text(centre, 0.02, f"输出 [3, {d_model}]", size=SMALL)
    d.text(0.02, 4.22, f"每个头只用 Q、K、V\n各自的 $d_k = d/h = {d_k}$ 列", size=SMALL,
           color=MUTED, ha="left", va="top")
    return d
