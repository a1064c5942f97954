"""Every number glued into a chapter's prose is also printed in that chapter.

JupyterLab (jupyterlab-myst) does not render {glue:text} roles: a reader running a chapter
there sees the value's name, e.g. `mse_1x:.4f`. The number must then be on the page anyway:
printed by a code cell (a table, a line, or onelayer.show_glued's `name = value`), or
written in a code cell as a constant. Checked on the stored outputs, which nbval keeps
equal to what the chapter prints.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9]*.ipynb"))
ROLE = re.compile(r"\{glue:text\}`([^`:]+)(?::([^`]*))?`")
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d*)?(?:e[-+]?\d+)?")
RECORD = "application/papermill.record/text/plain"


def glued_values(cells: list[dict]) -> dict[str, object]:
    values = {}
    for cell in cells:
        for output in cell.get("outputs", []):
            if RECORD in output.get("data", {}):
                text = "".join(output["data"][RECORD])
                try:
                    value = ast.literal_eval(text)
                except (SyntaxError, ValueError):
                    value = text
                values[output["metadata"]["scrapbook"]["name"]] = value
    return values


def visible_text(cells: list[dict]) -> str:
    """What a reader sees of the code cells: their source and their printed outputs."""
    parts = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                parts.append("".join(output["text"]))
            elif "text/plain" in output.get("data", {}):
                parts.append("".join(output["data"]["text/plain"]))
    return "\n".join(parts)


def shown(value: object, spec: str, text: str) -> bool:
    """Whether ``text`` shows ``value`` as the prose writes it (format ``spec``): verbatim, as
    a number that formats the same, or, for a percentage, as the fraction."""
    written = format(value, spec)
    if written in text:
        return True
    for match in NUMBER.findall(text):
        try:
            number = float(match.replace(",", ""))
        except ValueError:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            if written.endswith("%"):
                digits = len(written[:-1].split(".")[1]) if "." in written else 0
                if f"{number:.{digits}%}" == written:
                    return True
            continue
        candidate = int(number) if isinstance(value, int) and number.is_integer() else number
        if format(candidate, spec) == written:
            return True
    return False


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_glued_number_is_printed_in_its_chapter(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    values, text = glued_values(cells), visible_text(cells)
    missing = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for name, spec in ROLE.findall("".join(cell["source"])):
                if name not in values:
                    missing.append(f"{name}（没有 glue 过）")
                elif not shown(values[name], spec or "", text):
                    missing.append(f"{name}:{spec} = {format(values[name], spec or '')}")
    assert missing == [], f"{path.name}：正文引用、却没有打印的数字（用 onelayer.show_glued）"
