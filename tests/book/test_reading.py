"""The lesson first: what a reader sees in a chapter teaches, the bookkeeping is folded, and no
chapter relies on a later one (DESIGN.md, "The lesson first, the evidence beside it")."""

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]*_*.ipynb"))
# Tags that take a code cell's source out of the HTML book (hide-input folds it).
FOLDED = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
GLUE = re.compile(r"\{glue(?::text)?\}`[^`]+`")
# Talk about the book's own checking machinery; it belongs in the reproducibility appendix.
CI_TALK = re.compile(r"nbval|ONELAYER_SEED_OFFSET|计算路径|种子组|存档时"
                     r"|make (test|lab|notebooks|bench)|浏览器测试|MKL|ATEN|不加 assert")
MAX_NUMBERS_PER_UNIT = 4

# The chapter that teaches each onelayer part a notebook imports (0: the book's machinery).
# A chapter may use what it or an earlier chapter teaches. A new import must be added here.
TAUGHT_IN = {
    # the book's machinery and the reproducibility conventions
    "setup": 0, "glue": 0, "show_glued": 0, "progress_bar": 0, "experiment_seeds": 0,
    "seeded": 0,
    # 1 FFN (with the minimum of ReLU/GELU, Adam and a fit on a teacher)
    "FeedForward": 1, "count_parameters": 1, "ffn_parameter_formula": 1, "trace_ffn": 1,
    "TOKENS": 1, "sentence_x": 1, "sentence_ffn": 1, "tiny_example": 1, "shown_w1_columns": 1,
    "relu": 1, "gelu": 1, "Adam": 1, "fit": 1,
    # 2 activations and gating
    "gated_d_ff": 2,
    # 3 residual connections
    "Residual": 3, "residual_add": 3, "DeepMLP": 3, "two_spirals": 3, "stream_rms": 3,
    "gpt2_residual_std": 3,
    # 4 LayerNorm, RMSNorm
    "LayerNorm": 4, "RMSNorm": 4, "mean_and_biased_var": 4, "standardize": 4,
    # 5 self-attention
    "CausalSelfAttention": 5, "causal_mask": 5, "LayerCache": 5, "reference": 5,
    # 6 the block (with the minimum of Pre-/Post-Norm)
    "BlockConfig": 6, "TransformerBlock": 6, "block_flops": 6, "block_parameter_breakdown": 6,
    "pre_norm": 6, "post_norm": 6, "norm_sublayer": 6, "GPTConfig": 6, "TinyGPT": 6,
    "torch_encoder_layer": 6,
    # 7 the tiny GPT: data, loss, training loop, generation
    "facts_corpus": 7, "lm_loss": 7, "train_lm": 7, "TinyGPTStack": 7, "gpt2_lm_head_model": 7,
    "KVCache": 7,
    # 8 norm positions
    "deep_norm": 8, "deepnorm_constants": 8, "sandwich_norm": 8,
    # 9 today's layer: rotary positions, grouped-query attention, QK-norm
    "rope_frequencies": 9, "rope_angles": 9, "rotate_half": 9, "apply_rope": 9,
    "apply_rope_interleaved": 9, "interleaved_to_half": 9, "repeat_kv": 9,
    # 10 宋词: the corpus, characters as tokens, the AdamW loop, top-p sampling
    "train_adamw": 10, "warmup_cosine": 10, "sampling_logits": 10,
    # 11 opening the 宋词 model: a hook that records what a module reads
    "recorded": 11,
}
# Whole modules: a chapter's experiments and panels serve that chapter (and later ones).
CHAPTER_MODULE = re.compile(r"onelayer\.(chapters|book\.widgets)\.ch(\d\d)")
# Whole modules: the activation functions (chapter 2), the 宋词 corpus (chapter 10) and the
# book's machinery.
TAUGHT_MODULES = {"onelayer.activations": 2, "onelayer.book.diagrams": 0,
                  "onelayer.book.exercises": 0, "onelayer.book.runtime": 0,
                  "onelayer.songci": 10, "onelayer.metre": 10}


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def chapter_number(path: Path) -> int:
    return int(path.name[:2])


