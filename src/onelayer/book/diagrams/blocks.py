"""Chapters 6 and 8: where the LayerNorm sits in a residual sublayer — Post-Norm and
Pre-Norm blocks side by side, and the four placements of chapter 8."""

from __future__ import annotations

from collections.abc import Sequence

from onelayer.book.diagrams.canvas import MUTED, SMALL, Diagram, drawing

STREAM = "#6b6b6b"
LN = ("LayerNorm", "norm")
LN_1, LN_2 = ("$\\mathrm{LN}_1$（LayerNorm）", "norm"), ("$\\mathrm{LN}_2$（LayerNorm）", "norm")
DROPOUT = ("暂退 Drop", "note")
ATTENTION = ("多头自注意力", "attention")
FFN = ("FFN", "weight")


def _boxes(d: Diagram, x: float, y: float, boxes: Sequence[tuple[str, str]], w: float,
           step: float, h: float) -> float:
    """Boxes one under another from y down, an arrow into each; returns the last bottom."""
    for label, kind in boxes:
        d.arrow((x, y), (x, y - step + h))
        centre = y - step + h / 2
        d.box(x, centre, w, h, label, kind=kind, size=SMALL)
        y = centre - h / 2
    return y


def sublayer(d: Diagram, x: float, top: float, branch: Sequence[tuple[str, str]],
             after: Sequence[tuple[str, str]] = (), shortcut: str = "", w: float = 1.0,
             offset: float = 0.66, step: float = 0.36, h: float = 0.24) -> float:
    """One residual sublayer drawn downwards from the stream's point (x, top): the branch's
    boxes, ⊕ with the shortcut from (x, top) (labelled, e.g. ×α), then the boxes after the
    sum; returns the y where the stream leaves it."""
    y = _boxes(d, x, top, branch, w, step, h)
    radius = 0.13
    y_add = y - step + h - radius
    d.arrow((x, y), (x, y_add + radius))
    d.op(x, y_add, "+", radius=radius)
    d.line([(x, top), (x + offset, top), (x + offset, y_add)], color=STREAM)
    d.arrow((x + offset, y_add), (x + radius, y_add), color=STREAM)
    if shortcut:
        d.text(x + offset + 0.05, (top + y_add) / 2, shortcut, size=SMALL, color=MUTED,
               ha="left")
    return _boxes(d, x, y_add - radius, after, w, step, h)


POST_BLOCK = (([ATTENTION, DROPOUT], (LN_1,)), ([FFN, DROPOUT], (LN_2,)))
PRE_BLOCK = (([LN_1, ATTENTION, DROPOUT], ()), ([LN_2, FFN, DROPOUT], ()))


@drawing
def block_norms_diagram() -> Diagram:
    """A Post-Norm block, LN(x + Drop(Sublayer(x))), beside a Pre-Norm block,
    x + Drop(Sublayer(LN(x))), with chapter 6's names (h after the attention sublayer, y
    after the FFN's), each sublayer's output dropped out before ⊕; a
    Pre-Norm stack ends with one more LayerNorm (ln_f), a Post-Norm one needs none."""
    d = Diagram(4.6, 4.75, "后置归一化与前置归一化的块")
    top = 4.1
    for x, title, block, formula in (
            (0.95, "后置归一化（Post-Norm）", POST_BLOCK,
             "$\\mathrm{LN}(x + \\mathrm{Drop}(F(x)))$"),
            (3.2, "前置归一化（Pre-Norm）", PRE_BLOCK,
             "$x + \\mathrm{Drop}(F(\\mathrm{LN}(x)))$")):
        d.text(x + 0.2, top + 0.55, title)
        d.box(x, top + 0.26, 0.5, 0.24, "$x$", kind="stream", size=SMALL)
        y = top - 0.04
        d.line([(x, top + 0.14), (x, y)])
        for (branch, after), name in zip(block, ("$h$", "$y$")):
            y = sublayer(d, x, y, branch, after, w=1.1)
            d.text(x - 0.6, y - 0.06, name, size=SMALL, ha="right")
        d.line([(x, y), (x, y - 0.2)])
        d.box(x + 0.25, (top + y) / 2 - 0.08, 1.75, top - y + 0.26, kind="note", dashed=True,
              filled=False)
        d.text(x + 1.1, top - 0.15, "×N", size=SMALL, color=MUTED, ha="right")
        d.text(x + 0.25, y - 0.38, formula, size=SMALL, color=MUTED)
    bottom = y - 0.54
    d.arrow((0.95, bottom), (0.95, bottom - 0.2))
    d.text(0.95, bottom - 0.45, "最后一步已是 LN，\n不需要 ln_f", size=SMALL, color=MUTED)
    d.arrow((3.2, bottom), (3.2, bottom - 0.2))
    d.box(3.2, bottom - 0.32, 1.3, 0.24, "ln_f（LayerNorm）", kind="norm", size=SMALL)
    d.text(3.2, bottom - 0.6, "残差流此前从没被归一化", size=SMALL, color=MUTED)
    return d


