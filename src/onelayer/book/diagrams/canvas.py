"""The book's one visual language for pictures of ideas: boxes, tensors, arrows, operators.

A ``Diagram`` is a matplotlib figure measured in inches (origin at the bottom left) that a
notebook shows as SVG: vector, with its text drawn as outlines of the book's CJK font, so it
is sharp on any screen and in the PDF and needs no font on the reader's machine. The SVG is
the same bytes on every machine (no date, a fixed id salt), so strict nbval compares it like
any exact output. Its white background is the figures' light card in dark mode.

Colours say what a thing is, in every chapter: blue for weights, orange for activation
functions, green for norms, purple for attention, grey for the residual stream; a tensor's
cells are coloured by value (red positive, blue negative) and carry their numbers.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable

import matplotlib as mpl
import torch
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

from onelayer.book.plotting import use_book_style

INK = "#222222"
MUTED = "#555555"
# Each kind of box: (edge, fill).
KINDS = {
    "weight": ("#3b6aa8", "#dce7f6"),
    "activation": ("#c0612b", "#fbe4d5"),
    "norm": ("#3f8f55", "#dcf0e1"),
    "attention": ("#6d5ba8", "#e7e2f4"),
    "stream": ("#6b6b6b", "#eeeeee"),
    "note": ("#9a9a9a", "#ffffff"),
}
VALUE_MAP = mpl.colormaps["RdBu_r"]
# Text size in points; 9 pt at the phone's 75 % is still 9 px.
SIZE = 9
SMALL = 8
# The widest diagram, so that at 75 % it fits a 390 px phone's 358 px column without
# scrolling (4.6 in + margins = 338 pt = 451 px, drawn at 338 px).
MAX_WIDTH = 4.6

SVG_RC = {"svg.fonttype": "path", "svg.hashsalt": "onelayer", "svg.image_inline": True}


def drawing(function: Callable[..., Diagram]) -> Callable[..., Diagram]:
    """Mark a function that draws a diagram: it leaves torch's random state as it found it,
    so that showing a picture does not change the numbers of the cells after it."""

    @functools.wraps(function)
    def draw(*args: object, **kwargs: object) -> Diagram:
        with torch.random.fork_rng(devices=[]):
            return function(*args, **kwargs)

    return draw


class Diagram:
    """A picture of an idea, drawn in inches; shown by a notebook as SVG."""

    def __init__(self, width: float, height: float, title: str) -> None:
        if not 0 < width <= MAX_WIDTH:
            raise ValueError(f"图宽应在 (0, {MAX_WIDTH}] 英寸内，实际为 {width}")
        use_book_style()
        self.title = title
        self.texts: list[str] = []
        self.figure = Figure(figsize=(width, height))
        self.ax = self.figure.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, width)
        self.ax.set_ylim(0, height)
        self.ax.set_aspect("equal")
        self.ax.axis("off")

    def text(self, x: float, y: float, s: str, size: float = SIZE, color: str = INK,
             ha: str = "center", va: str = "center", **kwargs: object) -> None:
        self.texts.append(s)
        self.ax.text(x, y, s, fontsize=size, color=color, ha=ha, va=va, **kwargs)

    def box(self, x: float, y: float, w: float, h: float, label: str = "",
            kind: str = "weight", size: float = SIZE, dashed: bool = False,
            filled: bool = True) -> None:
        """A rounded box centred on (x, y), labelled inside; unfilled, a frame around what
        is under it."""
        edge, fill = KINDS[kind]
        self.ax.add_patch(FancyBboxPatch(
            (x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.06",
            facecolor=fill if filled else "none", edgecolor=edge, linewidth=1.1,
            linestyle="--" if dashed else "-"))
        if label:
            self.text(x, y, label, size=size)

    def cells(self, x: float, y: float, values: list[float], cell: float = 0.3,
              across: float | None = None, digits: int = 1, limit: float = 2.5,
              size: float = SMALL, vertical: bool = False) -> list[tuple[float, float]]:
        """A tensor as a row (or column) of cells centred on (x, y), each ``cell`` long and
        ``across`` wide, coloured by its value and showing it; returns the cells' centres."""
        n = len(values)
        across = cell if across is None else across
        w, h = (across, cell) if vertical else (cell, across)
        norm = TwoSlopeNorm(vmin=-limit, vcenter=0.0, vmax=limit)
        centres = []
        for i, v in enumerate(values):
            offset = (i - (n - 1) / 2) * cell
            cx, cy = (x, y - offset) if vertical else (x + offset, y)
            colour = VALUE_MAP(norm(max(-limit, min(limit, v))))
            self.ax.add_patch(Rectangle((cx - w / 2, cy - h / 2), w, h,
                                        facecolor=colour, edgecolor="white", linewidth=0.8))
            dark = abs(v) > 0.6 * limit
            self.text(cx, cy, f"{v:.{digits}f}".replace("-", "−"), size=size,
                      color="white" if dark else INK)
            centres.append((cx, cy))
        return centres

    def arrow(self, start: tuple[float, float], end: tuple[float, float], label: str = "",
              color: str = INK, label_at: tuple[float, float] | None = None,
              size: float = SMALL, ha: str = "left", dashed: bool = False,
              bend: float = 0.0) -> None:
        """An arrow from start to end; its label beside the midpoint (or at label_at)."""
        self.ax.add_patch(FancyArrowPatch(
            start, end, arrowstyle="-|>", mutation_scale=9, color=color, linewidth=1.1,
            linestyle="--" if dashed else "-", shrinkA=0, shrinkB=0,
            connectionstyle=f"arc3,rad={bend}"))
        if label:
            lx, ly = label_at or ((start[0] + end[0]) / 2 + 0.1, (start[1] + end[1]) / 2)
            self.text(lx, ly, label, size=size, color=MUTED, ha=ha)

    def line(self, points: list[tuple[float, float]], color: str = INK,
             dashed: bool = False, width: float = 1.1) -> None:
        xs, ys = zip(*points)
        self.ax.plot(xs, ys, color=color, linewidth=width, linestyle="--" if dashed else "-",
                     solid_capstyle="round")

    def op(self, x: float, y: float, symbol: str, radius: float = 0.14) -> None:
        """An operator node: ⊕ (add) or ⊙ (elementwise product)."""
        self.ax.add_patch(Circle((x, y), radius, facecolor="white", edgecolor=INK,
                                 linewidth=1.1))
        if symbol == "+":
            self.line([(x - radius * 0.6, y), (x + radius * 0.6, y)])
            self.line([(x, y - radius * 0.6), (x, y + radius * 0.6)])
        elif symbol == "*":
            self.ax.add_patch(Circle((x, y), radius * 0.22, color=INK))
        else:
            raise ValueError(f"运算符应为 '+' 或 '*'，实际为 {symbol!r}")
        self.texts.append({"+": "⊕", "*": "⊙"}[symbol])

    def svg(self) -> str:
        """The diagram as SVG text, the same bytes on every machine."""
        buffer = io.StringIO()
        with mpl.rc_context(SVG_RC):
            self.figure.savefig(buffer, format="svg", bbox_inches="tight", pad_inches=0.05,
                                metadata={"Date": None, "Creator": None})
        return buffer.getvalue()

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return f"<示意图：{self.title}>"
