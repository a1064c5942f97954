"""Chapter 4: what LayerNorm does to a vector, drawn in the plane through 0, 1 and x; what
its Jacobian does to a nudge, by direction (study 04a); the deep networks with a LayerNorm at
the entrance of every block (study 04b).

Any x and the direction 1 = (1, …, 1) span a plane; LayerNorm (γ = 1, β = 0) never leaves
it. In that plane the hyperplane ⊥ 1 is a line and the sphere of radius √d a circle, so the
picture is exact for any d: centring drops x along 1 onto the line, scaling by 1/σ moves it
along the line to the circle. Drawn for the chapter's x_鱼 (d = 4).
"""

from __future__ import annotations

import math

from matplotlib.patches import Circle

from onelayer.book.diagrams.canvas import INK, KINDS, MUTED, SMALL, Diagram, drawing
from onelayer.data import TOKENS, sentence_x
from onelayer.norms import mean_and_biased_var, root_mean_square

SCALE = 0.62  # inches per unit
GREY = KINDS["stream"][0]
ORANGE = KINDS["activation"][0]
GREEN = KINDS["norm"][0]
BLUE = KINDS["weight"][0]


@drawing
def layernorm_geometry_diagram(token: str = "鱼", scale: float = 2.0, shift: float = 1.0
                               ) -> Diagram:
    """x_token and scale·x + shift: centring drops both along 1 onto the hyperplane ⊥ 1,
    scaling by 1/σ moves both to the same x̂ on the sphere of radius √d; RMSNorm scales x_token
    along its own direction onto the sphere (dotted); drawn in the plane of 1 and x."""
    x = sentence_x()[TOKENS.index(token)].double()
    d_model = x.numel()
    radius = math.sqrt(d_model)
    d = Diagram(4.6, 3.55, "LayerNorm 的几何")
    ox, oy = 2.3, 1.85

    def at(u: float, v: float) -> tuple[float, float]:
        return ox + SCALE * u, oy + SCALE * v

    d.ax.add_patch(Circle(at(0, 0), SCALE * radius, facecolor="none", edgecolor=GREEN,
                          linewidth=1.3))
    d.line([at(-3.6, 0), at(3.5, 0)], color=GREEN, width=1.8)
    d.line([at(0, -2.3), at(0, 2.75)], color=MUTED, dashed=True, width=0.9)
    d.text(*at(0.08, 2.75), "方向 $\\mathbf{1}$", size=SMALL, color=MUTED, ha="left")
    d.text(*at(-3.65, 0.1), "与 $\\mathbf{1}$ 垂直的\n超平面\n（侧看是一条线）", size=SMALL,
           color=GREEN, ha="left", va="bottom")
    d.text(*at(-2.3, -1.95), f"半径 $\\sqrt{{d}}$ = {radius:g}\n的球面", size=SMALL,
           color=GREEN)
    for v, name in ((x, f"$x$（{token}）"), (scale * x + shift, f"${scale:g}x + {shift:g}$")):
        mu, var = (t.item() for t in mean_and_biased_var(v))
        along = mu * math.sqrt(d_model)  # v's component along the unit vector 1/√d
        across = math.sqrt(var * d_model)  # |v − μ|
        d.arrow(at(0, 0), at(across, along), color=GREY)
        if v is x:  # RMSNorm's dotted extension leaves x's tip to the right: label above-left
            d.text(*at(across + 0.1, along + 0.08), name, size=SMALL, color=GREY, ha="right",
                   va="bottom")
        else:
            d.text(*at(across + 0.1, along + 0.05), name, size=SMALL, color=GREY, ha="left")
        d.line([at(across, along), at(across, 0)], color=ORANGE, dashed=True)
        d.ax.plot(*at(across, 0), marker="o", markersize=3.5, color=ORANGE)
        above = across > radius  # 2x + 1 moves in from outside: its arc goes above the line
        d.arrow(at(across, 0.06 if above else -0.06), at(radius, 0.06 if above else -0.06),
                color=GREY if above else GREEN, bend=-0.9 if above else 0.6)
    # RMSNorm: x / RMS(x) has length √d, so x moves along its own direction onto the circle
    mu, var = (t.item() for t in mean_and_biased_var(x))
    shrink = 1 / root_mean_square(x).item()  # |x| = √d·RMS(x), so the point is x / RMS(x)
    rms_at = (math.sqrt(var * d_model) * shrink, mu * math.sqrt(d_model) * shrink)
    tip = (math.sqrt(var * d_model), mu * math.sqrt(d_model))
    d.line([at(*tip), at(*rms_at)], color=BLUE, dashed=True, width=1.0)
    d.ax.plot(*at(*rms_at), marker="o", markersize=4.5, color=BLUE)
    d.text(*at(rms_at[0] + 0.12, rms_at[1] + 0.22), "RMSNorm($x$)", size=SMALL, color=BLUE,
           ha="left")
    d.text(*at(0.7, -0.3), "$x - \\mu$", size=SMALL, color=ORANGE)
    d.ax.plot(*at(radius, 0), marker="o", markersize=4.5, color=GREEN)
    d.text(*at(radius + 0.1, -0.28), "$\\hat{x}$", size=SMALL, color=GREEN, ha="left")
    d.text(2.3, 0.32, "LayerNorm：减去 μ，沿 $\\mathbf{1}$ 落到超平面上（虚线）；"
           "除以 σ，沿它落到球面上",
           size=SMALL, color=INK)
    d.text(2.3, 0.1, "RMSNorm：不减 μ，沿 $x$ 自己的方向缩放到球面上（蓝点）", size=SMALL,
           color=BLUE)
    return d


