"""The chapters in JupyterLab, as a reader runs them with `make lab`.

Starts the pinned JupyterLab, with its default settings, on 127.0.0.1 (a free port, a
token) over a temporary copy of the chapters, trusted as `make lab` trusts them; Jupyter's
config, data, runtime, settings and workspace directories are temporary too, so nothing in
the repository or the home directory changes. Headless Chromium then opens each chapter:
the saved panels are drawn before anything runs, the frame players move, the panel that
computes in the page runs its script (the notebook is trusted) and shows onelayer's numbers,
again after a slider is clicked and moved by an arrow key, MyST is rendered and the exercise
answers are folded. Chapter 1 is then run (Run All): its panel, drawn again by the kernel's
output, computes and takes the keys again; its saved figures are also looked at in Lab's dark
theme, before Run All. Chapter 4 is not run in Lab: nbval runs its cells in a kernel and
compares the panel cell's HTML with the saved one, which is what this test checks (the test
asserts that the cell is compared).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from test_panels import EXPECTED, READ_PANEL, assert_close

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
JUPYTER = Path(sys.executable).with_name("jupyter")
# The chapters opened in Lab, with the call of each one's panel that computes in the page
# and that panel's kind.
LIVE_PANELS = {
    "01_ffn.ipynb": ("ffn_explorer()", "ffn"),
    "04_layernorm.ipynb": ("layernorm_explorer()", "layernorm"),
}
# The chapter run in Lab (Run All), whose figures are also looked at in Lab's dark theme.
RUN_CHAPTER = "01_ffn.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# MyST that jupyterlab-myst renders: none of it may be left as source text.
RAW_MYST = ("VBox(children=", ":::{admonition}", ":class: dropdown", "{cite:", "{doc}",
            "```{note}", "```{admonition}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    def __init__(self, url: str, token: str, log: Path):
        self.url, self.token, self.log = url, token, log

    def api(self, path: str, method: str = "GET") -> bytes:
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read()

    def log_tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]


def lab_recipe() -> list[str]:
    """The commands of the Makefile's lab target."""
    recipe = re.search(r"^lab:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    return [line.strip() for line in recipe.group(1).splitlines()]


def test_make_lab_trusts_the_chapters_before_starting_lab():
    trust, lab = lab_recipe()
    assert trust == "$(BIN)/jupyter trust $(NOTEBOOKS)"
    assert lab.startswith("$(BIN)/jupyter lab ") and lab.endswith(" chapters")


@pytest.fixture(scope="module")
def lab(browser, tmp_path_factory):
    home = tmp_path_factory.mktemp("lab")
    root = home / "chapters"
    shutil.copytree(CHAPTERS, root)
    env = {**os.environ, "IPYTHONDIR": str(home / "ipython")}
    # The kernels compute on the machine's own CPU code path: make test's portable path is for
    # the notebook checks (nbval), and would only slow the chapters run here.
    for var in ("ATEN_CPU_CAPABILITY", "MKL_CBWR"):
        env.pop(var, None)
    for var, name in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                      ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                      ("JUPYTERLAB_WORKSPACES_DIR", "workspaces")):
        env[var] = str(home / name)
    # make lab: jupyter trust, then jupyter lab (the signatures go to the temporary data dir)
    subprocess.run([JUPYTER, "trust", *sorted(map(str, root.glob("*.ipynb")))], env=env,
                   check=True, capture_output=True)
    token = secrets.token_hex(16)
    url = f"http://127.0.0.1:{free_port()}"
    args = [JUPYTER, "lab", "--no-browser", "--ip=127.0.0.1", f"--port={url.rsplit(':', 1)[1]}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        args.append("--allow-root")
    log = home / "lab.log"
    with log.open("wb") as out:
        server = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
    lab = Lab(url, token, log)
    try:
        wait_until_serving(lab, server)
        yield lab
    finally:
        try:
            lab.api("/api/shutdown", method="POST")  # also shuts the kernels down
            server.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            server.terminate()
            server.wait(timeout=30)


def wait_until_serving(lab: Lab, server: subprocess.Popen, timeout: float = 60) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"JupyterLab 没有启动（退出码 {server.returncode}）：\n{lab.log_tail()}")
        try:
            json.loads(lab.api("/api/status"))
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"JupyterLab 在 {timeout} 秒内没有响应：\n{lab.log_tail()}")


def bring_into_view(locator) -> None:
    """Scroll an element to the middle of the screen with the DOM's own scrollIntoView, which
    also draws what Lab leaves undrawn off screen (its cells are content-visibility: auto)."""
    locator.first.evaluate("e => e.scrollIntoView({block: 'center'})")


def cell_indices(notebook: dict, predicate) -> list[int]:
    return [i for i, cell in enumerate(notebook["cells"]) if predicate(cell)]