def onelayer_uses(source: str) -> list[tuple[str, str]]:
    """(module, name) pairs a cell takes from onelayer: ``from onelayer.x import n`` and
    ``onelayer.n`` attribute use."""
    uses = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("onelayer"):
            uses += [(node.module, alias.name) for alias in node.names]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "onelayer"):
            uses.append(("onelayer", node.attr))
    return uses


def taught_in(module: str, name: str) -> int | None:
    """The chapter that teaches ``name`` from ``module`` (a module imported whole, as in
    ``from onelayer.chapters import ch10_rhyme``, counts as its dotted path)."""
    for path in (module, f"{module}.{name}"):
        if m := CHAPTER_MODULE.match(path):
            return int(m.group(2))
        for prefix, chapter in TAUGHT_MODULES.items():
            if path.startswith(prefix):
                return chapter
    return TAUGHT_IN.get(name)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_chapter_relies_on_a_later_one(path):
    n = chapter_number(path)
    code = "\n".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "code")
    problems = []
    for module, name in onelayer_uses(code):
        chapter = taught_in(module, name)
        if chapter is None:
            problems.append(f"{module}.{name}：不知道哪一章教它，请加进 TAUGHT_IN")
        elif chapter > n:
            problems.append(f"{module}.{name} 在第 {chapter} 章才讲")
    assert problems == [], f"{path.name}: {problems}"


def test_order_guard_catches_a_later_part():
    assert taught_in("onelayer.chapters.ch07_tiny_gpt", "train_facts_models") == 7
    assert taught_in("onelayer", "TinyGPT") == 6
    assert ("onelayer.model", "lm_loss") in onelayer_uses("from onelayer.model import lm_loss")
    assert ("onelayer", "gelu") in onelayer_uses("y = onelayer.gelu(x)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_bookkeeping_is_folded(path):
    """glue and show_glued live in cells the HTML removes or folds, and Lab shows collapsed;
    every folded cell is collapsed in Lab too."""
    for cell in cells(path):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        tags = set(cell["metadata"].get("tags", []))
        hidden = cell["metadata"].get("jupyter", {}).get("source_hidden", False)
        if re.search(r"\bglue\(|show_glued\(", source):
            assert tags & FOLDED, f"glue 应在折叠的单元里：{source[:80]}"
        if tags & FOLDED:
            assert hidden, f"折叠的单元在 Lab 里也应收起（jupyter.source_hidden）：{source[:80]}"


def prose_units(markdown: str) -> list[str]:
    """Paragraphs and list items of a markdown cell; table rows are left out."""
    units = []
    for para in re.split(r"\n\s*\n", markdown):
        item: list[str] = []
        for line in para.splitlines():
            if line.lstrip().startswith("|"):
                continue
            if re.match(r"\s*([-*+]|\d+\.)\s", line) and item:
                units.append("\n".join(item))
                item = []
            item.append(line)
        if item:
            units.append("\n".join(item))
    return units


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_prose_carries_few_numbers_and_no_ci_talk(path):
    markdown = ["".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown"]
    crowded = [u[:60] for md in markdown for u in prose_units(md)
               if len(GLUE.findall(u)) > MAX_NUMBERS_PER_UNIT]
    assert crowded == [], f"一段话里插入的数字超过 {MAX_NUMBERS_PER_UNIT} 个，放进表格：{crowded}"
    talk = [md[:60] for md in markdown if CI_TALK.search(md)]
    assert len(talk) <= 1, f"正文谈测试机制的单元多于一个（放进附录 reproducibility）：{talk}"


def test_prose_guard_counts_list_items_apart():
    text = "一段 {glue:text}`a` {glue:text}`b`\n- 项 {glue:text}`c`\n\n| {glue:text}`d` |"
    units = prose_units(text)
    assert [len(GLUE.findall(u)) for u in units] == [2, 1]


# The pages that show a learner no machinery (DESIGN.md, "The main line and the depth"); the
# other chapters join as they are rewritten.
MACHINERY_FREE = ["01_ffn", "02_activation", "03_residual", "04_layernorm", "05_attention",
                  "06_block", "07_tiny_gpt", "08_pre_post_norm", "errata"]
SETUP_PROSE = re.compile(r"onelayer\.setup|第一个代码单元|本章所有数字都由下面的代码算出")


def is_visible(cell: dict) -> bool:
    """A code cell whose source the HTML book shows unfolded."""
    return cell["cell_type"] == "code" and not set(cell["metadata"].get("tags", [])) & FOLDED


def machinery_in_view(notebook: list[dict]) -> list[str]:
    """What a learner would read that is not the lesson: extra or unexplained asserts,
    validation demos, unexplained seed helpers, glue dumps, setup prose, helpers first."""
    found = []
    code = [c for c in notebook if c["cell_type"] == "code"]
    for i, cell in enumerate(notebook):
        source = "".join(cell["source"])
        tags = set(cell["metadata"].get("tags", []))
        if cell["cell_type"] == "markdown":
            if SETUP_PROSE.search(source):
                found.append(f"单元 {i}：讲环境设置的文字")
            continue
        if re.search(r"\bshow_glued\(", source) and not tags & {"remove-cell", "remove-output"}:
            found.append(f"单元 {i}：show_glued 的输出在书页上可见")
        if not is_visible(cell):
            continue
        lines = source.splitlines()
        asserts = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Assert)]
        if len(asserts) > 1:
            found.append(f"单元 {i}：{len(asserts)} 个 assert（可见的单元至多一个）")
        for node in asserts:
            if "#" not in lines[node.end_lineno - 1]:
                found.append(f"单元 {i}：assert 没有说明结论的注释")
        if any(isinstance(n, ast.Try) for n in ast.walk(ast.parse(source))):
            found.append(f"单元 {i}：演示报错的 try/except")
        for line in lines:
            if "experiment_seeds(" in line and "#" not in line:
                found.append(f"单元 {i}：experiment_seeds 没有注释说明")
        if cell is code[0] and any(isinstance(n, ast.FunctionDef | ast.ClassDef)
                                   for n in ast.walk(ast.parse(source))):
            found.append(f"单元 {i}：第一个代码单元里定义了函数")
    return found


