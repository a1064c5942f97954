"""The PDF of the whole book (make pdf) and the download menu's link to it.

The browser tests build the single-page book and print it as tools/make_pdf.py does, then
read the PDF back with pypdf: it has the whole book (every chapter's title, in the bookmarks
too), code lines are wrapped rather than cut, the Chinese text comes out as the ideographs that
were written (not the look-alike radicals the CJK font also maps), and every font is embedded.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

import book_pdf  # noqa: E402
import make_pdf  # noqa: E402

# The book's pages, in the order of the table of contents.
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
APPENDICES = ["chapters/glossary.md", "chapters/errata.ipynb", "chapters/reproducibility.md",
              "chapters/references.md"]
# Far fewer than the book has (about 230 A4 pages): a PDF of one chapter would fail.
MIN_PAGES = 120
# Kangxi radicals and the CJK radicals supplement: look-alikes of ideographs.
RADICALS = re.compile("[\u2e80-\u2eff\u2f00-\u2fdf]")
# Cells whose code is shown in the book (hidden code is folded on paper too).
HIDDEN = {"hide-input", "remove-input", "remove-cell"}


def squeeze(text: str) -> str:
    """Text without whitespace: the PDF breaks lines and spaces words its own way."""
    return re.sub(r"\s+", "", text)


def title_of(path: Path) -> str:
    if path.suffix == ".md":
        source = path.read_text(encoding="utf-8")
    else:
        source = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
    return next(line[2:].strip() for line in source.splitlines() if line.startswith("# "))


def shown_code_lines(path: Path) -> list[str]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(line) for cell in notebook["cells"]
            if cell["cell_type"] == "code" and not HIDDEN & set(cell["metadata"].get("tags", []))
            for line in "".join(cell["source"]).splitlines()]


@pytest.fixture(scope="module")
def book_pdf_file(browser, tmp_path_factory):
    make_pdf.build_single_page()
    pdf = tmp_path_factory.mktemp("pdf") / "book.pdf"
    make_pdf.print_book(browser, make_pdf.SINGLE_HTML, pdf)
    return pdf


@pytest.fixture(scope="module")
def reader(book_pdf_file):
    from pypdf import PdfReader

    return PdfReader(book_pdf_file)


def bookmarks(reader) -> list[tuple[str, int]]:
    """(title, page index) of every bookmark, in order."""
    marks: list[tuple[str, int]] = []

    def walk(outline):
        for item in outline:
            if isinstance(item, list):
                walk(item)
            else:
                marks.append((squeeze(item.title), reader.get_destination_page_number(item)))

    walk(reader.outline)
    return marks


def chapter_pages(reader, titles: list[str]) -> dict[str, range]:
    """The pages of each chapter: from its bookmark to the next chapter's."""
    marks = [(re.sub(r"^(\d+\.)+", "", mark), page) for mark, page in bookmarks(reader)]
    starts = [next((page for mark, page in marks if mark == squeeze(title)), None)
              for title in titles]
    assert None not in starts, [t for t, s in zip(titles, starts) if s is None]
    ends = [*starts[1:], len(reader.pages) - 1]
    return {title: range(start, end + 1) for title, start, end in zip(titles, starts, ends)}


def page_text(reader, pages) -> str:
    """Text of some pages (pypdf needs about a second a page here: not the whole book)."""
    return squeeze("".join(reader.pages[i].extract_text() for i in pages))


TITLES = [title_of(path) for path in [*CHAPTERS, *map(ROOT.joinpath, APPENDICES)]]


@pytest.mark.browser
@pytest.mark.slow  # its fixture prints the PDF
def test_the_pdf_holds_every_chapter(reader):
    assert len(reader.pages) > MIN_PAGES
    pages = chapter_pages(reader, TITLES)  # a bookmark for every chapter, in reading order
    starts = [r.start for r in pages.values()]
    assert starts == sorted(starts)
    missing = [t for t, r in pages.items() if squeeze(t) not in page_text(reader, [r.start])]
    assert missing == []


@pytest.mark.browser
def test_long_code_lines_are_wrapped_not_cut(reader):
    longest = sorted(shown_code_lines(CHAPTERS[0]), key=len)[-5:]
    assert len(longest[-1]) > 90  # longer than a line of code on an A4 page
    text = ""
    for i in chapter_pages(reader, TITLES)[TITLES[0]]:  # chapter 1, until all are found
        text += page_text(reader, [i])
        if all(squeeze(line) in text for line in longest):
            break
    cut = [line for line in longest if squeeze(line) not in text]
    assert cut == []


