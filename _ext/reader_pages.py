"""Sphinx extension: light pages, Chinese search, a Chinese interface and page metadata.

Each concern is one group of functions, connected in ``setup``:

- Light pages. The theme's Font Awesome script (1.5 MB, which swaps every ``<i class="fa-…">``
  for an SVG) is dropped from every page: the theme's CSS already draws the same icons from
  its Font Awesome web fonts. The widget manager is loaded lazily by ``widgets_offline.js``,
  and a panel's big data (a model's weights) from a file of its own when the panel nears.
- Chinese search. The index is split into words by jieba, a query is not: ``zh_search.js``
  splits each Chinese run of a query into terms of the index. The single-page book (printed
  by make pdf) indexes no page.
- Chinese interface. Strings of the themes that stay English under ``language: zh_CN``
  are translated: those that go through gettext by a fallback catalog, those written into
  the templates by a replacement in the rendered page, outside the article.
- Page metadata. A ``<meta name="description">`` from the page's first paragraph, and the
  footer's "最后更新于" date from git: the date of the last commit that touched the page's
  source. Without git history (no git, not a clone, a shallow clone) the footer says so.
"""

from __future__ import annotations

import functools
import gettext
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from docutils import nodes
from offline_book import node_executable
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.locale import translators
from sphinx.search.zh import SearchChinese
from sphinx.util import logging

logger = logging.getLogger(__name__)
HERE = Path(__file__).parent

# ---------------------------------------------------------------------------------------
# Light pages: no Font Awesome script.

FONTAWESOME_JS = re.compile(
    r'[ \t]*<script[^>]*src="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*></script>\n?')


def drop_fontawesome_js(page: str) -> str:
    return FONTAWESOME_JS.sub("", page)


SEARCH_SCRIPTS = re.compile(r'[ \t]*<script src="[^"]*(?:_static/searchtools|_static/language_data'
                            r'|searchindex)\.js"></script>\n?')


def drop_search_scripts(page: str, context: dict) -> str:
    """pydata-sphinx-theme loads the search index on every page for its search-as-you-type
    box; without that option only the search page needs it (where, like every script file
    of the head, it is deferred: it still runs before DOMContentLoaded, when Search.init
    queries it)."""
    if context.get("theme_search_as_you_type") in (True, "True", "true"):
        return page
    if context.get("pagename") == "search":
        return run_splitter_before_the_index(page)
    return SEARCH_SCRIPTS.sub("", page)


SPLITTER = re.compile(r'[ \t]*<script src="[^"]*_static/offline/zh_search\.js[^"]*"></script>\n?')


def run_splitter_before_the_index(page: str) -> str:
    """zh_search.js replaces searchtools.js's query splitter and adds to its scorer: it runs
    after searchtools.js and before the index, which runs the query when it arrives."""
    splitter = SPLITTER.search(page)
    index = '<script src="searchindex.js"></script>'
    if splitter is None or index not in page:
        raise ExtensionError("搜索页上找不到 zh_search.js 或 searchindex.js")
    page = page.replace(splitter.group(0), "")
    return page.replace(index, splitter.group(0).strip() + "\n    " + index)


def remove_fontawesome_file(app: Sphinx, exception: Exception | None) -> None:
    """No page refers to the script any more; do not ship it."""
    if exception is None and app.builder.format == "html":
        for name in ("fontawesome.js", "fontawesome.js.LICENSE.txt", "fontawesome.js.map"):
            Path(app.outdir, "_static", "scripts", name).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------
# Chinese search: the query splitter runs on every page that loads Sphinx's searchtools.

def add_search_splitter(app: Sphinx, pagename: str, templatename: str, context: dict,
                        doctree: nodes.document | None) -> None:
    if pagename == "search":
        app.add_js_file("offline/zh_search.js")


class LatinTerms(set):
    """The Latin words the Chinese index has met: a set that takes ``extend`` like a list."""

    def extend(self, words) -> None:
        self.update(words)


