import json
import random

import numpy as np
import torch
from myst_nb.ext import glue as myst_glue

import onelayer
from onelayer.book import runtime


def captured_displays(monkeypatch, module, attribute):
    calls = []
    monkeypatch.setattr(module, attribute, lambda *args, **kwargs: calls.append((args, kwargs)))
    return calls


def test_glue_emits_what_myst_nb_glue_emits(monkeypatch):
    ours = captured_displays(monkeypatch, runtime, "display")
    theirs = captured_displays(monkeypatch, myst_glue, "ipy_display")
    for value in (2_099_712, 0.025, "8x + 12"):
        runtime.glue("name", value)
        myst_glue.glue("name", value, display=False)
    assert ours == theirs and len(ours) == 3


def test_setup_makes_random_numbers_repeatable():
    torch.set_num_threads(2)  # the test processes compute on one thread already (conftest.py)
    draws = []
    for _ in range(2):
        onelayer.setup(seed=7)
        draws.append((random.random(), np.random.rand(), torch.rand(1).item()))
    assert draws[0] == draws[1]
    assert torch.get_num_threads() == 1


def test_show_glued_prints_the_values_the_prose_quotes(monkeypatch, capsys):
    captured_displays(monkeypatch, runtime, "display")
    onelayer.glue("ratio_plain", 4.9e-20)
    onelayer.glue("recall_main", "100.0%")
    onelayer.show_glued("ratio_plain", "recall_main")
    assert capsys.readouterr().out == "ratio_plain = 4.9e-20，recall_main = 100.0%\n"
    onelayer.glue("ex_a", 1)
    onelayer.glue("ex_b", [0.0, 4.0])
    onelayer.show_glued(prefix="ex_")
    assert capsys.readouterr().out == "ex_a = 1，ex_b = [0.0, 4.0]\n"


def test_swept_total_adds_a_quantity_once_per_group(tmp_path):
    group = {"claims": {"c/0": {"held": True, "values": {"n": [2.0, 2.0], "m": [0.5, 0.5]}},
                        "c/1": {"held": True, "values": {"k": [1.0, 1.0], "n": [5.0, 5.0]}}}}
    results = {"chapters": {"03": {"groups": {"0": group, "1000": group}}}}
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    assert runtime.swept_total("03", "n", path) == (4, 2)
    assert runtime.swept_total("03", "absent", path) == (0, 0)
    assert runtime.swept_total("04", "n", path) == (0, 0)               # not swept yet
    assert runtime.swept_total("03", "n", tmp_path / "none.json") == (0, 0)
    assert runtime.swept_values("03", "k", path) == [1.0, 1.0]
