"""Panels that compute in the page: one JavaScript implementation for the HTML book and Jupyter.

A panel is a self-contained HTML output: a ``<div>`` holding its inputs and weights as JSON
(written by Python from the tensors the notebook uses), the CSS, and the script with the
formulas (``common.js`` plus one file per kind, shipped as package data). The same output
computes in the static HTML book (no widget manager, no kernel) and in JupyterLab (trusted
notebooks run an output's scripts; ``make lab`` trusts the chapters). Nothing is fetched.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).resolve().parent
KINDS = ("ffn", "activation", "layernorm", "prepost", "block", "gpt", "attention", "attnmap",
         "rope", "songci", "inside")
NEEDS = {"songci": ("gpt.js",), "inside": ("gpt.js",)}  # a kind that builds on another's functions


def asset(name: str) -> str:
    """The text of one of the panels' files (``common.js``, ``ffn.js``, ``panel.css`` …)."""
    return (ASSETS / name).read_text(encoding="utf-8")


def _inline(text: str) -> str:
    """Text safe inside an HTML <script> element (no early ``</script>``)."""
    return text.replace("</", "<\\/")


class PagePanel:
    """A panel that computes in the browser; displayed as HTML by Jupyter and by myst-nb."""

    def __init__(self, kind: str, data: dict[str, Any], title: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"面板种类应为 {KINDS} 之一，实际为 {kind!r}")
        self.kind, self.data, self.title = kind, data, title

    @property
    def element_id(self) -> str:
        """The same id for the same panel and data, so stored outputs do not change."""
        digest = hashlib.sha1(json.dumps([self.kind, self.data], sort_keys=True).encode())
        return f"olp-{self.kind}-{digest.hexdigest()[:10]}"

    def _repr_html_(self) -> str:
        data = _inline(json.dumps(self.data, ensure_ascii=False, separators=(",", ":")))
        files = ("common.js", *NEEDS.get(self.kind, ()), f"{self.kind}.js")
        script = _inline("".join(asset(name) for name in files))
        pid = self.element_id
        return (
            f"<style>{asset('panel.css')}</style>\n"
            f'<div class="onelayer-panel" id="{pid}" data-kind="{self.kind}" role="group" '
            f'aria-label="{self.title}">'
            f'<script type="application/json">{data}</script>'
            f'<p class="olp-fallback"><i>{self.title}：这个面板在浏览器里用 JavaScript 计算；'
            "当前环境没有运行它（JupyterLab 中先信任笔记本，"
            "<code>make lab</code> 会这样做）。</i></p>"
            "</div>\n"
            f"<script>{script}\n"
            "(function (me) {\n"
            "  const P = window.onelayerPanels;\n"
            "  if (me && me.previousElementSibling) P.mount(me.previousElementSibling);\n"
            f"  document.querySelectorAll('.onelayer-panel[id=\"{pid}\"]').forEach(P.mount);\n"
            "})(document.currentScript);</script>"
        )

    def __repr__(self) -> str:
        return f"<{self.title}：在浏览器中计算的面板（{self.kind}）>"
