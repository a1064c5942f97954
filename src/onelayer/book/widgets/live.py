"""Live panels: a function of the controls' values, recomputed by the kernel on every change.

``live_output`` replaces ipywidgets' ``interactive_output`` for two reasons that show in
JupyterLab 4.6, where comm messages run on a kernel subshell thread while the main thread
goes on with the next cells:

- a float slider sends its value back as soon as the browser draws it, snapped to its step
  in floating point (0.6 → 0.6000000000000001, 0.8 → 0.7999999999999998). That is no change
  to a reader, but ``interactive_output`` recomputes, on the other thread, while the notebook
  is still running. Here values are rounded to the control's step first, and the function
  runs only when the rounded values differ from the ones last drawn;
- ``interactive_output`` flushes pyplot's inline figures around every call, from whichever
  thread the call runs on, closing the figures the main thread is drawing. Panels draw on
  figures they own (``plotting.new_figure``) and need no flush.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import ipywidgets as widgets


def step_decimals(step: float) -> int:
    """Decimal places of ``step`` as written: 0.1 → 1, 0.05 → 2, 0.5 → 1, 2.0 → 0."""
    exponent = Decimal(repr(float(step))).normalize().as_tuple().exponent
    return max(0, -int(exponent))


def readout_format(step: float) -> str:
    """The readout format that shows a value on a grid of ``step`` exactly: 0.1 → ".1f"."""
    return f".{step_decimals(step)}f"


def float_slider(value: float, min: float, max: float, step: float,  # noqa: A002 - ipywidgets names
                 description: str, **kwargs: Any) -> widgets.FloatSlider:
    """A FloatSlider whose readout has as many decimals as its step (0.60 → 0.6)."""
    return widgets.FloatSlider(value=value, min=min, max=max, step=step,
                               description=description, readout_format=readout_format(step),
                               **kwargs)


def rounded_value(control: widgets.Widget) -> Any:
    """The control's value rounded to its step, as a reader reads it off the control.

    A float slider's value is rounded to the decimals of its step (and of its minimum);
    a log slider's exponent is rounded to the decimals of its step. Other controls' values
    are returned as they are.
    """
    value = control.value
    if isinstance(control, widgets.FloatLogSlider):
        exponent = round(math.log(value, control.base), step_decimals(control.step))
        return float(f"{control.base ** exponent:.12g}")
    if isinstance(control, widgets.FloatSlider | widgets.FloatRangeSlider):
        digits = max(step_decimals(control.step), step_decimals(control.min))
        if isinstance(value, tuple):
            return tuple(round(v, digits) for v in value)
        return round(value, digits)
    return value


def live_output(update: Callable[..., None],
                controls: Mapping[str, widgets.Widget]) -> widgets.Output:
    """An Output showing ``update(**values)``; redrawn when a control's rounded value changes.

    Like ``ipywidgets.interactive_output(update, controls)``, without its pyplot flushes, and
    without redrawing for a value that only differs from the drawn one below the step.
    """
    out = widgets.Output()
    drawn: dict[str, Any] = {}

    def redraw(change: dict | None = None) -> None:
        values = {name: rounded_value(control) for name, control in controls.items()}
        if values == drawn:
            return
        drawn.clear()
        drawn.update(values)
        with out:
            out.clear_output(wait=True)
            update(**values)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return out
