"""What a page of the built book costs a reader: bytes transferred, load time, blocking scripts.

Shared by the page-weight test (test_pages.py) and the benchmark (tools/bench_pages.py).
Measured from the browser's own Resource Timing entries, in a fresh context (empty cache).
"""

from __future__ import annotations

# Every resource the page fetched, with the browser's verdict on whether it blocked rendering.
ENTRIES = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const res = performance.getEntriesByType("resource").map(r => ({
    url: r.name, size: r.transferSize, body: r.encodedBodySize,
    type: r.initiatorType, blocking: r.renderBlockingStatus === "blocking",
  }));
  return {html: nav.transferSize, load_ms: nav.loadEventEnd, resources: res};
}"""
# Half a screen at a time; after each step the page renders one frame (requestAnimationFrame),
# so the IntersectionObserver that loads the widget manager sees every position even when the
# machine is busy — a bare timeout could skip past a panel without a frame being drawn.
SCROLL_TO_BOTTOM = """async () => {
  for (let y = 0; y < document.body.scrollHeight; y += window.innerHeight / 2) {
    window.scrollTo(0, y);
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 30)));
  }
}"""


def first_load(entries: dict) -> dict:
    """From ``ENTRIES``: the bytes transferred, the load event (ms), the render-blocking
    scripts and the largest of them, and every resource."""
    blocking = [r for r in entries["resources"] if r["blocking"] and r["type"] == "script"]
    return {
        "weight": entries["html"] + sum(r["size"] for r in entries["resources"]),
        "load_ms": entries["load_ms"],
        "blocking": blocking,
        "blocking_max": max((r["body"] for r in blocking), default=0),
        "resources": entries["resources"],
    }


def measure(browser, server: str, page_path: str, scroll: bool = False) -> dict:
    """First-load weight (bytes), load event (ms) and render-blocking scripts of one page.

    The first load is everything fetched until the network is idle after the load event,
    without scrolling. With ``scroll``, also what scrolling to the bottom adds.
    """
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script("performance.setResourceTimingBufferSize(2000)")
    page = context.new_page()
    try:
        page.goto(f"{server}/{page_path}", wait_until="load")
        page.wait_for_load_state("networkidle")
        result = first_load(page.evaluate(ENTRIES))
        if scroll:
            page.evaluate(SCROLL_TO_BOTTOM)
            # The load state stays "networkidle" once reached: wait until the panels are
            # drawn and no resource has been added for a second.
            page.wait_for_function(
                "() => document.querySelectorAll('.widget-subarea').length >= document"
                ".querySelectorAll('script[type=\"application/vnd.jupyter.widget-view+json\"]')"
                ".length", timeout=120_000)
            count = -1
            while count != (count := page.evaluate(
                    "performance.getEntriesByType('resource').length")):
                page.wait_for_timeout(1000)
            later = page.evaluate(ENTRIES)
            total = later["html"] + sum(r["size"] for r in later["resources"])
            result["after_scroll"] = total - result["weight"]
        return result
    finally:
        context.close()
