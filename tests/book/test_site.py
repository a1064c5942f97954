"""The built HTML book in headless Chromium: offline, typeset, rendered.

Runs after `jupyter-book build` (make test does both). Without Chromium the tests skip
with the reason; under CI (CI=true) a missing browser or book is a failure (the browser
fixture is in conftest.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
# Full-page screenshots are for a person to look at (make screenshots); a chapter is up to
# ~35 000 px tall and each shot takes seconds, so the test run takes them only when asked.
TAKE_SCREENSHOTS = os.environ.get("ONELAYER_SCREENSHOTS") == "1"
IN_CI = os.environ.get("CI") == "true"
WIDGET_VIEWS = 'script[type="application/vnd.jupyter.widget-view+json"]'
# Console messages that are not errors of the book (none so far). Each entry: a regex
# and why it is harmless.
CONSOLE_ALLOW: list[tuple[str, str]] = []
# A term from each chapter that the search page must find, leading to that chapter.
SEARCH_TERMS = {
    "chapters/01_ffn": "前馈",
    "chapters/02_activation": "激活",
    "chapters/03_residual": "残差",
    "chapters/04_layernorm": "归一化",
    "chapters/05_pre_post_norm": "预热",
    "chapters/06_attention": "自注意力",
    "chapters/07_block": "暂退",
    "chapters/08_tiny_gpt": "召回",
    "chapters/glossary": "术语表",
    "chapters/errata": "勘误",
    "chapters/references": "参考文献",
}


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]


def toc_pages() -> list[str]:
    return [f"{f}.html" for f in toc_files()]


def screenshot(page, page_path: str, kind: str) -> None:
    """With ONELAYER_SCREENSHOTS=1: the whole page to _build/screenshots/<page>__<kind>.png."""
    if TAKE_SCREENSHOTS:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        name = page_path.replace("/", "__").replace(".html", f"__{kind}.png")
        page.screenshot(path=SCREENSHOTS / name, full_page=True, timeout=180_000)


def visit(browser, server, page_path):
    """Open one page; return the page plus every request URL and console error."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"请求失败 {r.url}"))
    page.goto(f"{server}/{page_path}", wait_until="networkidle")
    page.wait_for_function("() => !window.MathJax || !window.MathJax.startup"
                           " || window.MathJax.startup.promise !== undefined")
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.wait_for_load_state("networkidle")
    views = page.locator(WIDGET_VIEWS).count()
    if views:  # the widget manager loads when a panel comes near the screen, then draws them all
        page.evaluate("sel => document.querySelector(sel).parentElement.scrollIntoView()",
                      WIDGET_VIEWS)
        page.wait_for_function("n => document.querySelectorAll('.widget-subarea').length >= n",
                               arg=views, timeout=60_000)
        page.wait_for_load_state("networkidle")
        page.evaluate("window.scrollTo(0, 0)")
    return page, requests, errors


@pytest.mark.parametrize("page_path", toc_pages())
def test_page_is_offline_typeset_and_rendered(browser, server, page_path):
    page, requests, errors = visit(browser, server, page_path)
    try:
        screenshot(page, page_path, "desktop")

        foreign = [u for u in requests if urlparse(u).hostname not in {"127.0.0.1", None}]
        assert foreign == [], f"向外部主机的请求: {foreign}"

        unexplained = [e for e in errors if not any(re.search(p, e) for p, _ in CONSOLE_ALLOW)]
        assert unexplained == [], f"控制台错误: {unexplained}"

        assert page.get_attribute("html", "lang") == "zh-CN"

        text = page.inner_text("article")
        assert "\\(" not in text and "$$" not in text, "有未排版的公式"
        if page.locator("div.math, span.math").count():
            assert page.locator("mjx-container").count() > 0, "MathJax 没有排版"

        for img in page.locator("article img").all():
            src = (img.get_attribute("src") or "")[:80]
            assert img.evaluate("i => i.complete && i.naturalWidth > 0"), f"图片未加载: {src}"
            assert (img.get_attribute("alt") or "").strip(), f"图片缺少替代文字: {src}"

        views = page.locator(WIDGET_VIEWS).count()
        rendered = page.locator(".jupyter-widgets.widget-container, .widget-vbox").count()
        assert rendered >= views, f"{views} 个交互面板中只渲染了 {rendered} 个"
    finally:
        page.close()


def test_chinese_text_renders_with_a_cjk_font(browser, server):
    """Ask Chromium which installed fonts actually drew the chapter title."""
    page, _, _ = visit(browser, server, toc_pages()[1])
    try:
        cdp = page.context.new_cdp_session(page)
        root = cdp.send("DOM.getDocument")["root"]["nodeId"]
        title = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "article h1"})
        cdp.send("CSS.enable")
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": title["nodeId"]})["fonts"]
        families = [f["familyName"] for f in fonts]
        assert any("CJK" in name or "Hei" in name for name in families), families
    finally:
        page.close()


def test_every_chapter_has_a_search_term():
    assert set(toc_files()[1:]) <= set(SEARCH_TERMS)


@pytest.mark.parametrize("chapter", toc_files()[1:])
def test_search_finds_chinese_terms(browser, server, chapter):
    term = SEARCH_TERMS[chapter]
    page, _, _ = visit(browser, server, f"search.html?q={term}")
    try:
        page.wait_for_selector("#search-results ul.search li", timeout=15_000)
        hits = page.eval_on_selector_all("#search-results ul.search li a",
                                         "links => links.map(a => a.getAttribute('href'))")
        assert any(h.split("?")[0].split("#")[0] == f"{chapter}.html" for h in hits), (term, hits)
    finally:
        page.close()


def test_no_launch_buttons_without_a_repository():
    for page in toc_pages():
        html = (HTML / page).read_text(encoding="utf-8")
        for marker in ("mybinder", "colab.research", "launch-buttons", "thebe-launch"):
            assert marker not in html, f"{page}: {marker}"


@pytest.mark.parametrize("page_path", toc_pages())
def test_frame_players_work_without_a_kernel(browser, server, page_path):
    """Moving a frame player's slider shows another precomputed figure, with no Python."""
    page, _, errors = visit(browser, server, page_path)
    try:
        players = page.locator(".frame-player")
        for i in range(players.count()):
            player = players.nth(i)
            shown = "els => els.filter(e => e.offsetParent !== null).map(e => e.alt)"
            before = player.locator("img").evaluate_all(shown)
            player.locator(".noUi-handle").first.focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(200)
            after = player.locator("img").evaluate_all(shown)
            assert len(before) == len(after) == 1 and before != after, (before, after)
        assert errors == []
    finally:
        page.close()
