"""Figure style for the book: a CJK font for Chinese labels, one consistent look.

The font is Noto Sans CJK SC from the pinned ``noto-cjk-sans-otc`` package (requirements.txt),
registered with matplotlib from the package's own file: every machine draws the figures with
the same font, and none needs a system font. Without the package, an installed system CJK font
is used; without either, one line says what to install.
"""

from __future__ import annotations

import base64
import html
import io
import re
import sys
import warnings
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
from IPython.display import HTML, display
from matplotlib import font_manager
from matplotlib.figure import Figure
from PIL import Image

# The package that ships the figures' font, and the family used from its collection.
FONT_PACKAGE = "noto-cjk-sans-otc"
PACKAGED_FAMILY = "Noto Sans CJK SC"
# Without the package: system families that carry CJK glyphs, in order of preference.
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
# File names of those families' fonts, for fonts installed after matplotlib's cache was written.
CJK_FILE_PATTERN = re.compile(r"cjk|sourcehan|wqy|msyh|pingfang|simhei", re.IGNORECASE)
NO_FONT_MESSAGE = (
    f"没有中文字体，图中的汉字会显示为方框：请安装 {FONT_PACKAGE}（pip install {FONT_PACKAGE}）"
)
_no_font_reported = False


def packaged_font_file() -> Path | None:
    """The Noto Sans CJK collection file of the font package, or None when it is missing."""
    try:
        from noto_cjk_sans_otc import FONT_PATH
    except ImportError:
        return None
    path = Path(str(FONT_PATH))
    return path if path.is_file() else None


def register_packaged_font() -> str | None:
    """Make the packaged font matplotlib's first choice for its family; return the family.

    ``findfont`` keeps the first of equally good matches, so the packaged faces go to the
    front of the font list: a system copy of the same family (perhaps another version) is
    never picked instead.
    """
    path = packaged_font_file()
    if path is None:
        return None
    manager = font_manager.fontManager
    fname = str(path)
    if not any(entry.fname == fname for entry in manager.ttflist):
        known = len(manager.ttflist)
        manager.addfont(fname)  # every face of the collection; clears findfont's cache
        added = manager.ttflist[known:]
        del manager.ttflist[known:]
        manager.ttflist[:0] = added
    return PACKAGED_FAMILY


def _add_system_cjk_fonts() -> None:
    """Register CJK font files installed after matplotlib's font cache was written."""
    manager = font_manager.fontManager
    known = {entry.fname for entry in manager.ttflist}
    for fname in font_manager.findSystemFonts():
        if CJK_FILE_PATTERN.search(Path(fname).name) and fname not in known:
            try:
                manager.addfont(fname)
            except (OSError, RuntimeError, ValueError):
                continue  # an unreadable font file: skip it, as matplotlib's own scan does


def find_cjk_font() -> str | None:
    """Name of an installed system CJK font family, or None when there is none."""

    def first_installed() -> str | None:
        installed = {entry.name for entry in font_manager.fontManager.ttflist}
        return next((name for name in CJK_FAMILIES if name in installed), None)

    found = first_installed()
    if found is None:
        _add_system_cjk_fonts()
        found = first_installed()
    return found


def _report_missing_font() -> None:
    """One line instead of matplotlib's warning for every missing glyph of every figure."""
    global _no_font_reported
    warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
    if not _no_font_reported:
        print(NO_FONT_MESSAGE, file=sys.stderr)
        _no_font_reported = True


def use_book_style() -> str | None:
    """Set the figure style with the packaged CJK font (else a system one); return its family."""
    font = register_packaged_font() or find_cjk_font()
    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 3.6),
            "figure.dpi": 100,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.unicode_minus": False,  # CJK fonts often lack U+2212 MINUS SIGN
            # An opaque white background: the labels are dark, and a transparent figure would
            # put them on whatever is behind it (in JupyterLab's dark theme, a dark output
            # area). The HTML book's dark mode dims the figure onto a neutral card instead
            # (_ext/book_static/book.css).
            "figure.facecolor": "white",
            "axes.facecolor": "white",
            "savefig.facecolor": "white",
            # An opaque legend box, so lines behind a legend do not cross its text.
            "legend.facecolor": "white",
            "legend.framealpha": 0.85,
        }
    )
    if font is None:
        _report_missing_font()
    else:
        mpl.rcParams["font.sans-serif"] = [font, "DejaVu Sans"]
        mpl.rcParams["font.family"] = "sans-serif"
    return font


def palette_png(fig: Figure) -> bytes:
    """``fig`` as a PNG with an adaptive palette of at most 256 colours, no dithering: the
    book's line plots look the same and weigh about a third of matplotlib's RGBA PNG, which
    a reader on a phone downloads for every figure of a page."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    image = Image.open(buffer).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                             dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return out.getvalue()


def use_palette_png() -> None:
    """In a notebook, figures shown by pyplot (plt.show, or a figure left at the end of a
    cell) are stored as palette PNGs; outside IPython this does nothing."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    # Load the backend now: the inline backend registers its own PNG formatter when it loads,
    # which would otherwise replace this one at the first figure.
    plt.switch_backend(mpl.get_backend())
    shell.display_formatter.formatters["image/png"].for_type(Figure, palette_png)


def new_figure(**kwargs: object) -> Figure:
    """A figure outside pyplot's global state, for panels: their callbacks may run on
    another thread while the notebook goes on drawing with pyplot."""
    return Figure(**kwargs)


def figure_html(fig: Figure, alt: str) -> str:
    """``fig`` as an <img> tag with alt text (PNG inlined), and close the figure.

    Only a figure made with pyplot is closed through pyplot: a panel's figure (``new_figure``)
    is not in pyplot's list, and looking it up there from a panel callback's thread would race
    with the notebook's own pyplot figures.
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    if fig.canvas.manager is not None:
        plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def show_with_alt(fig: Figure, alt: str) -> None:
    """Display ``fig`` as an <img> with alt text, then close it.

    For figures drawn inside widgets: their output is stored in the widget state, where
    the notebook's cell metadata cannot give the image an alt text.
    """
    display(HTML(figure_html(fig, alt)))