F = ("$f$", "weight")
SMALL_LN = ("LN", "norm")
PLACEMENTS = (
    ("Post-LN", [F], (SMALL_LN,), "", "$\\mathrm{LN}(x + f(x))$"),
    ("Pre-LN", [SMALL_LN, F], (), "", "$x + f(\\mathrm{LN}(x))$"),
    ("DeepNorm", [F], (SMALL_LN,), "×α", "$\\mathrm{LN}(\\alpha x + f(x))$"),
    ("Sandwich-LN", [SMALL_LN, F, SMALL_LN], (), "", "$x + \\mathrm{LN}(f(\\mathrm{LN}(x)))$"),
)


@drawing
def norm_placements_diagram() -> Diagram:
    """One residual sublayer f (attention or FFN) with its LayerNorm in four places:
    Post-LN, Pre-LN, DeepNorm (the shortcut scaled by α > 1 before the sum) and
    Sandwich-LN (a second LayerNorm on the branch's output)."""
    d = Diagram(4.6, 2.75, "LayerNorm 的四种摆法")
    for i, (title, branch, after, shortcut, formula) in enumerate(PLACEMENTS):
        x = 0.45 + 1.17 * i
        d.text(x + 0.15, 2.6, title, size=SMALL)
        d.box(x, 2.32, 0.4, 0.24, "$x$", kind="stream", size=SMALL)
        y = sublayer(d, x, 2.2, branch, after, shortcut=shortcut, w=0.56, offset=0.42)
        d.arrow((x, y), (x, 0.52))
        d.text(x + 0.15, 0.28, formula, size=SMALL)
    d.text(2.3, 0.04, "$f$：注意力或 FFN；LN：LayerNorm；DeepNorm 的 $\\alpha > 1$", size=SMALL,
           color=MUTED)
    return d


SEED_FIGURE = ((([("多头注意力", "attention"), ("Dropout", "note")], [("LayerNorm", "norm")]),
                ([("FFN", "weight"), ("Dropout", "note")], [("LayerNorm", "norm")])))
SEED_CODE = (([("norm1（调用 3 次）", "norm"), ("attn", "attention"), ("drop", "note")], ()),
             ([("norm2", "norm"), ("ffn", "weight"), ("drop", "note")], ()))


