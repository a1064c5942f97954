"""Chapter 5: one attention head on 猫吃鱼, step by step; several heads, each on its own
columns of Q, K and V."""

from __future__ import annotations

import math

from matplotlib.patches import FancyBboxPatch, Rectangle

from onelayer.attention import causal_mask
from onelayer.book.diagrams.canvas import KINDS, MUTED, SMALL, Diagram, drawing
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
        d.ax.add_patch(FancyBboxPatch((hx - 0.975, y_heads - 0.36), 1.95, 0.72,  # 框与标题同色
                                      boxstyle="round,pad=0,rounding_size=0.06",
                                      facecolor="none", edgecolor=colour, linewidth=1.1))
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


def _grid(d: Diagram, x: float, top: float, rows: list[list[float]], head: str,
          cell: float = 0.32, weights: bool = False, digits: int = 2) -> None:
    """A [T, T] matrix of scores or weights centred on x: −∞ in grey; query tokens on the
    left, key tokens on top."""
    n = len(rows)
    d.text(x, top + 0.42, head, size=SMALL)
    for j in range(n):
        d.text(x + (j - (n - 1) / 2) * cell, top + 0.14, TOKENS[j], size=SMALL, color=MUTED)
    for i, values in enumerate(rows):
        y = top - cell * (i + 0.5)
        for j, v in enumerate(values):
            cx = x + (j - (n - 1) / 2) * cell
            if math.isfinite(v):
                d.cells(cx, y, [v], cell=cell, digits=digits, limit=1.0 if weights else 2.5,
                        size=SMALL - (digits > 2))
            else:
                d.ax.add_patch(Rectangle((cx - cell / 2, y - cell / 2), cell, cell,
                                         facecolor="#d9d9d9", edgecolor="white", linewidth=0.8))
                d.text(cx, y, "−∞", size=SMALL, color=MUTED)
        d.text(x - cell * n / 2 - 0.06, y, TOKENS[i], size=SMALL, ha="right")


@drawing
def causal_mask_diagram() -> Diagram:
    """The causal mask on 猫吃鱼 with the first example (W_Q = W_K = I): the scores QKᵀ/√d_k,
    the same with −∞ above the diagonal (a token does not see the tokens after it), and the
    softmax of each row: zeros above the diagonal, each row summing to 1."""
    X = sentence_x()
    scores = X @ X.T / math.sqrt(X.shape[1])
    masked = scores.masked_fill(~causal_mask(len(X)), float("-inf"))
    A = masked.softmax(-1)
    d = Diagram(4.6, 2.05, "因果掩码")
    xs, top = (0.82, 2.38, 3.94), 1.5
    _grid(d, xs[0], top, scores.tolist(), "分数 $QK^\\top/\\sqrt{d_k}$", digits=3)
    _grid(d, xs[1], top, masked.tolist(), "$+M$：右上三角 $-\\infty$", digits=3)
    _grid(d, xs[2], top, A.tolist(), "softmax（每行）", weights=True)
    y_mid = top - 1.5 * 0.32
    for a, b in zip(xs, xs[1:]):
        d.arrow((a + 0.52, y_mid), (b - 0.74, y_mid))
    d.text(2.3, 0.2, "词元只看自己和前面的词元：看不见的位置权重为 0，每行仍加起来为 1",
           size=SMALL, color=MUTED)
    return d


