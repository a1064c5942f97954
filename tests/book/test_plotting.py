import matplotlib as mpl

from onelayer.book import plotting


def test_uses_a_cjk_font_when_one_is_installed():
    font = plotting.use_book_style()
    if font is None:
        assert plotting.find_cjk_font() is None
    else:
        assert mpl.rcParams["font.sans-serif"][0] == font


def test_stays_quiet_without_cjk_font(monkeypatch, capsys, recwarn):
    monkeypatch.setattr(plotting, "CJK_FAMILIES", ("No Such Font Family",))
    assert plotting.use_book_style() is None
    assert capsys.readouterr() == ("", "")
    assert len(recwarn) == 0