def saved_frame_players(notebook: dict) -> int:
    """How many frame players the notebook's outputs show, by their saved widget state."""
    state = notebook["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    shown = [out["data"][WIDGET_VIEW]["model_id"] for cell in notebook["cells"]
             for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})]
    return sum("frame-player" in state[model]["state"].get("_dom_classes", []) for model in shown)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LIVE_PANELS))
def test_chapter_in_jupyterlab(browser, lab, name):
    from playwright.sync_api import expect

    notebook = json.loads((CHAPTERS / name).read_text(encoding="utf-8"))
    n_cells = len(notebook["cells"])
    with_widgets = cell_indices(notebook, lambda c: any(
        WIDGET_VIEW in o.get("data", {}) for o in c.get("outputs", [])))
    call, kind = LIVE_PANELS[name]
    (live,) = cell_indices(notebook, lambda c: "".join(c["source"]).strip() == call)
    if name != RUN_CHAPTER:  # its panel as a kernel draws it is the saved one: nbval compares
        assert "nbval-ignore-output" not in notebook["cells"][live]["metadata"].get("tags", [])
    n_dropdowns = sum("".join(c["source"]).count(form) for c in notebook["cells"]
                      for form in (":class: dropdown", "{dropdown}"))   # 折叠的答案与“深入一步”

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{lab.url}/lab/tree/{name}?reset&token={lab.token}")
        cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        page.wait_for_function("n => document.querySelectorAll("
                               "'.jp-NotebookPanel .jp-Notebook .jp-Cell').length === n",
                               arg=n_cells, timeout=60_000)

        # Before running: the saved panels are drawn from the saved widget state.
        for i in with_widgets:
            cells.nth(i).locator(".jupyter-widgets").first.wait_for(state="attached")
        # The saved panel that computes in the page runs its script before any kernel does,
        # once it comes near the screen.
        mounted = f".onelayer-panel[data-kind={kind}][data-mounted]"
        bring_into_view(cells.nth(live).locator(".onelayer-panel"))
        cells.nth(live).locator(mounted).wait_for(state="attached", timeout=30_000)
        # The frame players work without a kernel: their slider is linked in the browser.
        # (Wait for all of them: a widget's classes come after its first element.)
        players = page.locator(".jp-NotebookPanel .jp-Notebook .frame-player")
        n_players = saved_frame_players(notebook)
        assert n_players >= 1
        for i in with_widgets:  # Lab draws an off-screen cell's widgets only once it is near
            bring_into_view(cells.nth(i))
        page.wait_for_function("n => document.querySelectorAll('.jp-NotebookPanel "
                               ".jp-Notebook .frame-player').length === n", arg=n_players,
                               timeout=60_000)
        one_frame_shown = ("([el, before]) => { const alts = [...el.querySelectorAll('img')]"
                           ".filter(e => e.offsetParent !== null).map(e => e.alt);"
                           " return alts.length === 1 && alts[0] !== before ? alts[0] : null; }")
        for player in players.all():
            before = page.wait_for_function(one_frame_shown, arg=[player.element_handle(), None],
                                            timeout=30_000).json_value()
            player.locator(".noUi-handle").first.focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_function(one_frame_shown, arg=[player.element_handle(), before],
                                   timeout=10_000)
        # MyST is rendered (by jupyterlab-myst, into .myst), answers folded.
        notebook_view = page.locator(".jp-NotebookPanel .jp-Notebook")
        n_markdown = sum(c["cell_type"] == "markdown" for c in notebook["cells"])
        expect(notebook_view.locator(".jp-MarkdownCell .myst")).to_have_count(n_markdown,
                                                                             timeout=30_000)
        shown = "\n".join(notebook_view.locator(
            ".jp-MarkdownCell .myst, .jp-OutputArea").all_text_contents())
        left = [raw for raw in RAW_MYST if raw in shown]
        assert left == [], f"{name}: 没有渲染的源文本 {left}"
        answers = page.locator(".jp-Notebook .jp-MarkdownCell details")
        assert answers.count() == n_dropdowns > 0
        assert page.locator(".jp-Notebook .jp-MarkdownCell details[open]").count() == 0
        assert not answers.first.locator(".myst-admonition-body, .myst-dropdown-body").is_visible()
        # The saved panel computes onelayer's numbers and takes the keys, before any kernel.
        assert_panel_computes_and_takes_keys(page, cells.nth(live), mounted, kind,
                                             f"{name}：打开时")
        if name == RUN_CHAPTER:
            # The saved figures, before Run All draws them again.
            assert_figures_readable_in_the_dark_theme(page, name, notebook)
            run_all(page, cells, name)
            # The panel, output again by the kernel, computes and takes the keys again.
            assert_panel_computes_and_takes_keys(page, cells.nth(live), mounted, kind,
                                                 f"{name}：Run All 之后")
        assert errors == [], errors
    finally:
        page.close()


