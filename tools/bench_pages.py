"""Weight and load time of every page of the built book (make bench).

Serves _build/html locally and opens each page of the table of contents, plus the search
page, in headless Chromium (the machine's /usr/bin/chromium, driven by Playwright; no
browser is downloaded) with an empty cache, three times. For each page it prints the median
of: bytes transferred until the network is idle after the load event (the page as first
opened, before any scrolling), the load event time, the largest render-blocking script,
and how much more a reader downloads after scrolling to the bottom (the lazily loaded
widget manager). Nothing here fails when a target is missed: tests/book/test_pages.py
asserts the limits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tests" / "book"))

from conftest import CHROMIUM, CHROMIUM_ARGS, fontconfig_with_packaged_font, serve  # noqa: E402
from page_metrics import measure  # noqa: E402
from test_site import toc_pages  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not (HTML / "index.html").exists():
        sys.exit("_build/html 不存在：先运行 make book")
    from playwright.sync_api import sync_playwright

    with serve(HTML) as server, tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        fonts = fontconfig_with_packaged_font(Path(tmp))
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                    env={**os.environ, "FONTCONFIG_FILE": str(fonts)})
        print(f"{'页面':34s} {'首次加载':>10s} {'load 事件':>10s} {'最大阻塞脚本':>12s} "
              f"{'滚到底再加':>10s}   （{args.runs} 次的中位数）")
        for page_path in [*toc_pages(), "search.html"]:
            runs = [measure(browser, server, page_path, scroll=True) for _ in range(args.runs)]
            med = {k: statistics.median(r[k] for r in runs)
                   for k in ("weight", "load_ms", "blocking_max", "after_scroll")}
            print(f"{page_path:34s} {med['weight'] / 1e6:8.2f} MB {med['load_ms']:8.0f} ms "
                  f"{med['blocking_max'] / 1e3:9.0f} KB {med['after_scroll'] / 1e6:8.2f} MB")
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
