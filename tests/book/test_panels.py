"""Panels that compute in the page: the page's numbers against onelayer's, and the rule that
every control in the built book changes its panel.

The expected values are computed here by onelayer (in float64, from the values the page's
controls hold), never typed in. The browser tests run on the built book (`jupyter-book build`).
"""

from __future__ import annotations

import json
import math
import re

import pytest
import torch
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_site import toc_pages

# Numbers that are round-off of zero in both implementations (a mean of x̂, a ReLU of 0 …)
# are compared absolutely; everything else to 1e-6 relative.
REL, ABS = 1e-6, 1e-12
PANEL_PAGES = {
    "ffn": "chapters/01_ffn.html",
    "activation": "chapters/02_activation.html",
    "layernorm": "chapters/04_layernorm.html",
    "prepost": "chapters/08_pre_post_norm.html",
    "block": "chapters/06_block.html",
    "attention": "chapters/05_attention.html",
    "rope": "chapters/09_modern_layer.html",
}


# ---- what Python says, from the controls' values ----

def expected_ffn(controls: dict, data: dict) -> dict[str, float]:
    """From the weights the page holds, once they are found to be the chapter's FFN: they were
    drawn at random when the book was built, and their last bits depend on that machine's
    CPU code path."""
    from onelayer.book.widgets.ch01 import ffn_panel_data
    from onelayer.data import sentence_ffn
    from onelayer.ffn import trace_ffn

    held = {key: torch.tensor(data[key], dtype=torch.float64) for key in ("W1", "b1", "W2", "b2")}
    ours = ffn_panel_data()
    assert data["x"] == ours["x"]
    for key, page in held.items():  # PyTorch's normal sampler differs by a few float32 ulps
        assert torch.allclose(page, torch.tensor(ours[key], dtype=torch.float64),  # (3e-7)
                              rtol=1e-5, atol=1e-6), f"页面里的 {key} 不是本章 FFN 的"
    x = torch.tensor([float(controls[f"x{i}"]) for i in range(4)], dtype=torch.float64)
    ffn = sentence_ffn(controls["activation"]).double()
    with torch.no_grad():
        for layer, w, b in ((ffn.w1, "W1", "b1"), (ffn.w2, "W2", "b2")):
            layer.weight.copy_(held[w].T)
            layer.bias.copy_(held[b])
        t = trace_ffn(ffn, x)
    return {f"{key}.{i}": v for key, values in (("pre", t.pre), ("post", t.post), ("out", t.out))
            for i, v in enumerate(values.tolist())}


def expected_activation(controls: dict, data: dict) -> dict[str, float]:
    from onelayer.activations import value_and_grad

    z = torch.tensor([float(controls["z"])], dtype=torch.float64)
    found = {}
    for name in ("relu", "gelu", "gelu_tanh", "silu", "sigmoid"):
        if controls[f"act-{name}"]:
            value, grad = value_and_grad(name, z)
            found[f"{name}.value"], found[f"{name}.grad"] = value.item(), grad.item()
    return found


def expected_layernorm(controls: dict, data: dict) -> dict[str, float]:
    from onelayer.norms import LayerNorm, RMSNorm, mean_and_biased_var

    def vector(prefix):
        values = [float(controls[f"{prefix}{i}"]) for i in range(4)]
        return torch.tensor(values, dtype=torch.float64)

    x = vector("x")
    norm = (LayerNorm(4) if controls["kind"] == "LayerNorm" else RMSNorm(4)).double()
    with torch.no_grad():
        norm.weight.copy_(vector("g"))
        if controls["kind"] == "LayerNorm":
            norm.bias.copy_(vector("b"))
        rows = {"x": x, "xhat": norm.normalized(x), "y": norm(x)}
    found = {}
    for key, v in rows.items():
        mean, var = mean_and_biased_var(v)
        found.update({f"{key}.{i}": value for i, value in enumerate(v.tolist())})
        found.update({f"{key}.mean": mean.item(), f"{key}.var": var.item(),
                      f"{key}.rms": v.pow(2).mean().sqrt().item()})
    return found


def expected_prepost(controls: dict, data: dict) -> dict[str, float]:
    from onelayer.norms import LayerNorm
    from onelayer.residual import norm_sublayer

    x = torch.tensor([float(controls[f"x{i}"]) for i in range(4)], dtype=torch.float64)
    s = torch.tensor([float(controls[f"s{i}"]) for i in range(4)], dtype=torch.float64)
    n_layers = int(controls["L"])
    norm = LayerNorm(4).double()
    found = {}
    for position in ("post", "pre"):
        stream = x
        with torch.no_grad():
            for layer in range(1, n_layers + 1):
                stream = norm_sublayer(stream, lambda v: v * s, norm, position)
                found[f"{position}.{layer}.rms"] = stream.pow(2).mean().sqrt().item()
        found.update({f"{position}.{n_layers}.{i}": v for i, v in enumerate(stream.tolist())})
    return found


def expected_block(controls: dict, data: dict) -> dict[str, float]:
    from onelayer.book.widgets.ch06_block import meta_block
    from onelayer.params import block_flops, block_parameter_breakdown

    block = meta_block(int(controls["d_model"]), float(controls["ratio"]),
                       controls["gated"] == "gated", controls["norm"], bool(controls["bias"]))
    found = {}
    for kind, parts in (("params", block_parameter_breakdown(block)),
                        ("flops", block_flops(block, 2 ** int(controls["log2T"])))):
        total = sum(parts.values())
        found[f"{kind}.total"] = total
        for key, n in parts.items():
            found[f"{kind}.{key}"], found[f"{kind}.{key}.share"] = n, n / total
    return found


def expected_attention(controls: dict, data: dict) -> dict[str, float]:
    from onelayer.book.widgets.ch05_attention import query_attention

    q = torch.tensor([float(controls[f"q{i}"]) for i in range(4)], dtype=torch.float64)
    shown = query_attention(q, controls["token"], bool(controls["scale"]))
    return {f"{key}.{i}": v for key, values in shown.items() for i, v in enumerate(values.tolist())}


def expected_rope(controls: dict, data: dict) -> dict[str, float]:
    from onelayer.book.widgets.ch09_modern_layer import rope_scores

    q, k = (torch.tensor(data[key], dtype=torch.float64) for key in ("q", "k"))
    shown = rope_scores(q, k, int(controls["m"]), int(controls["n"]), data["theta"])
    return {f"{key}.{i}": v for key, values in shown.items() for i, v in enumerate(values.tolist())}


EXPECTED = {"attention": expected_attention, "rope": expected_rope, "ffn": expected_ffn,
            "activation": expected_activation,
            "layernorm": expected_layernorm, "prepost": expected_prepost, "block": expected_block}


def assert_close(shown: dict[str, list[float]], expected: dict[str, float], where: str) -> None:
    assert set(shown) == set(expected), (where, sorted(set(shown) ^ set(expected)))
    for key, values in shown.items():
        for v in values:
            assert math.isclose(v, expected[key], rel_tol=REL, abs_tol=ABS), (
                f"{where}: {key} 页面 {v!r}，Python {expected[key]!r}")


# ---- without a browser ----

