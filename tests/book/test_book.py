"""Guards on the book's structure and stored notebooks."""

import json
from pathlib import Path

import pytest
import yaml
from book_guards import stored_output_problems

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"


def toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return {f["file"] for part in toc["parts"] for c in part["chapters"]
            for f in [c, *c.get("sections", [])]}


def chapter_notebooks() -> list[Path]:
    return sorted(CHAPTERS.glob("*.ipynb"))


def test_every_chapter_file_is_in_the_toc_and_vice_versa():
    on_disk = {f"chapters/{p.stem}" for p in CHAPTERS.iterdir() if p.suffix in {".ipynb", ".md"}}
    assert on_disk == toc_files()


def test_toc_entries_exist():
    for entry in toc_files():
        assert any((ROOT / f"{entry}{ext}").exists() for ext in (".ipynb", ".md")), entry


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_stored_outputs_are_complete(path):
    assert stored_output_problems(path) == []


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_first_code_cell_calls_setup(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert "onelayer.setup()" in "".join(first["source"])


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_figures_have_alt_text(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        has_image = any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
        if has_image:
            alt = cell["metadata"].get("mystnb", {}).get("image", {}).get("alt", "")
            assert alt.strip(), f"图没有替代文字: {''.join(cell['source'])[:60]}"


def test_guard_catches_unexecuted_and_errored_notebooks(tmp_path):
    cell = {"cell_type": "code", "source": "1/0", "metadata": {}, "execution_count": None,
            "outputs": []}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "bad.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert stored_output_problems(path) == ["有未执行的代码单元"]
    cell["execution_count"] = 2
    cell["outputs"] = [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "",
                        "traceback": []}]
    path.write_text(json.dumps(nb), encoding="utf-8")
    problems = stored_output_problems(path)
    assert len(problems) == 2 and "ZeroDivisionError" in problems[1]


def test_config_keeps_the_book_offline():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    sphinx = config["sphinx"]["config"]
    assert sphinx["html_math_renderer"] == "katex_prerender"
    assert all("://" not in url for url in sphinx["nb_ipywidgets_js"])
    assert not (ROOT / "_static").exists(), "_static/ 中的每个 .js 都会被注入每一页"
    assert config["execute"]["execute_notebooks"] == "off"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_experiment_cells_assert_their_claims_and_are_not_compared(path):
    """A cell tagged ``experiment`` (something trained or sampled) is not compared digit by
    digit, and it or a code cell after it, before the next text cell, asserts something."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for i, cell in enumerate(cells):
        tags = cell["metadata"].get("tags", [])
        if "experiment" not in tags:
            continue
        source = "".join(cell["source"])
        assert "nbval-ignore-output" in tags, f"实验单元的输出不应逐字比对: {source[:60]}"
        following = []
        for later in cells[i:]:
            if later["cell_type"] != "code":
                break
            following.append("".join(later["source"]))
        assert any("assert " in s for s in following), f"实验没有 assert: {source[:60]}"


def test_experiment_guard_catches_a_claim_without_assert(tmp_path):
    def cell(source, tags=()):
        return {"cell_type": "code", "source": source, "execution_count": 1, "outputs": [],
                "metadata": {"tags": list(tags)}}

    nb = {"cells": [cell("loss = train()", ["experiment", "nbval-ignore-output"]),
                    cell("print(loss)")], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "bad.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(AssertionError, match="实验没有 assert"):
        test_experiment_cells_assert_their_claims_and_are_not_compared(path)
    nb["cells"][1]["source"] = "assert loss < 1"
    path.write_text(json.dumps(nb), encoding="utf-8")
    test_experiment_cells_assert_their_claims_and_are_not_compared(path)
