"""What a page costs a reader's browser (_ext/page_speed.py, _ext/book_math.py): bytes on the
first load, scripts that block the first paint, elements to lay out; panel data, widget state
and figures loaded when they come near; icons without Font Awesome's script.

Browser tests (marked ``browser``) use the built book and the machine's Chromium like
test_site.py.
"""

from __future__ import annotations

import re
import sys

import pytest
from page_metrics import first_load
from test_site import HTML, ROOT, toc_pages

sys.path.insert(0, str(ROOT / "_ext"))
import book_math  # noqa: E402
import page_speed  # noqa: E402

# Issue 13, item 3: every page at most 2.5 MB on first load. Issue 26: no script blocks the
# first paint, and no page runs a math runtime (formulas are typeset when the book is built).
MAX_FIRST_LOAD = 2_500_000
MATH_RUNTIME = re.compile(r"mathjax|katex(\.min)?\.js|auto-render", re.I)
# Issue 38, item 9: layout is what a phone spends its time on (a chapter of 13,000 elements
# took 2.5 s of style and layout under Lighthouse's phone throttle): at most this many
# elements on every page as first loaded (panels and widgets draw themselves when near).
MAX_ELEMENTS = 6_000


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
@pytest.mark.parametrize("page_path", ["chapters/10_songci.html",
                                       "chapters/10a_rhyme_study.html"])
def test_a_panels_big_data_loads_only_when_the_panel_comes_near(book_pages, page_path):
    """Chapter 10's writers carry a whole model (about 1.8 MB): the page names its file, the
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

    small, big = '{"w":"' + "a" * 10 + '"}', '{"w":"' + "b" * page_speed.LAZY_PANEL_BYTES + '"}'
    page = panel("olp-gpt-small", small) + panel("olp-gpt-big", big)
    moved = page_speed.move_big_panel_data(page, tmp_path, lambda path, _: "../" + path)
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


def test_icon_fonts_keep_every_icon_the_stylesheets_draw():
    """The Font Awesome fonts are cut to the icons the pruned stylesheets still name (header
    buttons, the notes' and answers' icons): each of those code points has its glyph."""
    from fontTools.ttLib import TTFont

    static = HTML / "_static"
    if not (static / "styles" / "pydata-sphinx-theme.css").exists():
        pytest.skip("书还没有构建（make book）")
    css = "".join(p.read_text(encoding="utf-8") for p in static.rglob("*.css"))
    drawn = {int(escape, 16) if escape else ord(char)
             for escape, char in page_speed.ICON_CODE.findall(css)}
    fonts = sorted((static / "vendor" / "fontawesome" / "webfonts").glob("*.woff2"))
    kept = set().union(*(TTFont(font).getBestCmap() for font in fonts))
    assert {0xF0EB, 0xF0F3, 0xF05A, 0xF0C9} <= drawn  # tip, answer, note, the menu button
    assert drawn <= kept, sorted(map(hex, drawn - kept))


@pytest.mark.browser
@pytest.mark.parametrize("page_path", [*toc_pages(), "search.html"])
def test_a_page_has_few_elements_to_lay_out(book_pages, page_path):
    elements = book_pages(page_path).first_load_elements
    assert elements <= MAX_ELEMENTS, f"{page_path}: {elements} 个元素 > {MAX_ELEMENTS}"


def test_code_tokens_without_a_span_keep_their_colour():
    """The tokens whose span is dropped are drawn in the code block's own colour, light and
    dark (pydata-sphinx-theme's Pygments styles, in the built pygments.css)."""
    css = (HTML / "_static" / "pygments.css").read_text(encoding="utf-8")
    for theme in ("light", "dark"):
        base = re.search(rf'html\[data-theme="{theme}"\] \.highlight {{[^}}]*color: (#\w+)', css)
        assert base, theme
        for token in page_speed.PLAIN_TOKENS:
            rule = re.search(rf'html\[data-theme="{theme}"\] \.highlight \.{token} {{([^}}]*)}}',
                             css)
            assert rule is None or rule.group(1).strip() == f"color: {base.group(1)}", (
                theme, token, rule and rule.group(1))


def test_code_tokens_of_one_group_have_one_colour():
    css = (HTML / "_static" / "pygments.css").read_text(encoding="utf-8")
    for theme in ("light", "dark"):
        for group in page_speed.COLOUR_GROUPS:
            rules = {re.search(rf'html\[data-theme="{theme}"\] \.highlight \.{cls} {{([^}}]*)}}',
                               css).group(1).strip() for cls in group}
            assert len(rules) == 1, (theme, group, rules)


def test_code_spans_are_fewer_and_the_text_the_same():
    block = ('<div class="highlight"><pre><span></span><span class="n">x</span>'
             '<span class="w"> </span><span class="o">=</span><span class="o">=</span>'
             '<span class="w"> </span><span class="n">f</span><span class="p">(</span>'
             '<span class="s2">&quot;a&quot;</span><span class="p">)</span>\n</pre></div>')
    lean = page_speed.fewer_code_spans(f"<p>{block}</p>")
    assert lean == ('<p><div class="highlight"><pre>x <span class="s">==</span> f('
                    '<span class="s">&quot;a&quot;</span>)\n</pre></div></p>')
    assert re.sub(r"<[^>]+>", "", lean) == re.sub(r"<[^>]+>", "", f"<p>{block}</p>")


def test_inline_formulas_are_lean_mathml():
    """KaTeX's MathML without its annotation, lone mrows and mathvariants that MathML Core
    does not draw; an upright word is one identifier."""
    katex = ('<span class="katex"><math xmlns="http://www.w3.org/1998/Math/MathML"><semantics>'
             '<mrow><mrow><mi mathvariant="normal">s</mi><mi mathvariant="normal">m</mi></mrow>'
             '<mo stretchy="false">(</mo><msub><mi>x</mi><mrow><mi>i</mi></mrow></msub>'
             '<mo stretchy="false">)</mo><mo>∈</mo><msup><mi mathvariant="double-struck">R</mi>'
             '<mi>d</mi></msup><mrow><mo>−</mo></mrow><mn mathvariant="bold">1</mn><mi '
             'mathvariant="script">L</mi></mrow><annotation encoding="application/x-tex">'
             r'\mathrm{sm}(x_{i})</annotation></semantics></math></span>')
    assert book_math.lean_mathml(katex) == (
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow>'
        '<mi mathvariant="normal">sm</mi><mo stretchy="false">(</mo><msub><mi>x</mi>'
        '<mi>i</mi></msub><mo stretchy="false">)</mo><mo>∈</mo><msup><mi>ℝ</mi><mi>d</mi>'
        '</msup><mrow><mo>−</mo></mrow><mn>𝟏</mn><mi>ℒ</mi></mrow></math>')