def test_page_panels_are_self_contained_and_stable():
    from onelayer.book.widgets.ch01 import ffn_explorer
    from onelayer.book.widgets.ch02 import activation_explorer
    from onelayer.book.widgets.ch04 import layernorm_explorer
    from onelayer.book.widgets.ch05_attention import query_explorer
    from onelayer.book.widgets.ch06_block import block_explorer

    for make in (ffn_explorer, activation_explorer, layernorm_explorer, block_explorer,
                 query_explorer):
        html = make()._repr_html_()
        assert html == make()._repr_html_()  # stored outputs compare exactly under nbval
        requests = re.sub(r'"http://www\.w3\.org/2000/svg"', "", html)  # a namespace, not a request
        # the one request allowed: the file the book's build may move big data to (data-src)
        assert requests.count("script.src = file;") == 1 and "json\" data-src=" not in html
        requests = requests.replace("script.src = file;", "")
        assert not re.search(r"(src|href)\s*=|https?://|import\(|fetch\(", requests), make.__name__
        data = re.search(r'<script type="application/json">(.*?)</script>', html, re.S).group(1)
        json.loads(data.replace("<\\/", "</"))
        assert html.count("</script>") == 2


def test_ffn_panel_has_the_weights_of_the_chapter_ffn_for_both_activations():
    from onelayer.book.widgets.ch01 import ffn_panel_data
    from onelayer.data import sentence_ffn

    data = ffn_panel_data()
    for activation in ("gelu", "relu"):
        ffn = sentence_ffn(activation)
        assert torch.equal(torch.tensor(data["W1"]), ffn.w1.weight.detach().T)
        assert torch.equal(torch.tensor(data["W2"]), ffn.w2.weight.detach().T)
        assert torch.equal(torch.tensor(data["b2"]), ffn.w2.bias.detach())
    assert data["x"] == [0.6, -0.5, 0.8, -0.4]


# Panels that recompute with PyTorch: live ipywidgets in Lab, their output removed from the HTML.
KERNEL_PANELS = {"03_residual": "residual_gradient_explorer()",
                 "08b_gradient_study": "norm_position_explorer(known=grad)",
                 "07_tiny_gpt": "generation_explorer(model, corpus)"}
PAGE_PANEL_CALLS = {"01_ffn": "ffn_explorer()", "02_activation": "activation_explorer()",
                    "04_layernorm": "layernorm_explorer()",
                    "08_pre_post_norm": "prepost_explorer(x_fish, s)",
                    "06_block": "block_explorer()", "05_attention": "query_explorer()",
                    "09_modern_layer": "rope_explorer(q_panel, k_panel)"}


def test_panel_cells_are_tagged_for_the_html_book():
    from pathlib import Path

    chapters = Path(__file__).resolve().parents[2] / "chapters"
    # A page panel's HTML holds its inputs at full precision: ch1's are random weights, whose
    # last bit differs between CPU code paths, so that cell is not compared digit by digit.
    page_unwanted = {"remove-output"}
    for calls, wanted, unwanted in ((KERNEL_PANELS, {"remove-output"}, set()),
                                    (PAGE_PANEL_CALLS, set(), page_unwanted)):
        for name, call in calls.items():
            nb = json.loads((chapters / f"{name}.ipynb").read_text(encoding="utf-8"))
            (cell,) = [c for c in nb["cells"] if "".join(c["source"]).strip().endswith(call)]
            tags = set(cell["metadata"].get("tags", []))
            assert wanted <= tags and not tags & unwanted, (name, tags)
            if not wanted:  # the page panel is stored as HTML
                (output,) = cell["outputs"]
                assert "onelayer-panel" in "".join(output["data"]["text/html"]), name


def test_the_tiny_gpt_runs_in_chapter_8s_page():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "chapters" / "07_tiny_gpt.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]).strip() for c in cells]
    i = sources.index(KERNEL_PANELS["07_tiny_gpt"])
    assert sources[i + 1].endswith('tiny_gpt_in_page(model, corpus, "猫吃")')
    # the weights are trained: not compared digit by digit, but shown in the HTML book (the
    # call itself is folded: a book helper the learner does not build)
    assert set(cells[i + 1]["metadata"]["tags"]) == {"nbval-ignore-output", "hide-input"}
    (output,) = cells[i + 1]["outputs"]
    assert 'data-kind="gpt"' in "".join(output["data"]["text/html"])


