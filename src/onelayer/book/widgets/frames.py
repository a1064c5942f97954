"""The frame player: figures drawn in advance, one per value, behind a slider."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ipywidgets as widgets
from matplotlib.figure import Figure

from onelayer.book.plotting import figure_html


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
    """
    frames = [widgets.HTML(figure_html(draw(v), alt(v))) for v in values]
    stack = widgets.Stack(frames, selected_index=start)
    slider = widgets.SelectionSlider(
        options=[(f"{v:g}", i) for i, v in enumerate(values)], index=start,
        description=description, continuous_update=True,
    )
    widgets.jslink((slider, "index"), (stack, "selected_index"))
    note = widgets.HTML(f"<i>{len(values)} 帧预先算好的图：在 HTML 书中也可以拖动。</i>")
    player = widgets.VBox([note, slider, stack])
    player.add_class("frame-player")  # the browser tests find the players by this class
    return player