@drawing
def kv_cache_diagram(steps: int = 4) -> Diagram:
    """Generation with a KV cache, one row per step t = 1 … steps: the keys and values of the
    earlier positions come from the cache (grey), only the new position's query, key and value
    are computed (purple); the new query meets all t keys. Without the cache, step t computes
    all t positions again."""
    if not 1 <= steps <= 6:
        raise ValueError(f"steps 应在 1 到 6 之间，实际为 {steps}")
    edge, fill = KINDS["attention"]
    grey_edge, grey = KINDS["stream"]
    cell, left, pitch = 0.34, 0.95, 0.46
    d = Diagram(4.6, 0.75 + pitch * steps, "KV 缓存")
    top = 0.35 + pitch * steps
    d.text(left + cell * (steps - 1) / 2, top + 0.05, "键和值 $k_j, v_j$", size=SMALL)
    d.text(3.05, top + 0.05, "新查询", size=SMALL)
    d.text(4.05, top + 0.05, "这一步要算的位置\n用缓存 / 不用", size=SMALL)
    for t in range(1, steps + 1):
        y = top - 0.3 - pitch * (t - 1)
        d.text(0.05, y, f"第 {t} 步", size=SMALL, ha="left")
        for j in range(t):
            new = j == t - 1
            x = left + j * cell
            d.ax.add_patch(Rectangle((x - cell / 2, y - cell / 2), cell, cell,
                                     facecolor=fill if new else grey,
                                     edgecolor=edge if new else grey_edge, linewidth=0.9))
            d.text(x, y, f"$k_{j + 1}v_{j + 1}$", size=SMALL - 1)
        q_x = 3.05
        d.box(q_x, y, 0.36, cell, f"$q_{t}$", kind="attention", size=SMALL)
        end = left + (t - 1) * cell + cell / 2 + 0.05
        d.arrow((q_x - 0.2, y), (end, y), color=edge, label=f"与 {t} 个键点积",
                label_at=((q_x - 0.2 + end) / 2, y + 0.1), ha="center", size=SMALL - 1)
        d.text(4.05, y, f"1 / {t}", size=SMALL)
    d.text(2.3, 0.12, "灰：缓存里已有的键和值（前面的位置不会再变）；紫：这一步新算的",
           size=SMALL, color=MUTED)
    return d


@drawing
def permutation_diagram() -> Diagram:
    """Attention without a mask and without positions is permutation-equivariant: 猫吃鱼 and
    鱼吃猫 give the same three output rows, in the order of their inputs. Adding a position
    vector P_t to the input at position t breaks it: 猫 at position 0 and 猫 at position 2 are
    different inputs."""
    d = Diagram(4.6, 2.75, "注意力与顺序")
    colours = {"猫": "#dce7f6", "吃": "#fbe4d5", "鱼": "#dcf0e1"}
    cell, xs = 0.36, (0.35, 0.75, 1.15)
    outs = (3.05, 3.45, 3.85)

    def sentence(y: float, order: str, label: str, positions: bool = False) -> None:
        d.text(0.02, y + 0.33, label, size=SMALL, ha="left", color=MUTED)
        for x, token, t in zip(xs, order, range(3)):
            d.ax.add_patch(Rectangle((x - cell / 2, y - cell / 2), cell, cell,
                                     facecolor=colours[token], edgecolor=MUTED, linewidth=0.8))
            d.text(x, y, f"{token}\n+P{t}" if positions else token,
                   size=SMALL - 2 * positions)
        d.arrow((1.42, y), (1.72, y))
        d.box(2.26, y, 0.95, 0.34, "注意力", kind="attention", size=SMALL)
        d.arrow((2.78, y), (2.82, y))
        for x, token in zip(outs, order):
            d.ax.add_patch(Rectangle((x - cell / 2, y - cell / 2), cell, cell,
                                     facecolor=colours[token], edgecolor=MUTED, linewidth=0.8,
                                     hatch="//" if positions else None))
            d.text(x, y, "?" if positions else f"{token}′", size=SMALL)

    sentence(2.15, "猫吃鱼", "不加掩码、不加位置：")
    sentence(1.45, "鱼吃猫", "")
    for a, b in ((0, 2), (2, 0)):
        d.line([(outs[a], 2.15 - cell / 2), (outs[b], 1.45 + cell / 2)], color=MUTED, dashed=True)
    d.text(4.12, 1.8, "同样的三行\n换了顺序", size=SMALL - 1, color=MUTED, ha="left")
    sentence(0.55, "猫吃鱼", "每个位置加一个位置向量 $P_t$：", positions=True)
    d.text(2.3, 0.1, "“猫”在位置 0 与在位置 2 是不同的输入，输出不再只是换个顺序",
           size=SMALL, color=MUTED)
    return d