@drawing
def seed_block_diagram() -> Diagram:
    """The block of source article 000 §5 twice: as its figure draws it (LayerNorm after each
    ⊕, Post-Norm) and as the code under the figure computes it (norm1, norm2 at the entrance
    of each sublayer, Pre-Norm; norm1 called three times, once each for Q, K and V)."""
    d = Diagram(4.6, 4.3, "原教程 000 §5：图与代码")
    top = 3.65
    for x, title, block, formula in (
            (0.95, "§5 的图：后置归一化", SEED_FIGURE, "$\\mathrm{LN}(x + \\mathrm{Drop}(F(x)))$"),
            (3.2, "§5 的代码：前置归一化", SEED_CODE, "$x + \\mathrm{Drop}(F(\\mathrm{LN}(x)))$")):
        d.text(x + 0.2, top + 0.55, title)
        d.box(x, top + 0.26, 0.5, 0.24, "$x$", kind="stream", size=SMALL)
        y = top - 0.04
        d.line([(x, top + 0.14), (x, y)])
        for branch, after in block:
            y = sublayer(d, x, y, branch, after, w=1.1)
        d.arrow((x, y), (x, y - 0.2))
        d.text(x + 0.25, y - 0.38, formula, size=SMALL, color=MUTED)
    return d


@drawing
def block_parameters_diagram(d_model: int = 768) -> Diagram:
    """Where a GPT-2-style block keeps its parameters (d_ff = 4·d_model), to scale: each
    weight matrix drawn as d×d squares (W_QKV 3, W_O 1, W_1 4, W_2 4), each LayerNorm as a
    strip of 2d; the counts for ``d_model`` (GPT-2 small: 768) beside each part."""
    d = d_model
    d_ = Diagram(4.6, 3.35, "一个块的参数在哪里")
    unit, gap = 0.36, 0.06
    rows = (("$\\mathrm{LN}_1$：γ, β", 0, "norm", 2 * d),
            ("$W_{QKV}$ [d, 3d]", 3, "attention", 3 * d * d + 3 * d),
            ("$W_O$ [d, d]", 1, "attention", d * d + d),
            ("$\\mathrm{LN}_2$：γ, β", 0, "norm", 2 * d),
            ("$W_1$ [d, 4d]", 4, "weight", 4 * d * d + 4 * d),
            ("$W_2$ [4d, d]", 4, "weight", 4 * d * d + d))
    y, left = 2.95, 1.3
    centres = []
    for label, squares, kind, count in rows:
        height = unit if squares else 0.07
        y -= height / 2
        d_.text(left - 0.12, y, label, size=SMALL, ha="right")
        if squares:
            for i in range(squares):
                d_.box(left + unit / 2 + i * (unit + 0.03), y, unit, unit, kind=kind)
        else:
            d_.box(left + unit / 2, y, unit, height, kind=kind)
        d_.text(left + 4 * (unit + 0.03) + 0.08, y, f"{count:,}", size=SMALL, color=MUTED,
                ha="left")
        centres.append(y)
        y -= height / 2 + gap + 0.08
    brace_x = 3.55
    for (top, bottom), name, count in (
            ((centres[1], centres[2]), "注意力 ≈ 4d²", 4 * d * d + 4 * d),
            ((centres[4], centres[5]), "FFN ≈ 8d²", 8 * d * d + 5 * d)):
        d_.line([(brace_x, top + unit / 2), (brace_x + 0.06, top + unit / 2),
                 (brace_x + 0.06, bottom - unit / 2), (brace_x, bottom - unit / 2)], color=MUTED)
        d_.text(brace_x + 0.12, (top + bottom) / 2 + 0.09, name, size=SMALL, ha="left")
        d_.text(brace_x + 0.12, (top + bottom) / 2 - 0.1, f"{count:,}", size=SMALL,
                color=MUTED, ha="left")
    d_.text(2.3, 0.12, f"每个方块是 d × d = {d * d:,} 个权重（d = d_model = {d}）；"
            f"合计 12d² + 13d = {12 * d * d + 13 * d:,}", size=SMALL, color=MUTED)
    return d_