@pytest.mark.parametrize("name", MACHINERY_FREE)
def test_a_learner_reads_no_machinery(name):
    found = machinery_in_view(cells(ROOT / "chapters" / f"{name}.ipynb"))
    assert found == [], f"{name}：" + "；".join(found)


def test_machinery_guard_sees_each_kind():
    def code(source, tags=()):
        return {"cell_type": "code", "source": source, "metadata": {"tags": list(tags)}}

    notebook = [
        code("import onelayer\ndef row(x):\n    return x"),
        {"cell_type": "markdown", "source": "第一个代码单元调用 onelayer.setup()", "metadata": {}},
        {"cell_type": "markdown", "source": "本章所有数字都由下面的代码算出。", "metadata": {}},
        code("assert a  # 一致\nassert b  # 也一致"),
        code("assert a"),
        code("try:\n    f()\nexcept ValueError as e:\n    print(e)"),
        code("seeds = experiment_seeds(5)"),
        code("show_glued('x')", tags=["hide-input"]),
        code("assert a\nassert b\nshow_glued('x')", tags=["remove-cell"]),
        code("seeds = experiment_seeds(5)  # 种子 0…4\nassert err < 1e-6  # 与 PyTorch 一致"),
    ]
    found = machinery_in_view(notebook)
    assert [f.split("：")[0] for f in found] == [
        "单元 0", "单元 1", "单元 2", "单元 3", "单元 4", "单元 5", "单元 6", "单元 7"]


