"""Sphinx extension: every formula typeset at build time by KaTeX, so that no page runs a math
runtime.

The HTML writer's math renderer ``katex_prerender`` sends each formula's TeX to one Node
process (``katex_server.js``, KaTeX from ``node_modules``). A formula KaTeX cannot typeset
fails the build with its TeX and KaTeX's message.

- A formula in the text of the HTML book is MathML only, which the browsers lay out
  natively (Chrome 109+, Firefox, Safari) in the reader's math font (Cambria Math, STIX Two
  Math, …; ``book.css``), and which screen readers read. KaTeX's HTML drawing, which it
  writes beside the MathML, was about 25 spans a formula: two thirds of a chapter's
  elements, and seconds of layout on a phone. The MathML is made smaller still
  (``lean_mathml``): no TeX annotation, no single-child ``mrow``, one ``mi`` for an upright
  word, and the font variants that MathML Core does not draw (bold, double-struck, script)
  written as Unicode's math letters.
- A displayed formula with rows, braces, stretched delimiters or big operators keeps KaTeX's
  drawing (and its MathML for screen readers), as does every formula of the single-page
  book printed to the PDF: laid out natively in a system math font (DejaVu Math TeX Gyre on
  Linux), an underbrace did not stretch, a displayed sum kept its text size and the rows of
  an aligned block touched. Other displayed formulas are MathML too. Pages with such formulas get
  KaTeX's stylesheet and its WOFF2 fonts, copied from ``node_modules`` into
  ``_static/offline/katex``.

sphinxcontrib-katex's ``katex_prerender`` also typesets with Node at build time, but writes
KaTeX's HTML and MathML (the large page above) and keeps a KaTeX stylesheet on every page.
"""

from __future__ import annotations

import json
import re
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
        self.typeset: dict[tuple[str, bool, str], str] = {}

    def render(self, tex: str, display: bool, output: str = "htmlAndMathml") -> str:
        """KaTeX's HTML and MathML (``htmlAndMathml``), or lean MathML alone (``mathml``)."""
        key = (tex, display, output)
        if key not in self.typeset:
            with self.lock:
                self.process.stdin.write(
                    json.dumps({"tex": tex, "display": display, "output": output}) + "\n")
                self.process.stdin.flush()
                answer = json.loads(self.process.stdout.readline())
            if "error" in answer:
                raise ExtensionError(f"KaTeX 无法排版公式 {tex!r}：{answer['error']}")
            html = answer["html"]
            self.typeset[key] = lean_mathml(html) if output == "mathml" else html
        return self.typeset[key]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def katex_of(translator) -> KatexProcess:
    app = translator.builder.app
    if getattr(app, "_katex", None) is None:
        app._katex = KatexProcess(Path(app.srcdir) / "node_modules")
    return app._katex


def mathml_only(translator) -> bool:
    """The HTML book's inline formulas are MathML; the single page (printed) keeps KaTeX's
    drawing."""
    return translator.builder.name != "singlehtml"


# MathML Core draws ``mathvariant="normal"`` only: the other variants become Unicode's
# mathematical letters (with the older letters that fill the holes of those blocks).
VARIANT_STARTS = {  # variant: (A, a, 0)
    "bold": (0x1D400, 0x1D41A, 0x1D7CE),
    "italic": (0x1D434, 0x1D44E, None),
    "bold-italic": (0x1D468, 0x1D482, None),
    "script": (0x1D49C, 0x1D4B6, None),
    "fraktur": (0x1D504, 0x1D51E, None),
    "double-struck": (0x1D538, 0x1D552, 0x1D7D8),
    "sans-serif": (0x1D5A0, 0x1D5BA, 0x1D7E2),
    "monospace": (0x1D670, 0x1D68A, 0x1D7F6),
}
VARIANT_HOLES = {
    ("italic", "h"): "ℎ", ("script", "B"): "ℬ", ("script", "E"): "ℰ", ("script", "F"): "ℱ",
    ("script", "H"): "ℋ", ("script", "I"): "ℐ", ("script", "L"): "ℒ", ("script", "M"): "ℳ",
    ("script", "R"): "ℛ", ("script", "e"): "ℯ", ("script", "g"): "ℊ", ("script", "o"): "ℴ",
    ("fraktur", "C"): "ℭ", ("fraktur", "H"): "ℌ", ("fraktur", "I"): "ℑ", ("fraktur", "R"): "ℜ",
    ("fraktur", "Z"): "ℨ", ("double-struck", "C"): "ℂ", ("double-struck", "H"): "ℍ",
    ("double-struck", "N"): "ℕ", ("double-struck", "P"): "ℙ", ("double-struck", "Q"): "ℚ",
    ("double-struck", "R"): "ℝ", ("double-struck", "Z"): "ℤ",
}


