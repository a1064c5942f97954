import io
import sys
import warnings
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import noto_cjk_sans_otc
import pytest
from matplotlib import font_manager
from matplotlib.font_manager import FontProperties

from onelayer.book import plotting

PACKAGE_DIR = Path(noto_cjk_sans_otc.__file__).resolve().parent


def draw_chinese_label() -> None:
    fig, ax = plt.subplots()
    ax.set_title("前馈网络的输出")
    fig.canvas.draw()
    plt.close(fig)


@pytest.fixture
def without_font_package(monkeypatch):
    """As on a machine where the font package is not installed."""
    monkeypatch.setitem(sys.modules, "noto_cjk_sans_otc", None)  # import fails
    assert plotting.packaged_font_file() is None


def test_figures_use_the_packaged_font_file():
    font = plotting.use_book_style()
    assert font == plotting.PACKAGED_FAMILY == "Noto Sans CJK SC"
    assert mpl.rcParams["font.sans-serif"][0] == font
    # The packaged file wins even where a system copy of the same family is installed.
    path = Path(font_manager.findfont(FontProperties(family=font))).resolve()
    assert path.is_relative_to(PACKAGE_DIR), path
    assert path == plotting.packaged_font_file().resolve()


def test_packaged_font_draws_chinese_without_warnings(recwarn):
    plotting.use_book_style()
    draw_chinese_label()
    assert [str(w.message) for w in recwarn] == []


def test_registering_the_packaged_font_twice_adds_it_once():
    plotting.use_book_style()
    before = len(font_manager.fontManager.ttflist)
    plotting.use_book_style()
    assert len(font_manager.fontManager.ttflist) == before


def test_uses_a_system_cjk_font_without_the_package(without_font_package, capsys, recwarn):
    font = plotting.use_book_style()
    if font is None:
        assert plotting.find_cjk_font() is None
    else:
        assert font in plotting.CJK_FAMILIES
        assert mpl.rcParams["font.sans-serif"][0] == font
        assert capsys.readouterr() == ("", "")
        assert len(recwarn) == 0


def test_finds_a_cjk_font_installed_after_the_font_cache(without_font_package, monkeypatch,
                                                         tmp_path):
    # matplotlib's cached font list knows no CJK font; the font files on disk include one.
    manager = font_manager.fontManager
    cached = [f for f in manager.ttflist if f.name not in plotting.CJK_FAMILIES]
    monkeypatch.setattr(manager, "ttflist", cached)
    installed_later = tmp_path / "NotoSansCJK-Regular.ttc"
    installed_later.symlink_to(Path(str(noto_cjk_sans_otc.FONT_PATH)))
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda: [str(installed_later)])
    assert plotting.find_cjk_font() == "Noto Sans CJK SC"
    assert any(f.fname == str(installed_later) for f in manager.ttflist)


def test_one_line_and_no_glyph_warnings_without_any_cjk_font(without_font_package, monkeypatch,
                                                             capsys, recwarn):
    monkeypatch.setattr(plotting, "CJK_FAMILIES", ("No Such Font Family",))
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda: [])
    monkeypatch.setattr(plotting, "_no_font_reported", False)
    assert plotting.use_book_style() is None
    assert plotting.use_book_style() is None  # every chapter's setup(): still one line
    with mpl.rc_context({"font.family": "DejaVu Sans"}):  # a font without CJK glyphs
        draw_chinese_label()
    out, err = capsys.readouterr()
    assert out == "" and err == plotting.NO_FONT_MESSAGE + "\n"
    assert plotting.FONT_PACKAGE in err
    assert [str(w.message) for w in recwarn] == []


def test_glyph_warnings_are_real_without_the_filter():
    """The previous test is meaningful: the same drawing does warn per missing glyph."""
    with warnings.catch_warnings(record=True) as caught, mpl.rc_context(
        {"font.family": "DejaVu Sans"}
    ):
        warnings.simplefilter("always")
        draw_chinese_label()
    assert any("missing from font" in str(w.message) for w in caught)


def test_figures_have_an_opaque_white_background_and_an_opaque_legend():
    """Dark labels on their own white background, readable on a dark page or output area."""
    import base64
    import io
    import re

    from PIL import Image

    plotting.use_book_style()
    fig = plotting.new_figure()
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], label="直线")
    ax.legend(loc="center")
    html = plotting.figure_html(fig, "一条直线")
    png = base64.b64decode(re.search(r"base64,([^\"]+)", html).group(1))
    image = Image.open(io.BytesIO(png)).convert("RGBA")
    assert image.getpixel((0, 0)) == (255, 255, 255, 255), "图的背景应为不透明的白色"
    legend = image.getpixel((image.width // 2, image.height // 2 - 12))
    assert legend[3] > 200, f"图例框应不透明，实际像素 {legend}"


def test_figures_are_stored_as_palette_pngs():
    from PIL import Image

    from onelayer.book.plotting import palette_png

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1, 2], [0, 1, 4], label="曲线")
    ax.legend()
    png = palette_png(fig)
    plt.close(fig)
    image = Image.open(io.BytesIO(png))
    assert image.mode == "P" and len(image.getcolors(256)) <= 256
    assert image.convert("RGB").getpixel((2, 2)) == (255, 255, 255)  # opaque white corner
