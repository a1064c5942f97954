"""The built HTML book in headless Chromium: offline, typeset, rendered.

Runs after `jupyter-book build` (make test does both). Without Chromium the tests skip
with the reason; under CI (CI=true) a missing browser or book is a failure (the browser
fixture is in conftest.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from visits import WIDGET_VIEWS, screenshot, search

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
# Console messages that are not errors of the book (none so far). Each entry: a regex
# and why it is harmless.
CONSOLE_ALLOW: list[tuple[str, str]] = []
# A term from each chapter that the search page must find, leading to that chapter.
SEARCH_TERMS = {
    "chapters/01_ffn": "前馈",
    "chapters/01a_width_study": "容量不够",
    "chapters/02_activation": "激活",
    "chapters/02a_dead_relu": "坏更新",
    "chapters/02b_gating_study": "对照任务",
    "chapters/03_residual": "残差",
    "chapters/03a_depth_study": "信号塌缩",
    "chapters/04_layernorm": "归一化",
    "chapters/04a_invariance_study": "雅可比矩阵",
    "chapters/04b_deep_study": "秩塌缩",
    "chapters/05_attention": "自注意力",
    "chapters/05a_order_study": "排列等变",
    "chapters/05b_cost_study": "KV 缓存",
    "chapters/06_block": "暂退",
    "chapters/06a_compute_study": "交点",
    "chapters/06b_depth_dropout_study": "倒置暂退",
    "chapters/07_tiny_gpt": "召回",
    "chapters/07a_facts_study": "均值消融",
    "chapters/07b_shape_study": "贪心解码",
    "chapters/08_pre_post_norm": "预热",
    "chapters/08a_warmup_study": "二阶矩",
    "chapters/08b_gradient_study": "平方根",
    "chapters/09_modern_layer": "分组查询注意力",
    "chapters/09a_qknorm_study": "几十万",
    "chapters/09b_gqa_study": "滑动窗口",
    "chapters/09c_layers_study": "相邻配对",
    "chapters/10_songci": "浣溪沙",
    "chapters/10a_rhyme_study": "韵部嵌入",
    "chapters/10b_controls_study": "二元语法",
    "chapters/10c_long_model_study": "打乱配对",
    "chapters/11_inside": "logit 透镜",
    "chapters/glossary": "术语表",
    "chapters/errata": "勘误",
    "chapters/reproducibility": "计算路径",
    "chapters/references": "参考文献",
}


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [f["file"] for part in toc["parts"] for c in part["chapters"]
                            for f in [c, *c.get("sections", [])]]     # 一章的研究页在它下面


def toc_pages() -> list[str]:
    return [f"{f}.html" for f in toc_files()]


def title_fonts(page) -> list[str]:
    """The installed fonts Chromium actually drew the page's title with."""
    cdp = page.context.new_cdp_session(page)
    try:
        root = cdp.send("DOM.getDocument")["root"]["nodeId"]
        title = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "article h1"})
        cdp.send("CSS.enable")
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": title["nodeId"]})["fonts"]
        return [f["familyName"] for f in fonts]
    finally:
        cdp.detach()


@pytest.mark.parametrize("page_path", toc_pages())
def test_page_is_offline_typeset_and_rendered(book_pages, page_path):
    seen = book_pages(page_path)
    page = seen.page
    screenshot(page, page_path, "desktop")

    foreign = [u for u in seen.requests if urlparse(u).hostname not in {"127.0.0.1", None}]
    assert foreign == [], f"向外部主机的请求: {foreign}"

    unexplained = [e for e in seen.errors if not any(re.search(p, e) for p, _ in CONSOLE_ALLOW)]
    assert unexplained == [], f"控制台错误: {unexplained}"

    assert page.get_attribute("html", "lang") == "zh-CN"
    families = title_fonts(page)
    assert any("CJK" in name or "Hei" in name for name in families), families

    text = page.inner_text("article")
    assert "\\(" not in text and "$$" not in text, "有未排版的公式"
    typeset = page.locator(
        "div.math > .katex-display, div.math > .math-display > math, span.math > math")
    assert page.locator("div.math, span.math").count() == typeset.count(), "有公式没有在构建时排版"

    for img in page.locator("article img").all():
        src = (img.get_attribute("src") or "")[:80]
        assert img.evaluate("i => i.complete && i.naturalWidth > 0"), f"图片未加载: {src}"
        assert (img.get_attribute("alt") or "").strip(), f"图片缺少替代文字: {src}"

    views = page.locator(WIDGET_VIEWS).count()
    rendered = page.locator(".jupyter-widgets.widget-container, .widget-vbox").count()
    assert rendered >= views, f"{views} 个交互面板中只渲染了 {rendered} 个"


def test_every_chapter_has_a_search_term():
    assert set(toc_files()[1:]) <= set(SEARCH_TERMS)


