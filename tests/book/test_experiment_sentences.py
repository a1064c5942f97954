"""Every sentence of the prose that states an experiment's result is backed by an assert.

The reproducibility appendix says that each sentence the chapters say about an experiment is
an ``assert`` beside it. This test finds those sentences in the markdown and checks them:

- a sentence that quotes a value glued from an experiment cell (a result, not a setting such
  as ``STEPS`` or ``len(SEEDS)``) needs an assert in the chapter that compares a quantity built
  from the same variables (the glue's expression, and what the cell assigned them from);
- a seed count ("k/n", "n 个种子里…") must be glued, not typed, and backed the same way;
- a count over the claim sweep (``swept_total``/``swept_values``) is backed by the sweep, and
  a seed count of this run has the sweep's count beside it (in the same paragraph block).

It fails listing each sentence and the value that has no assert.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import claims  # noqa: E402

NOTEBOOKS = sorted(p.stem for p in claims.CHAPTERS.glob("*.ipynb"))
GLUE_REF = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)(?::[^`]*)?`")
SEED_COUNT = re.compile(r"(\d+|\{glue(?::\w+)?\}`[^`]+`)\s*(?:/|个(?:种子|模型)(?:里|中))\s*"
                        r"(\d+|\{glue(?::\w+)?\}`[^`]+`)?")
TYPED_COUNT = re.compile(r"(?<![\w.`/])(\d+)\s*/\s*(\d+)(?![\w.`/])")
SWEEP = {"swept_total", "swept_values"}
IGNORED = set(dir(builtins)) | {"np", "torch", "math", "f", "self"}
# Glued results that state no claim and need none (reason beside each), by chapter and name.
SETTING = "一个设置或由设置算出的数，不是训练的结果"
EXEMPT: dict[tuple[str, str], str] = {
    ("02b_gating_study", "long_steps"): SETTING,
    ("04b_deep_study", "ln_trace_last"): SETTING,
    ("06b_depth_dropout_study", "rms2_slope"): "量出的斜率；它说的“线性增长”是 R² 的断言",
    ("08_pre_post_norm", "best_loss"): "语料的性质（最低可达损失），不是训练的结果",
    ("10_songci", "n_params"): SETTING,
    ("10b_controls_study", "n_params"): SETTING,
    ("10b_controls_study", "passes"): SETTING,
    ("10b_controls_study", "bpe_seq_len"): SETTING,
    ("10b_controls_study", "bpe_batch"): SETTING,
    ("10b_controls_study", "bpe_extra_rows"): SETTING,
    ("10b_controls_study", "bpe_params"): SETTING,
    ("10b_controls_study", "bpe_extra_params"): SETTING,
    ("10b_controls_study", "char_fits"): SETTING,
    ("10c_long_model_study", "study_minutes"): "训练脚本记下的用时，不是结论",
    ("11_inside", "start_head"): "哪一个头（块.头的编号），不是结论",
    ("10a_rhyme_study", "n_probe"): "量了验证集里几首词（由数据定），不是结论",
    ("10a_rhyme_study", "n_held"): "验证集里有几首浣溪沙（由数据定），不是结论",
    ("11_inside", "probe_n"): SETTING,
    **{("11_inside", name): "练习答案里的数，在种子 0 的模型上算出，不是结论" for name in (
        "ex_prev_score", "ex_start_up", "ex_break_zero", "ex_break_mean", "ex_wide_head",
        "ex_wide_zero", "ex_wide_mean")},
    ("07b_shape_study", "n_facts"): SETTING,
    ("07b_shape_study", "uniform_subject"): "1/32：均匀分给 32 个主语时的概率，不是结论",
    **{("07_tiny_gpt", name): "练习题给出的数（参数量、一个 softmax），不是结论" for name in (
        "ex_untied_share", "ex_gpt2_vocab", "ex_gpt2_d", "ex_gpt2_tied", "ex_gpt2_total",
        "ex_gpt2_share", "ex_p1")},
}


def sentences(text: str) -> list[str]:
    """The prose split into sentences (code and directive fences dropped)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    parts = re.split(r"(?<=[。！？；])|\n\s*\n", text)
    return [" ".join(p.split()) for p in parts if p.strip()]


