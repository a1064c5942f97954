"""What every page costs and says around the text: weight, blocking scripts, icons,
Chinese search, the Chinese interface, the meta description and the last-updated date.

Browser tests (marked ``browser``) use the built book and the machine's Chromium like
test_site.py; the git tests of the last-updated date run without a browser.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from page_metrics import first_load
from test_site import HTML, ROOT, toc_files, toc_pages
from visits import search

sys.path.insert(0, str(ROOT / "_ext"))
import reader_pages  # noqa: E402

# Issue 13, item 3: every page at most 2.5 MB on first load. Issue 26: no script blocks the
# first paint, and no page runs a math runtime (formulas are typeset when the book is built).
MAX_FIRST_LOAD = 2_500_000
MATH_RUNTIME = re.compile(r"mathjax|katex(\.min)?\.js|auto-render", re.I)
# Compound queries and the chapter each must bring first (issue 13, item 4).
COMPOUND_QUERIES = {
    "激活函数": "chapters/02_activation",
    "层归一化": "chapters/04_layernorm",
    "前置归一化": "chapters/08_pre_post_norm",
    "召回率": "chapters/07_tiny_gpt",    # defined there (事实召回率)
    "残差连接": "chapters/03_residual",
    "逐位置前馈网络": "chapters/01_ffn",
}
# Latin words allowed in the interface around the text (file types, key names, the book's
# own English terms in its titles).
LATIN_ALLOWED = {"pdf", "ipynb", "md", "ctrl", "k", "transformer", "ffn", "layernorm",
                 "pre", "post", "norm", "gpt", "tinygpt", "relu", "gelu", "silu", "glu", "swiglu",
                 "qk"}


def source_of(doc: str) -> Path:
    matches = [p for p in ROOT.glob(f"{doc}.*") if p.suffix in {".md", ".ipynb"}]
    assert len(matches) == 1, (doc, matches)
    return matches[0]


@pytest.mark.browser
@pytest.mark.parametrize("page_path", [*toc_pages(), "search.html"])
def test_first_load_is_light_and_no_script_blocks_the_first_paint(book_pages, page_path):
    m = first_load(book_pages(page_path).first_load_entries)
    assert m["weight"] <= MAX_FIRST_LOAD, (
        f"{page_path}: 首次加载 {m['weight'] / 1e6:.2f} MB > {MAX_FIRST_LOAD / 1e6} MB："
        + ", ".join(f"{r['url'].rsplit('/', 1)[-1]} {r['size'] // 1000} KB"
                    for r in sorted(m["resources"], key=lambda r: -r["size"])[:5]))
    assert m["blocking"] == [], f"阻塞首次绘制的脚本: {[r['url'] for r in m['blocking']]}"
    fetched = " ".join(r["url"] for r in m["resources"])
    assert "fontawesome.js" not in fetched and "embed-amd.js" not in fetched
    assert not MATH_RUNTIME.search(fetched), f"{page_path} 加载了公式排版脚本"


@pytest.mark.browser
@pytest.mark.parametrize("page_path", ["chapters/10_songci.html"])
def test_a_panels_big_data_loads_only_when_the_panel_comes_near(book_pages, page_path):
    """Chapter 10's writer carries a whole model (about 1.8 MB): the page names its file, the
    first load does not fetch it, and the panel writes once it has been scrolled to."""
    visit = book_pages(page_path)
    first = [r["url"] for r in visit.first_load_entries["resources"]]
    assert not [url for url in first if "/_static/panels/" in url], first
    root = visit.page.locator(".onelayer-panel[data-kind=songci]")
    assert root.locator("script[data-src]").count() == 1
    root.scroll_into_view_if_needed()
    visit.page.wait_for_selector(".onelayer-panel[data-kind=songci][data-mounted]")
    assert re.search(r"\d+ 字 [✓✗]", root.inner_text()), root.inner_text()


def test_only_big_panel_data_moves_to_a_file_of_its_own(tmp_path):
    def panel(pid, data):
        return (f'<div class="onelayer-panel" id="{pid}" data-kind="gpt" role="group">'
                f'<script type="application/json">{data}</script><p>…</p></div>')

    small, big = '{"w":"' + "a" * 10 + '"}', '{"w":"' + "b" * reader_pages.LAZY_PANEL_BYTES + '"}'
    page = panel("olp-gpt-small", small) + panel("olp-gpt-big", big)
    moved = reader_pages.move_big_panel_data(page, tmp_path, lambda path, _: "../" + path)
    assert panel("olp-gpt-small", small) in moved and big not in moved
    assert ('<div class="onelayer-panel" id="olp-gpt-big" data-kind="gpt" role="group">'
            '<script type="application/json" data-src="../_static/panels/olp-gpt-big.js">'
            '</script>') in moved
    stored = (tmp_path / "_static" / "panels" / "olp-gpt-big.js").read_text(encoding="utf-8")
    assert stored == f'window.onelayerPanels.data["olp-gpt-big"] = {big};\n'


def test_widget_manager_only_on_pages_with_widgets():
    for page in toc_pages():
        text = (HTML / page).read_text(encoding="utf-8")
        has_state = "application/vnd.jupyter.widget-state+json" in text
        assert ("widgets_offline.js" in text) == has_state, page
        assert "embed-amd.js" not in text and "require.js" not in text, page
        assert "fontawesome.js" not in text, page


@pytest.mark.browser
@pytest.mark.parametrize("page_path", toc_pages()[1:2])
def test_icons_render_without_the_font_awesome_script(book_pages, page_path):
    seen = book_pages(page_path)
    assert not any("fontawesome.js" in u for u in seen.requests)
    icons = seen.page.eval_on_selector_all(
            "i.fa-solid, i.fas, span.fa-solid, i.fa-brands, i.fab",
            """els => els.filter(e => e.offsetParent !== null).map(e => {
                 const before = getComputedStyle(e, "::before");
                 const width = e.getBoundingClientRect().width;
                 return [e.className, before.content, before.fontFamily, width];
               })""")
    assert len(icons) >= 3, icons
    for name, content, family, width in icons:
        assert content not in ("none", "normal", '""') and "Font Awesome" in family, name
        assert width > 4, name
    assert seen.page.evaluate("document.fonts.check('900 16px \"Font Awesome 6 Free\"')")


@pytest.mark.browser
@pytest.mark.parametrize("query", COMPOUND_QUERIES)
def test_compound_chinese_query_finds_its_chapter_first(search_tab, server, query):
    pages = search(search_tab, server, query)
    terms = search_tab.page.evaluate("q => onelayerSplitQuery(q)", query)
    assert terms and all(t in query for t in terms), terms
    assert pages and pages[0] == f"{COMPOUND_QUERIES[query]}.html", (query, terms, pages[:5])
    assert search_tab.errors == []


def test_the_chinese_index_splits_and_stems_as_sphinx_does():
    from sphinx.search.zh import SearchChinese

    text = "LayerNorm 与 RMSNorm：GPT 的 FFN 把 d_model 放宽到 4 倍，GELU 与 ReLU。" * 3
    words = {}
    for language in (SearchChinese, reader_pages.ChineseIndex):
        index = language({})
        words[language] = [index.stem(w) for w in index.split(text) if index.word_filter(w)]
    assert words[reader_pages.ChineseIndex] == words[SearchChinese]
    assert "gpt" in words[SearchChinese] and "放宽" in words[SearchChinese]
    assert isinstance(reader_pages.ChineseIndex({}).latin_terms, set)


@pytest.mark.browser
@pytest.mark.parametrize("page_path", [*toc_pages(), "search.html"])
def test_interface_around_the_text_is_chinese(book_pages, page_path):
    strings = book_pages(page_path).page.evaluate("""() => {
      const out = [];
      // The book's own words: the article, search results, and links to its pages and
      // sections (tables of contents, previous/next) carry the titles the authors wrote.
      const outside = e => !e.closest(
        "article, .bd-article, #search-results, .bd-search, a.reference, .prev-next-title");
      document.querySelectorAll("[title], [aria-label], [placeholder], [data-bs-title]")
        .forEach(e => {
          if (!outside(e) && !e.matches(".bd-search input, .bd-search button")) return;
          for (const a of ["title", "aria-label", "placeholder", "data-bs-title"]) {
            if (e.hasAttribute(a)) out.push(e.getAttribute(a));
          }
        });
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (el && outside(el) && el.offsetParent !== null
            && !el.closest("script, style, pre, code")) out.push(n.textContent);
      }
      return out;
    }""")
    english = sorted({s.strip() for s in strings
                      if any(w.lower() not in LATIN_ALLOWED
                             for w in re.findall(r"[A-Za-z]{2,}", s))})
    assert english == [], f"{page_path}: 界面上还有英文: {english}"


def test_folded_code_toggles_speak_chinese():
    # myst-nb's default toggle text is "Show code cell source"; _config.yml sets it
    for page in toc_pages():
        text = (HTML / page).read_text(encoding="utf-8")
        assert "Show code cell" not in text and "Hide code cell" not in text, page
        if "tag_hide-input" in text:
            assert ">显示代码<" in text and ">隐藏代码<" in text, page


def test_every_page_has_its_own_meta_description():
    seen = {}
    for page in toc_pages():
        text = (HTML / page).read_text(encoding="utf-8")
        found = re.findall(r'<meta name="description" content="([^"]*)"', text)
        assert len(found) == 1, page
        assert 20 <= len(found[0]) <= reader_pages.DESCRIPTION_CHARS, (page, found[0])
        assert re.search(r"[\u4e00-\u9fff]", found[0]), (page, found[0])
        seen.setdefault(found[0], []).append(page)
    assert all(len(pages) == 1 for pages in seen.values()), seen


def test_every_page_shows_the_date_of_its_last_commit():
    if reader_pages.git_history_problem(str(ROOT)) is not None:
        pytest.skip(f"此检出没有完整的 git 历史：{reader_pages.git_history_problem(str(ROOT))}")
    for doc in toc_files():
        text = (HTML / f"{doc}.html").read_text(encoding="utf-8")
        shown = re.search(r"最后更新于\s*([^<]*?)\s*[。.]?\s*<", text)
        assert shown, f"{doc}: 页脚没有最后更新日期"
        date = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(source_of(doc))],
                              cwd=ROOT, capture_output=True, text=True).stdout.strip()
        assert shown.group(1) == (date or "尚未提交"), (doc, shown.group(1), date)


@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    if shutil.which("git") is None or reader_pages.git_history_problem(str(ROOT)) is not None:
        pytest.skip("需要 git 和完整历史的检出")
    base = tmp_path_factory.mktemp("clones")
    run = dict(cwd=base, check=True, capture_output=True)
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), "full"], **run)
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", "--depth", "1",
                    f"file://{ROOT}", "shallow"], **run)
    return base


def test_last_updated_from_a_fresh_clone(clones):
    reader_pages.git_history_problem.cache_clear()
    full = str(clones / "full")
    assert reader_pages.git_history_problem(full) is None
    source = Path("chapters") / "01_ffn.ipynb"
    expected = subprocess.run(["git", "log", "-1", "--format=%cs", "HEAD", "--", str(source)],
                              cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert reader_pages.last_commit_date(full, source) == expected != ""


def test_last_updated_says_why_it_is_unknown(clones, tmp_path, monkeypatch):
    reader_pages.git_history_problem.cache_clear()
    assert "浅克隆" in reader_pages.git_history_problem(str(clones / "shallow"))
    assert "不在 git 仓库" in reader_pages.git_history_problem(str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on PATH
    reader_pages.git_history_problem.cache_clear()
    assert "没有 git" in reader_pages.git_history_problem(str(ROOT))
    reader_pages.git_history_problem.cache_clear()


def test_icon_fonts_keep_every_icon_the_stylesheets_draw():
    """The Font Awesome fonts are cut to the icons the pruned stylesheets still name (header
    buttons, the notes' and answers' icons): each of those code points has its glyph."""
    from fontTools.ttLib import TTFont

    static = HTML / "_static"
    if not (static / "styles" / "pydata-sphinx-theme.css").exists():
        pytest.skip("书还没有构建（make book）")
    css = "".join(p.read_text(encoding="utf-8") for p in static.rglob("*.css"))
    drawn = {int(escape, 16) if escape else ord(char)
             for escape, char in reader_pages.ICON_CODE.findall(css)}
    fonts = sorted((static / "vendor" / "fontawesome" / "webfonts").glob("*.woff2"))
    kept = set().union(*(TTFont(font).getBestCmap() for font in fonts))
    assert {0xF0EB, 0xF0F3, 0xF05A, 0xF0C9} <= drawn  # tip, answer, note, the menu button
    assert drawn <= kept, sorted(map(hex, drawn - kept))