def test_rope_panel_scores_depend_only_on_the_distance():
    from onelayer.book.widgets.ch09_modern_layer import rope_panel_data, rope_scores

    q, k = torch.randn(2, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    base = rope_scores(q, k, 5, 2)
    assert torch.isclose(base["score"], base["pair"].sum()).all()
    assert torch.allclose(rope_scores(q, k, 60, 57)["score"], base["score"], rtol=1e-12)
    assert not torch.allclose(rope_scores(q, k, 5, 3)["score"], base["score"])
    with pytest.raises(ValueError, match="同样长的一维向量"):
        rope_panel_data(q, k[:4])
    with pytest.raises(ValueError, match="d_head 应为偶数"):
        rope_panel_data(q[:5], k[:5])
    with pytest.raises(ValueError, match="m、n 应在 0..63 之间"):
        rope_panel_data(q, k, m=64)


def test_a_page_panel_of_an_unknown_kind_is_refused():
    from onelayer.book.panels import PagePanel

    with pytest.raises(ValueError, match="实际为 'moe'"):
        PagePanel("moe", {}, "x")


# ---- in the built book ----

READ_PANEL = """panel => {
  const controls = {};
  for (const c of panel.querySelectorAll('[data-control]')) {
    const name = c.dataset.control;
    if (c.type === 'radio') { if (c.checked) controls[name] = c.value; }
    else if (c.type === 'checkbox') controls[name] = c.checked;
    else controls[name] = c.value;
  }
  const shown = {};
  for (const n of panel.querySelectorAll('.olp-out [data-key]')) {
    (shown[n.dataset.key] = shown[n.dataset.key] || []).push(Number(n.dataset.v));
  }
  const data = panel.querySelector('script[type="application/json"]');
  return [controls, shown, data ? JSON.parse(data.textContent) : {}];
}"""
SET_CONTROL = """([panel, name, value]) => {
  const inputs = [...panel.querySelectorAll(`[data-control="${name}"]`)];
  const c = inputs.find(i => i.type !== 'radio') || inputs.find(i => i.value === value);
  if (c.type === 'checkbox') { if (c.checked !== value) c.click(); return; }
  if (c.type === 'radio') { c.click(); return; }
  c.value = String(value);
  c.dispatchEvent(new Event(c.tagName === 'SELECT' ? 'change' : 'input', {bubbles: true}));
}"""
# Control settings tried on each panel, one after the other (each on top of the previous).
SETTINGS = {
    "ffn": [{}, {"x1": 1.3}, {"activation": "relu"}, {"x0": -2, "x2": 2, "x3": 0.1},
            {"activation": "gelu", "x1": -1.7}],
    "activation": [{}, {"z": 0.05}, {"z": -7.95, "act-gelu_tanh": True, "act-sigmoid": True},
                   {"z": 3.4, "act-relu": False}, {"z": -0.75}],
    "layernorm": [{}, {"x0": 2.5, "g1": -1.3, "b2": 0.7}, {"kind": "RMSNorm"},
                  {"token": "猫"},
                  {"kind": "LayerNorm", "x0": 0.3, "x1": 0.3, "x2": 0.3, "x3": 0.3},
                  {"token": "吃", "g0": 2, "g1": 2, "g2": 2, "g3": 2, "b3": -2}],
    "prepost": [{}, {"L": 12}, {"x0": -3, "s1": 0, "s3": -2.7}, {"L": 5, "x1": 0.1, "x2": 0.1},
                {"L": 1, "s0": 3, "s2": 3}],
    "attention": [{}, {"q0": 1.5}, {"scale": False}, {"token": "吃"},
                  {"q2": -2, "scale": True}, {"token": "猫", "q3": 0.7},
                  {"token": "鱼", "q1": 2, "q0": -1.6}],
    "rope": [{}, {"m": 9, "n": 6}, {"pair": "2"}, {"m": 63, "n": 60}, {"m": 0, "n": 40},
             {"pair": "3", "n": 0, "m": 20}],
    "block": [{}, {"ratio": 2.5, "gated": "gated", "norm": "rmsnorm", "bias": False},
              {"d_model": "4096", "ratio": 8, "log2T": 16},
              {"d_model": "64", "ratio": 0.5, "log2T": 6},
              {"d_model": "1024", "bias": True, "gated": "plain", "log2T": 11}],
}


def shared_panel(book_pages, kind):
    """The page's shared visit and its one panel of ``kind``, drawn."""
    seen = book_pages(PANEL_PAGES[kind])
    panel = seen.page.locator(f".onelayer-panel[data-kind={kind}]")
    assert panel.count() == 1, f"{PANEL_PAGES[kind]}：应有一个 {kind} 面板"
    seen.page.wait_for_selector(f".onelayer-panel[data-kind={kind}][data-mounted]",
                                timeout=10_000)
    return seen, panel

# A slider each panel's numbers depend on, moved by the keyboard after the settings above.
KEYBOARD_SLIDER = {"attention": "q0", "ffn": "x1", "activation": "z", "layernorm": "x0",
                   "prepost": "x1", "block": "log2T", "rope": "m"}


@pytest.mark.browser
@pytest.mark.changes_page
@pytest.mark.parametrize("kind, page_path", PANEL_PAGES.items())
def test_page_panel_numbers_are_pythons(book_pages, kind, page_path):
    seen, panel = shared_panel(book_pages, kind)
    page = seen.page
    handle = panel.element_handle()
    for step, setting in enumerate(SETTINGS[kind]):
        for name, value in setting.items():
            page.evaluate(SET_CONTROL, [handle, name, value])
        controls, shown, data = page.evaluate(READ_PANEL, handle)
        for name, value in setting.items():
            if name not in ("token",):
                assert str(controls[name]).lower() == str(value).lower() or \
                    float(controls[name]) == float(value), (name, controls[name], value)
        assert shown, f"{kind}：面板没有显示数"
        assert_close(shown, EXPECTED[kind](controls, data), f"{kind} 第 {step} 组 {controls}")
    # The keyboard moves a slider too, and its value is announced rounded.
    slider = panel.locator(f"input[data-control={KEYBOARD_SLIDER[kind]}]")
    before = page.evaluate(READ_PANEL, handle)[1]
    slider.focus()
    page.keyboard.press("ArrowLeft")
    controls, shown, data = page.evaluate(READ_PANEL, handle)
    assert shown != before
    assert_close(shown, EXPECTED[kind](controls, data), f"{kind} 键盘")
    for s in panel.locator("input[type=range]").all():
        text = s.get_attribute("aria-valuetext")
        assert text and not re.search(r"\d{6,}", text), text
    assert seen.errors == [], seen.errors


def evaluate_in_panel_page(book_pages, kind: str, script: str, arg):
    """Run ``script(arg)`` on the page of ``kind``'s panel, once its script has loaded."""
    seen, _ = shared_panel(book_pages, kind)
    result = seen.page.evaluate(script, arg)
    assert seen.errors == [], seen.errors
    return result


@pytest.mark.browser
@pytest.mark.parametrize("page_path", [PANEL_PAGES["block"]])
def test_block_panel_formula_matches_onelayer_on_every_choice(book_pages, page_path):
    """The page's closed-form counts against block_parameter_breakdown / block_flops."""
    from onelayer.book.widgets.ch06_block import BLOCK_D_MODELS

    cases = [(d, r / 2, gated, norm, bias) for d in BLOCK_D_MODELS for r in (1, 3, 8, 11, 16)
             for gated in (False, True) for norm in ("layernorm", "rmsnorm")
             for bias in (True, False)]
    got = evaluate_in_panel_page(book_pages, "block", "cases => cases.map(([d, r, g, n, b])"
                                 " => onelayerPanels.block(d, r, g, n, b, 1024))", cases)
    for (d, r, gated, norm, bias), b in zip(cases, got, strict=True):
        expected = expected_block({"d_model": d, "ratio": r, "norm": norm, "bias": bias,
                                   "gated": "gated" if gated else "plain", "log2T": 10}, {})
        page = {f"{kind}.{k}": v for kind in ("params", "flops") for k, v in b[kind].items()}
        assert page == {k: v for k, v in expected.items()
                        if k.count(".") == 1 and not k.endswith(".total")}, b


@pytest.mark.browser
@pytest.mark.parametrize("page_path", [PANEL_PAGES["activation"]])
def test_activation_panel_formulas_match_onelayer_on_a_grid(book_pages, page_path):
    """Values and derivatives on a grid of z (the sliders' grid and beyond), 1e-6 relative."""
    from onelayer.activations import value_and_grad

    zs = [round(-8 + 0.05 * k, 2) for k in range(321)] + [-30.0, -12.5, 12.5, 30.0]
    got = evaluate_in_panel_page(
        book_pages, "activation", "zs => Object.fromEntries(Object.entries("
        "onelayerPanels.math.ACTIVATIONS).map(([n, f]) => [n, zs.map(f)]))", zs)
    for name, pairs in got.items():
        value, grad = value_and_grad(name, torch.tensor(zs, dtype=torch.float64))
        for z, (v, g), pv, pg in zip(zs, pairs, value.tolist(), grad.tolist(), strict=True):
            assert math.isclose(v, pv, rel_tol=REL, abs_tol=ABS), (name, z, v, pv)
            assert math.isclose(g, pg, rel_tol=REL, abs_tol=ABS), (name, z, g, pg)


# What a control's panel shows: the in-page panels' output, or the frame player's visible figure.
PANEL_STATE = """c => {
  const panel = c.closest('.onelayer-panel, .frame-player, .cell_output');
  const out = panel.querySelector('.olp-out');
  const shown = [...panel.querySelectorAll('img')].filter(i => i.offsetParent !== null)
    .map(i => i.getAttribute('alt') + i.getAttribute('src').length);
  return (out ? out.innerHTML : '') + shown.join('|');
}"""
# Every control in a cell's output; the theme's copy buttons copy code, they drive no panel.
CONTROLS = ("input:not([type=hidden]), select, textarea, button:not(.copybtn), [role=slider],"
            " .noUi-handle")


def panel_changes(page, control, before: str, timeout_ms: int) -> bool:
    """Whether the control's panel shows something other than ``before`` within the time."""
    try:
        page.wait_for_function(f"([c, before]) => ({PANEL_STATE})(c) !== before",
                               arg=[control.element_handle(), before], timeout=timeout_ms)
        return True
    except PlaywrightTimeout:
        return False


@pytest.mark.browser
@pytest.mark.changes_page
@pytest.mark.parametrize("page_path", toc_pages())
def test_every_control_in_the_html_changes_its_panel(book_pages, page_path):
    """The rule: no slider, button, text box or select in an output leaves its panel unchanged."""
    seen = book_pages(page_path)
    page = seen.page
    controls = page.locator(f".cell_output :is({CONTROLS})")
    dead = []
    for i in range(controls.count()):  # each from the state the previous ones left
        control = controls.nth(i)
        if control.is_disabled():
            continue
        described = control.evaluate(
            "c => c.dataset.control || c.getAttribute('aria-label')"
            " || c.className || c.tagName")
        before = control.evaluate(PANEL_STATE)
        kind = control.evaluate(
            "c => c.tagName === 'SELECT' ? 'select' : (c.type || c.className)")
        if kind == "select":
            options = control.evaluate(
                "c => [...c.options].map(o => o.value).filter(v => v !== c.value)")
            control.select_option(options[0])
        elif kind in ("checkbox", "radio"):
            if kind == "radio" and control.is_checked():
                continue  # choosing the chosen option; its siblings are tried on their own
            control.click()
        elif kind in ("text", "textarea", "search"):
            control.fill(control.input_value() + "猫")
            control.press("Enter")
        else:  # a range input, a frame player's handle, a button
            control.focus()
            page.keyboard.press("ArrowRight" if kind != "button" else "Enter")
            if kind == "range" and not panel_changes(page, control, before, 500):
                page.keyboard.press("ArrowLeft")  # the slider was at its maximum
                page.keyboard.press("ArrowLeft")
        if not panel_changes(page, control, before, 5000):
            dead.append(described)
    assert dead == [], f"{page_path}：这些控件动了，面板没有变：{dead}"
    assert seen.errors == [], seen.errors


# ---- chapter 7: the tiny GPT in the page ----

def random_tiny_gpt():
    """Chapter 7's model with random weights, norms and biases included (training is the
    chapter's business; the forward pass is what the page must get right)."""
    from onelayer.chapters.ch07_tiny_gpt import facts_gpt_config
    from onelayer.data import facts_corpus
    from onelayer.model import TinyGPT

    corpus = facts_corpus()
    torch.manual_seed(0)
    model = TinyGPT(facts_gpt_config(corpus)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln" in name or name.endswith("bias"):
                p.add_(0.3 * torch.randn_like(p))
    return model, corpus


def test_tiny_gpt_panel_refuses_a_model_it_cannot_run():
    from onelayer.book.widgets.ch07_tiny_gpt import tiny_gpt_in_page
    from onelayer.chapters.ch07_tiny_gpt import facts_gpt_config
    from onelayer.model import TinyGPT

    model, corpus = random_tiny_gpt()
    attention_only = TinyGPT(facts_gpt_config(corpus, d_ff=0))
    with pytest.raises(ValueError, match="每一块都应有 FFN"):
        tiny_gpt_in_page(attention_only, corpus)
    with pytest.raises(ValueError, match="字符应在词表"):
        tiny_gpt_in_page(model, corpus, prompt="鱼")


@pytest.mark.browser
def test_tiny_gpt_in_the_page_computes_pytorchs_logits(browser):
    from onelayer.book.widgets.ch07_tiny_gpt import tiny_gpt_in_page
    from onelayer.chapters.ch07_tiny_gpt import ffn_activations

    model, corpus = random_tiny_gpt()
    generator = torch.Generator().manual_seed(1)
    vocab = corpus.vocab
    prompts = ["猫吃", "猫", "".join(corpus.sentences()[:4])[:16]] + [
        "".join(vocab[i] for i in torch.randint(len(vocab), (n,), generator=generator))
        for n in (3, 7, 16)]
    page = browser.new_page(viewport={"width": 390, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content(f"<!doctype html><html lang='zh-CN'><body>"
                         f"{tiny_gpt_in_page(model, corpus)._repr_html_()}</body></html>")
        root = page.locator(".onelayer-panel[data-kind=gpt][data-mounted]")
        handle = root.element_handle()
        for prompt in prompts:
            got = page.evaluate("([root, ids]) => onelayerPanels.gptForward(root.olpModel, ids)",
                                [handle, corpus.encode(prompt)])
            with torch.no_grad():
                logits = model(torch.tensor(corpus.encode(prompt)))[-1]
            page_logits = torch.tensor(got["logits"], dtype=torch.float64)
            assert torch.allclose(page_logits, logits.double(), rtol=1e-4, atol=1e-4), prompt
            # What the panel shows for this prompt (τ = 1, every token): its top-10 logits and
            # probabilities, and the five FFN neurons that fire most.
            page.locator("input[data-control=prompt]").fill(prompt)
            shown = page.evaluate(READ_PANEL, handle)[1]
            probs = logits.softmax(-1)
            neurons = ffn_activations(model, torch.tensor(corpus.encode(prompt)))[-1]
            expected = {**{f"logit.{c}": logits[i].item() for i, c in enumerate(vocab)},
                        **{f"prob.{c}": probs[i].item() for i, c in enumerate(vocab)},
                        **{f"neuron.{i}": v for i, v in enumerate(neurons.tolist())}}
            assert len([k for k in shown if k.startswith("logit.")]) == 10
            assert len([k for k in shown if k.startswith("neuron.")]) == 5
            for key, values in shown.items():
                assert math.isclose(values[0], expected[key], rel_tol=1e-4, abs_tol=1e-4), key
        # Bad input gets a message in the panel, not an error.
        for text, message in (("", "提示是空的"), ("猫鱼", "词表里没有这些字：鱼"),
                              (vocab[0] * 17, "最多 16 个字")):
            page.locator("input[data-control=prompt]").fill(text)
            assert message in root.locator(".olp-out").inner_text(), text
        assert errors == [], errors
    finally:
        page.close()


# ---- chapter 7: attention maps of a trained model, drawn in the page ----

def test_the_attention_maps_of_the_trained_model_are_in_chapter_7s_study_page():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "chapters" / "07a_facts_study.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    (cell,) = [c for c in cells if "attention_map_explorer(main.models[0]" in "".join(c["source"])]
    # trained weights, not compared; the call is folded (a chapter helper builds the prompts)
    assert set(cell["metadata"]["tags"]) == {"nbval-ignore-output", "hide-input"}
    (output,) = cell["outputs"]
    assert 'data-kind="attnmap"' in "".join(output["data"]["text/html"])


def test_attention_panels_refuse_bad_input():
    from onelayer.book.widgets.ch05_attention import query_attention
    from onelayer.book.widgets.ch07_tiny_gpt import attention_map_data

    model, corpus = random_tiny_gpt()
    with pytest.raises(ValueError, match="提示应非空且等长，实际长度为 \\[2, 3\\]"):
        attention_map_data(model, corpus, ["猫吃", "猫吃米"])
    with pytest.raises(ValueError, match="token 应为"):
        query_attention(torch.zeros(4), "狗")


@pytest.mark.browser
def test_attention_map_panel_shows_attention_maps(browser):
    from onelayer.book.widgets.ch07_tiny_gpt import attention_map_explorer
    from onelayer.chapters.ch07_tiny_gpt import attention_maps

    model, corpus = random_tiny_gpt()
    prompts = ["".join(s) for s in corpus.sentences()[:3]]      # 猫吃葱。 …, each 4 characters
    panel = attention_map_explorer(model, corpus, prompts, marked_head=2)
    page = browser.new_page(viewport={"width": 390, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content(f"<!doctype html><html lang='zh-CN'><body>{panel._repr_html_()}"
                         "</body></html>")
        root = page.locator(".onelayer-panel[data-kind=attnmap][data-mounted]")
        handle = root.element_handle()
        before = root.locator(".olp-out").inner_html()
        for setting in ({}, {"head": "0"}, {"position": "1"}, {"prompt": "2"},
                        {"head": "3", "position": "3"}, {"prompt": "1", "position": "0"}):
            for name, value in setting.items():
                page.evaluate(SET_CONTROL, [handle, name, value])
            controls, shown, _ = page.evaluate(READ_PANEL, handle)
            ids = torch.tensor(corpus.encode(prompts[int(controls["prompt"])]))
            row = attention_maps(model, ids)[int(controls["head"]), int(controls["position"])]
            expected = {f"w.{j}": v for j, v in enumerate(row.tolist())
                        if j <= int(controls["position"])}
            assert_close(shown, expected, f"attnmap {controls}")
            now = root.locator(".olp-out").inner_html()
            assert setting == {} or now != before, setting
            before = now
        assert "（搬主语的头）" in root.inner_text()
        assert errors == [], errors
    finally:
        page.close()


# ---- chapter 10: the model writes a ci in the page ----

# Made-up ci of two 词牌: the rhyme slots of 浣溪沙 (7·7·7) are lines 1 and 2 (杯台来回 rhyme in
# 十灰, 家花沙 in 六麻; the last ci does not rhyme at line 2), 西江月 has none.
TOY_CI = {"浣溪沙": ("一曲新词酒一杯，去年天气旧亭台。夕阳西下几时回。",
                    "清风半夜酒一杯，明月别枝惊鹊来。夕阳西下旧亭台。",
                    "去年天气旧人家，明月别枝一树花。清风半夜酒新沙。",
                    "夕阳西下几时回，清风半夜鸣蝉来。一曲新词酒一天。"),
          "西江月": ("明月别枝惊鹊，清风半夜鸣蝉。稻花香里说丰年，听取蛙声一片。",)}
TOY_PATTERNS = {"浣溪沙": (7, 7, 7), "西江月": (6, 6, 7, 6)}


def toy_songci():
    """The made-up ci, their vocabulary and the forms read from them."""
    from onelayer.chapters.ch10_songci import Form
    from onelayer.songci import Ci, char_vocab

    cis = [Ci(tune, "", (text,)) for tune, texts in TOY_CI.items() for text in texts]
    vocab = char_vocab([f"{ci.rhythmic}：{ci.text}\n" for ci in cis])
    return cis, vocab, {t: Form.read(cis, t, p) for t, p in TOY_PATTERNS.items()}


def random_songci_gpt(seed: int = 0, seq_len: int = 24):
    """Chapter 10's model shape on the toy vocabulary, random weights (norms and biases too)."""
    from onelayer.chapters.ch10_songci import songci_gpt_config
    from onelayer.model import TinyGPT

    _, vocab, forms = toy_songci()
    torch.manual_seed(seed)
    model = TinyGPT(songci_gpt_config(vocab, seq_len)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(0.3 * torch.randn_like(p) if "ln" in name or name.endswith("bias")
                   else 2 * p)                      # 更尖的分布：写出来的字不全是随机的
    return model, vocab, forms


def trained_songci_gpt():
    """Chapter 10's model shape trained until it nearly knows the toy ci by heart: at a high
    temperature it writes lines of their lengths, ending in rhymes or not."""
    from onelayer.chapters.ch10_songci import songci_gpt_config
    from onelayer.model import TinyGPT

    cis, vocab, forms = toy_songci()
    torch.manual_seed(0)
    model = TinyGPT(songci_gpt_config(vocab, 40))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    rows = [torch.tensor(vocab.encode(f"{ci.rhythmic}：{ci.text}\n")) for ci in cis]
    for _ in range(120):
        loss = sum(torch.nn.functional.cross_entropy(model(r[:-1]), r[1:]) for r in rows)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval(), vocab, forms


def test_songci_writer_refuses_a_model_or_form_it_cannot_use():
    import dataclasses

    from onelayer.book.widgets.ch10_songci import songci_writer
    from onelayer.chapters.ch10_songci import songci_gpt_config
    from onelayer.model import TinyGPT

    model, vocab, forms = random_songci_gpt()
    songci_writer(model, vocab, forms)
    ok = forms["浣溪沙"]
    with pytest.raises(ValueError, match="forms 应至少有一个词牌，实际为空"):
        songci_writer(model, vocab, {})
    with pytest.raises(ValueError, match=r"forms\['浣溪沙'\] 应为 Form，实际为 tuple"):
        songci_writer(model, vocab, {"浣溪沙": (7, 7, 7)})
    with pytest.raises(ValueError, match="词牌应由词表里的字组成，实际为 '鹧鸪天'"):
        songci_writer(model, vocab, {"鹧鸪天": dataclasses.replace(ok, tune="鹧鸪天")})
    with pytest.raises(ValueError, match="forms 的键应为它的词牌 '浣溪沙'，实际为 '西江月'"):
        songci_writer(model, vocab, {"西江月": ok})
    with pytest.raises(ValueError, match=r"浣溪沙 的 pattern 应为正整数的句长，实际为 \[7, 0, 7\]"):
        songci_writer(model, vocab, {"浣溪沙": dataclasses.replace(ok, pattern=(7, 0, 7))})
    with pytest.raises(ValueError, match=r"平仄格应为 pattern \[7, 7\] 的，实际为 \[7, 7, 7\]"):
        songci_writer(model, vocab, {"浣溪沙": dataclasses.replace(ok, pattern=(7, 7))})
    with pytest.raises(ValueError, match=r"浣溪沙 的韵脚句应在 1..2 之间，实际为 \[1, 3\]"):
        songci_writer(model, vocab, {"浣溪沙": dataclasses.replace(ok, slots=(1, 3))})
    blind = TinyGPT(songci_gpt_config(vocab, 24, position_table=False))
    with pytest.raises(ValueError, match="位置嵌入表：无"):
        songci_writer(blind, vocab, forms)
    with pytest.raises(ValueError, match="model 应为 TinyGPT 或 PlacedGPT，实际为 Linear"):
        songci_writer(torch.nn.Linear(2, 2), vocab, forms)


def test_songci_writer_sends_each_characters_tone_and_rhyme_classes():
    from onelayer import metre
    from onelayer.book.widgets.ch10_songci import songci_writer

    model, vocab, forms = random_songci_gpt()
    data = songci_writer(model, vocab, forms).data
    assert len(data["tones"]) == len(vocab.chars)
    rhymes = data["rhymes"]["平水韵"]
    for k, (c, t) in enumerate(zip(vocab.chars, data["tones"])):
        assert t == (metre.tone(c) or "·"), c
        assert rhymes["listed"][k] == ("1" if metre.rhyme_groups(c) else "0"), c
        for tone in ("平", "仄"):                     # 每个声调只有这个声调的读音
            assert {rhymes["names"][g] for g in rhymes["ids"][tone][k]} == \
                metre.rhyme_groups(c, tone=tone), (c, tone)
    tune = data["tunes"][0]
    grid = forms["浣溪沙"].grid
    assert tune["slots"] == [1, 2] and tune["book"] == "平水韵"
    assert tune["slotTones"] == [grid.end_tone(1), grid.end_tone(2)]
    assert [(i, j) for i, row in enumerate(tune["grid"]) for j, t in enumerate(row)
            if t != "·"] == grid.fixed()
    assert all(tune["grid"][i][j] == grid.majority[i][j] for i, j in grid.fixed())


PANEL_LINES = """panel => [...panel.querySelectorAll('.olp-out li')].map(li => ({
  text: li.dataset.text,
  chars: [...li.querySelectorAll('ruby')].map(r => [r.firstChild.textContent,
                                                    r.querySelector('rt').textContent]),
  rhyme: li.querySelector('[data-key^="rhyme."]')?.dataset.v ?? null,
}))"""


def open_songci_panel(browser, panel):
    page = browser.new_page(viewport={"width": 390, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(f"<!doctype html><html lang='zh-CN'><body>{panel._repr_html_()}"
                     "</body></html>")
    root = page.locator(".onelayer-panel[data-kind=songci][data-mounted]")
    return page, root.element_handle(), errors


@pytest.mark.browser
def test_songci_writer_in_the_page_computes_pytorchs_logits_and_writes(browser):
    import copy

    from onelayer.book.widgets.ch10_songci import songci_writer
    from onelayer.songci import Ci, line_lengths

    model, vocab, forms = random_songci_gpt()
    half = copy.deepcopy(model)                      # 页面里存的是 float16 的权重
    with torch.no_grad():
        for p in half.parameters():
            p.copy_(p.half().float())
    page, handle, errors = open_songci_panel(browser, songci_writer(model, vocab, forms))
    try:
        for prompt in ("浣溪沙：", "浣溪沙：一曲新词",
                       "浣溪沙：一曲新词酒一杯，去年天气旧亭台。夕阳"):
            ids = vocab.encode(prompt)
            got = page.evaluate("([root, ids]) => onelayerPanels.gptForward(root.olpModel, ids)",
                                [handle, ids])
            with torch.no_grad():
                expected = half(torch.tensor(ids))[-1].double()
            assert torch.allclose(torch.tensor(got["logits"], dtype=torch.float64), expected,
                                  rtol=1e-4, atol=1e-4), prompt
        texts = set()
        for name, value in (("temperature", 1.2), ("top_p", 0.6), ("seed", 7),
                            ("tune", "西江月")):
            page.evaluate(SET_CONTROL, [handle, name, value])
            shown = page.evaluate(READ_PANEL, handle)[1]
            written = "".join(line["text"] for line in page.evaluate(PANEL_LINES, handle))
            assert written not in texts, name                  # 每个控件都改变了写出的词
            texts.add(written)
            assert "□" not in written and set(written) <= set(vocab.chars)
            lengths = line_lengths(Ci("", "", (written,)))
            assert tuple(int(shown[f"line.{i}"][0]) for i in range(len(lengths))) == lengths
        assert errors == [], errors
    finally:
        page.close()


@pytest.mark.browser
def test_songci_writer_runs_a_model_that_reads_the_places_as_pytorch_does(browser):
    import copy

    from onelayer.book.widgets.ch10_songci import songci_writer
    from onelayer.chapters.ch10_place import PlacedGPT

    gpt, vocab, forms = random_songci_gpt(seq_len=40)
    model = PlacedGPT(gpt, vocab).eval()
    with torch.no_grad():                            # 位置符号的两张表也取随机值，才量得出差别
        model.countdown.weight.normal_(generator=torch.Generator().manual_seed(1))
        model.slot.weight.normal_(generator=torch.Generator().manual_seed(2))
    half = copy.deepcopy(model)                      # 页面里存的是 float16 的权重
    with torch.no_grad():
        for p in half.parameters():
            p.copy_(p.half().float())
    half.form = forms["浣溪沙"]
    panel = songci_writer(model, vocab, forms, about="测试用的模型")
    page, handle, errors = open_songci_panel(browser, panel)
    try:
        form = panel.data["tunes"][0]
        assert form["name"] == "浣溪沙"
        for prompt in ("浣溪沙：", "浣溪沙：一曲新词酒一杯，，去年天气旧亭",   # 连着的标点不算一句
                       "浣溪沙：一曲新词酒一杯，去年天气旧亭台。夕阳西下几时回。\n"):
            ids = vocab.encode(prompt)
            got = page.evaluate("([root, form, ids]) => onelayerPanels.songciForward("
                                "root.olpModel, form, ids)", [handle, form, ids])
            with torch.no_grad():
                expected = half(torch.tensor(ids))[-1].double()
                blind = half.gpt(torch.tensor(ids))[-1].double()
            got = torch.tensor(got, dtype=torch.float64)
            assert torch.allclose(got, expected, rtol=1e-4, atol=1e-4), prompt
            assert (got - blind).abs().max() > 0.1, prompt       # 位置符号确实加上了
        assert "测试用的模型" in page.inner_text("body")
        page.evaluate(SET_CONTROL, [handle, "seed", 3])
        written = "".join(line["text"] for line in page.evaluate(PANEL_LINES, handle))
        assert written and "□" not in written and set(written) <= set(vocab.chars)
        assert errors == [], errors
    finally:
        page.close()


def replay_rhyme_slots(form, vocab, text: str) -> list[tuple[str | None, str, str]]:
    """(first line's end, or None at the first line's own end; character written; the slot's
    tone) at each place where ``sample_ci(..., rhyme=form)`` masks the characters, replaying
    its bookkeeping over ``text`` (then its line break)."""
    from onelayer.chapters.ch10_songci import _RhymeAtSlots

    at_slots = _RhymeAtSlots(form, vocab, 1)
    masked = []
    for c in text + "\n":
        logits = at_slots.mask(torch.zeros(1, len(vocab)))
        if logits.isinf().any():
            line = at_slots.line[0]
            masked.append((at_slots.anchor[0], c, form.slot_tone(line or form.slots[0])))
        at_slots.update(vocab.encode(c))
    return masked


@pytest.mark.browser
def test_songci_writer_marks_tones_and_rhymes_and_imposes_the_rhyme(browser):
    from onelayer import metre
    from onelayer.book.widgets.ch10_songci import songci_writer

    model, vocab, forms = trained_songci_gpt()
    form = forms["浣溪沙"]
    fixed = set(form.grid.fixed())
    page, handle, errors = open_songci_panel(browser, songci_writer(model, vocab, forms))
    try:
        page.evaluate(SET_CONTROL, [handle, "temperature", 1.5])
        written: dict[bool, list[str]] = {}
        judged = {False: [], True: []}
        for rhyme in (False, True):
            page.evaluate(SET_CONTROL, [handle, "rhyme", rhyme])
            written[rhyme] = []
            for seed in range(24):
                page.evaluate(SET_CONTROL, [handle, "seed", seed])
                lines = page.evaluate(PANEL_LINES, handle)
                text = "".join(line["text"] for line in lines)
                written[rhyme].append(text)
                in_place = [len(metre.ci_lines(line["text"])[0]) == n
                            for line, n in zip(lines, form.pattern)]
                for i, line in enumerate(lines):
                    chars = [c for c in line["text"] if c not in metre.LINE_BREAKS + "："]
                    assert [c for c, _ in line["chars"]] == chars, text
                    for j, (c, mark) in enumerate(line["chars"]):
                        t = metre.tone(c) or "·"
                        off = (i < len(in_place) and in_place[i] and (i, j) in fixed
                               and t in "平仄" and t != form.grid.majority[i][j])
                        assert mark == t + ("✗" if off else ""), (text, c)
                    if i in form.slots and in_place[0] and i < len(in_place) and in_place[i]:
                        ends = [metre.ci_lines(lines[k]["text"])[0][-1] for k in (0, i)]
                        r = metre.rhymes(*ends, form.slot_tone(i))
                        assert line["rhyme"] == {None: "-1", False: "0", True: "1"}[r], text
                        judged[rhyme].append(r)
                    else:
                        assert line["rhyme"] is None, text
                if rhyme:                                  # 约束处写的字都押首句的韵
                    for anchor, c, tone in replay_rhyme_slots(form, vocab, text):
                        if anchor is None:               # 首句的末字：有韵脚声调的读音
                            assert metre.rhyme_groups(c, tone=tone), (text, c)
                        else:
                            assert metre.rhymes(anchor, c, tone) is True, (text, anchor, c)
        assert written[False] != written[True]                  # 开关改变了写出的词
        assert False in judged[False] and len(judged[True]) >= 10, judged
        assert False not in judged[True], judged                # 约束下韵脚句都押韵
        assert errors == [], errors
    finally:
        page.close()


# ---- chapter 11: inside the 宋词 model, in the page ----

def random_inside_gpt():
    """Chapter 10's model shape (long enough for the toy 浣溪沙 read as ``浣溪沙：text``), random
    weights with norms and biases, and the same model rounded to float16 and run in float64 —
    the page's model, in PyTorch."""
    model, vocab, _ = random_songci_gpt(seed=1, seq_len=40)
    return model, vocab, float16_in_float64(model)


def float16_in_float64(model):
    """``model`` with its weights rounded to float16 (as the page stores them), in float64."""
    import copy

    half = copy.deepcopy(model).double()
    with torch.no_grad():
        for p in half.parameters():
            p.copy_(p.half().double())
    return half.eval()


INSIDE_CALL = ("from onelayer.book.widgets.ch11_inside import inside_panel\n\n"
               "inside_panel(model, vocab, reading.texts[:12], TUNE)")


def test_chapter_11s_panel_is_after_the_ablation_and_stored_as_html():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "chapters" / "11_inside.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]).strip() for c in cells]
    i = sources.index(INSIDE_CALL)
    assert "深入一步：消融说明了什么，没说明什么" in sources[i - 2]
    assert cells[i - 1]["cell_type"] == "markdown"
    # trained weights: not compared digit by digit, but shown in the HTML book
    assert cells[i]["metadata"]["tags"] == ["nbval-ignore-output"]
    (output,) = cells[i]["outputs"]
    assert 'data-kind="inside"' in "".join(output["data"]["text/html"])


def test_inside_panel_sends_the_ci_as_the_model_reads_them():
    from onelayer.book.widgets.ch11_inside import inside_panel
    from onelayer.songci import CharVocab

    model, vocab, _ = random_inside_gpt()
    texts = TOY_CI["浣溪沙"]
    panel = inside_panel(model, vocab, texts, "浣溪沙")
    data = panel.data
    assert panel.kind == "inside" and data["tune"] == "浣溪沙" and data["separator"] == "："
    assert data["texts"] == list(texts) and data["end"] == "\n"
    assert (data["top_contexts"], data["top_promoted"], data["span"]) == (5, 10, 6)
    assert data["model"]["dtype"] == "float16" and data["model"]["vocab"] == vocab.chars
    html = panel._repr_html_()
    assert html == inside_panel(model, vocab, texts, "浣溪沙")._repr_html_()
    assert "P.gptTrace = function" in html and "P.kinds.inside = function" in html
    assert html.count("</script>") == 2
    # a character outside the vocabulary is read as □, as Reading reads it
    odd = ["一曲新词酒一龘，" + texts[0][8:], *texts[1:]]
    assert inside_panel(model, vocab, odd, "浣溪沙").data["texts"][0][6] == CharVocab.UNKNOWN


def test_inside_panel_refuses_bad_input():
    from onelayer.book.widgets.ch11_inside import inside_panel
    from onelayer.chapters.ch10_songci import songci_gpt_config
    from onelayer.model import TinyGPT

    model, vocab, _ = random_inside_gpt()
    texts = list(TOY_CI["浣溪沙"])
    cases = [(([], "浣溪沙"), "texts 应至少有一首词，实际为空"),
             ((texts[0], "浣溪沙"), "texts 应为若干首词（字符串的序列），实际为一个字符串"),
             (([texts[0], texts[1][:-1]], "浣溪沙"), r"都是 24 个字），实际 texts\[1\] 为 23 个字"),
             (([texts[0], ""], "浣溪沙"), r"texts\[1\] 应为非空的字符串，实际为 ''"),
             (([texts[0], 7], "浣溪沙"), r"texts\[1\] 应为非空的字符串，实际为 7"),
             ((texts, "鹧鸪天"), "tune 应由词表里的字组成，实际为 '鹧鸪天'"),
             ((texts, ""), "tune 应为非空的词牌名，实际为 ''"),
             ((["浣溪沙：" + texts[0][4:]], "浣溪沙"), "不含 '：' 与换行"),
             (([texts[0] * 2], "浣溪沙"), "应最多 block_size=40 个字，实际为 52 个字"),
             ((texts * 9, "浣溪沙"), "texts 最多 32 首，实际为 36 首")]
    for (args, message) in cases:
        with pytest.raises(ValueError, match=message):
            inside_panel(model, vocab, *args)
    blind = TinyGPT(songci_gpt_config(vocab, 40, position_table=False))
    with pytest.raises(ValueError, match="位置嵌入表：无"):
        inside_panel(blind, vocab, texts, "浣溪沙")


# The panel's state: its controls, and what it shows (numbers with their text).
READ_INSIDE = """panel => {
  const controls = {};
  for (const c of panel.querySelectorAll('[data-control]')) controls[c.dataset.control] = c.value;
  const shown = {};
  for (const n of panel.querySelectorAll('.olp-out [data-key]')) {
    shown[n.dataset.key] = [Number(n.dataset.v), n.dataset.text ?? null, n.dataset.next ?? null];
  }
  return [controls, shown];
}"""


def inside_expected(half, vocab, tune: str, texts, controls: dict) -> dict:
    """What ``ch11_inside`` computes in PyTorch on ``half`` for the panel's controls: the
    chosen head's weights from the query position, and the chosen neuron's top 5 contexts
    (activation, context, next) and top 10 promoted characters (E·W2[:, i], character)."""
    from onelayer.chapters.ch11_inside import attention_all, neuron_memories
    from onelayer.probes import recorded

    ids = torch.tensor([vocab.encode(f"{tune}：{t}\n") for t in texts])
    x, y = ids[:, :-1], ids[:, 1:]
    b, q = int(controls["ci"]), int(controls["position"])
    layer, head = int(controls["layer"]), int(controls["head"])
    row = attention_all(half, x)[layer, b, head, q, :q + 1]
    found = {f"w.{s}": (w, None, None) for s, w in enumerate(row.tolist())}
    ffn, i = int(controls["ffn_layer"]), int(controls["neuron"])
    (key,) = [r for r in neuron_memories(half, x, y, vocab, ffn, top=5) if r.neuron == i]
    (value,) = [r for r in neuron_memories(half, x, y, vocab, ffn, top=10) if r.neuron == i]
    mlp = half.blocks[ffn].mlp
    with torch.no_grad(), recorded(mlp, which="input") as inputs:
        half.hidden_states(x)
        acts = mlp.hidden(inputs[0]).flatten(0, 1)[:, i].topk(5).values
        scores = (half.tok.weight @ mlp.w2.weight[:, i]).topk(10).values
    found.update({f"act.{k}": (a, c, n) for k, (a, c, n) in
                  enumerate(zip(acts.tolist(), key.contexts, key.nexts))})
    found.update({f"up.{k}": (s, c, None) for k, (s, c) in
                  enumerate(zip(scores.tolist(), value.promoted))})
    return found


def compare_inside(shown: dict, expected: dict, where: str) -> float:
    """The page against PyTorch: numbers to 1e-6 relative, texts equal (a next character only
    where its activation is not tied with another of the top: tied positions may be taken in
    either order). Returns the largest relative difference."""
    assert set(shown) == set(expected), (where, sorted(set(shown) ^ set(expected)))
    acts = [v[0] for k, v in expected.items() if k.startswith("act.")]
    worst = 0.0
    for key, (v, text, nxt) in shown.items():
        e, e_text, e_next = expected[key]
        assert math.isclose(v, e, rel_tol=REL, abs_tol=ABS), (
            f"{where}: {key} 页面 {v!r}，PyTorch {e!r}")
        worst = max(worst, abs(v - e) / max(abs(e), 1e-300))
        assert text == e_text, (where, key, text, e_text)
        tied = sum(math.isclose(a, e, rel_tol=1e-9) for a in acts) > 1
        if key.startswith("act.") and not tied:
            assert nxt == e_next, (where, key, nxt, e_next)
    return worst


# Control settings tried one after the other; each changes what the panel shows.
INSIDE_SETTINGS = [{}, {"head": "2"}, {"layer": "1"}, {"position": 9}, {"ci": "3"},
                   {"neuron": 17}, {"ffn_layer": "1"}, {"neuron": 200},
                   {"ci": "1", "position": 27, "head": "3"}]


@pytest.mark.browser
def test_inside_panel_in_the_page_is_pytorchs_and_every_control_changes_it(browser):
    from onelayer.book.widgets.ch11_inside import inside_panel

    model, vocab, half = random_inside_gpt()
    texts = TOY_CI["浣溪沙"]
    html = inside_panel(model, vocab, texts, "浣溪沙")._repr_html_()
    page = browser.new_page(viewport={"width": 390, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content(f"<!doctype html><html lang='zh-CN'><body>{html}</body></html>")
        root = page.locator(".onelayer-panel[data-kind=inside][data-mounted]")
        handle = root.element_handle()
        before, worst = None, 0.0
        for setting in INSIDE_SETTINGS:
            for name, value in setting.items():
                page.evaluate(SET_CONTROL, [handle, name, value])
            controls, shown = page.evaluate(READ_INSIDE, handle)
            for name, value in setting.items():
                assert controls[name] == str(value), (name, controls[name], value)
            expected = inside_expected(half, vocab, "浣溪沙", texts, controls)
            worst = max(worst, compare_inside(shown, expected, f"inside {controls}"))
            now = root.locator(".olp-out").inner_html()
            assert now != before, setting                     # 每个控件都改变了面板
            before = now
        # clicking a character asks from there; the keyboard moves the sliders
        root.locator(".olp-ch").nth(5).click()
        assert page.evaluate(READ_INSIDE, handle)[0]["position"] == "5"
        for name in ("position", "neuron"):
            root.locator(f"input[data-control={name}]").focus()
            page.keyboard.press("ArrowRight")
            controls, shown = page.evaluate(READ_INSIDE, handle)
            worst = max(worst, compare_inside(
                shown, inside_expected(half, vocab, "浣溪沙", texts, controls), name))
        assert controls["position"] == "6" and controls["neuron"] == "201"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        print(f"inside（小模型）：页面与 PyTorch 的最大相对差 {worst:.2e}")
        assert errors == [], errors
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.parametrize("page_path", ["chapters/11_inside.html"])
def test_chapter_11s_panel_runs_the_songci_model_as_pytorch_does(book_pages, page_path):
    """The built page: its panel holds chapter 10's model (float16, in a file of its own,
    loaded when the panel comes near) and shows what ch11_inside computes on it."""
    from onelayer.chapters.ch10_longer import load_songci_gpt

    model, vocab, _ = load_songci_gpt()
    half = float16_in_float64(model)
    seen = book_pages(page_path)
    page = seen.page
    panel = page.locator(".onelayer-panel[data-kind=inside]")
    assert panel.count() == 1 and panel.locator("script[data-src]").count() == 1
    panel.scroll_into_view_if_needed()
    page.wait_for_selector(".onelayer-panel[data-kind=inside][data-mounted]", timeout=60_000)
    handle = panel.element_handle()
    data = page.evaluate("p => { const d = onelayerPanels.data[p.id];"
                         " return {tune: d.tune, texts: d.texts}; }", handle)
    worst = 0.0
    for setting in ({}, {"layer": "2", "head": "1", "position": 30},
                    {"head": "3", "ci": "5", "neuron": 100},
                    {"ffn_layer": "2", "neuron": 383, "position": 12}):
        for name, value in setting.items():
            page.evaluate(SET_CONTROL, [handle, name, value])
        controls, shown = page.evaluate(READ_INSIDE, handle)
        expected = inside_expected(half, vocab, data["tune"], data["texts"], controls)
        worst = max(worst, compare_inside(shown, expected, f"11_inside {controls}"))
    print(f"inside（第 11 章的页面）：页面与 PyTorch 的最大相对差 {worst:.2e}")
    assert seen.errors == [], seen.errors
