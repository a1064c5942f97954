"""The package's shape: dependencies point one way, ``import onelayer`` stays light."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "onelayer"
HEAVY = ("matplotlib", "IPython", "ipywidgets", "tqdm", "transformers")


def imported_modules(path: Path, top_level_only: bool = False) -> set[str]:
    """Modules ``path`` imports; with ``top_level_only``, not those imported inside a function
    (``onelayer.setup`` is loaded from the book that way, on first use)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE).parts
    return relative[0] if relative[0] in ("chapters", "book") else "parts"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_dependencies_point_one_way(path):
    forbidden = {"parts": ("onelayer.chapters", "onelayer.book"),
                 "chapters": ("onelayer.book",), "book": ()}[layer(path)]
    imports = imported_modules(path, top_level_only=True)
    assert not [m for m in imports if m.startswith(forbidden)], f"{path.name} 反向依赖"
    if layer(path) != "book":
        # transformers only inside reference's functions: it is an optional extra
        heavy = [m for m in imported_modules(path) if m.split(".")[0] in HEAVY
                 and not (path.name == "reference.py" and m.startswith("transformers"))]
        assert not heavy, f"{path.name} 不应导入 {heavy}"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_no_module_over_400_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 400


def test_import_onelayer_loads_no_book_machinery():
    # torch itself loads tqdm: count only what onelayer adds
    code = ("import sys, torch; before = set(sys.modules); import onelayer; "
            "from onelayer import FeedForward, TransformerBlock, TinyGPT; "
            "added = {m.split('.')[0] for m in set(sys.modules) - before}; "
            f"print(sorted(added & {set(HEAVY)!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_setup_is_loaded_lazily():
    code = "import onelayer; print(callable(onelayer.setup), callable(onelayer.glue))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True True"


def declared_distributions() -> set[str]:
    import re
    import tomllib
    project = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    project = project["project"]
    specs = project["dependencies"] + [d for extra in project["optional-dependencies"].values()
                                       for d in extra]
    return {re.split(r"[=<>!~\[; ]", spec, maxsplit=1)[0].lower() for spec in specs}


def test_every_third_party_import_is_declared():
    """Each module the package imports (at any depth, inside functions too) is the standard
    library's, onelayer's own, or comes from a distribution pyproject.toml declares."""
    from importlib.metadata import packages_distributions
    providers = packages_distributions()
    imported = {m.split(".")[0] for p in PACKAGE.rglob("*.py") for m in imported_modules(p)}
    third_party = imported - set(sys.stdlib_module_names) - {"onelayer", "__future__"}
    undeclared = {m: providers.get(m) for m in third_party
                  if not {d.lower() for d in providers.get(m, [m])} & declared_distributions()}
    assert not undeclared, f"pyproject.toml 未声明这些导入所属的包：{undeclared}"
