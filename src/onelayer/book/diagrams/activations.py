"""Chapter 2: an activation is the pre-activation times how much of it is let through — a
switch (ReLU: 0 or 1) or a dimmer (GELU: Φ(h), SiLU: σ(h)) — drawn on 鱼's four
pre-activations; and the unit that no input switches on any more (a dead ReLU)."""

from __future__ import annotations

from onelayer.activations import normal_cdf, relu, sigmoid
from onelayer.book.diagrams.canvas import KINDS, MUTED, SMALL, Diagram, drawing
from onelayer.data import TOKENS, sentence_x, shown_w1_columns

ORANGE = KINDS["activation"][0]
BLUE = KINDS["weight"][0]


@drawing
def activation_switches_diagram(token: str = "鱼") -> Diagram:
    """x_token·W1's four pre-activations h, and for ReLU, GELU and SiLU the share let
    through (1[h > 0], Φ(h), σ(h)) and the output h × share."""
    h = sentence_x()[TOKENS.index(token)] @ shown_w1_columns()
    rows = [("ReLU：开关", "$1[h>0]$", (h > 0).float(), relu(h)),
            ("GELU：调光器", "$\\Phi(h)$", normal_cdf(h), None),
            ("SiLU：调光器", "$\\sigma(h)$", sigmoid(h), None)]
    d = Diagram(4.6, 2.45, f"开关与调光器（{token}）")
    top, step = 1.75, 0.26
    centre = top - 1.5 * step
    d.text(0.32, top + 0.4, f"$h$\n（{token}）", size=SMALL)
    d.cells(0.32, centre, h.tolist(), cell=step, across=0.46, digits=2, vertical=True)
    for k, (name, share_head, share, out) in enumerate(rows):
        x = 1.22 + 1.15 * k
        out = h * share if out is None else out
        d.text(x + 0.25, top + 0.52, name, size=SMALL, color=ORANGE)
        d.text(x, top + 0.25, share_head, size=SMALL, color=MUTED)
        d.text(x + 0.5, top + 0.25, "$h\\times$比例", size=SMALL, color=MUTED)
        d.cells(x, centre, share.tolist(), cell=step, across=0.46, digits=2, vertical=True)
        d.cells(x + 0.5, centre, out.tolist(), cell=step, across=0.46, digits=2,
                vertical=True)
        d.box(x + 0.25, centre, 1.08, 4 * step + 0.12, kind="activation", filled=False)
    d.text(2.3, 0.5, "放行比例：ReLU 只有 0 和 1，GELU、SiLU 随 $h$ 连续变化",
           size=SMALL, color=MUTED)
    d.text(2.3, 0.2, f"$h_2 = {h[1].item():.2f}$：ReLU 关死；GELU、SiLU 还放过一点（负的）",
           size=SMALL, color=MUTED)
    return d


@drawing
def dead_unit_diagram() -> Diagram:
    """A unit whose pre-activation is ≤ 0 on every training input: ReLU gives 0 and slope 0,
    so its column of W1, its b1 and its row of W2 get no gradient; GELU's slope is small
    but not 0."""
    d = Diagram(4.6, 2.6, "死掉的 ReLU 单元")
    xs = [(0.35, 2.0 - 0.42 * i) for i in range(4)]
    for x, y in xs:
        d.box(x, y, 0.4, 0.28, "$x$", kind="stream", size=SMALL)
    unit = (1.75, 1.37)
    for x, y in xs:
        d.line([(x + 0.2, y), (unit[0] - 0.42, unit[1])], color=BLUE, width=0.9, dashed=True)
    d.box(*unit, 0.84, 0.5, "ReLU", kind="activation")
    d.text(unit[0], unit[1] + 0.45, "每个输入：$h \\leq 0$", size=SMALL)
    d.text(0.98, 0.35, "$W_1$ 的一列、$b_1$\n梯度 = 0", size=SMALL, color=BLUE)
    d.line([(unit[0] + 0.42, unit[1]), (3.1, unit[1])], color=BLUE, width=0.9, dashed=True)
    d.box(3.45, unit[1], 0.7, 0.36, "输出", kind="stream", size=SMALL)
    d.text(2.6, 0.98, "$W_2$ 的一行\n梯度 = 0", size=SMALL, color=BLUE)
    d.text(2.6, unit[1] + 0.25, "输出 0，斜率 0", size=SMALL, color=ORANGE)
    d.text(3.25, 0.35, "GELU：斜率小，但不是 0", size=SMALL, color=MUTED)
    return d


@drawing
def product_units_diagram() -> Diagram:
    """x_a·x_b from one gated unit with no activation (gate reads x_a, value reads x_b) beside
    four plain GELU units reading ±s(x_a + x_b) and ±s(x_a − x_b), added with weights
    ±1/(4·√(2/π)·s²)."""
    d = Diagram(4.6, 2.9, "乘积 $x_a x_b$：门控一个单元，GELU 四个单元")
    left, right = 0.95, 3.15
    d.text(left, 2.7, "门控（不带激活函数）", size=SMALL, color=ORANGE)
    d.box(left - 0.45, 2.2, 0.6, 0.3, "$x_a$", kind="stream", size=SMALL)
    d.box(left + 0.45, 2.2, 0.6, 0.3, "$x_b$", kind="stream", size=SMALL)
    d.text(left - 0.45, 1.85, "门", size=SMALL, color=MUTED)
    d.text(left + 0.45, 1.85, "值", size=SMALL, color=MUTED)
    d.arrow((left - 0.45, 2.05), (left - 0.1, 1.5))
    d.arrow((left + 0.45, 2.05), (left + 0.1, 1.5))
    d.op(left, 1.38, "*")
    d.arrow((left, 1.24), (left, 0.9))
    d.box(left, 0.72, 0.9, 0.32, "$x_a x_b$", kind="stream", size=SMALL)
    d.text(left, 0.3, "精确，权重都是 1", size=SMALL, color=MUTED)
    d.text(right, 2.7, "普通 GELU FFN", size=SMALL, color=ORANGE)
    reads = ["$+s(x_a{+}x_b)$", "$-s(x_a{+}x_b)$", "$+s(x_a{-}x_b)$", "$-s(x_a{-}x_b)$"]
    signs = ["+", "+", "−", "−"]
    for k, (read, sign) in enumerate(zip(reads, signs)):
        x = right - 1.05 + 0.7 * k
        d.text(x, 2.25, read, size=SMALL - 1)
        d.box(x, 1.8, 0.56, 0.3, "GELU", kind="activation", size=SMALL - 1)
        d.arrow((x, 2.1), (x, 1.96))
        d.arrow((x, 1.64), (right + 0.12 * (k - 1.5), 1.26))
        d.text(x + (0.16 if k > 1 else -0.16), 1.45, sign, size=SMALL, color=BLUE)
    d.op(right, 1.14, "+")
    d.arrow((right, 1.0), (right, 0.9))
    d.box(right, 0.72, 1.1, 0.32, "$\\approx x_a x_b$", kind="stream", size=SMALL)
    d.text(right, 0.3, "$s$ 越小越准，输出权重 $\\frac{1}{4\\sqrt{2/\\pi}\\,s^2}$ 越大",
           size=SMALL, color=MUTED)
    return d
