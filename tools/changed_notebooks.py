"""The chapters an uncommitted edit can change, for `make check`: a notebook runs again when
its own file changed since the last commit, or when it uses an onelayer module that changed
(directly, or through the modules that module imports). Prints their paths, one per line.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "onelayer"


def changed_files() -> set[str]:
    """Paths (relative to the repository) that differ from the last commit, untracked included."""
    def git(*args: str) -> list[str]:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
        return out.stdout.split("\n")
    return {f for f in git("diff", "--name-only", "HEAD") + git("ls-files", "--others",
                                                                 "--exclude-standard") if f}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str) -> set[str]:
    """onelayer modules named by the imports in ``source``; ``from onelayer import X`` also
    names X's submodule when X is one."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("onelayer"):
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("onelayer"))
    return names


def package_graph() -> dict[str, set[str]]:
    """Each onelayer module and the onelayer modules it imports."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in imports_of(path.read_text(encoding="utf-8")) if m in modules}
            for name, path in modules.items()}


def closure(start: set[str], graph: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), [m for m in start if m in graph]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += graph[module]
    return seen


def exported_from() -> dict[str, str]:
    """Where each name that ``onelayer`` itself offers is defined (its ``__init__`` re-exports
    the parts and loads setup, glue and show_glued from the book's runtime)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    where = {name: "onelayer.book.runtime" for name in ("setup", "glue", "show_glued")}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            where.update({a.name: node.module for a in node.names})
    return where


def notebook_modules(path: Path, exports: dict[str, str]) -> set[str]:
    """The onelayer modules a notebook uses: those it imports from, and for names taken from
    ``onelayer`` itself (``from onelayer import X``, ``onelayer.X``) the module defining X."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    modules = imports_of(code)
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "onelayer":
            modules.add(f"onelayer.{node.attr}")
    return {exports.get(m.removeprefix("onelayer."), m) if m.count(".") == 1 else m
            for m in modules}


def notebooks_to_run(changed: set[str]) -> list[str]:
    graph = package_graph()
    graph.pop("onelayer")           # the package's __init__ only re-exports: follow names instead
    for imported in graph.values():
        imported.discard("onelayer")
    exports = exported_from()
    changed_modules = {module_name(ROOT / f) for f in changed
                       if f.startswith("src/onelayer/") and f.endswith(".py")}
    run = []
    for nb in sorted((ROOT / "chapters").glob("[0-9][0-9]*_*.ipynb")):
        rel = str(nb.relative_to(ROOT))
        if rel in changed or closure(notebook_modules(nb, exports), graph) & changed_modules:
            run.append(rel)
    return run


if __name__ == "__main__":
    print("\n".join(notebooks_to_run(changed_files())))
    sys.exit(0)