def math_letters(variant: str, text: str) -> str | None:
    """``text`` in Unicode's math letters of ``variant``; None when one has none."""
    starts = VARIANT_STARTS.get(variant)
    if starts is None:
        return None
    out = []
    for char in text:
        if (variant, char) in VARIANT_HOLES:
            out.append(VARIANT_HOLES[variant, char])
        elif "A" <= char <= "Z":
            out.append(chr(starts[0] + ord(char) - ord("A")))
        elif "a" <= char <= "z":
            out.append(chr(starts[1] + ord(char) - ord("a")))
        elif "0" <= char <= "9" and starts[2] is not None:
            out.append(chr(starts[2] + ord(char) - ord("0")))
        else:
            return None
    return "".join(out)


VARIANT_TOKEN = re.compile(r'<(m[ino]|mtext) mathvariant="([a-z-]+)">([^<]*)</\1>')
UPRIGHT_LETTERS = re.compile(r'(?:<mi mathvariant="normal">[A-Za-z]</mi>){2,}')
ANNOTATION = re.compile(r'<semantics>(.*)<annotation encoding="application/x-tex">.*?'
                        r'</annotation></semantics>', re.S)
# An mrow without attributes whose content is one element (not an operator, whose spacing
# can depend on it; its own content holding no mrow): that element alone means the same.
LONE_MROW = re.compile(r"<mrow>(<(m(?!o\b)\w+)\b[^>]*>(?:(?!<mrow\b|<\2\b).)*?</\2>)</mrow>", re.S)


def lean_mathml(html: str) -> str:
    """KaTeX's MathML (``output: "mathml"``) with fewer elements, the same formula: see the
    module's docstring. The ``<math>`` loses KaTeX's ``<span class="katex">``."""
    html = re.sub(r'^<span class="katex">(.*)</span>$', r"\1", html, flags=re.S)
    html = ANNOTATION.sub(r"\1", html)
    html = UPRIGHT_LETTERS.sub(
        lambda m: f'<mi mathvariant="normal">{"".join(re.findall(r">(.)<", m.group(0)))}</mi>',
        html)

    def variant(match: re.Match) -> str:
        tag, name, text = match.groups()
        if name == "normal":
            return match.group(0)
        letters = math_letters(name, text)
        if letters is None:
            style = "font-weight:bold" if "bold" in name else "font-style:normal"
            return f'<{tag} style="{style}">{text}</{tag}>'
        return f"<{tag}>{letters}</{tag}>"

    html = VARIANT_TOKEN.sub(variant, html)
    while True:
        lean = LONE_MROW.sub(r"\1", html)
        if lean == html:
            return lean
        html = lean


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    output = "mathml" if mathml_only(self) else "htmlAndMathml"
    self.body.append(katex_of(self).render(node.astext(), False, output) + "</span>")
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


# What a system math font laid out worse than KaTeX (DejaVu Math TeX Gyre, in Chromium):
# aligned or stacked rows, stretched braces and delimiters, big operators with limits.
NEEDS_KATEX_DRAWING = re.compile(
    r"\\(?:begin|underbrace|overbrace|sum|prod|int|lim|max|min|left|big|Big|bigg|Bigg)"
    r"(?![A-Za-z])|\\\\")


def visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    tex = display_tex(node)
    if mathml_only(self) and not NEEDS_KATEX_DRAWING.search(tex):
        mathml = katex_of(self).render(tex, True, "mathml")   # a box that scrolls when wide
        self.body.append(f'<span class="math-display">{mathml}</span></div>\n')
    else:
        self.body.append(katex_of(self).render(tex, True) + "</div>\n")
    raise nodes.SkipNode


# In the printed single page, the faces of nearly every formula, fetched with the stylesheet
# rather than when the first formula is laid out (page_speed.preload_fonts): a face that came
# after the first paint would reflow the text around its formulas (a layout shift).
PRELOADED_FONTS = ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2")


def add_katex_css(app: Sphinx, pagename: str, templatename: str, context: dict,
                  doctree: nodes.document | None) -> None:
    if doctree is None or not app.env.get_domain("math").has_equations(pagename):
        return
    drawn = [n for n in doctree.findall(nodes.math_block) if NEEDS_KATEX_DRAWING.search(
        display_tex(n))]
    if app.builder.name == "singlehtml" or drawn:
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