class ChineseIndex(SearchChinese):
    """Sphinx's Chinese index, which keeps the Latin words it meets in one list shared by the
    whole build and looks every word up in it: the build's cost then grows with the square of
    the book's length (a full build took 31 s with the list, 17 s with a set). Kept in a set,
    the index is the same."""

    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        self.latin_terms = LatinTerms()


def no_index_for_the_single_page(app: Sphinx) -> None:
    """The single-page book is printed (make pdf), never searched: its page is not indexed
    (the indexer stays, for the search scripts' language data)."""
    if app.builder.name == "singlehtml":
        app.builder.index_page = lambda pagename, doctree, title: None


def copy_search_splitter(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        target = Path(app.outdir, "_static", "offline")
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(HERE / "zh_search.js", target / "zh_search.js")


# ---------------------------------------------------------------------------------------
# Chinese interface.

# Strings of sphinx-book-theme / pydata-sphinx-theme / Sphinx that have no zh_CN translation.
UI_STRINGS = {
    "Color mode": "配色模式",
    "Search this book...": "搜索本书……",
    "Search": "搜索",
    "Toggle primary sidebar": "显示或隐藏目录栏",
    "Toggle secondary sidebar": "显示或隐藏本页目录",
    "Link to this heading": "指向本节的链接",
    "System Settings": "跟随系统",
    "Light": "浅色",
    "Dark": "深色",
    "Main": "主导航",
    "Page": "本页",
    "Breadcrumb": "当前位置",
    "Section Navigation": "本节导航",
    "Site navigation": "网站导航",
    "Download this page": "下载本页",
    "Download source file": "下载源文件",
    "Print to PDF": "打印成 PDF",
    "Fullscreen mode": "全屏模式",
    "Back to top": "回到顶部",
    "Contents": "本页目录",
    "previous page": "上一页",
    "next page": "下一页",
    "Skip to main content": "跳到正文",
}


class FallbackCatalog(gettext.NullTranslations):
    """Answers the strings above when Sphinx's own zh_CN catalog has no translation."""

    def gettext(self, message: str) -> str:
        return UI_STRINGS.get(message, message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return self.gettext(singular if n == 1 else plural)


def install_fallback_catalog(app: Sphinx) -> None:
    if not (app.config.language or "").startswith("zh"):
        return
    for translator in translators.values():
        translator.add_fallback(FallbackCatalog())


ARTICLE = re.compile(r"<article\b.*?</article>", re.S)


def translate_template_strings(page: str) -> str:
    """Replace the English strings written into the templates, outside the article."""
    pieces, last = [], 0
    for match in ARTICLE.finditer(page):
        pieces += [_translate(page[last:match.start()]), match.group(0)]
        last = match.end()
    return "".join([*pieces, _translate(page[last:])])


def _translate(part: str) -> str:
    part = re.sub(r"(最后更新于 [^<]*?)\.(\s*<)", r"\1。\2", part)
    part = re.sub(r"© Copyright ([^<]*?)\.(\s*<)", r"© \1 版权所有。\2", part)
    for english, chinese in UI_STRINGS.items():
        part = part.replace(f'="{english}"', f'="{chinese}"')
        part = re.sub(rf">(\s*){re.escape(english)}(\s*)<", rf">\g<1>{chinese}\g<2><", part)
    return part


# ---------------------------------------------------------------------------------------
# Page metadata: description and last commit date.

DESCRIPTION_CHARS = 120


# A chapter opens with its learning goals in an admonition of this title: they say best
# what the page is about. Other pages: their first paragraph of running text.
GOALS_TITLE = "学习目标"


def _has_math(node: nodes.Node) -> bool:
    return any("math" in type(n).__name__ for n in node.findall())


def _in(node: nodes.Node, kinds: tuple) -> bool:
    while node is not None:
        if isinstance(node, kinds):
            return True
        node = node.parent
    return False


def description_of(doctree: nodes.document | None) -> str:
    """The page's title and what it is about (its learning goals, or its first paragraph of
    running text), without math, cut to DESCRIPTION_CHARS."""
    if doctree is None:
        return ""
    titles = list(doctree.findall(nodes.title))
    title = titles[0].astext().strip() if titles else ""
    text = ""
    for note in doctree.findall(nodes.Admonition):
        if note.children and note[0].astext().strip() == GOALS_TITLE:
            items = [p.astext().strip() for p in note.findall(nodes.paragraph)
                     if _in(p, (nodes.list_item,)) and not _has_math(p)]
            text = "".join(items)
            break
    if not text:
        skip = (nodes.Admonition, nodes.table, nodes.citation, nodes.footnote, nodes.title)
        for paragraph in doctree.findall(nodes.paragraph):
            candidate = paragraph.astext().strip()
            if len(candidate) >= 20 and not _in(paragraph, skip) and not _has_math(paragraph):
                text = candidate
                break
    text = re.sub(r"\s+", " ", text)
    if title and not text.startswith(title):
        text = f"{title}：{text}" if text else title
    return text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS - 1] + "…"


@functools.cache
def git_history_problem(srcdir: str) -> str | None:
    """Why commit dates cannot be read in ``srcdir`` (None when they can)."""
    if shutil.which("git") is None:
        return "构建时没有 git"
    try:
        shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=srcdir,
                                 capture_output=True, text=True, check=True).stdout.strip()
    except subprocess.CalledProcessError:
        return "源文件不在 git 仓库中"
    if shallow == "true":
        return "浅克隆没有完整的提交历史"
    return None


