"""Sphinx extension, part of the page rewriting (``reader_pages``): page speed.

What a reader's browser fetches, parses and lays out before the page is usable, cut down:

- No Font Awesome script (1.5 MB, which swaps every ``<i class="fa-…">`` for an SVG): the
  theme's CSS already draws the same icons from its web fonts, subset to the icons drawn.
- Only the style rules the book uses (``purge_css.js``), and no chained stylesheet.
- Nothing in the head holds up the first paint: script files are deferred, the first
  screen's fonts preloaded.
- A panel's big data (a model's weights) and the saved widget state in files of their own,
  loaded when a panel nears; figures fetched when they come near the screen.
- A small page to lay out: highlighted code keeps only the spans that change the colour.
- The theme's load handler that measured every scrolling box of the page is taken out of
  its script (``book.js`` does that work lazily).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from docutils import nodes
from offline_book import node_executable
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)
HERE = Path(__file__).parent

# ---------------------------------------------------------------------------------------
# no Font Awesome script.

FONTAWESOME_JS = re.compile(
    r'[ \t]*<script[^>]*src="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*></script>\n?')


def drop_fontawesome_js(page: str) -> str:
    return FONTAWESOME_JS.sub("", page)


def remove_fontawesome_file(app: Sphinx, exception: Exception | None) -> None:
    """No page refers to the script any more; do not ship it."""
    if exception is None and app.builder.format == "html":
        for name in ("fontawesome.js", "fontawesome.js.LICENSE.txt", "fontawesome.js.map"):
            Path(app.outdir, "_static", "scripts", name).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------
# A small page to lay out: highlighted code keeps only the spans that change the colour.

# Pygments' classes that the theme's styles (a11y-high-contrast light and dark) draw in the
# code block's own colour: names, punctuation, whitespace. tests/book/test_page_speed.py
# checks this against the built pygments.css.
PLAIN_TOKENS = ("n", "p", "w", "nn", "nx")
# Classes that the same styles draw in one colour (and nothing else), light and dark: each
# token takes its group's first class, so that neighbours of one colour share a span (the
# same test checks the groups).
COLOUR_GROUPS = (
    ("c", "ch", "cm", "cp", "cpf", "c1", "cs"),
    ("k", "kc", "kd", "kn", "kp", "kr", "ne", "ow"),
    ("m", "l", "kt", "ld", "nb", "nd", "nl", "mb", "mf", "mh", "mi", "mo", "bp", "vm", "il"),
    ("s", "o", "ni", "sa", "sb", "sc", "dl", "sd", "s2", "se", "sh", "si", "sx", "s1"),
)
GROUP_OF = {cls: group[0] for group in COLOUR_GROUPS for cls in group}
TOKEN_CLASS = re.compile(r'<span class="(\w+)">')
HIGHLIGHT = re.compile(r'<div class="highlight"><pre>.*?</pre></div>', re.S)
PLAIN_SPAN = re.compile(rf'<span class="(?:{"|".join(PLAIN_TOKENS)})">([^<]*)</span>')
REPEATED_SPAN = re.compile(r'(<span class="([\w ]+)">[^<]*)</span><span class="\2">')


def fewer_code_spans(page: str) -> str:
    """Every token of a code block is a ``<span>`` (a chapter had 4,300 of them, a third of
    its elements): a token drawn in the block's own colour loses its span, and neighbours of
    one colour share one. The text and its colours stay the same. So does inline code, whose
    words Sphinx wraps one by one (``span.pre``, which only keeps a word on one line)."""
    def shrink(match: re.Match) -> str:
        block = PLAIN_SPAN.sub(r"\1", match.group(0)).replace("<span></span>", "")
        block = TOKEN_CLASS.sub(lambda m: f'<span class="{GROUP_OF.get(m[1], m[1])}">', block)
        while True:
            merged = REPEATED_SPAN.sub(r"\1", block)
            if merged == block:
                return block
            block = merged

    return INLINE_CODE_WORD.sub(r"\1", HIGHLIGHT.sub(shrink, page))


INLINE_CODE_WORD = re.compile(r'<span class="pre">([^<]*)</span>')


# a panel's big data (a whole model's weights) in a file of its own.

PANEL_DATA = re.compile(r'(<div class="onelayer-panel" id="(olp-[\w-]+)"[^>]*>)'
                        r'<script type="application/json">(.*?)</script>', re.S)
LAZY_PANEL_BYTES = 50_000   # 比这大的面板数据单独成文件，面板接近屏幕时才加载


def move_big_panel_data(page: str, outdir: Path, pathto) -> str:
    """Each panel whose JSON is at least ``LAZY_PANEL_BYTES`` gets it from
    ``_static/panels/<id>.js`` (which stores it in ``onelayerPanels.data``), loaded by
    ``common.js`` when the panel comes near the screen; the page keeps an empty holder that
    names the file. ``pathto`` is Sphinx's: a path from the output root to one from the page."""
    def move(match: re.Match) -> str:
        opening, pid, data = match.groups()
        if len(data.encode()) < LAZY_PANEL_BYTES:
            return match.group(0)
        target = outdir / "_static" / "panels" / f"{pid}.js"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'window.onelayerPanels.data["{pid}"] = {data};\n', encoding="utf-8")
        src = pathto(f"_static/panels/{pid}.js", 1)
        return f'{opening}<script type="application/json" data-src="{src}"></script>'

    return PANEL_DATA.sub(move, page)


