"""Lighthouse's mobile figures for every page of the built book (make bench).

Serves _build/html locally the way a static host does (text compressed with gzip when the
browser asks for it) and runs Lighthouse (pinned in package.json) with its default mobile
preset — a mid-range phone: 4× slower CPU, simulated slow 4G — in the machine's Chromium,
three times per page. Prints the medians of the performance score, first contentful paint,
total blocking time, largest contentful paint and cumulative layout shift, and the lowest
accessibility, best-practices and SEO scores of the runs, and the page's element count.
``--cpu-slowdown`` stands in for a slower machine (Lighthouse's preset is 4; on a host 1.6×
slower than the one measured, 6.4). Nothing here fails when a target is missed: the page
tests assert what can be checked structurally.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
LIGHTHOUSE = ROOT / "node_modules" / "lighthouse" / "cli" / "index.js"
sys.path.insert(0, str(ROOT / "tests" / "book"))
sys.path.insert(0, str(ROOT / "_ext"))

from conftest import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    QuietHandler,
    fontconfig_with_packaged_font,  # noqa: E402
    serve,
)
from offline_book import node_executable  # noqa: E402
from test_site import toc_pages  # noqa: E402

# Headless Chromium without a display otherwise draws a page's first frame on a one-second
# beat when the page is not ready at once (observed first paints at 0.2, 1.25 or 2.2 s for the
# same page): that is the machine, not the page, and Lighthouse would count it.
FRAME_FLAGS = ["--disable-gpu-vsync", "--disable-frame-rate-limit"]
COMPRESSED = (".html", ".js", ".css", ".json", ".svg", ".txt")
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")


class GzipHandler(QuietHandler):
    """Static files; text types gzip-compressed for a client that accepts it."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if (path.suffix not in COMPRESSED or not path.is_file()
                or "gzip" not in self.headers.get("Accept-Encoding", "")):
            return super().send_head()
        body = _gzipped(path)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return _BytesFile(body)


@functools.cache
def _gzipped(path: Path) -> bytes:
    return gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)


class _BytesFile:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, *_) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        pass


def lighthouse(url: str, env: dict, cpu_slowdown: float = 4) -> dict:
    """One Lighthouse run of ``url``: the figures this script reports."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        flags = " ".join([*CHROMIUM_ARGS, *FRAME_FLAGS, "--headless=new"])
        subprocess.run([node_executable(), str(LIGHTHOUSE), url, "--quiet", "--output=json",
                        f"--output-path={report}", f"--chrome-flags={flags}",
                        f"--only-categories={','.join(CATEGORIES)}",
                        f"--throttling.cpuSlowdownMultiplier={cpu_slowdown}"],
                       env={**env, "CHROME_PATH": CHROMIUM}, check=True)
        lhr = json.loads(report.read_text())
    audits = lhr["audits"]
    scores = {c: round(100 * lhr["categories"][c]["score"]) for c in CATEGORIES}
    return {**scores,
            "fcp": audits["first-contentful-paint"]["numericValue"],
            "lcp": audits["largest-contentful-paint"]["numericValue"],
            "tbt": audits["total-blocking-time"]["numericValue"],
            "cls": audits["cumulative-layout-shift"]["numericValue"],
            "dom": audits["dom-size"]["numericValue"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cpu-slowdown", type=float, default=4,
                        help="Lighthouse 的 CPU 减速倍数（手机预设为 4；更慢的主机如 6.4）")
    parser.add_argument("--html", type=Path, default=HTML, help="构建好的书（默认 _build/html）")
    parser.add_argument("pages", nargs="*", help="页面路径（默认：目录中的每一页和搜索页）")
    args = parser.parse_args()
    if not (args.html / "index.html").exists():
        sys.exit(f"{args.html} 里没有书：先运行 make book")
    pages = args.pages or [*toc_pages(), "search.html"]
    with serve(args.html, GzipHandler) as server, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "FONTCONFIG_FILE": str(fontconfig_with_packaged_font(Path(tmp)))}
        print(f"Lighthouse 手机预设，CPU 减速 {args.cpu_slowdown:g} 倍"
              f"（{args.runs} 次的中位数；无障碍/最佳实践/SEO 取最低）")
        print(f"{'页面':34s} {'性能':>4s} {'FCP':>7s} {'LCP':>7s} {'TBT':>7s} {'CLS':>6s} "
              f"{'无障碍':>4s} {'实践':>4s} {'SEO':>4s} {'元素':>6s}")
        for page_path in pages:
            runs = [lighthouse(f"{server}/{page_path}", env, args.cpu_slowdown)
                    for _ in range(args.runs)]
            med = {k: statistics.median(r[k] for r in runs)
                   for k in ("performance", "fcp", "lcp", "tbt", "cls")}
            low = {c: min(r[c] for r in runs) for c in CATEGORIES[1:]}
            print(f"{page_path:34s} {med['performance']:4.0f} {med['fcp'] / 1e3:6.1f}s "
                  f"{med['lcp'] / 1e3:6.1f}s {med['tbt']:5.0f}ms {med['cls']:6.3f} "
                  f"{low['accessibility']:4d} {low['best-practices']:4d} {low['seo']:4d} "
                  f"{runs[0]['dom']:6.0f}",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
