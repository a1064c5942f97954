"""The panels: built from the parts, one distinct alt text per frame."""

from onelayer.params import block_parameter_breakdown


def test_meta_block_has_the_requested_sizes():
    from onelayer.book.widgets.ch06_block import meta_block

    block = meta_block(4096, 11008 / 4096, gated=True, norm="rmsnorm", bias=False)
    assert next(block.parameters()).device.type == "meta"
    assert (block.config.n_heads, block.config.ffn_width) == (64, 11008)
    assert block_parameter_breakdown(block)["ffn"] == 3 * 4096 * 11008


def test_block_frames_have_one_distinct_alt_text_per_frame():
    import re

    from onelayer.book.plotting import use_book_style
    from onelayer.book.widgets.ch06_block import block_ratio_frames

    use_book_style()  # the CJK font, as in the chapters
    player = block_ratio_frames()
    frames = player.children[-1].children
    alts = [re.search(r'alt="([^"]*)"', f.value).group(1) for f in frames]
    assert len(alts) == 6 and len(set(alts)) == 6
    assert "d_ff = 4·d_model" in alts[player.children[-1].selected_index]


def test_panels_draw_on_their_own_figures_not_pyplots():
    import matplotlib.pyplot as plt
    from ipywidgets import widgets

    from onelayer.book.widgets.ch01 import fish_frames
    from onelayer.book.widgets.ch03 import residual_gradient_explorer
    from onelayer.book.widgets.ch04 import layernorm_frames

    plt.close("all")
    panels = [fish_frames(), layernorm_frames(), residual_gradient_explorer()]
    assert plt.get_fignums() == []  # a callback on another thread cannot clobber pyplot
    assert all(isinstance(p, widgets.VBox) for p in panels)


def test_frame_player_links_slider_and_frames():
    from onelayer.book.widgets.ch03 import residual_frames

    player = residual_frames()
    note, slider, stack = player.children
    assert "frame-player" in player._dom_classes
    assert len(slider.options) == len(stack.children) == 6
    assert stack.selected_index == slider.index


def _drawn_by_panel(monkeypatch):
    """Every HTML figure a panel displays, in order (no kernel needed)."""
    from onelayer.book import plotting

    shown = []
    monkeypatch.setattr(plotting, "display", shown.append)
    return shown


def test_a_slider_value_bounced_back_by_the_browser_does_not_redraw():
    # The browser snaps 0.6 to its step grid from -2.0 and sends back -2.0 + 26 * 0.1.
    import ipywidgets as widgets

    from onelayer.book.widgets.live import float_slider, live_output

    calls = []
    slider = float_slider(0.6, -2.0, 2.0, 0.1, "x")
    live_output(lambda x: calls.append(x), {"x": slider})
    assert calls == [0.6]
    slider.value = -2.0 + 26 * 0.1
    assert slider.value == 0.6000000000000001
    assert calls == [0.6]  # not recomputed: the same value after rounding to the step
    slider.value = 0.7
    assert calls == [0.6, 0.7]
    assert isinstance(slider, widgets.FloatSlider) and slider.readout_format == ".1f"


def test_live_panels_get_values_rounded_to_the_step(monkeypatch):
    import ipywidgets as widgets

    from onelayer.book.widgets.live import live_output

    slider = widgets.FloatSlider(value=0.8, min=-2.0, max=2.0, step=0.1)
    log_slider = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05)
    calls = []
    live_output(lambda a, t: calls.append((a, t)), {"a": slider, "t": log_slider})
    slider.value = -2.0 + 28 * 0.1                     # 0.7999999999999998
    log_slider.value = 10 ** (-1 + 20 * 0.05)          # the browser's 10^0, not exactly 1
    assert calls == [(0.8, 1.0)]
    log_slider.value = 10 ** (-1 + 30 * 0.05)          # one step right of 10^0.5
    slider.value = -2.0 + 27 * 0.1
    assert calls[1:] == [(0.8, 3.16227766017), (0.7, 3.16227766017)]


def test_float_sliders_read_out_their_value_at_the_step_precision():
    from onelayer.book.widgets.live import readout_format

    assert [readout_format(s) for s in (0.1, 0.05, 0.5, 2.0)] == [".1f", ".2f", ".1f", ".0f"]


def test_panel_figures_are_not_looked_up_in_pyplot(monkeypatch):
    import matplotlib.pyplot as plt

    from onelayer.book import plotting

    def no_pyplot(*args):
        raise AssertionError("a panel's figure went through pyplot")

    monkeypatch.setattr(plt, "close", no_pyplot)
    fig = plotting.new_figure()
    fig.subplots().plot([0, 1])
    assert plotting.figure_html(fig, "线").startswith('<img src="data:image/png;base64,')


def test_temperature_title_reads_like_the_slider():
    from onelayer.book.widgets.ch07_tiny_gpt import _next_token_figure
    from onelayer.chapters.ch07_tiny_gpt import facts_gpt_config
    from onelayer.data import facts_corpus
    from onelayer.model import TinyGPT

    corpus = facts_corpus()
    fig = _next_token_figure(TinyGPT(facts_gpt_config(corpus)), corpus, "猫吃", 10 ** 0.5)
    assert "τ = 3.16（" in fig.axes[0].get_title()
