"""Sphinx extension: what the build does to every page a reader gets, one concern a module.

- ``page_search``: the Chinese search index and the query splitter, on the search page only.
- ``page_language``: the themes' interface strings in Chinese.
- ``page_metadata``: each page's description and the date of its last commit.
- ``page_speed``: what the browser fetches, parses and lays out before the page is usable.

Each module connects its own Sphinx events; the rewrites of the rendered HTML are chained
here, in one hook on the template renderer, in the order they must run.
"""

from __future__ import annotations

from pathlib import Path

import page_language
import page_search
import page_speed
from sphinx.application import Sphinx


def rewrite_page(page: str, context: dict, outdir: Path | None) -> str:
    """A rendered page as the reader gets it. ``outdir`` is None in the single-page build
    (printed to the PDF), which keeps its data inline and its images eager."""
    page = page_search.drop_search_scripts(page_speed.drop_fontawesome_js(page), context)
    page = page_speed.defer_head_scripts(page_speed.link_basic_css(page))
    page = page_language.translate_template_strings(page)
    page = page_speed.fewer_code_spans(page)
    if outdir is not None:
        pathto = context["pathto"]
        page = page_speed.move_big_panel_data(page, outdir, pathto)
        page = page_speed.move_widget_state(page, outdir, pathto, context["pagename"])
        page = page_speed.load_images_when_near(page)
    return page


def rewrite_rendered_pages(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    templates = app.builder.templates
    render = templates.render
    outdir = Path(app.outdir) if app.builder.name == "html" else None

    def render_page(template: str, context: dict) -> str:
        page = render(template, context)
        if template.endswith(".html") and "<html" in page:
            page = rewrite_page(page, context, outdir)
        return page

    templates.render = render_page


def setup(app: Sphinx) -> dict:
    for module in ("page_search", "page_language", "page_metadata", "page_speed"):
        app.setup_extension(module)
    app.connect("builder-inited", rewrite_rendered_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