@pytest.mark.parametrize("chapter", toc_files()[1:])
def test_search_finds_chinese_terms(search_tab, server, chapter):
    assert f"{chapter}.html" in search(search_tab, server, SEARCH_TERMS[chapter])
    assert search_tab.errors == []


def test_no_launch_buttons_without_a_repository():
    for page in toc_pages():
        html = (HTML / page).read_text(encoding="utf-8")
        for marker in ("mybinder", "colab.research", "launch-buttons", "thebe-launch"):
            assert marker not in html, f"{page}: {marker}"


# Each frame player's slider: its name, the value it announces, what the readout shows, its
# size, and the one figure shown.
PLAYERS = """players => players.map(p => {
  const s = p.querySelector(".widget-slider"), h = s.querySelector(".noUi-handle");
  const r = h.getBoundingClientRect(), readout = s.querySelector(".widget-readout");
  return {name: h.getAttribute("aria-label"), text: h.getAttribute("aria-valuetext"),
          shown: (readout.value || readout.textContent).trim(),
          label: s.querySelector(".widget-label").textContent.trim(), w: r.width, h: r.height,
          figures: [...p.querySelectorAll("img")].filter(e => e.offsetParent !== null)
                     .map(e => e.alt)};
})"""


@pytest.mark.parametrize("page_path", toc_pages())
def test_frame_players_work_without_a_kernel(book_pages, page_path):
    """A frame player's slider is named, announces its rounded value and is big enough to
    touch; a key press shows another precomputed figure, with no Python, and the opposite
    key brings the first one back."""
    seen = book_pages(page_path)
    page, players = seen.page, seen.page.locator(".frame-player")
    for i in range(players.count()):
        (before,) = players.nth(i).evaluate_all(PLAYERS)
        assert before["name"] and before["name"] == before["label"], before
        assert before["text"] == before["shown"], before
        assert re.fullmatch(r"-?[\d.e+-]{1,8}", before["text"]), before
        assert before["w"] >= 24 and before["h"] >= 24, before
        assert len(before["figures"]) == 1, before
        handle = players.nth(i).locator(".noUi-handle").first
        for key, back in (("ArrowRight", False), ("ArrowLeft", True)):
            handle.focus()
            page.keyboard.press(key)
            page.wait_for_function(  # the figure and the value are (or are again) the first
                f"([p, first, text, back]) => {{ const now = ({PLAYERS})([p])[0];"
                " return now.figures.length === 1 && now.text === now.shown"
                " && (now.figures[0] === first) === back && (now.text === text) === back; }",
                arg=[players.nth(i).element_handle(), before["figures"][0], before["text"], back],
                timeout=5_000)
            (now,) = players.nth(i).evaluate_all(PLAYERS)
            assert now["text"] == now["shown"] and len(now["figures"]) == 1, now
            assert (now["text"] == before["text"]) == back, (before, now)
    assert seen.errors == []


# Opened from the disk, as a reader does with the built book: displayed formulas in KaTeX's
# fonts, inline ones laid out as MathML (taller than a line when they have a fraction),
# the header's icons, the frame players (the widget manager and its saved state) and the
# panels, with no console error. Chapter 1 has frame players, chapter 5 the most formulas.
FILE_PAGES = ["chapters/01_ffn.html", "chapters/05_attention.html"]
FONTS_DRAWN = """async () => {
  const inline = [...document.querySelectorAll('span.math > math')];
  const display = document.querySelector('.katex-display');
  if (display) { display.scrollIntoView(); await document.fonts.ready; }
  return {math: document.fonts.check('16px KaTeX_Main') && document.fonts.check('16px KaTeX_Math'),
          mathml: inline.some(m => m.getBoundingClientRect().width > 0),
          icons: document.fonts.check('900 16px "Font Awesome 6 Free"'),
          loaded: [...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)};
}"""


@pytest.mark.parametrize("page_path", FILE_PAGES)
def test_chapter_works_opened_from_the_disk(browser, page_path):
    from visits import new_tab

    if not (HTML / "index.html").exists():
        pytest.skip("书还没有构建（make book）")
    seen = new_tab(browser)
    page = seen.page
    try:
        page.goto((HTML / page_path).as_uri(), wait_until="load")
        fonts = page.evaluate(FONTS_DRAWN)
        assert fonts["math"] and fonts["mathml"] and fonts["icons"], fonts
        for i in range(page.locator(".onelayer-panel").count()):
            page.locator(".onelayer-panel").nth(i).scroll_into_view_if_needed()
        page.wait_for_function("() => [...document.querySelectorAll('.onelayer-panel')]"
                               ".every(p => p.dataset.mounted)", timeout=30_000)
        views = page.locator(WIDGET_VIEWS).count()
        if views:
            page.locator(WIDGET_VIEWS).first.evaluate("v => v.parentElement.scrollIntoView()")
            page.wait_for_function("n => document.querySelectorAll('.widget-subarea').length >= n",
                                   arg=views, timeout=60_000)
        assert seen.errors == [], seen.errors
    finally:
        page.context.close()
