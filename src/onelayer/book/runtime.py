"""What every chapter notebook calls: ``setup()`` at the top, ``glue()`` for prose numbers."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from IPython.core.formatters import format_display_data
from IPython.display import display

from onelayer.book.plotting import use_book_style, use_palette_png


def setup(seed: int = 0, threads: int = 1, precision: int = 4) -> None:
    """Make a notebook reproducible and readable.

    Seeds Python, NumPy and PyTorch; fixes the thread count (results and speed do not
    depend on the machine's core count); prints tensors at ``precision`` decimals; sets
    the figure style with the packaged CJK font and palette PNGs (``onelayer.book.plotting``).
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.set_printoptions(precision=precision, sci_mode=False)
    np.set_printoptions(precision=precision, suppress=True)
    use_book_style()
    use_palette_png()


def progress_bar(steps: Iterable[int]) -> Iterable[int]:
    """A progress bar over a training loop's steps (on stderr, updated at most once a second;
    hidden in the HTML book)."""
    from tqdm import tqdm

    return tqdm(steps, file=sys.stderr, mininterval=1.0)


GLUE_PREFIX = "application/papermill.record/"
_glued: dict[str, Any] = {}


def glue(name: str, value: Any) -> None:
    """Store ``value`` so the prose can quote it as {glue:text}`name` (myst-nb).

    Emits exactly what ``myst_nb.glue(name, value, display=False)`` emits (a test checks
    this) without importing myst_nb, whose import pulls in nbformat and costs a notebook
    kernel seconds of start-up.
    """
    bundle, metadata = format_display_data(value)
    metadata["scrapbook"] = {"name": name, "mime_prefix": GLUE_PREFIX}
    display({GLUE_PREFIX + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
    _glued[name] = value


def show_glued(*names: str, prefix: str | None = None) -> None:
    """Print glued values as ``name = value`` on one line: ``names``, then every value glued
    so far whose name starts with ``prefix``, in the order they were glued.

    JupyterLab does not render {glue:text} roles (jupyterlab-myst shows the name, e.g.
    ``ratio_plain``): a code cell prints the values its prose quotes and no line above shows.
    """
    if prefix is not None:
        names += tuple(name for name in _glued if name.startswith(prefix))
    print("，".join(f"{name} = {_glued[name]}" for name in names))


def swept_values(chapter: str, quantity: str, path: str | Path = "claims.json") -> list[float]:
    """One recorded quantity of the claim sweep, one value per seed group: the first assert of
    the group that compared it, its smallest value there (``make claims`` writes
    chapters/claims.json; a notebook runs in chapters/, hence the default path). Empty while
    the chapter has not been swept (a chapter running inside the sweep reads a partial file)."""
    path = Path(path)
    results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    groups = results.get("chapters", {}).get(chapter, {}).get("groups", {})
    values = []
    for group in groups.values():
        recorded = [record["values"][quantity][0] for record in group["claims"].values()
                    if quantity in record["values"]]
        values += recorded[:1]
    return values


def swept_total(chapter: str, quantity: str, path: str | Path = "claims.json"
                ) -> tuple[int, int]:
    """The claim sweep's total of one recorded quantity over its seed groups, and how many
    groups recorded it: the rate a chapter states beside this run's count."""
    values = swept_values(chapter, quantity, path)
    return int(sum(values)), len(values)


def show_source(function: Any) -> None:
    """Show the source of a ``onelayer`` function as a highlighted code block: the code the
    chapter runs, read where it is defined (not a copy that could drift from it)."""
    import inspect

    from IPython.display import Markdown

    display(Markdown(f"```python\n{inspect.getsource(function)}```"))