def names(node: ast.AST) -> set[str]:
    """The variables an expression reads (not the functions it calls or modules)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in called
            and n.id not in IGNORED}


def is_setting(name: str) -> bool:
    return name.isupper() or name in {"seeds", "n", "groups"}


class Chapter:
    """What the chapter glues (name → the variables it reads, whether from an experiment, from
    the sweep) and the variables its asserts compare."""

    def __init__(self, notebook: dict) -> None:
        self.notebook = notebook
        self.glued: dict[str, tuple[set[str], bool, bool]] = {}
        self.asserted: set[str] = set()
        for cell in claims.code_cells(self.notebook):
            try:
                tree = ast.parse(claims.source(cell))
            except SyntaxError:
                continue
            assigned: dict[str, set[str]] = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        for name in names(target):
                            assigned.setdefault(name, set()).update(names(node.value))
                if isinstance(node, ast.Assert):
                    for q in claims.quantities(node.test) or [node.test]:
                        self.asserted |= names(q)
                    self.asserted |= names(node.test)
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "glue"
                        and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)):
                    read = names(node.args[1])
                    read |= {m for name in read for m in assigned.get(name, ())}
                    calls = {getattr(n.func, "id", "") for n in ast.walk(tree)
                             if isinstance(n, ast.Call)}
                    self.glued[node.args[0].value] = (read, claims.is_experiment(cell),
                                                      bool(SWEEP & calls))

    def unbacked(self, stem: str) -> list[str]:
        """The sentences that quote an experiment's result without an assert on it."""
        found = []
        for cell in self.notebook["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            block = claims.source(cell)
            rated = any(self.glued.get(g, (0, 0, False))[2] for g in GLUE_REF.findall(block))
            for said in sentences(block):
                quoted = GLUE_REF.findall(said)
                results = [g for g in quoted if self.is_result(g)]
                counted = SEED_COUNT.search(said) and any(
                    w in said for w in ("种子", "模型", "组"))
                for typed in TYPED_COUNT.finditer(said):
                    if counted and "种子" in said:
                        found.append(f"{said[:80]}：手写的种子数 {typed.group(0)}，应由代码插入")
                if counted and "种子" in said and results and not rated:
                    found.append(f"{said[:80]}：本次的种子数旁没有结论扫描的总数（swept_total）")
                for name in results:
                    read, _, swept = self.glued[name]
                    if swept or (stem, name) in EXEMPT:
                        continue
                    if not (read - {r for r in read if is_setting(r)}) & self.asserted:
                        found.append(f"{said[:80]}：{name} 没有断言")
        return found

    def is_result(self, name: str) -> bool:
        if name not in self.glued:
            return False
        read, experiment, swept = self.glued[name]
        return experiment and (swept or any(not is_setting(r) for r in read))


def chapter(stem: str) -> Chapter:
    return Chapter(claims.load(claims.CHAPTERS / f"{stem}.ipynb"))


@pytest.mark.parametrize("stem", NOTEBOOKS)
def test_every_experiment_sentence_has_an_assert(stem):
    assert chapter(stem).unbacked(stem) == []


def test_a_sentence_without_its_assert_is_found():
    """The test can fail: an unasserted median and a typed seed count are both caught; a
    setting and an asserted value are not."""
    notebook = {"cells": [
        {"cell_type": "code", "metadata": {"tags": ["experiment"]}, "id": "a", "source":
         "loss = train(SEEDS)\nm = loss.median()\nglue('m', round(m, 2))\n"
         "glue('steps', STEPS)\nacc = loss.max()\nglue('acc', acc)\nassert acc < 3\n"},
        {"cell_type": "markdown", "metadata": {}, "id": "b", "source":
         "训练 {glue:text}`steps` 步后，中位数是 {glue:text}`m`。最大 {glue:text}`acc`。"
         "5 个种子里有 4/5 学会了。5 个种子里有 {glue:text}`acc` 个。"}]}
    found = Chapter(notebook).unbacked("x")
    assert len(found) == 3 and "m 没有断言" in found[0] and "4/5" in found[1], found
    assert "swept_total" in found[2]
