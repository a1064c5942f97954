"""The front page lists every page of the book: a row of "你将搭建什么" for each chapter of the
table of contents, linking it, a link for each appendix page. A new chapter or appendix cannot
be forgotten. Its picture (images/book_map.svg) is the current output of the drawing."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
INTRO = ROOT / "intro.md"
BOOK_MAP = ROOT / "images" / "book_map.svg"
REDRAW = ("python -c \"from onelayer.book.diagrams import book_map_diagram as f; "
          "open('images/book_map.svg', 'w', encoding='utf-8').write(f().svg())\"")
CHAPTER_FILE = re.compile(r"chapters/(\d\d)_\w+")


def toc_parts() -> dict[str, list[str]]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return {part["caption"]: [c["file"] for c in part["chapters"]] for part in toc["parts"]}


def toc_chapters() -> list[int]:
    """The numbers of the chapters (chapters/NN_*) in the table of contents."""
    return [int(m.group(1)) for files in toc_parts().values() for f in files
            if (m := CHAPTER_FILE.fullmatch(f))]


def toc_appendices() -> list[str]:
    """The other pages of the table of contents: chapters/glossary, chapters/errata, …"""
    return [f for files in toc_parts().values() for f in files if not CHAPTER_FILE.fullmatch(f)]


def section(markdown: str, title: str) -> str:
    """The text of the `## title` section, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", markdown, re.M | re.S)
    assert match, f"首页没有“{title}”一节"
    return match.group(1)


def table_rows(text: str) -> dict[int, list[str]]:
    """Rows of the chapter table, by the number in the first column."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells[0].isdigit():
            rows[int(cells[0])] = cells[1:]
    return rows


def doc_links(markdown: str) -> set[str]:
    """Targets of {doc}`…` links: {doc}`name <target>` or {doc}`target`."""
    targets = re.findall(r"\{doc\}`(?:[^`<]*<([^>`]+)>|([^`<]+))`", markdown)
    return {(a or b).strip() for a, b in targets}


def test_every_chapter_has_a_row_in_what_you_will_build():
    rows = table_rows(section(INTRO.read_text(encoding="utf-8"), "你将搭建什么"))
    chapters = toc_chapters()
    assert chapters, "_toc.yml 里没有找到 chapters/NN_* 的章节"
    missing = [n for n in chapters if n not in rows]
    extra = [n for n in rows if n not in chapters]
    assert missing == [] and extra == [], f"首页的表缺第 {missing} 章，多出第 {extra} 章"
    assert list(rows) == sorted(rows), "表中的章应按顺序排列"
    empty = [n for n, cells in rows.items() if len(cells) < 2 or not all(cells[:2])]
    assert empty == [], f"第 {empty} 章的行没有写部件或要算的东西"


def test_every_chapter_row_links_its_chapter():
    rows = table_rows(section(INTRO.read_text(encoding="utf-8"), "你将搭建什么"))
    files = {int(m.group(1)): f for fs in toc_parts().values() for f in fs
             if (m := CHAPTER_FILE.fullmatch(f))}
    unlinked = [n for n, cells in rows.items() if doc_links(cells[0]) != {files.get(n)}]
    assert unlinked == [], f"首页表中第 {unlinked} 章的部件名没有链接到该章"


def test_the_front_page_picture_is_current_and_described():
    from onelayer.book.diagrams import book_map_diagram

    assert BOOK_MAP.read_text(encoding="utf-8") == book_map_diagram().svg(), (
        f"images/book_map.svg 不是 book_map_diagram() 现在画出的图：在仓库根目录运行 {REDRAW}")
    figure = re.search(r"```\{figure\} images/book_map\.svg\n(.*?)```",
                       INTRO.read_text(encoding="utf-8"), re.S)
    assert figure and re.search(r"^:alt: \S", figure.group(1), re.M), "首页的图要有替代文字"


def test_every_appendix_page_is_linked_from_the_front_page():
    appendices = toc_appendices()
    assert "chapters/reproducibility" in appendices
    missing = [f for f in appendices if f not in doc_links(INTRO.read_text(encoding="utf-8"))]
    assert missing == [], f"首页没有链接这些附录页：{missing}"


def test_intro_guards_see_a_missing_row_and_a_missing_link():
    text = "| 章 | 部件 | 东西 |\n|---|---|---|\n| 1 | FFN | 参数量 |\n| 3 | 残差 | |\n"
    assert list(table_rows(text)) == [1, 3]
    assert table_rows(text)[3] == ["残差", ""]
    links = doc_links("{doc}`术语表 <chapters/glossary>`、{doc}`errata` 和 {doc}`x <a/b>`")
    assert links == {"chapters/glossary", "errata", "a/b"}
    assert section("## 甲\nA\n## 乙\nB\n", "甲") == "A\n"
