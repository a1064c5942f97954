"""Sphinx extension: the whole book as a PDF (make pdf), and the link to it.

- The single-page build (``--builder singlehtml``, which tools/make_pdf.py prints) holds
  every chapter in one page, but myst-nb gives each page only its own scripts: the saved
  widget state of every chapter, and the loader of the widget manager, are added to it here,
  so its frame players are drawn (in their saved state) as on the chapters' own pages.
- The theme's download menu has a ".pdf" item that calls the browser's print dialog on the
  current page. In the HTML book it becomes a link to the PDF of the whole book when one has
  been made (_build/pdf/, by make pdf), which is then copied next to index.html; without a PDF
  the item is left out, so no page links a missing file. Whether the PDF exists is a
  configuration value (``book_pdf``) that rebuilds the pages when it changes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx

PDF_NAME = "onelayer-transformer.pdf"
PDF_LABEL = "download-pdf-button"


def made_pdf(srcdir: str | Path) -> Path:
    """Where make pdf puts the PDF."""
    return Path(srcdir) / "_build" / "pdf" / PDF_NAME


def note_pdf(app: Sphinx, config) -> None:
    config.book_pdf = PDF_NAME if made_pdf(app.srcdir).is_file() else ""


def link_pdf(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Replace the theme's print item of the download menu by a link to the book's PDF, or
    drop it (no PDF made yet, or the single page that the PDF is printed from)."""
    for group in context.get("header_buttons", []):
        buttons = group.get("buttons") if group.get("label") == "download-buttons" else None
        if not buttons:
            continue
        for i, button in enumerate(buttons):
            if button.get("label") != PDF_LABEL:
                continue
            if app.config.book_pdf and app.builder.name == "html":
                buttons[i] = {
                    "type": "link",
                    "url": context["pathto"](app.config.book_pdf, 1),
                    "text": "全书 PDF",
                    "tooltip": "下载全书的 PDF",
                    "icon": "fas fa-file-pdf",
                    "label": PDF_LABEL,
                }
            else:
                del buttons[i]
            break


def copy_pdf(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.name != "html":
        return
    target = Path(app.outdir, PDF_NAME)
    if app.config.book_pdf:
        shutil.copy2(made_pdf(app.srcdir), target)
    else:
        target.unlink(missing_ok=True)


def gather_page_scripts(app: Sphinx, pagename: str, templatename: str, context: dict,
                        doctree) -> None:
    """On the single page: the scripts myst-nb gives each of the pages it holds."""
    if app.builder.name != "singlehtml" or pagename != app.config.root_doc:
        return
    from myst_nb.sphinx_ import NbMetadataCollector

    loaded = set()
    for docname in sorted(app.env.all_docs):
        if docname == pagename:
            continue
        for path, kwargs in NbMetadataCollector.get_js_files(app.env, docname).values():
            if path is not None:
                if path in loaded:
                    continue
                loaded.add(path)
            app.add_js_file(path, **kwargs)


def setup(app: Sphinx) -> dict:
    app.add_config_value("book_pdf", "", "html")
    app.connect("config-inited", note_pdf)
    # after the theme's header buttons (priority 501)
    app.connect("html-page-context", link_pdf, priority=510)
    app.connect("html-page-context", gather_page_scripts)
    app.connect("build-finished", copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
