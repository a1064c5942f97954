"""The built book on a phone, in dark mode, for assistive technology and on paper.

Every page at 390×844: nothing scrolls sideways, no formula is clipped, figures keep readable
text. Dark mode: figures sit on a neutral card, nothing inside an output is a light slab.
axe-core (node_modules, injected into the page): no serious or critical violation on the
desktop page in light mode, the interactive panels included; outside the panels, none on the
phone and no contrast violation in dark mode; and on every page, none before the first press
of Tab. Print media: code wraps, floating
buttons are hidden. With ONELAYER_SCREENSHOTS=1 (make screenshots), screenshots of every page
(desktop, phone, dark) go to _build/screenshots/ for a person to look at.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from test_site import toc_pages
from visits import DESKTOP, screenshot

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
# The smallest share of its natural size that a figure may be drawn at on a phone: the
# figures' 8–10 pt text then stays at 8 px or more.
FIGURE_MIN_SCALE = 0.7
# Inside these, axe findings belong to the interactive panels, not to the page.
PANELS = ".jupyter-widgets, .widget-container, .widget-html-content, .frame-player"


# The theme's colour scheme: localStorage and the attributes its script sets on <html>.
SCHEME = """mode => {
  const html = document.documentElement;
  const was = [localStorage.getItem('theme'), html.dataset.mode, html.dataset.theme];
  const [stored, dataMode, dataTheme] = Array.isArray(mode) ? mode : [mode, mode, mode];
  if (stored === null) localStorage.removeItem('theme'); else localStorage.setItem('theme', stored);
  for (const [key, value] of [['mode', dataMode], ['theme', dataTheme]]) {
    if (value === null || value === undefined) delete html.dataset[key];
    else html.dataset[key] = value;
  }
  return was;
}"""
# The page settled after a change of its width or colour scheme: the new width has reached it
# (the resize event fires before the next frame), then the theme's and book.js's resize
# handlers have run (they wait 300 and 200 ms after the last resize: a later timer runs after
# them), then the colour transitions a scheme change starts have finished (running ones that
# end, each for at most its remaining time); all within 15 s (a guard against a page that never
# settles, not a speed check), or the check fails.
SETTLED = """async width => {
  const frame = () => new Promise(r => requestAnimationFrame(r));
  const settle = async () => {
    if (width !== null) {
      while (window.innerWidth !== width) await frame();
      await frame(); await frame();
      await new Promise(r => setTimeout(r, 320));
    }
    const ending = document.getAnimations().filter(a => a.playState === 'running'
      && a.effect && a.effect.getComputedTiming().endTime !== Infinity);
    // each for at most its remaining time: one that the browser pauses (content it skips
    // rendering) would otherwise never finish
    const left = a => Math.max(0, a.effect.getComputedTiming().endTime - (a.currentTime || 0));
    await Promise.all(ending.map(a => Promise.race([
      a.finished.catch(() => null),
      new Promise(r => setTimeout(r, left(a) + 50))])));
    await frame();
  };
  const late = new Promise((_, no) => setTimeout(() => no(new Error('页面 15 秒内没有稳定：' +
    JSON.stringify(document.getAnimations().filter(a => a.playState === 'running').slice(0, 5)
      .map(a => [a.transitionProperty || a.animationName, a.effect && a.effect.target
                 && String(a.effect.target.className).slice(0, 40)])))), 15000));
  await Promise.race([settle(), late]);
}"""


@contextlib.contextmanager
def shown_as(page, viewport=None, dark=False):
    """The shared page on another viewport or in dark mode, put back afterwards."""
    if viewport:
        page.set_viewport_size(viewport)
    scheme = page.evaluate(SCHEME, "dark") if dark else None
    page.evaluate(SETTLED, viewport and viewport["width"])
    try:
        yield page
    finally:
        if viewport:
            page.set_viewport_size(DESKTOP)
        if scheme:
            page.evaluate(SCHEME, scheme)
        page.evaluate(SETTLED, viewport and DESKTOP["width"])


# What each look of the page asks of axe-core: every rule, except in dark mode, which changes
# only colours and so gets the contrast rule.
EVERY_RULE = {"resultTypes": ["violations"]}
CONTRAST = {**EVERY_RULE, "runOnly": ["color-contrast"]}


AXE_RUN = """async ([ctx, options]) => (await axe.run(ctx, options)).violations
  .filter(v => ['serious', 'critical'].includes(v.impact))
  .map(v => ({id: v.id, impact: v.impact,
              nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))"""


def run_axe(page, options: dict, **context):
    """axe-core's serious and critical violations, as a keyboard user meets the page: after
    a first press of Tab, at which book.js measures every box that scrolls and keeps a tab
    stop on those that do; and, the first time on a page, before that press too, when only
    the boxes near the screen are measured and the others keep the tab stop they get
    unmeasured. Before the first Tab every rule runs, whatever ``options`` asks."""
    assert AXE.is_file(), f"缺少 {AXE}：请运行 npm ci"
    if not page.evaluate("() => 'axe' in window"):
        page.add_script_tag(path=str(AXE))
    found = []
    if not page.evaluate("() => window.bookTabPressed === true"):
        found += [{**v, "when": "首次按 Tab 之前"}
                  for v in page.evaluate(AXE_RUN, [context, EVERY_RULE])]
    page.keyboard.press("Tab")
    page.evaluate("() => { window.bookTabPressed = true;"
                  " if (document.activeElement) document.activeElement.blur(); }")
    return found + page.evaluate(AXE_RUN, [context, options])


def assert_no_serious_axe_violations(page, options: dict, where: str) -> None:
    """No serious or critical axe-core violation on the page outside the interactive panels."""
    violations = run_axe(page, options, include=[["html"]], exclude=[[PANELS]])
    assert violations == [], (where, violations)


# Geometry of formulas: clipped when part of it is hidden by an ancestor that does not scroll
# or by the edge of the page.
MATH_CLIPPED = """() => {
  const vw = document.documentElement.clientWidth;
  const bad = [];
  const formulas = 'article .katex, article .math > math, article .math-display > math';
  for (const m of document.querySelectorAll(formulas)) {
    const r = m.getBoundingClientRect();
    if (r.width === 0) continue;
    let scrolls = false;
    for (let e = m; e && e !== document.body; e = e.parentElement) {
      const ox = getComputedStyle(e).overflowX;
      if ((ox === 'auto' || ox === 'scroll') && e.clientWidth > 0) { scrolls = true; break; }
      if (ox === 'hidden' || ox === 'clip') {
        const a = e.getBoundingClientRect();
        if (r.left < a.left - 1 || r.right > a.right + 1) {
          bad.push(m.textContent.slice(0, 40) + ' 被裁剪'); break;
        }
      }
    }
    if (!scrolls && (r.left < -1 || r.right > vw + 1)) bad.push(m.textContent.slice(0, 40)
                                                                 + ' 超出页面');
  }
  return bad;
}"""


@pytest.mark.parametrize("page_path", toc_pages())
def test_phone_page_fits_math_is_whole_and_figures_readable(book_pages, page_path):
    with shown_as(book_pages(page_path).page, viewport=PHONE) as page:
        screenshot(page, page_path, "phone")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"手机上页面宽 {width} px，超过 {PHONE['width']} px"
        assert page.evaluate(MATH_CLIPPED) == []
        figures = page.locator("article .cell_output img").evaluate_all(
            "imgs => imgs.filter(i => i.offsetParent !== null && i.naturalWidth > 0)"
            ".map(i => [i.alt.slice(0, 30), i.getBoundingClientRect().width, i.naturalWidth])")
        small = [(alt, round(w / n, 2)) for alt, w, n in figures if w / n < FIGURE_MIN_SCALE]
        assert small == [], f"手机上缩得太小的图（比例低于 {FIGURE_MIN_SCALE}）: {small}"
        assert_no_serious_axe_violations(page, EVERY_RULE, "手机、亮色")


# In dark mode: the colour each figure is drawn on, and every element inside an output whose
# own background is light (a "light slab").
DARK_BACKGROUNDS = """() => {
  const lum = c => {
    const v = c.match(/[\\d.]+/g).map(Number);
    if (v.length > 3 && v[3] === 0) return null;
    const [r, g, b] = v.slice(0, 3).map(x => {
      x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const figures = [...document.querySelectorAll('article .cell_output img')]
    .filter(i => i.offsetParent !== null)
    .map(i => lum(getComputedStyle(i).backgroundColor));
  const slabs = [...document.querySelectorAll('article .cell_output *')]
    .filter(e => e.tagName !== 'IMG' && e.offsetParent !== null && e.offsetWidth > 100
                 && e.offsetHeight > 40 && !e.closest('img'))
    .map(e => [e.className.toString().slice(0, 40), lum(getComputedStyle(e).backgroundColor)])
    .filter(([, l]) => l !== null && l > 0.4);
  return {figures, slabs, page: lum(getComputedStyle(document.body).backgroundColor)};
}"""


@pytest.mark.parametrize("page_path", toc_pages())
def test_dark_mode_figures_on_a_card_and_no_light_slabs(book_pages, page_path):
    with shown_as(book_pages(page_path).page, dark=True) as page:
        screenshot(page, page_path, "dark")
        found = page.evaluate(DARK_BACKGROUNDS)
        assert found["page"] is not None and found["page"] < 0.05, "页面没有切换到暗色"
        # A figure's PNG is transparent or white: it is drawn on a neutral card that is
        # dimmer than white (no white rectangles) and light enough for its dark text.
        for lum in found["figures"]:
            assert lum is not None and 0.45 < lum < 0.8, found["figures"]
        assert found["slabs"] == [], f"暗色模式下输出里的浅色块: {found['slabs']}"
        assert_no_serious_axe_violations(page, CONTRAST, "桌面、暗色")


PRINT_STATE = """() => {
  const shown = sel => [...document.querySelectorAll(sel)]
    .filter(e => getComputedStyle(e).display !== 'none').map(e => sel);
  const code = [...document.querySelectorAll('article div.highlight pre')];
  return {
    clipped: code.filter(p => p.scrollWidth > p.clientWidth + 1)
                 .map(p => p.textContent.slice(0, 40)),
    nowrap: code.filter(p => !getComputedStyle(p).whiteSpace.startsWith('pre-wrap')
                             && !getComputedStyle(p).whiteSpace.startsWith('break-spaces'))
                .length,
    code: code.length,
    floating: ['#pst-back-to-top', '.sidebar-toggle', '.theme-switch-button',
               '.search-button__button', '.copybtn'].flatMap(shown),
  };
}"""


@pytest.mark.parametrize("page_path", toc_pages())
def test_desktop_axe_then_print(book_pages, page_path):
    """Light mode on a desktop: axe-core on the whole page, the panels included; then print
    media: code wraps, no floating buttons."""
    page = book_pages(page_path).page
    assert run_axe(page, EVERY_RULE, include=[["html"]]) == []
    page.emulate_media(media="print")
    page.set_viewport_size({"width": 794, "height": 1123})  # A4 at 96 dpi
    try:
        state = page.evaluate(PRINT_STATE)
    finally:
        page.emulate_media(media="screen")
        page.set_viewport_size(DESKTOP)
    assert state["nowrap"] == 0, state
    assert state["clipped"] == [], f"打印时被裁剪的代码块（共 {state['code']} 个）"
    assert state["floating"] == [], f"打印时仍显示的按钮: {state['floating']}"
