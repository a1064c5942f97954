"""Chapter 3: the residual block, and two blocks unrolled into their paths."""

from __future__ import annotations

from onelayer.book.diagrams.canvas import MUTED, SMALL, Diagram, drawing

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
    d.text(x + 1.02, 1.65, "捷径\n（恒等）", size=SMALL, color=MUTED, ha="left")
    d.arrow((x, 0.82), (x, 0.68))
    d.box(x, 0.5, 1.3, 0.3, "$y = x + f(x)$", kind="stream", size=SMALL)
    return d


@drawing
def unrolled_paths_diagram() -> Diagram:
    """Two residual blocks, and the same computation drawn as its four paths from x to the
    output (Veit et al. 2016): through neither block, f1 only, f2 only, f1 then f2."""
    d = Diagram(5.0, 3.6, "两个残差块展开成四条路径")
    # Left: the stack.
    x = 0.8
    d.text(x, 3.4, "两个残差块")
    d.box(x, 3.02, 0.6, 0.28, "$x$", kind="stream")
    for top, name in ((2.72, "$f_1$"), (1.62, "$f_2$")):
        d.arrow((x, top + 0.16), (x, top - 0.1))
        d.box(x, top - 0.28, 0.7, 0.36, name, kind="weight")
        d.arrow((x, top - 0.46), (x, top - 0.72))
        d.op(x, top - 0.86, "+")
        d.line([(x, top + 0.06), (x + 0.62, top + 0.06), (x + 0.62, top - 0.86)], color=STREAM)
        d.arrow((x + 0.62, top - 0.86), (x + 0.14, top - 0.86), color=STREAM)
    d.arrow((x, 0.62), (x, 0.44))
    d.box(x, 0.3, 0.6, 0.28, "$z$", kind="stream")
    d.text(2.0, 1.9, "=", size=14)
    # Right: four lanes from x to one sum.
    lanes = (2.55, 3.25, 3.95, 4.65)
    top, bottom = 3.02, 0.62
    d.text(3.6, 3.4, "展开：2² = 4 条路径")
    d.box(3.6, top, 0.6, 0.28, "$x$", kind="stream")
    d.op(3.6, bottom, "+")
    stages = ((), ("$f_1$",), ("$f_2$",), ("$f_1$", "$f_2$"))
    for lane, names in zip(lanes, stages):
        d.line([(3.6, top - 0.14), (lane, top - 0.42)], color=STREAM)
        y = top - 0.42
        places = {1: (1.85,), 2: (2.3, 1.4)}.get(len(names), ())
        for name, cy in zip(names, places):
            d.line([(lane, y), (lane, cy + 0.17)], color=STREAM)
            d.box(lane, cy, 0.5, 0.34, name, kind="weight")
            y = cy - 0.17
        d.arrow((lane, y), (lane, bottom + 0.36), color=STREAM)
        d.line([(lane, bottom + 0.36), (3.6, bottom + 0.12)], color=STREAM)
    d.arrow((3.6, bottom - 0.14), (3.6, bottom - 0.34))
    d.text(3.6, 0.1, "$z = x + f_1(x) + f_2\\,(x + f_1(x))$：$f_2$ 读的是两条路径的和",
           size=SMALL, color=MUTED)
    return d
