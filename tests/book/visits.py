"""Opening a page of the built book the way a reader does, once for all the checks of that page.

``visit`` loads a page in a fresh browser context (empty cache), waits for
the interactive panels to be drawn, and keeps every request and console error. The page
tests of one page run one after another in one test process (tests/conftest.py groups
them), so ``PageVisits`` hands them one shared visit: a check that changes the page (its
viewport, its colour scheme, print media) puts it back, and the checks that move the panels'
controls are marked ``changes_page`` and run last.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from page_metrics import ENTRIES

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "_build" / "screenshots"
# Full-page screenshots are for a person to look at (make screenshots); a chapter is up to
# ~35 000 px tall and each shot takes seconds, so the test run takes them only when asked.
TAKE_SCREENSHOTS = os.environ.get("ONELAYER_SCREENSHOTS") == "1"
WIDGET_VIEWS = 'script[type="application/vnd.jupyter.widget-view+json"]'
DESKTOP = {"width": 1280, "height": 900}


@dataclass
class Visit:
    page: object                                   # playwright's Page
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    first_load_entries: dict = field(default_factory=dict)  # page_metrics.ENTRIES, unscrolled
    first_load_elements: int = 0                   # the page's elements, as first loaded


def new_tab(browser) -> Visit:
    """A tab in a fresh browser context (empty cache) that records requests and errors."""
    context = browser.new_context(viewport=DESKTOP)
    context.add_init_script("performance.setResourceTimingBufferSize(2000)")
    seen = Visit(context.new_page())
    seen.page.on("request", lambda r: seen.requests.append(r.url))
    seen.page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    seen.page.on("pageerror", lambda e: seen.errors.append(str(e)))
    seen.page.on("requestfailed", lambda r: seen.errors.append(f"请求失败 {r.url}（{r.failure}）"))
    return seen


def search(tab: Visit, server: str, query: str) -> list[str]:
    """The pages the book's search page lists for ``query``, best first (``tab.errors`` then
    holds this search's errors only)."""
    tab.errors.clear()
    tab.page.goto(f"{server}/search.html?q={query}", wait_until="load")
    tab.page.wait_for_selector("#search-results ul.search li", timeout=15_000)
    tab.page.wait_for_function(
        "() => !document.querySelector('#search-progress')"
        " || document.querySelector('#search-progress').textContent === ''", timeout=15_000)
    hits = tab.page.eval_on_selector_all("#search-results ul.search li > a",
                                         "links => links.map(a => a.getAttribute('href'))")
    # The search page then fetches each hit's page for its summary: let those finish, or the
    # next search's navigation aborts them and they show up as that search's failed requests.
    tab.page.wait_for_load_state("networkidle")
    return [h.split("?")[0].split("#")[0] for h in hits]


def visit(browser, server: str, page_path: str) -> Visit:
    """Open one page; keep every request URL and console error, and what the first load
    fetched (before the panels are scrolled into view)."""
    seen = new_tab(browser)
    page = seen.page
    page.goto(f"{server}/{page_path}", wait_until="networkidle")
    seen.first_load_entries = page.evaluate(ENTRIES)
    seen.first_load_elements = page.evaluate("document.getElementsByTagName('*').length")
    # The browser draws a section only when it comes near the screen (content-visibility);
    # the checks look at the page as a reader who has scrolled through it sees it.
    page.add_style_tag(content=".bd-article section { content-visibility: visible !important; }")
    # Figures load when they come near the screen; the checks look at every one of them.
    page.evaluate("() => document.querySelectorAll('img[loading=lazy]')"
                  ".forEach(img => { img.loading = 'eager'; })")
    page.wait_for_function("() => [...document.images].every(img => img.complete)")
    views = page.locator(WIDGET_VIEWS).count()
    if views:  # the widget manager loads when a panel comes near the screen, then draws them all
        page.evaluate("sel => document.querySelector(sel).parentElement.scrollIntoView()",
                      WIDGET_VIEWS)
        page.wait_for_function("n => document.querySelectorAll('.widget-subarea').length >= n",
                               arg=views, timeout=60_000)
        page.wait_for_load_state("networkidle")
        page.evaluate("window.scrollTo(0, 0)")
    panels = page.locator(".onelayer-panel")
    if panels.count():  # each panel computes (and loads big data) when it comes near
        for i in range(panels.count()):
            panels.nth(i).scroll_into_view_if_needed()
        page.wait_for_function("() => [...document.querySelectorAll('.onelayer-panel')]"
                               ".every(p => p.dataset.mounted)", timeout=60_000)
        page.evaluate("window.scrollTo(0, 0)")
    return seen


class PageVisits:
    """One visit per page and test process: ``visits(page_path)`` opens the page the first
    time and returns the same visit afterwards; opening another page closes the last one."""

    def __init__(self, browser, server: str):
        self.browser, self.server = browser, server
        self.path: str | None = None
        self.current: Visit | None = None

    def __call__(self, page_path: str) -> Visit:
        if page_path != self.path:
            self.close()
            self.current, self.path = visit(self.browser, self.server, page_path), page_path
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.page.context.close()
        self.current = self.path = None


def screenshot(page, page_path: str, kind: str) -> None:
    """With ONELAYER_SCREENSHOTS=1: the whole page to _build/screenshots/<page>__<kind>.png."""
    if TAKE_SCREENSHOTS:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        name = page_path.replace("/", "__").replace(".html", f"__{kind}.png")
        page.screenshot(path=SCREENSHOTS / name, full_page=True, timeout=180_000)
