"""Sphinx extension, part of the page rewriting (``reader_pages``): the interface in Chinese.

Strings of the themes that stay English under ``language: zh_CN`` are translated: those
that go through gettext by a fallback catalog, those written into the templates by a
replacement in the rendered page, outside the article (``translate_template_strings``).
"""

from __future__ import annotations

import gettext
import re

from sphinx.application import Sphinx
from sphinx.locale import translators

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


# The sidebar folds a chapter's study pages under a <summary> that holds only an icon: it gets
# a name (axe's summary-name rule; a screen reader would otherwise read nothing).
TOCTREE_TOGGLE = '<summary><span class="toctree-toggle" role="presentation">'
TOCTREE_TOGGLE_NAMED = ('<summary aria-label="展开或收起这一章的研究页">'
                        '<span class="toctree-toggle" role="presentation">')


def _translate(part: str) -> str:
    part = part.replace(TOCTREE_TOGGLE, TOCTREE_TOGGLE_NAMED)
    part = re.sub(r"(最后更新于 [^<]*?)\.(\s*<)", r"\1。\2", part)
    part = re.sub(r"© Copyright ([^<]*?)\.(\s*<)", r"© \1 版权所有。\2", part)
    for english, chinese in UI_STRINGS.items():
        part = part.replace(f'="{english}"', f'="{chinese}"')
        part = re.sub(rf">(\s*){re.escape(english)}(\s*)<", rf">\g<1>{chinese}\g<2><", part)
    return part


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", install_fallback_catalog)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
