"""One name per concept: the glossary's "不用的写法" must not appear in any chapter's prose."""

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "chapters" / "glossary.md"


def avoided_spellings() -> dict[str, str]:
    """Map each avoided spelling to the glossary term that replaces it."""
    avoided = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in {"中文", ""} or set(cells[0]) <= {"-"}:
            continue
        for variant in filter(None, re.split(r"[、，,]\s*", cells[3])):
            avoided[variant] = cells[0]
    return avoided


def prose_pages() -> dict[str, str]:
    """The prose of every page in the TOC except the glossary (markdown cells of notebooks)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]] + [f["file"] for part in toc["parts"] for c in part["chapters"]
                             for f in [c, *c.get("sections", [])]]
    pages = {}
    for name in files:
        md, nb = ROOT / f"{name}.md", ROOT / f"{name}.ipynb"
        if md.exists() and md != GLOSSARY:
            pages[name] = md.read_text(encoding="utf-8")
        elif nb.exists():
            cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
            pages[name] = "\n".join("".join(c["source"]) for c in cells
                                    if c["cell_type"] == "markdown")
    return pages


def test_glossary_lists_avoided_spellings():
    assert len(avoided_spellings()) >= 10


@pytest.mark.parametrize(("page", "text"), sorted(prose_pages().items()))
def test_page_uses_glossary_spellings(page, text):
    found = [f"“{v}”应写作“{term}”" for v, term in avoided_spellings().items() if v in text]
    assert found == [], f"{page}: {found}"