@drawing
def layernorm_jacobian_diagram(token: str = "鱼") -> Diagram:
    """What LayerNorm's Jacobian J (γ = 1, β = 0) does to a small nudge δ of x_token, by its
    direction: along 1 (a shift) it gives 0, along x̂ (a rescaling) almost 0 (only ε's
    share), and in the d − 2 directions orthogonal to both it multiplies by 1/s."""
    x = sentence_x()[TOKENS.index(token)].double()
    d_model = x.numel()
    mu, var = mean_and_biased_var(x)
    s = math.sqrt(var.item() + 1e-5)
    leak = 1e-5 / (var.item() + 1e-5)
    d = Diagram(4.6, 2.75, "LayerNorm 的雅可比矩阵")
    d.text(2.3, 2.55, f"“{token}”的 $x$ 挪一小步 $\\delta$，$\\hat{{x}}$ 挪多少：$J\\delta$"
           f"（$s = \\sqrt{{\\sigma^2 + \\epsilon}}$ = {s:.4f}）", size=SMALL)
    d.box(2.05, 1.25, 0.7, 1.95, "$J$", kind="norm")
    rows = (
        ("$\\delta \\parallel \\mathbf{1}$\n每个分量加同一个数", "$0$\n（平移不变）"),
        ("$\\delta \\parallel \\hat{x}$\n把 $x - \\mu$ 整体放大",
         f"$\\frac{{\\epsilon}}{{\\sigma^2 + \\epsilon}}\\cdot\\frac{{\\delta}}{{s}}$"
         f" ≈ {leak * 1e5:.0f}×$10^{{-5}}$·δ/s\n（缩放不变，只剩 ε）"),
        (f"$\\delta$ ⊥ $\\mathbf{{1}}$ 与 $\\hat{{x}}$\n其余 {d_model - 2} 个方向",
         f"$\\delta / s$ = {1 / s:.4f}·δ\n（除以输入的尺度）"),
    )
    for k, (into, out) in enumerate(rows):
        y = 1.9 - 0.65 * k
        d.text(0.05, y, into, size=SMALL, ha="left", color=INK)
        d.arrow((1.25, y), (1.7, y), color=GREY)
        d.arrow((2.4, y), (2.8, y), color=GREEN if k == 2 else MUTED)
        d.text(2.87, y, out, size=SMALL, ha="left", color=GREEN if k == 2 else MUTED)
    d.text(2.3, 0.08, "传回的梯度 $J^\\top g$ 也一样：与 $\\mathbf{1}$、$\\hat{x}$ 正交，"
           "大小除以 $s$", size=SMALL, color=INK)
    return d


@drawing
def deep_norm_diagram(n_layers: int = 32, width: int = 16) -> Diagram:
    """Chapter 3's deep network with a LayerNorm at the entrance of every block: the
    residual block h ← h + FFN(LN(h)) (Pre-Norm) beside the plain block h ← FFN(LN(h)),
    each repeated ``n_layers`` times between the embedding and the head."""
    d = Diagram(4.6, 3.6, "每块入口加一个 LayerNorm 的深层网络")
    for x, title, shortcut in ((1.15, "残差 + LN", True), (3.45, "普通 + LN", False)):
        d.text(x, 3.42, title)
        d.box(x, 3.08, 1.5, 0.26, f"2 维输入 → 嵌入（宽 {width}）", kind="weight",
              size=SMALL)
        d.arrow((x, 2.95), (x, 2.8))
        d.box(x, 2.68, 0.9, 0.22, "$h$", kind="stream", size=SMALL)
        d.arrow((x, 2.57), (x, 2.38))
        d.box(x, 2.26, 0.9, 0.24, "LayerNorm", kind="norm", size=SMALL)
        d.arrow((x, 2.14), (x, 1.96))
        d.box(x, 1.8, 1.2, 0.3, "FFN：$W_1$, ReLU, $W_2$", kind="weight", size=SMALL)
        if shortcut:
            d.arrow((x, 1.65), (x, 1.42))
            d.op(x, 1.29, "+", radius=0.13)
            d.line([(x + 0.45, 2.68), (x + 0.82, 2.68), (x + 0.82, 1.29)], color=GREY)
            d.arrow((x + 0.82, 1.29), (x + 0.13, 1.29), color=GREY)
            d.text(x + 0.88, 2.0, "捷径", size=SMALL, color=MUTED, ha="left")
            bottom, formula = 1.16, "$h \\leftarrow h + \\mathrm{FFN}(\\mathrm{LN}(h))$"
        else:
            bottom, formula = 1.65, "$h \\leftarrow \\mathrm{FFN}(\\mathrm{LN}(h))$"
        d.box(x, 1.98, 2.05 if shortcut else 1.6, 1.75, "", kind="note", dashed=True,
              filled=False)
        d.text(x - (0.98 if shortcut else 0.76), 2.78, f"× {n_layers}", size=SMALL,
               color=MUTED, ha="left")
        d.arrow((x, bottom), (x, 0.74))
        d.box(x, 0.6, 1.3, 0.26, "输出层 → 类别的 logit", kind="weight", size=SMALL)
        d.text(x, 0.25, formula, size=SMALL)
    return d