WIDGET_STATE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">'
                          r'(.*?)</script>', re.S)


def move_widget_state(page: str, outdir: Path, pathto, pagename: str) -> str:
    """The saved widget state (the frame players' frames, 100–170 KB a chapter) goes to
    ``_static/widgets/<page>.js``, which sets ``window.onelayerWidgetState``; the page keeps an
    empty holder naming it, and ``widgets_offline.js`` loads it with the widget manager."""
    def move(match: re.Match) -> str:
        name = pagename.replace("/", "-")
        target = outdir / "_static" / "widgets" / f"{name}.js"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"window.onelayerWidgetState = {match.group(1).strip()};\n",
                          encoding="utf-8")
        src = pathto(f"_static/widgets/{name}.js", 1)
        return (f'<script type="application/vnd.jupyter.widget-state+json" data-src="{src}">'
                '</script>')

    return WIDGET_STATE.sub(move, page, count=1)


ARTICLE = re.compile(r"<article\b.*?</article>", re.S)
ARTICLE_IMG = re.compile(r"<img (?![^>]*\bloading=)")


def load_images_when_near(page: str) -> str:
    """Figures are fetched when they come near the screen (``loading="lazy"``), not all
    before the page has painted; the header's logo stays eager."""
    pieces, last = [], 0
    for match in ARTICLE.finditer(page):
        pieces += [page[last:match.start()],
                   ARTICLE_IMG.sub('<img loading="lazy" decoding="async" ', match.group(0))]
        last = match.end()
    return "".join([*pieces, page[last:]])


# ---------------------------------------------------------------------------------------
# nothing in the head holds up the first paint.

HEAD = re.compile(r"<head>.*?</head>", re.S)
HEAD_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S)


def defer_head_scripts(page: str) -> str:
    """Every script file that the head loads runs after the page is parsed (``defer``, in
    the order written), so none delays the first paint. Inline scripts still run at once,
    except those that use ``DOCUMENTATION_OPTIONS``, which a deferred file defines: they
    become module scripts, which the browser runs in order with the deferred files."""
    def defer(match: re.Match) -> str:
        attrs, body = match.group("attrs"), match.group("body")
        if re.search(r"\b(defer|async|type)\b", attrs):
            return match.group(0)
        if "src=" in attrs:
            return f"<script defer{attrs}>{body}</script>"
        if "DOCUMENTATION_OPTIONS" in body:
            return f'<script type="module"{attrs}>{body}</script>'
        return match.group(0)

    return HEAD.sub(lambda head: HEAD_SCRIPT.sub(defer, head.group(0)), page, count=1)


THEME_JS = Path("_static", "scripts", "pydata-sphinx-theme.js")
THEME_LOAD_HANDLER = re.compile(r'window\.addEventListener\("load",(\w+)\)')
THEME_HANDLER_DROPPED = "void 0/* tab stops: book.js */"


def drop_theme_tab_stops(app: Sphinx, exception: Exception | None) -> None:
    """pydata-sphinx-theme, on load, gives a tab stop to every box of the page that scrolls,
    measuring them one after another between changes (a layout of the whole page each time,
    seconds on a phone). ``book.js`` does the same for the boxes near the screen, and for
    all of them at the first press of Tab: the theme's handler is taken out of its script."""
    if exception is not None or app.builder.format != "html":
        return
    path = Path(app.outdir) / THEME_JS
    script = path.read_text(encoding="utf-8")
    if THEME_HANDLER_DROPPED in script:   # 增量构建没有重新复制主题的文件
        return
    handlers = [m for m in THEME_LOAD_HANDLER.finditer(script)
                if re.search(rf"function {m.group(1)}\(\)\{{[^}}]*\.tabIndex=", script)]
    if len(handlers) != 1:
        raise ExtensionError(f"{THEME_JS}：找不到主题在 load 时设置 tabIndex 的处理函数"
                             f"（找到 {len(handlers)} 个）；主题的版本变了？")
    path.write_text(script.replace(handlers[0].group(0), THEME_HANDLER_DROPPED),
                    encoding="utf-8")