@pytest.mark.browser
def test_chinese_text_is_extractable(reader):
    text = page_text(reader, range(3))
    assert RADICALS.findall(text) == []
    for sentence in ("把一层Transformer拆开，一块一块亲手搭起来。", "逐位置前馈网络（FFN）",
                     "层归一化（LayerNorm）"):
        assert sentence in text


@pytest.mark.browser
def test_every_font_is_embedded(reader):
    fonts = {}
    for page in reader.pages:
        for ref in (page["/Resources"].get_object().get("/Font") or {}).values():
            fonts[ref.idnum] = ref.get_object()
    assert fonts
    for font in fonts.values():
        if font["/Subtype"] == "/Type3":  # glyphs drawn by the PDF's own procedures
            assert font["/CharProcs"]
        else:
            descriptor = font["/DescendantFonts"][0].get_object()["/FontDescriptor"]
            assert {"/FontFile", "/FontFile2", "/FontFile3"} & set(descriptor), font["/BaseFont"]


@pytest.mark.browser
def test_formulas_are_printed_in_katex_fonts(reader):
    """The formulas, typeset when the book was built, are drawn in KaTeX's faces on paper:
    its roman and its math italic at least (the build fails on a formula KaTeX cannot set)."""
    names = {str(ref.get_object().get("/BaseFont", "")).split("+")[-1]
             for page in reader.pages
             for ref in (page["/Resources"].get_object().get("/Font") or {}).values()}
    assert {"KaTeX_Main-Regular", "KaTeX_Math-Italic"} <= names, sorted(names)


def test_a_radical_in_a_to_unicode_map_becomes_its_ideograph():
    cmap = ("begincmap\n2 beginbfchar\n<2E> <2F00>\n<3F> <4E0E>\nendbfchar\n"
            "1 beginbfrange\n<40> <41> <2EE5>\nendbfrange\nendcmap\n")
    fixed = make_pdf.remap_to_unicode(cmap, {0x2F00: 0x4E00, 0x2EE5: 0x9C7C})
    assert "<2E> <4E00>" in fixed and "<3F> <4E0E>" in fixed
    assert "<40> <9C7C>" in fixed and "<41> <2EE6>" in fixed
    assert fixed.startswith("begincmap\n") and fixed.endswith("endcmap\n")
    assert make_pdf.remap_to_unicode(cmap, {0x3000: 0x4E00}) is None


# ---------------------------------------------------------------------------------------
# The download menu.

def page_context(pathto=lambda name, _: f"../{name}"):
    buttons = [{"label": "download-source-button", "type": "link"},
               {"label": book_pdf.PDF_LABEL, "type": "javascript", "javascript": "window.print()"}]
    return {"pathto": pathto, "header_buttons": [
        {"label": "download-buttons", "type": "group", "buttons": buttons}]}


def fake_app(pdf: str, builder: str = "html"):
    return SimpleNamespace(config=SimpleNamespace(book_pdf=pdf),
                           builder=SimpleNamespace(name=builder))


def test_the_download_menu_links_the_pdf_when_there_is_one():
    context = page_context()
    book_pdf.link_pdf(fake_app(book_pdf.PDF_NAME), "chapters/01_ffn", "page.html", context, None)
    (group,) = context["header_buttons"]
    pdf = group["buttons"][1]
    assert pdf["type"] == "link" and pdf["url"] == f"../{book_pdf.PDF_NAME}"
    assert "print" not in json.dumps(context["header_buttons"])


@pytest.mark.parametrize("pdf, builder", [("", "html"), (book_pdf.PDF_NAME, "singlehtml")])
def test_without_a_pdf_the_menu_has_no_pdf_item(pdf, builder):
    context = page_context()
    book_pdf.link_pdf(fake_app(pdf, builder), "intro", "page.html", context, None)
    (group,) = context["header_buttons"]
    assert [b["label"] for b in group["buttons"]] == ["download-source-button"]


def test_make_pdf_prints_then_builds_the_html_that_links_it():
    recipe = re.search(r"^pdf:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    steps = [line.strip() for line in recipe.group(1).splitlines()]
    assert steps[0] == "$(BIN)/python tools/make_pdf.py"
    assert steps[1].startswith("$(BIN)/jupyter-book build . ")
    assert book_pdf.made_pdf(ROOT) == make_pdf.PDF
