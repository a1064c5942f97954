"""Chapter 3: the residual block, two blocks unrolled into their paths, the residual stream."""

from __future__ import annotations

from onelayer.book.diagrams.canvas import INK, MUTED, SMALL, Diagram, drawing

STREAM = "#6b6b6b"


def _plain_block(d: Diagram, x: float) -> None:
    d.text(x, 2.85, "没有残差：重写")
    d.box(x, 2.45, 0.7, 0.3, "$x$", kind="stream")
    d.arrow((x, 2.3), (x, 1.88))
    d.box(x, 1.65, 1.1, 0.42, "$f$", kind="weight")
    d.arrow((x, 1.44), (x, 0.78))
    d.box(x, 0.6, 0.9, 0.3, "$y = f(x)$", kind="stream", size=SMALL)


@drawing
def residual_block_diagram() -> Diagram:
    """x → f → ⊕ → y with the identity shortcut around f, beside the plain x → f → y."""
    d = Diagram(4.4, 3.1, "残差块")
    _plain_block(d, 1.0)
    x = 3.05
    d.text(x, 2.85, "残差：在原稿上批注")
    d.box(x, 2.45, 0.7, 0.3, "$x$", kind="stream")
    d.arrow((x, 2.3), (x, 1.88))
    d.box(x, 1.65, 1.1, 0.42, "$f$（FFN 或注意力）", kind="weight", size=SMALL)
    d.arrow((x, 1.44), (x, 1.1))
    d.op(x, 0.96, "+")
    d.line([(x, 2.3), (x, 2.2), (x + 0.95, 2.2), (x + 0.95, 0.96)], color=STREAM)
    d.arrow((x + 0.95, 0.96), (x + 0.14, 0.96), color=STREAM)
    d.text(x + 1.02, 1.65, "恒等\n捷径", size=SMALL, color=MUTED, ha="left")
    d.arrow((x, 0.82), (x, 0.68))
    d.box(x, 0.5, 1.3, 0.3, "$y = x + f(x)$", kind="stream", size=SMALL)
    return d


@drawing
def unrolled_paths_diagram() -> Diagram:
    """Two residual blocks, and their derivative (I + J2)(I + J1) = I + J1 + J2 + J2·J1 drawn
    as four paths from x to the output (Veit et al. 2016): each block taken by its shortcut
    or by its branch. Exact for the gradient; for the forward values f2 reads x + f1(x)."""
    d = Diagram(4.6, 3.85, "两个残差块展开成四条路径")
    x = 0.65
    d.text(x, 3.65, "两个残差块")
    d.box(x, 3.27, 0.6, 0.28, "$x$", kind="stream")
    for top, name in ((2.97, "$f_1$"), (1.87, "$f_2$")):
        d.arrow((x, top + 0.16), (x, top - 0.1))
        d.box(x, top - 0.28, 0.66, 0.36, name, kind="weight")
        d.arrow((x, top - 0.46), (x, top - 0.72))
        d.op(x, top - 0.86, "+")
        d.line([(x, top + 0.06), (x + 0.58, top + 0.06), (x + 0.58, top - 0.86)], color=STREAM)
        d.arrow((x + 0.58, top - 0.86), (x + 0.14, top - 0.86), color=STREAM)
    d.arrow((x, 0.87), (x, 0.69))
    d.box(x, 0.55, 0.6, 0.28, "$z$", kind="stream")
    d.text(1.65, 2.05, "展开\n→", size=SMALL, color=MUTED)
    centre, lanes = 3.2, (2.3, 2.9, 3.5, 4.1)
    top, bottom = 3.27, 0.95
    d.text(centre, 3.65, "四条路径：每块走捷径或走分支")
    d.box(centre, top, 0.6, 0.28, "$x$", kind="stream")
    d.op(centre, bottom, "+")
    stages = ((), ("$f_1$",), ("$f_2$",), ("$f_1$", "$f_2$"))
    for lane, names in zip(lanes, stages):
        d.line([(centre, top - 0.14), (lane, top - 0.42)], color=STREAM)
        y = top - 0.42
        places = {1: (2.1,), 2: (2.55, 1.65)}.get(len(names), ())
        for name, cy in zip(names, places):
            d.line([(lane, y), (lane, cy + 0.17)], color=STREAM)
            d.box(lane, cy, 0.46, 0.34, name, kind="weight")
            y = cy - 0.17
        d.arrow((lane, y), (lane, bottom + 0.36), color=STREAM)
        d.line([(lane, bottom + 0.36), (centre, bottom + 0.12)], color=STREAM)
    d.arrow((centre, bottom - 0.14), (centre, bottom - 0.3))
    d.box(centre, bottom - 0.44, 0.6, 0.28, "$z$", kind="stream")
    d.text(2.3, 0.12, "梯度逐项成立：$(I + J_2)(I + J_1) = I + J_1 + J_2 + J_2 J_1$；"
           "前向时 $f_2$ 读的是 $x + f_1(x)$", size=SMALL, color=MUTED)
    return d