def unrendered_emphasis(markdown: str) -> list[str]:
    """Bold markers that CommonMark leaves as text, e.g. a closing ** after full-width
    punctuation and before a character (**要点：**这里); directives' bodies are read too."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    parser = MarkdownIt("commonmark").enable("table").use(dollarmath_plugin)
    found = []
    for token in parser.parse(markdown):
        if token.type in ("fence", "code_block") and token.info.startswith("{"):
            body = re.sub(r"^:[\w-]+:.*$", "", token.content, flags=re.M)
            found += unrendered_emphasis(body)
        elif token.type == "inline":
            found += [t.content for t in token.children if t.type == "text" and "**" in t.content]
    return found


PAGES = [*CHAPTERS, *sorted((ROOT / "chapters").glob("*.md")), ROOT / "intro.md",
         ROOT / "chapters" / "errata.ipynb"]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_bold_is_rendered(path):
    if path.suffix == ".md":
        markdown = [path.read_text(encoding="utf-8")]
    else:
        markdown = ["".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown"]
    found = [hit for md in markdown for hit in unrendered_emphasis(md)]
    assert found == [], f"没有渲染成粗体的 **（把全角标点移到 ** 外面）：{found}"


def test_bold_guard_sees_full_width_punctuation():
    assert unrendered_emphasis("**要点：**这里") != []
    assert unrendered_emphasis("**要点**：这里，`a**2`，$x**2$") == []
    assert unrendered_emphasis(":::{dropdown} 深入\n**注意：**这里\n:::") != []


# A seed count in the prose ("4/5 个种子", "5 个种子里……有 4 个", "5 个种子都") holds for this
# run's seeds only: the same paragraph, or the next, states the claim sweep's total over its
# 20 groups, glued from onelayer.book.runtime.swept_total under a name starting with swept_.
NUMBER = r"(?:\d+|\{glue(?::text)?\}`[^`]+`)"
SEED_COUNT = re.compile(
    rf"(?<![\w.\-]){NUMBER} ?/ ?(?:\{{glue(?::text)?\}}`[^`]*seed[^`]*`|\d+ ?(?=个|种子|组))"
    rf"|{NUMBER}\s*个种子[^。；：]{{0,30}}?有\s*{NUMBER}\s*个|{NUMBER}\s*个种子(?:都|全)")
SWEPT = re.compile(r"\{glue(?::text)?\}`swept_")


def unrated_seed_counts(notebook: list[dict]) -> list[str]:
    """Seed counts with no sweep total in their paragraph or the next; swept_ glue that is
    not the sweep's."""
    units = [re.sub(r"\$[^$]*\$", "", unit) for cell in notebook if cell["cell_type"] == "markdown"
             for unit in prose_units("".join(cell["source"]))]
    found = []
    for i, unit in enumerate(units):
        rated = SWEPT.search(unit) or (i + 1 < len(units) and SWEPT.search(units[i + 1]))
        found += [match.group(0) for match in SEED_COUNT.finditer(unit)
                  if not rated and ("种子" in unit or "seed" in match.group(0))]
    for cell in notebook:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and re.search(r"glue\(\s*[\"']swept_", source) \
                and "swept_total(" not in source:
            found.append(f"swept_ 的数字不是结论扫描的：{source[:60]}")
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_seed_counts_come_with_the_sweep_rate(path):
    found = unrated_seed_counts(cells(path))
    assert found == [], f"种子数旁边没有结论扫描的总数：{found}"


def test_seed_count_guard_sees_each_form():
    def markdown(source):
        return {"cell_type": "markdown", "source": source, "metadata": {}}

    notebook = [
        markdown("这次 {glue:text}`k`/{glue:text}`n_seeds` 个学到了。"),
        markdown("5 个种子里练到 5% 以下的有 {glue:text}`k` 个。\n\n另一段，与种子无关。"),
        markdown("换 8 个种子都成立。"),
        markdown("4/5 个种子如此。\n\n结论扫描里 {glue:text}`swept_k`/{glue:text}`swept_n` 个。"),
        markdown("学习率从 3e-3/45 升起，种子 5 个；$1/\\sqrt{d}$ 与种子无关。"),
        {"cell_type": "code", "source": "glue('swept_k', 3)", "metadata": {}},
    ]
    found = unrated_seed_counts(notebook)
    assert len(found) == 4 and found[:3] == [
        "{glue:text}`k`/{glue:text}`n_seeds`",
        "5 个种子里练到 5% 以下的有 {glue:text}`k` 个", "8 个种子都"]