def run_all(page, cells, name: str) -> None:
    """Run All, as a reader does from the menu, once the kernel is up and the notebook is
    the current widget (the menu item is disabled until then); no cell fails."""
    from playwright.sync_api import expect

    idle = page.locator(".jp-Notebook-ExecutionIndicator").first
    expect(idle).to_have_attribute("data-status", "idle", timeout=60_000)
    cells.first.locator(".jp-InputPrompt").click()
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item:not(.lm-mod-disabled) .lm-Menu-itemLabel",
                 has_text=re.compile(r"^Run All Cells$")).click()
    running = ("() => [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')]"
               ".some(p => p.textContent.includes('*'))")
    page.wait_for_function(running, timeout=30_000)
    page.wait_for_function(f"() => !({running})()", timeout=120_000)
    expect(idle).to_have_attribute("data-status", "idle", timeout=30_000)
    outputs = page.locator(".jp-NotebookPanel .jp-Notebook .jp-OutputArea")
    assert not any("Traceback" in t for t in outputs.all_text_contents()), name


def assert_panel_computes_and_takes_keys(page, cell, mounted: str, kind: str, where: str):
    """The cell's panel shows onelayer's numbers; a reader clicks its first slider, then moves
    it with an arrow key: the focus stays on the slider, the key reaches it (not JupyterLab's
    notebook shortcuts) and the panel recomputes onelayer's numbers."""
    bring_into_view(cell.locator(".onelayer-panel"))
    panel = cell.locator(mounted)
    panel.wait_for(state="attached", timeout=30_000)
    handle = panel.element_handle()
    controls, shown, data = page.evaluate(READ_PANEL, handle)
    assert_close(shown, EXPECTED[kind](controls, data), where)
    shown_text = panel.locator(".olp-out").text_content()
    assert "0000000" not in shown_text and "9999999" not in shown_text
    slider = panel.locator("input[type=range]").first
    slider.click()
    focused = page.evaluate("() => document.activeElement.tagName")
    assert focused == "INPUT", f"{where}：点击滑块后焦点不在滑块上，而在 {focused}"
    clicked_controls, clicked, _ = page.evaluate(READ_PANEL, handle)
    page.keyboard.press("ArrowRight")
    moved_controls, moved, _ = page.evaluate(READ_PANEL, handle)
    assert moved_controls != clicked_controls and moved != clicked, f"{where}：按方向键后面板没有变"
    assert_close(moved, EXPECTED[kind](moved_controls, data), f"{where}：按方向键移动滑块之后")


# The colour under a figure's corner and in its middle, as the reader sees it: the image's own
# pixels drawn over the output area's background (an image from a data: URL can be read back).
FIGURE_PIXELS = """img => {
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const at = (x, y) => [...ctx.getImageData(x, y, 1, 1).data];
  let area = img, bg = 'rgba(0, 0, 0, 0)';
  while (area && (bg === 'rgba(0, 0, 0, 0)' || bg === 'transparent')) {
    bg = getComputedStyle(area).backgroundColor; area = area.parentElement;
  }
  return {corner: at(1, 1), middle: at(img.naturalWidth >> 1, 1), behind: bg};
}"""
SCREENSHOTS = ROOT / "_build" / "screenshots"


def luminance(rgb) -> float:
    def linear(x: float) -> float:
        x /= 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(float(v)) for v in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def choose_theme(page, name: str) -> None:
    """Settings → Theme → ``name``, from JupyterLab's menu bar."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{name}$")).click()


def assert_figures_readable_in_the_dark_theme(page, name: str, notebook: dict) -> None:
    """In JupyterLab's dark theme a figure keeps its white background: its dark labels are
    not drawn on the dark output area. A screenshot goes to _build/screenshots/."""
    figures = cell_indices(notebook, lambda c: any(
        "image/png" in o.get("data", {}) for o in c.get("outputs", [])))
    assert figures
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    choose_theme(page, "JupyterLab Dark")
    try:
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'",
                               timeout=30_000)
        for i in figures:
            image = cells.nth(i).locator(".jp-RenderedImage img").first
            image.scroll_into_view_if_needed()
            page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                                   arg=image.element_handle())
            found = image.evaluate(FIGURE_PIXELS)
            assert luminance(found["behind"].replace("rgba", "").replace("rgb", "")
                             .strip("()").split(",")) < 0.1, f"不是暗色主题：{found}"
            for where in ("corner", "middle"):
                pixel = found[where]
                assert pixel[3] == 255, f"{name} 第 {i} 个单元的图是透明的：{found}"
                assert luminance(pixel) > 0.8, f"{name} 第 {i} 个单元的图底色太暗：{found}"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / f"lab-dark-{Path(name).stem}-figure.png"
        cells.nth(figures[0]).screenshot(path=str(shot))
    finally:
        choose_theme(page, "JupyterLab Light")  # Lab keeps the theme for the next chapter
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'",
                               timeout=30_000)
