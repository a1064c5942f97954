"""Chapter 4: what LayerNorm does to a vector, drawn in the plane through 0, 1 and x.

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
from onelayer.norms import mean_and_biased_var

SCALE = 0.62  # inches per unit
GREY = KINDS["stream"][0]
ORANGE = KINDS["activation"][0]
GREEN = KINDS["norm"][0]


@drawing
def layernorm_geometry_diagram(token: str = "鱼", scale: float = 2.0, shift: float = 1.0
                               ) -> Diagram:
    """x_token and scale·x + shift: centring drops both along 1 onto the hyperplane ⊥ 1,
    scaling by 1/σ moves both to the same x̂ on the sphere of radius √d; drawn in the
    plane of 1 and x."""
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
    d.text(*at(-2.2, -2.15), f"半径 $\\sqrt{{d}}$ = {radius:g}\n的球面", size=SMALL,
           color=GREEN)
    for v, name in ((x, f"$x$（{token}）"), (scale * x + shift, f"${scale:g}x + {shift:g}$")):
        mu, var = (t.item() for t in mean_and_biased_var(v))
        along = mu * math.sqrt(d_model)  # v's component along the unit vector 1/√d
        across = math.sqrt(var * d_model)  # |v − μ|
        d.arrow(at(0, 0), at(across, along), color=GREY)
        d.text(*at(across + 0.1, along + 0.05), name, size=SMALL, color=GREY, ha="left")
        d.line([at(across, along), at(across, 0)], color=ORANGE, dashed=True)
        d.ax.plot(*at(across, 0), marker="o", markersize=3.5, color=ORANGE)
        above = across > radius  # 2x + 1 moves in from outside: its arc goes above the line
        d.arrow(at(across, 0.06 if above else -0.06), at(radius, 0.06 if above else -0.06),
                color=GREY if above else GREEN, bend=-0.9 if above else 0.6)
    d.text(*at(0.7, -0.3), "$x - \\mu$", size=SMALL, color=ORANGE)
    d.ax.plot(*at(radius, 0), marker="o", markersize=4.5, color=GREEN)
    d.text(*at(radius + 0.1, -0.28), "$\\hat{x}$", size=SMALL, color=GREEN, ha="left")
    d.text(2.3, 0.15, "减去 μ：沿 $\\mathbf{1}$ 落到超平面上（虚线）；除以 σ：沿它落到球面上",
           size=SMALL, color=INK)
    return d