@drawing
def attention_flops_diagram(seq_len: int = 6) -> Diagram:
    """The T×T attention score matrix twice: counted whole (this book's convention, the
    masked half included: 2·T·d_model FLOPs per token each for QKᵀ and AV), and only its
    visible half (a kernel that skips the masked half; Kaplan et al.'s Table 1 counts half
    as much too), with where attention then catches up with the FFN."""
    d = Diagram(4.6, 2.75, "注意力分数矩阵：算整个，还是算一半")
    cell = 0.22
    for x0, title, whole, note in (
            (0.35, "本书的计数：整个 T×T", True,
             "遮掉的一半也算\n注意力约在 T ≈ 2·d_model\n追上 FFN"),
            (2.65, "只算看得见的一半", False,
             "跳过遮掉的一半，或按 Kaplan\n等人的约定：约在 T ≈ 4·d_model")):
        d.text(x0 + cell * seq_len / 2, 2.6, title, size=SMALL)
        for i in range(seq_len):                       # 行：查询的位置
            for j in range(seq_len):                   # 列：键的位置
                visible = j <= i
                kind = "attention" if visible else ("note" if whole else "stream")
                cx, cy = x0 + (j + 0.5) * cell, 2.35 - (i + 0.5) * cell
                d.box(cx, cy, cell - 0.02, cell - 0.02, kind=kind, dashed=not visible,
                      filled=visible or whole)
                if not visible and whole:
                    d.text(cx, cy, "×", size=SMALL, color=MUTED)
        d.text(x0 + cell * seq_len / 2, 0.55, note, size=SMALL, color=MUTED)
        d.text(x0 - 0.14, 2.35 - cell * seq_len / 2, "查询", size=SMALL, color=MUTED,
               rotation=90)
        d.text(x0 + cell * seq_len / 2, 2.35 - cell * seq_len - 0.12, "键", size=SMALL,
               color=MUTED)
    d.text(2.3, 0.12, "$QK^\\top$ 和 $AV$ 各是一次这样的矩阵乘法；× 是因果掩码遮掉的分数",
           size=SMALL, color=MUTED)
    return d


@drawing
def stack_dropout_diagram() -> Diagram:
    """A Pre-Norm model: embeddings, dropout ①, N blocks on one residual stream (dropout ②
    on the attention weights inside the attention, dropout ③ on each sublayer's output before
    ⊕), then ln_f: the three places GPT-style models drop out, and a stream that is only ever
    added to until ln_f."""
    d = Diagram(4.6, 4.85, "叠起来的块：残差流与暂退的三个位置")
    x = 1.75
    d.box(x, 4.7, 1.9, 0.26, "词元嵌入 + 位置嵌入", kind="stream", size=SMALL)
    d.arrow((x, 4.57), (x, 4.4))
    d.box(x, 4.28, 1.2, 0.24, "① 暂退（嵌入之后）", kind="note", size=SMALL)
    y = 4.16
    d.line([(x, y), (x, y - 0.12)])
    y -= 0.12
    top = y
    attention = ("注意力（② 暂退在权重上）", "attention")
    for branch in ([LN_1, attention, ("③ 暂退", "note")], [LN_2, FFN, ("③ 暂退", "note")]):
        y = sublayer(d, x, y, branch, w=1.75, offset=1.15)
    d.box(x + 0.45, (top + y) / 2 - 0.06, 3.1, top - y + 0.2, kind="note", dashed=True,
          filled=False)
    d.text(x + 1.95, top - 0.12, "×N", size=SMALL, color=MUTED, ha="right")
    d.text(x + 1.22, (top + y) / 2 + 0.5, "残差流：\n只往上加，\n从不缩放", size=SMALL,
           color=MUTED, ha="left")
    d.arrow((x, y), (x, y - 0.3))
    d.box(x, y - 0.42, 1.3, 0.24, "ln_f（LayerNorm）", kind="norm", size=SMALL)
    d.arrow((x, y - 0.54), (x, y - 0.72))
    d.box(x, y - 0.84, 1.3, 0.24, "输出层 → logits", kind="weight", size=SMALL)
    return d
