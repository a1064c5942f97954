"""Sphinx extension: every formula typeset at build time by KaTeX, so that no page runs a math
runtime.

The HTML writer's math renderer ``katex_prerender`` sends each formula's TeX to one Node
process (``katex_server.js``, KaTeX from ``node_modules``) and writes KaTeX's HTML and MathML
into the page. Pages with math get KaTeX's stylesheet and its WOFF2 fonts, copied from
``node_modules`` into ``_static/offline/katex``. A formula KaTeX cannot typeset fails the
build with its TeX and KaTeX's message.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

from docutils import nodes
from offline_book import node_executable
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number

SERVER = Path(__file__).with_name("katex_server.js")
CSS = "offline/katex/katex.min.css"
FONTS = "_static/offline/katex/fonts/"


class KatexProcess:
    """One Node process that answers formulas in order; answers are cached by formula."""

    def __init__(self, node_modules: Path) -> None:
        if not (node_modules / "katex").is_dir():
            raise ExtensionError(f"缺少 {node_modules / 'katex'}：请先运行 npm ci"
                                 "（make book 会自动运行）")
        self.process = subprocess.Popen([node_executable(), str(SERVER), str(node_modules)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        encoding="utf-8")
        self.lock = threading.Lock()
        self.typeset: dict[tuple[str, bool], str] = {}

    def render(self, tex: str, display: bool) -> str:
        if (tex, display) not in self.typeset:
            with self.lock:
                self.process.stdin.write(json.dumps({"tex": tex, "display": display}) + "\n")
                self.process.stdin.flush()
                answer = json.loads(self.process.stdout.readline())
            if "error" in answer:
                raise ExtensionError(f"KaTeX 无法排版公式 {tex!r}：{answer['error']}")
            self.typeset[tex, display] = answer["html"]
        return self.typeset[tex, display]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def katex_of(translator) -> KatexProcess:
    app = translator.builder.app
    if getattr(app, "_katex", None) is None:
        app._katex = KatexProcess(Path(app.srcdir) / "node_modules")
    return app._katex


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(katex_of(self).render(node.astext(), False) + "</span>")
    raise nodes.SkipNode


def display_tex(node: nodes.math_block) -> str:
    """The TeX of a display: as written when it sets its own environment (``nowrap``, as
    the amsmath blocks do); otherwise each paragraph one equation, a multi-line one aligned."""
    if node["nowrap"]:
        return node.astext()
    parts = [p for p in node.astext().split("\n\n") if p.strip()]
    parts = [rf"\begin{{aligned}}{p}\end{{aligned}}" if r"\\" in p else p for p in parts]
    if len(parts) == 1:
        return parts[0]
    return r"\begin{gathered}" + r"\\".join(parts) + r"\end{gathered}"


def visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    self.body.append(katex_of(self).render(display_tex(node), True) + "</div>\n")
    raise nodes.SkipNode


# The faces of nearly every formula, fetched with the stylesheet rather than when the first
# formula is laid out (reader_pages.preload_fonts): a face that came after the first paint
# would reflow the text around its formulas (a layout shift).
PRELOADED_FONTS = ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2")


def add_katex_css(app: Sphinx, pagename: str, templatename: str, context: dict,
                  doctree: nodes.document | None) -> None:
    if doctree is not None and app.env.get_domain("math").has_equations(pagename):
        app.add_css_file(CSS)
        context.setdefault("preload_fonts", []).extend(FONTS + name for name in PRELOADED_FONTS)


def copy_katex(app: Sphinx, exception: Exception | None) -> None:
    katex = getattr(app, "_katex", None)
    if katex is not None:
        katex.close()
        app._katex = None
    if exception is not None or app.builder.format != "html":
        return
    dist = Path(app.srcdir) / "node_modules" / "katex" / "dist"
    target = Path(app.outdir) / "_static" / "offline" / "katex"
    (target / "fonts").mkdir(parents=True, exist_ok=True)
    shutil.copy2(dist / "katex.min.css", target / "katex.min.css")
    for font in (dist / "fonts").glob("*.woff2"):   # 样式表先列 WOFF2，浏览器都支持
        shutil.copy2(font, target / "fonts" / font.name)


def setup(app: Sphinx) -> dict:
    app.add_html_math_renderer("katex_prerender", (visit_math, None), (visit_displaymath, None))
    app.connect("html-page-context", add_katex_css)
    app.connect("build-finished", copy_katex)
    return {"parallel_read_safe": True, "parallel_write_safe": False}
