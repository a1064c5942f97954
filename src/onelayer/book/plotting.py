"""Figure style for the book: a CJK font for Chinese labels, one consistent look."""

from __future__ import annotations

import base64
import html
import io

import matplotlib as mpl
import matplotlib.pyplot as plt
from IPython.display import HTML, display
from matplotlib import font_manager
from matplotlib.figure import Figure

# Families that carry CJK glyphs, in order of preference.
CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Serif CJK SC",
    "Source Han Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Microsoft YaHei",
    "PingFang SC",
    "SimHei",
)


def find_cjk_font() -> str | None:
    """Name of an installed CJK font family, or None when there is none."""
    installed = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FAMILIES if name in installed), None)


def use_book_style() -> str | None:
    """Set the figure style; use a CJK font if one is installed. Returns its name."""
    font = find_cjk_font()
    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 3.6),
            "figure.dpi": 100,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.unicode_minus": False,  # CJK fonts often lack U+2212 MINUS SIGN
        }
    )
    if font is not None:
        mpl.rcParams["font.sans-serif"] = [font, "DejaVu Sans"]
        mpl.rcParams["font.family"] = "sans-serif"
    return font


def new_figure(**kwargs: object) -> Figure:
    """A figure outside pyplot's global state, for panels: their callbacks may run on
    another thread while the notebook goes on drawing with pyplot."""
    return Figure(**kwargs)


def figure_html(fig: Figure, alt: str) -> str:
    """``fig`` as an <img> tag with alt text (PNG inlined), and close the figure."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def show_with_alt(fig: Figure, alt: str) -> None:
    """Display ``fig`` as an <img> with alt text, then close it.

    For figures drawn inside widgets: their output is stored in the widget state, where
    the notebook's cell metadata cannot give the image an alt text.
    """
    display(HTML(figure_html(fig, alt)))