@drawing
def depth_variants_diagram() -> Diagram:
    """The three deep networks of the depth study side by side: the same L FFN blocks with
    the shortcut (h ← h + f(h)), without it under PyTorch's default init, and without it under
    He init; under each, the factor by which one block multiplies the gradient's variance in
    expectation at initialisation (1/3 · 1/2 · 1/3 = 1/18 for the default init, 1 for He)."""
    d = Diagram(4.6, 3.5, "深度研究的三种网络")
    columns = ((0.8, "残差", True, "默认初始化"), (2.3, "普通", False, "默认初始化"),
               (3.8, "普通", False, "He 初始化"))
    for x, name, shortcut, init in columns:
        d.text(x, 3.3, name)
        d.text(x, 3.07, init, size=SMALL, color=MUTED)
        d.box(x, 2.75, 0.5, 0.26, "$h$", kind="stream")
        y = 2.62
        for label in ("$f_1$", "$f_2$"):
            d.arrow((x, y), (x, y - 0.14))
            d.box(x, y - 0.3, 0.56, 0.32, label, kind="weight")
            if shortcut:
                d.arrow((x, y - 0.46), (x, y - 0.58))
                d.op(x, y - 0.7, "+", radius=0.11)
                d.line([(x, y - 0.06), (x + 0.5, y - 0.06), (x + 0.5, y - 0.7)], color=STREAM)
                d.arrow((x + 0.5, y - 0.7), (x + 0.11, y - 0.7), color=STREAM)
                y -= 0.81
            else:
                y -= 0.46
        d.text(x, y - 0.14, "……共 L 块", size=SMALL, color=MUTED)
    d.text(0.8, 0.55, "$h \\leftarrow h + f(h)$", size=SMALL)
    d.text(2.3, 0.55, "$h \\leftarrow f(h)$", size=SMALL)
    d.text(3.8, 0.55, "$h \\leftarrow f(h)$", size=SMALL)
    d.text(2.3, 0.3, "初始化时每块梯度的方差（期望）：", size=SMALL, color=MUTED)
    d.text(2.3, 0.1, "默认初始化 × 1/18　　He 初始化 × 1", size=SMALL, color=MUTED)
    return d


@drawing
def residual_stream_diagram() -> Diagram:
    """The residual stream: one line from x_0 to x_L; every block reads the stream, and its
    branch output is added back onto it at ⊕, so x_L = x_0 + f_1 + … + f_L. In GPT-2 each
    block has two branches (attention and FFN), and the last projection of each branch is the
    one whose init is scaled down by the number of branches."""
    d = Diagram(4.6, 2.3, "残差流")
    y = 0.95
    d.box(0.35, y, 0.5, 0.3, "$x_0$", kind="stream")
    d.box(4.2, y, 0.5, 0.3, "$x_L$", kind="stream")
    centres = (1.05, 2.0, 3.35)
    ends = [0.6, *(c + 0.24 + sign * 0.14 for c in centres for sign in (-1, 1)), 3.95]
    for start, end in zip(ends[::2], ends[1::2]):
        d.line([(start, y), (end, y)], color=STREAM, width=2.4)
    for cx, name in zip(centres, ("$f_1$", "$f_2$", "$f_L$")):
        d.line([(cx - 0.2, y), (cx - 0.2, 1.5)], color=STREAM)
        d.arrow((cx - 0.2, 1.5), (cx - 0.2, 1.62), color=STREAM)
        d.box(cx + 0.02, 1.82, 0.6, 0.4, name, kind="weight")
        d.line([(cx + 0.24, 1.62), (cx + 0.24, y + 0.4)], color=INK)
        d.arrow((cx + 0.24, y + 0.4), (cx + 0.24, y + 0.14))
        d.op(cx + 0.24, y, "+")
    d.text(2.68, y + 0.18, "⋯", color=MUTED)
    d.text(2.3, 2.2, "每一块读流（灰），把输出加回流上（⊕）", size=SMALL, color=MUTED)
    d.text(2.3, 0.5, "$x_L = x_0 + f_1 + f_2 + \\cdots + f_L$")
    d.text(2.3, 0.15, "GPT-2：每块两条分支（注意力、FFN），共 $2\\,n_\\mathrm{layer}$ 条",
           size=SMALL, color=MUTED)
    return d
