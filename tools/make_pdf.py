"""The whole book as one PDF (make pdf): the single-page build printed by Chromium.

``jupyter-book build . --builder singlehtml`` puts every page of the table of contents into
one HTML page (_build/singlehtml); this script serves it locally, opens it in the machine's
headless Chromium (driven by Playwright, which never downloads a browser), waits until the
formulas are typeset, the figures loaded and the saved panels drawn in their saved state, and
prints it with the book's print style (_ext/book_static/book.css: code wraps instead of being
cut, no floating buttons, figures kept whole, answers unfolded). Chromium gets the packaged
Noto Sans CJK font through fontconfig, as in the browser tests, so the Chinese text is
embedded in the PDF with the same font on every machine.

The PDF goes to _build/pdf/; the next HTML build (make pdf runs one) links it from every
page's download menu and copies it next to index.html (_ext/offline_book.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SINGLE_HTML = ROOT / "_build" / "singlehtml"
PDF = ROOT / "_build" / "pdf" / "onelayer-transformer.pdf"
sys.path.insert(0, str(ROOT / "tests" / "book"))

from conftest import CHROMIUM, CHROMIUM_ARGS, fontconfig_with_packaged_font, serve  # noqa: E402

# Everything the page draws after loading: images decode, fonts load, and the
# widget manager (which widgets_offline.js otherwise loads when a panel nears the screen)
# renders each saved panel in its saved state.
READY = """async () => {
  if (window.onelayerLoadWidgets) await window.onelayerLoadWidgets();
  await Promise.all([...document.images].map(img => img.decode().catch(() => null)));
  await document.fonts.ready;
}"""
VIEWS_DRAWN = """() => document.querySelectorAll('.widget-subarea').length >= document
  .querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length"""
FOOTER = ('<div style="width:100%; font-size:8px; color:#666; text-align:center;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


# Chinese text in the PDF. Noto Sans CJK draws a Kangxi radical (U+2F00 ⼀) and the ideograph it
# looks like (U+4E00 一) with one glyph; Chromium names each glyph in the PDF's ToUnicode maps
# by the lowest code point that has it, so copied or extracted text would read "⼀层". The maps
# are rewritten to name the ideograph, taken from the font's own table of shared glyphs.
def _is_ideograph(cp: int) -> bool:
    return 0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x3FFFF


def ideographs_of_shared_glyphs(font_file: Path) -> dict[int, int]:
    """Code point (radical, compatibility ideograph) → the ideograph drawn by the same glyph,
    in the Noto Sans CJK faces of ``font_file`` (Simplified Chinese first)."""
    from fontTools.ttLib import TTCollection

    faces = TTCollection(str(font_file), lazy=True).fonts
    faces.sort(key=lambda face: face["name"].getDebugName(1) != "Noto Sans CJK SC")
    mapping: dict[int, int] = {}
    for face in faces:
        by_glyph: dict[str, list[int]] = {}
        for cp, glyph in face.getBestCmap().items():
            by_glyph.setdefault(glyph, []).append(cp)
        for cps in by_glyph.values():
            ideographs = sorted(cp for cp in cps if _is_ideograph(cp))
            for cp in cps:
                if ideographs and not _is_ideograph(cp):
                    mapping.setdefault(cp, ideographs[0])
    return mapping


HEX = r"<([0-9A-Fa-f]+)>"
BFCHAR = re.compile(r"\d+\s+beginbfchar(.*?)endbfchar", re.S)
BFRANGE = re.compile(r"\d+\s+beginbfrange(.*?)endbfrange", re.S)


def _utf16(hex_text: str) -> str:
    return bytes.fromhex(hex_text).decode("utf-16-be")


def remap_to_unicode(cmap: str, mapping: dict[int, int]) -> str | None:
    """``cmap`` (a ToUnicode CMap) with every mapped code point replaced; None if none is."""
    entries: dict[str, str] = {}
    for block in BFCHAR.findall(cmap):
        for src, dst in re.findall(rf"{HEX}\s*{HEX}", block):
            entries[src] = _utf16(dst)
    for block in BFRANGE.findall(cmap):
        for lo, hi, dst in re.findall(rf"{HEX}\s*{HEX}\s*(\[[^\]]*\]|<[0-9A-Fa-f]+>)", block):
            width, first = len(lo), int(lo, 16)
            if dst.startswith("["):
                for i, each in enumerate(re.findall(HEX, dst)):
                    entries[f"{first + i:0{width}X}"] = _utf16(each)
            else:
                start = _utf16(dst[1:-1])
                for i in range(int(hi, 16) - first + 1):
                    entries[f"{first + i:0{width}X}"] = start[:-1] + chr(ord(start[-1]) + i)
    changed = {src: "".join(chr(mapping.get(ord(c), ord(c))) for c in text)
               for src, text in entries.items()}
    if changed == entries:
        return None
    lines = []
    items = sorted(changed.items())
    for i in range(0, len(items), 100):  # at most 100 entries a block
        chunk = items[i:i + 100]
        lines.append(f"{len(chunk)} beginbfchar")
        lines += [f"<{src}> <{text.encode('utf-16-be').hex().upper()}>" for src, text in chunk]
        lines.append("endbfchar")
    start = min(m.start() for m in (*BFCHAR.finditer(cmap), *BFRANGE.finditer(cmap)))
    end = max(m.end() for m in (*BFCHAR.finditer(cmap), *BFRANGE.finditer(cmap)))
    return cmap[:start] + "\n".join(lines) + cmap[end:]


def name_ideographs(pdf: Path, mapping: dict[int, int]) -> int:
    """Rewrite the ToUnicode maps of ``pdf`` in place; return how many were changed."""
    from pypdf import PdfReader, PdfWriter

    # Chromium's object count in the trailer is a few short; pypdf says so and reads on.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    writer = PdfWriter(clone_from=PdfReader(pdf))
    done: set[int] = set()
    changed = 0
    for page in writer.pages:
        fonts = page.get("/Resources", {}).get_object().get("/Font") or {}
        for ref in fonts.values():
            font = ref.get_object()
            to_unicode = font.get("/ToUnicode")
            if to_unicode is None or to_unicode.indirect_reference.idnum in done:
                continue
            done.add(to_unicode.indirect_reference.idnum)
            stream = to_unicode.get_object()
            fixed = remap_to_unicode(stream.get_data().decode("latin-1"), mapping)
            if fixed is not None:
                stream.set_data(fixed.encode("latin-1"))
                changed += 1
    with pdf.open("wb") as out:
        writer.write(out)
    return changed


def build_single_page(root: Path = ROOT) -> Path:
    """Build the single-page HTML book; return its page (warnings are errors, as in make book)."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    subprocess.run([str(jupyter_book), "build", str(root), "--builder", "singlehtml",
                    "--warningiserror", "--keep-going", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    page = root / "_build" / "singlehtml" / "intro.html"
    if not page.exists():
        raise FileNotFoundError(f"单页构建没有生成 {page}")
    return page


