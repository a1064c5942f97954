"""Sphinx extension: the bibliography's style, pybtex's ``alpha`` with two fields it ignores.

An entry whose authors write their names in Chinese (戈载, 龙榆生) got a label that was only the
year (``alpha`` keeps the Latin letters of a name) and sorted after every Latin name. Such an
entry gives the romanised name in ``sortkey`` (it sorts with the others, 戈载 under G) and its
label in ``shorthand``. Every other entry is labelled as ``alpha`` does and sorted by author,
year and title, a braced author ({Gemma Team}) by its letters rather than after every name.
"""

from __future__ import annotations

from pybtex.plugin import register_plugin
from pybtex.style.formatting.alpha import Style as Alpha
from pybtex.style.labels.alpha import LabelStyle as AlphaLabels
from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitle
from sphinx.application import Sphinx

STYLE = "onelayer"


class Labels(AlphaLabels):
    def format_label(self, entry) -> str:
        return entry.fields.get("shorthand") or super().format_label(entry)


class Sorting(AuthorYearTitle):
    def sorting_key(self, entry) -> tuple:
        author, year, title = super().sorting_key(entry)
        name = entry.fields.get("sortkey", author).lower()
        return name.replace("{", "").replace("}", ""), year, title


class Style(Alpha):
    default_label_style = Labels
    default_sorting_style = Sorting


def setup(app: Sphinx) -> dict:
    register_plugin("pybtex.style.formatting", STYLE, Style, force=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
