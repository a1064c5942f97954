"""Sphinx extension, part of the page rewriting (``reader_pages``): page metadata.

A ``<meta name="description">`` from the page's learning goals or first paragraph, and the
footer's "最后更新于" date from git: the date of the last commit that touched the page's
source. Without git history (no git, not a clone, a shallow clone) the footer says so.

sphinx-last-updated-by-git does the dates too, but a shallow clone (CI's default checkout)
gives it the date of the one commit there for every page, with a warning that fails a -W
build; here the footer says the date is unknown and why.
"""

from __future__ import annotations

import functools
import html
import re
import shutil
import subprocess
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

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
        if not getattr(app, "_page_metadata_warned", False):
            logger.info(f"最后更新日期不可用：{problem}")
            app._page_metadata_warned = True
        context["last_updated"] = f"未知（{problem}）"


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", page_metadata)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
