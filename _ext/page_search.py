"""Sphinx extension, part of the page rewriting (``reader_pages``): Chinese search.

The index is split into words by jieba, a query is not: ``zh_search.js`` splits each Chinese
run of a query into terms of the index and runs on the search page between Sphinx's
``searchtools.js`` and the index. Only the search page loads the search scripts and the
index. The single-page book (printed by make pdf) indexes no page.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.search.zh import SearchChinese

HERE = Path(__file__).parent

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


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", no_index_for_the_single_page)
    app.add_search_language(ChineseIndex)
    app.connect("html-page-context", add_search_splitter)
    app.connect("build-finished", copy_search_splitter)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
