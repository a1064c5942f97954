"""The panels: built from the parts, one distinct alt text per frame."""

from onelayer.params import block_parameter_breakdown


def test_meta_block_has_the_requested_sizes():
    from onelayer.book.widgets.ch06 import meta_block

    block = meta_block(4096, 11008 / 4096, gated=True, norm="rmsnorm", bias=False)
    assert next(block.parameters()).device.type == "meta"
    assert (block.config.n_heads, block.config.ffn_width) == (64, 11008)
    assert block_parameter_breakdown(block)["ffn"] == 3 * 4096 * 11008


def test_block_frames_have_one_distinct_alt_text_per_frame():
    import re

    from onelayer.book.plotting import use_book_style
    from onelayer.book.widgets.ch06 import block_ratio_frames

    use_book_style()  # the CJK font, as in the chapters
    player = block_ratio_frames()
    frames = player.children[-1].children
    alts = [re.search(r'alt="([^"]*)"', f.value).group(1) for f in frames]
    assert len(alts) == 6 and len(set(alts)) == 6
    assert "d_ff = 4·d_model" in alts[player.children[-1].selected_index]


def test_panels_draw_on_their_own_figures_not_pyplots():
    import matplotlib.pyplot as plt
    from ipywidgets import widgets

    from onelayer.book.widgets.ch01 import ffn_explorer, fish_frames
    from onelayer.book.widgets.ch04 import layernorm_frames

    plt.close("all")
    panels = [fish_frames(), layernorm_frames(), ffn_explorer()]
    assert plt.get_fignums() == []  # a callback on another thread cannot clobber pyplot
    assert all(isinstance(p, widgets.VBox) for p in panels)


def test_frame_player_links_slider_and_frames():
    from onelayer.book.widgets.ch03 import residual_frames

    player = residual_frames()
    note, slider, stack = player.children
    assert "frame-player" in player._dom_classes
    assert len(slider.options) == len(stack.children) == 6
    assert stack.selected_index == slider.index
