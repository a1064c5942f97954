"""The frame player: figures drawn in advance, one per value, behind a slider."""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable, Sequence

import ipywidgets as widgets
from matplotlib.figure import Figure
from PIL import Image

from onelayer.book.plotting import figure_html

# Colours kept per frame. The figures are flat colours, lines and antialiased text: a
# 128-colour palette PNG looks the same and is about a quarter of the size, which matters
# because every frame is saved in the page's widget state.
FRAME_COLOURS = 128
# The handle a reader drags (or taps): at least 24 × 24 CSS px (WCAG 2.2 target size). The
# widgets' own CSS sizes and centres the handle from this variable (16 px by default).
HANDLE_CSS = "<style>.frame-player{--jp-widgets-slider-handle-size:24px}</style>"
_DATA_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")


def palette_png(png: bytes, colours: int = FRAME_COLOURS) -> bytes:
    """``png`` with its colours reduced to a palette of ``colours`` (transparency kept)."""
    if not 2 <= colours <= 256:
        raise ValueError(f"colours 应在 2…256 之间，实际为 {colours}")
    image = Image.open(io.BytesIO(png)).convert("RGBA")
    small = image.quantize(colours, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()


def frame_html(fig: Figure, alt: str) -> str:
    """Like ``figure_html``, with the PNG reduced to a palette (see FRAME_COLOURS)."""
    def lighter(match: re.Match) -> str:
        data = palette_png(base64.b64decode(match.group(1)))
        return "data:image/png;base64," + base64.b64encode(data).decode("ascii")

    return _DATA_URI.sub(lighter, figure_html(fig, alt))


def frame_player(
    draw: Callable[[float], Figure],
    values: Sequence[float],
    description: str,
    alt: Callable[[float], str],
    start: int = 0,
) -> widgets.VBox:
    """A slider over figures drawn in advance, one per value, linked in the browser.

    Unlike an interactive_output panel it needs no Python once drawn: the slider and the
    stack of frames are linked with jslink, so it also works in the static HTML book.
    The slider's options are the values as short text (``f"{v:g}"``); in the HTML book the
    page gives its handle the description as accessible name and that text as its value
    (_ext/widgets_offline.js).
    """
    frames = [widgets.HTML(frame_html(draw(v), alt(v))) for v in values]
    stack = widgets.Stack(frames, selected_index=start)
    slider = widgets.SelectionSlider(
        options=[(f"{v:g}", i) for i, v in enumerate(values)], index=start,
        description=description, continuous_update=True,
    )
    widgets.jslink((slider, "index"), (stack, "selected_index"))
    note = widgets.HTML(f"<i>{len(values)} 帧预先算好的图：在 HTML 书中也可以拖动。</i>"
                        + HANDLE_CSS)
    player = widgets.VBox([note, slider, stack])
    player.add_class("frame-player")  # the browser tests find the players by this class
    return player