# ---------------------------------------------------------------------------------------
# only the style rules the book uses, and no chained stylesheet.

# The stylesheets of the theme and its extensions that every page loads before it paints,
# pruned to the rules that the book's pages and scripts can use (purge_css.js, PurgeCSS).
PRUNED_CSS = ("basic.css", "styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css",
              "sphinx-design.min.css", "mystnb.*.css")
THEME_CSS = re.compile(r'<link href="([^"]*_static/)styles/theme\.css[^"]*" rel="stylesheet" />')


def link_basic_css(page: str) -> str:
    """The theme's ``theme.css`` only imports Sphinx's ``basic.css``: the page links that
    directly, so that the browser does not find it one round trip later."""
    return THEME_CSS.sub(r'<link href="\1basic.css" rel="stylesheet" />', page)


def prune_css(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.name != "html":
        return
    static = Path(app.outdir, "_static")
    sheets = [str(p.relative_to(app.outdir)) for pattern in PRUNED_CSS
              for p in sorted(static.glob(pattern))]
    out = subprocess.run([node_executable(), str(HERE / "purge_css.js"),
                          str(Path(app.srcdir, "node_modules")), str(app.outdir), *sheets],
                         capture_output=True, text=True, encoding="utf-8")
    if out.returncode != 0:
        raise ExtensionError(f"purge_css.js 失败：{out.stderr.strip()}")
    sizes = json.loads(out.stdout)
    before, after = (sum(size[i] for size in sizes.values()) for i in (0, 1))
    logger.info(f"样式表去掉未用的规则：{len(sizes)} 个文件 {before // 1000} KB → "
                f"{after // 1000} KB")
    subset_icon_fonts(static)


ICON_FONTS = "vendor/fontawesome/webfonts/*.woff2"
HEADER_ICON_FONT = "_static/vendor/fontawesome/webfonts/fa-solid-900.woff2"


def preload_fonts(app: Sphinx, pagename: str, templatename: str, context: dict,
                  doctree: nodes.document | None) -> None:
    """The fonts the first screen draws with (the header's icons, 2 KB once subset, and the
    formulas' faces that ``book_math`` names in ``context["preload_fonts"]``) are fetched
    with the stylesheets, not after the first paint, when they would reflow the text. A
    page opened from the disk has no origin to fetch fonts for ahead (the browser refuses
    the request): there the stylesheets fetch them as before."""
    fonts = [HEADER_ICON_FONT, *context.get("preload_fonts", [])]
    hrefs = json.dumps([context["pathto"](font, 1) for font in fonts])
    context["metatags"] = context.get("metatags", "") + (
        f'\n    <script>if (location.protocol !== "file:") for (const href of {hrefs}) {{'
        ' const l = document.createElement("link"); Object.assign(l, {rel: "preload",'
        ' as: "font", type: "font/woff2", crossOrigin: "anonymous", href});'
        " document.head.appendChild(l); }</script>")
# Font Awesome's icons are in the private use area, written as an escape ("\\f0c9") or as the
# character itself (the theme's --pst-icon-* variables).
ICON_CODE = re.compile(r'\\(f[0-8][0-9a-f]{2}|e[0-6][0-9a-f]{2})\b|([\ue000-\uf8ff])', re.I)


def subset_icon_fonts(static: Path) -> None:
    """The Font Awesome fonts (160 KB for solid alone) keep only the icons that the pruned
    stylesheets still draw (the header's buttons, the notes' and answers' icons set by the
    theme's --pst-icon-* variables): the browser fetches them to draw the header."""
    from fontTools import subset

    css = "".join(p.read_text(encoding="utf-8") for p in static.rglob("*.css"))
    codes = sorted({int(escape, 16) if escape else ord(char)
                    for escape, char in ICON_CODE.findall(css)})
    if not codes:
        raise ExtensionError("剪过的样式表里没有 Font Awesome 图标：无法确定要保留的字形")
    options = subset.Options(flavor="woff2", layout_features=["*"], notdef_outline=True)
    for font_path in sorted(static.glob(ICON_FONTS)):
        font = subset.load_font(str(font_path), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=codes)
        subsetter.subset(font)
        subset.save_font(font, str(font_path), options)




def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", preload_fonts, priority=600)   # after book_math's
    app.connect("build-finished", remove_fontawesome_file)
    app.connect("build-finished", drop_theme_tab_stops)
    app.connect("build-finished", prune_css, priority=900)   # 在其他文件都写好之后
    return {"parallel_read_safe": True, "parallel_write_safe": True}