def last_commit_date(srcdir: str, source: Path) -> str | None:
    """The date (YYYY-MM-DD) of the last commit touching ``source``; None if it has none."""
    out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(source)], cwd=srcdir,
                         capture_output=True, text=True, check=False).stdout.strip()
    return out or None


def page_metadata(app: Sphinx, pagename: str, templatename: str, context: dict,
                  doctree: nodes.document | None) -> None:
    description = description_of(doctree) or app.config.project
    meta = f'<meta name="description" content="{html.escape(description)}" />'
    context["metatags"] = context.get("metatags", "") + "\n    " + meta
    if doctree is None or pagename not in app.env.all_docs:
        return
    problem = git_history_problem(app.srcdir)
    if problem is None:
        date = last_commit_date(app.srcdir, Path(app.env.doc2path(pagename)))
        context["last_updated"] = date or "尚未提交"
    else:
        if not getattr(app, "_reader_pages_warned", False):
            logger.info(f"最后更新日期不可用：{problem}")
            app._reader_pages_warned = True
        context["last_updated"] = f"未知（{problem}）"


# ---------------------------------------------------------------------------------------
# Light pages: a panel's big data (a whole model's weights) in a file of its own.

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
# Light pages: nothing in the head holds up the first paint.

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
# Light pages: only the style rules the book uses, and no chained stylesheet.

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


# ---------------------------------------------------------------------------------------
# One hook on the rendered page.

def rewrite_rendered_pages(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    templates = app.builder.templates
    render = templates.render

    def render_page(template: str, context: dict) -> str:
        page = render(template, context)
        if template.endswith(".html") and "<html" in page:
            page = drop_search_scripts(drop_fontawesome_js(page), context)
            page = defer_head_scripts(link_basic_css(page))
            page = translate_template_strings(page)
            if app.builder.name == "html":   # 单页构建（打印成 PDF）保留内联的数据
                outdir, pathto = Path(app.outdir), context["pathto"]
                page = move_big_panel_data(page, outdir, pathto)
                page = move_widget_state(page, outdir, pathto, context["pagename"])
                page = load_images_when_near(page)
        return page

    templates.render = render_page


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", install_fallback_catalog)
    app.connect("builder-inited", rewrite_rendered_pages)
    app.connect("builder-inited", no_index_for_the_single_page)
    app.add_search_language(ChineseIndex)
    app.connect("html-page-context", add_search_splitter)
    app.connect("html-page-context", page_metadata)
    app.connect("html-page-context", preload_fonts, priority=600)   # after book_math's
    app.connect("build-finished", remove_fontawesome_file)
    app.connect("build-finished", drop_theme_tab_stops)
    app.connect("build-finished", prune_css, priority=900)   # 在其他文件都写好之后
    app.connect("build-finished", copy_search_splitter)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
