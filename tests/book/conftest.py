"""Headless Chromium for the browser tests (the built book, the chapters in JupyterLab).

Without Chromium the browser tests skip with the reason; under CI (CI=true) a missing browser
is a failure. Chromium gets the Noto Sans CJK font of the figures (noto-cjk-sans-otc) through
fontconfig, so the pages need no system CJK font either. Playwright drives the machine's
Chromium and never downloads a browser of its own.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
# The same browser that make test looks for before it runs the browser tests.
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
IN_CI = os.environ.get("CI") == "true"
# Flags for a closed network: no background requests to Google's services at start-up.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def fontconfig_with_packaged_font(directory: Path) -> Path:
    """A fontconfig file: the machine's configuration plus the directory of the packaged font."""
    from onelayer.book.plotting import packaged_font_file

    font = packaged_font_file()
    assert font is not None, "noto-cjk-sans-otc 没有安装（pip install -r requirements.txt）"
    machine = os.environ.get("FONTCONFIG_FILE", "/etc/fonts/fonts.conf")
    config = directory / "fonts.conf"
    config.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n'
        f'<fontconfig>\n  <include ignore_missing="yes">{machine}</include>\n'
        f"  <dir>{font.parent}</dir>\n  <cachedir>{directory / 'cache'}</cachedir>\n"
        "</fontconfig>\n",
        encoding="utf-8",
    )
    return config


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        if IN_CI:
            pytest.fail(f"CI 中必须有 {CHROMIUM}（apt-get install chromium）")
        pytest.skip(f"没有 {CHROMIUM}：浏览器测试跳过（apt-get install chromium 后可运行）")
    from playwright.sync_api import sync_playwright

    fonts = fontconfig_with_packaged_font(tmp_path_factory.mktemp("fontconfig"))
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                              env={**os.environ, "FONTCONFIG_FILE": str(fonts)})
        yield b
        b.close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


@contextlib.contextmanager
def serve(directory: Path, handler_class=QuietHandler):
    """Serve ``directory`` on a free local port; yields the base URL."""
    handler = functools.partial(handler_class, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


@pytest.fixture(scope="session")
def server():
    """The built book (_build/html) on a local server."""
    if not (HTML / "index.html").exists():
        if IN_CI:
            pytest.fail("_build/html 不存在：先运行 jupyter-book build")
        pytest.skip("书还没有构建（make book）")
    with serve(HTML) as url:
        yield url


@pytest.fixture(scope="session")
def book_pages(browser, server):
    """``book_pages(page_path)``: the page's one shared visit in this test process (visits.py)."""
    from visits import PageVisits

    visits = PageVisits(browser, server)
    yield visits
    visits.close()


@pytest.fixture(scope="session")
def search_tab(browser):
    """One tab for every search of this test process (visits.search)."""
    from visits import new_tab

    tab = new_tab(browser)
    yield tab
    tab.page.context.close()