def print_book(browser, html_dir: Path, pdf: Path) -> int:
    """Print ``html_dir``'s single page to ``pdf`` with ``browser`` and name its Chinese
    characters right; return the number of saved panels drawn."""
    from onelayer.book.plotting import packaged_font_file

    pdf.parent.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1000, "height": 1400})
    try:
        with serve(html_dir) as url:
            page.goto(f"{url}/intro.html", wait_until="load")
            page.evaluate(READY)
            page.wait_for_function(VIEWS_DRAWN, timeout=120_000)
            page.wait_for_load_state("networkidle")
            page.evaluate(READY)  # panels drawn later may hold formulas and images
            panels = page.evaluate("document.querySelectorAll('.widget-subarea').length")
            page.emulate_media(media="print")
            page.pdf(path=str(pdf), format="A4", print_background=True, outline=True,
                     tagged=True, display_header_footer=True, header_template="<span></span>",
                     footer_template=FOOTER,
                     margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
    finally:
        page.close()
    name_ideographs(pdf, ideographs_of_shared_glyphs(packaged_font_file()))
    return panels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-build", action="store_true",
                        help="打印已有的 _build/singlehtml，不重新构建")
    parser.add_argument("--output", type=Path, default=PDF)
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"没有 {CHROMIUM}：生成 PDF 需要 Chromium（apt-get install chromium）")
    start = time.monotonic()
    if not args.no_build:
        build_single_page()
    built = time.monotonic()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        fonts = fontconfig_with_packaged_font(Path(tmp))
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                    env={**os.environ, "FONTCONFIG_FILE": str(fonts)})
        try:
            panels = print_book(browser, SINGLE_HTML, args.output)
        finally:
            browser.close()
    from pypdf import PdfReader

    pages = len(PdfReader(args.output).pages)
    size = args.output.stat().st_size / 1e6
    shown = args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output
    print(f"PDF：{shown}（{pages} 页，{size:.1f} MB，{panels} 个保存的面板；"
          f"单页构建 {built - start:.0f} s，打印 {time.monotonic() - built:.0f} s）")


if __name__ == "__main__":
    sys.exit(main())
