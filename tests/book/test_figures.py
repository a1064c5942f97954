"""Figures that the text refers to are numbered, captioned, and referred to by number.

In the notebooks, a figure the prose talks about gets a caption and a name in its code cell's
metadata (``mystnb.figure``), and the prose refers to it with ``{numref}``: the HTML book then
shows "图 4.2" under the figure and the same words in the sentence, with a link. Vague words
such as "上图" or "右图" without a numbered reference in the same cell are not allowed: when a
chapter is reordered they point at the wrong figure. In the built pages every reference
resolves to a numbered figure of the same page, and nothing reads "??".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_site import toc_pages

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
NUMREF = re.compile(r"\{numref\}`(?:[^`<]*<)?(fig-[\w-]+)>?`")
# Words that point at a figure by its position: allowed only beside a numbered reference.
VAGUE = re.compile(r"上图|下图|这张图|左图|右图|上面的图|下面的图|实验[一二三]的图")
NUMBER = re.compile(r"^图 \d+\.\d+")


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def figure_names(path: Path) -> list[str]:
    return [c["metadata"]["mystnb"]["figure"]["name"] for c in cells(path)
            if c["cell_type"] == "code" and "figure" in c["metadata"].get("mystnb", {})]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_figures_referred_to_have_a_name_and_a_caption(path):
    names = figure_names(path)
    referred = [name for c in cells(path) if c["cell_type"] == "markdown"
                for name in NUMREF.findall("".join(c["source"]))]
    assert sorted(set(referred)) == sorted(names), "有名字却没被引用的图，或引用了不存在的图"
    assert len(set(names)) == len(names)
    for c in cells(path):
        figure = c["metadata"].get("mystnb", {}).get("figure")
        if figure:
            assert figure["caption"].strip().endswith("。"), figure
            assert c["metadata"]["mystnb"].get("image", {}).get("alt"), "图要有替代文字"
            assert any({"image/png", "image/svg+xml"} & set(o.get("data", {}))
                       for o in c.get("outputs", [])), "图的单元要有 PNG 或 SVG 输出"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_prose_refers_to_figures_by_number(path):
    vague = [(i, m.group(0)) for i, c in enumerate(cells(path)) if c["cell_type"] == "markdown"
             for m in VAGUE.finditer("".join(c["source"]))
             if not NUMREF.search("".join(c["source"]))]
    assert vague == [], "用 {numref} 指明是哪张图"
    # JupyterLab (jupyterlab-myst) shows a {numref} with its own text as that text, "图 %s"
    # included: the plain form shows the figure's name there, the number in the HTML book.
    templated = [i for i, c in enumerate(cells(path)) if c["cell_type"] == "markdown"
                 and re.search(r"\{numref\}`[^`]*<", "".join(c["source"]))]
    assert templated == []


# In the built page: each numbered reference, its target and the target's caption number.
REFERENCES = """() => {
  const article = document.querySelector("article") || document.body;
  const refs = [...article.querySelectorAll("a.reference span.std-numref")].map(span => {
    const link = span.closest("a");
    const id = decodeURIComponent(link.getAttribute("href").replace(/^[^#]*#/, ""));
    const target = document.getElementById(id);
    const number = target && target.querySelector("figcaption .caption-number");
    return {text: span.textContent.trim(), id, figure: !!(target && target.tagName === "FIGURE"),
            number: number ? number.textContent.trim() : null};
  });
  const figures = [...article.querySelectorAll("figure")].map(f => ({
    id: f.id, number: (f.querySelector(".caption-number") || {}).textContent || null,
    caption: (f.querySelector(".caption-text") || {}).textContent || "",
    image: !!f.querySelector("img[alt]:not([alt=''])"),
  }));
  return {refs, figures, unresolved: article.innerText.includes("??")};
}"""
CHAPTER_PAGES = [p for p in toc_pages() if re.match(r"chapters/\d\d[a-z]?_", p)]


@pytest.mark.browser
@pytest.mark.parametrize("page_path", CHAPTER_PAGES)
def test_built_references_resolve_to_numbered_figures(book_pages, page_path):
    notebook = ROOT / page_path.replace(".html", ".ipynb")
    found = book_pages(page_path).page.evaluate(REFERENCES)
    assert not found["unresolved"], f"{page_path}：有没有解析的引用（??）"
    names = figure_names(notebook)
    assert len(found["refs"]) >= len(names)
    for ref in found["refs"]:
        assert ref["figure"] and ref["id"] in names, ref
        assert NUMBER.match(ref["text"]) and ref["number"], ref
        assert ref["text"].startswith(ref["number"].strip()), ref
    numbered = [f for f in found["figures"] if f["id"] in names]
    assert len(numbered) == len(names)
    for figure in numbered:
        assert NUMBER.match(figure["number"].strip()), figure
        assert figure["caption"].strip() and figure["image"], figure
