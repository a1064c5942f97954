"""Checks on the stored notebooks, shared by the book build and the test suite.

The book is built from the outputs stored in the notebooks (nbval re-runs them and
compares every text output), so a stored notebook must be complete: every code cell
executed, top to bottom in one run, with no error output.
"""

from __future__ import annotations

import json
from pathlib import Path


def stored_output_problems(path: Path) -> list[str]:
    """What is wrong with the outputs stored in notebook ``path`` (empty when nothing)."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    counts = [c.get("execution_count") for c in cells]
    problems = []
    if any(n is None for n in counts):
        problems.append("有未执行的代码单元")
    elif counts != list(range(1, len(counts) + 1)):
        problems.append(f"没有在一次运行中自上而下执行（执行序号 {counts}）")
    errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        problems.append(f"存有 {len(errors)} 个错误输出（{errors[0].get('ename')}）")
    return problems
