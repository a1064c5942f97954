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
