"""The claim sweep (make claims): how often does each experiment claim of the book hold?

Every ``assert`` in a cell tagged ``experiment`` is a claim the prose makes about trained or
sampled results. This script runs each chapter that has such claims once per seed group — seed
offset ``ONELAYER_SEED_OFFSET = 1000·g`` for g = 0 … 19 — on the portable CPU path (the one
``make test`` uses), and records for each claim whether it held and the range of the quantity it
compares. A failing claim does not stop the run: in these runs each ``assert`` is rewritten to
record its outcome instead, so the claims after it are measured too.

The results go to ``chapters/claims.json`` (committed), and the table of
``chapters/reproducibility.md`` (between its ``claims:start``/``claims:end`` markers) is
rewritten from it. A chapter's results are kept while the sources of its experiment cells are
unchanged (a hash of them is stored); change a claim or an experiment and its chapter is run
again. ``tests/book/test_claims.py`` checks that the file is current, complete and that every
claim held in every group.

    python tools/claims.py                      # every chapter, the groups still missing
    python tools/claims.py --chapters 03_residual 08_pre_post_norm
    python tools/claims.py --table              # only rewrite the appendix's table
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import io
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import tokenize
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
RESULTS = CHAPTERS / "claims.json"
APPENDIX = CHAPTERS / "reproducibility.md"
GROUPS = 20
OFFSET_STEP = 1000
RUN_TIMEOUT, ATTEMPTS = 1200, 3  # seconds for one chapter run; tries per run
PORTABLE = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
START, END = "<!-- claims:start -->", "<!-- claims:end -->"
HEADING_ANCHORS = 3  # myst_heading_anchors in _config.yml

# Defined in the kernel before the chapter runs: each rewritten assert calls it.
RECORDER = '''
def __claim__(key, test, quantities):
    record = __claims__.setdefault(key, {"held": True, "values": {}})
    try:
        held = bool(test())
    except Exception as err:
        held, record["error"] = False, f"{type(err).__name__}: {err}"[:300]
    record["held"] = record["held"] and held
    for name, quantity in quantities:
        try:
            value = quantity()
            if hasattr(value, "numel") and value.numel() > 1:    # a tensor: its extremes
                low, high = float(value.min()), float(value.max())
            else:
                low = high = float(value.item() if hasattr(value, "item") else value)
        except Exception:
            continue
        was_low, was_high = record["values"].get(name, (low, high))
        record["values"][name] = (min(was_low, low), max(was_high, high))


__claims__ = {}
'''
REPORT = "import json as __json\nprint(__json.dumps(__claims__))"


def offsets(groups: int) -> list[int]:
    return [OFFSET_STEP * g for g in range(groups)]


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(notebook: dict) -> list[dict]:
    return [c for c in notebook["cells"] if c["cell_type"] == "code"]


def is_experiment(cell: dict) -> bool:
    """Trained or sampled: its output is not compared digit for digit."""
    return bool({"experiment", "nbval-ignore-output"} & set(cell["metadata"].get("tags", [])))


def experiment_cells(notebook: dict) -> list[dict]:
    return [c for c in code_cells(notebook) if is_experiment(c)]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def code_tokens(text: str) -> str:
    """The cell's code without its comments and layout: the tokens, one a line (indentation
    kept as INDENT/DEDENT). A cell that does not tokenize is taken as it is."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    try:
        tokens = [(tok.type, "" if tok.type in (tokenize.NEWLINE, tokenize.INDENT) else tok.string)
                  for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                  if tok.type not in skip]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    return "\n".join(f"{kind} {string}" for kind, string in tokens)


def source_hash(notebook: dict) -> str:
    """Changes whenever an experiment cell's code changes (its claims must then be re-run);
    not when only a comment or the layout changes (an assert's label is its comment)."""
    text = "\n\x00".join(code_tokens(source(c)) for c in experiment_cells(notebook))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def comments_by_line(text: str) -> dict[int, str]:
    found = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            found[tok.start[0]] = tok.string.lstrip("#").strip()
    return found


def statement(node: ast.Assert, lines: list[str], comments: dict[int, str]) -> str:
    """What the claim says: the comment on the assert's lines, else the comment lines right
    above it, else its message, else its code."""
    beside = [comments[n] for n in range(node.lineno, node.end_lineno + 1) if n in comments]
    if beside:
        return " ".join(beside)
    above, n = [], node.lineno - 1
    while n >= 1 and lines[n - 1].strip().startswith("#"):
        above.insert(0, comments[n])
        n -= 1
    if above:
        return " ".join(above).removeprefix("本节的检验：")
    if isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str):
        return node.msg.value
    return ast.unparse(node.test)


def quantities(test: ast.expr) -> list[ast.expr]:
    """The compared quantity of each comparison in ``test`` (through and/or/not and
    all/any): its first operand that is not a constant."""
    if isinstance(test, ast.BoolOp):
        return [q for value in test.values for q in quantities(value)]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return quantities(test.operand)
    if isinstance(test, ast.Call) and len(test.args) <= 1:      # x.all(), torch.all(x), all(x)
        func = test.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        inner = test.args[0] if test.args else getattr(func, "value", None)
        if name in ("all", "any") and inner is not None:
            return quantities(inner)
    if isinstance(test, ast.Compare):
        operands = [test.left, *test.comparators]
        return [o for o in operands if not isinstance(o, ast.Constant)][:1]
    return []


def claims_of(cell: dict) -> list[tuple[str, ast.Assert, str]]:
    """(key, node, statement) of each assert in the cell, in order; key = cell id/number."""
    text = source(cell)
    tree, comments, lines = ast.parse(text), comments_by_line(text), text.splitlines()
    asserts = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assert)),
                     key=lambda n: (n.lineno, n.col_offset))
    return [(f"{cell['id']}/{i}", node, statement(node, lines, comments))
            for i, node in enumerate(asserts)]


def chapter_claims(notebook: dict) -> list[dict]:
    """Every assert of the chapter; ``experiment``: its cell's outputs are not compared."""
    return [{"key": key, "statement": said, "code": ast.unparse(node.test),
             "experiment": is_experiment(cell)}
            for cell in code_cells(notebook) for key, node, said in claims_of(cell)]


class RecordAsserts(ast.NodeTransformer):
    """assert test  →  __claim__(key, lambda: test, [(name, lambda: quantity), …])"""

    def __init__(self, keys: dict[tuple[int, int], str]) -> None:
        self.keys = keys

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        def thunk(expr: ast.expr) -> ast.Lambda:
            return ast.Lambda(ast.arguments([], [], None, [], [], None, []), expr)

        pairs = [ast.Tuple([ast.Constant(ast.unparse(q)), thunk(q)], ast.Load())
                 for q in quantities(node.test)]
        call = ast.Call(ast.Name("__claim__", ast.Load()),
                        [ast.Constant(self.keys[node.lineno, node.col_offset]),
                         thunk(node.test), ast.List(pairs, ast.Load())], [])
        return ast.copy_location(ast.Expr(call), node)


def recording(cell: dict) -> str:
    keys = {(node.lineno, node.col_offset): key for key, node, _ in claims_of(cell)}
    tree = RecordAsserts(keys).visit(ast.parse(source(cell)))
    return ast.unparse(ast.fix_missing_locations(tree))


def run_group(name: str) -> dict:
    """Run one chapter in this process's environment; return what its claims recorded."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(CHAPTERS / f"{name}.ipynb", as_version=4)
    runnable = copy.deepcopy(notebook)
    for cell in code_cells(runnable):
        if claims_of(cell):
            cell.source = recording(cell)
    runnable.cells.insert(0, nbformat.v4.new_code_cell(RECORDER))
    runnable.cells.append(nbformat.v4.new_code_cell(REPORT))
    NotebookClient(runnable, timeout=900, allow_errors=True,
                   resources={"metadata": {"path": str(CHAPTERS)}}).execute()
    errors = [f"{out['ename']}: {out['evalue']}"[:300] for cell in runnable.cells
              if cell.cell_type == "code" for out in cell.get("outputs", [])
              if out.get("output_type") == "error"]
    report = runnable.cells[-1].outputs
    recorded = json.loads(report[0]["text"]) if report and "text" in report[0] else {}
    return {"claims": recorded, "cell_errors": errors}


def sweep_one(name: str, offset: int) -> dict:
    """Run ``name`` at seed offset ``offset`` in a fresh process (and kernel) on the portable
    path. A run whose kernel stops answering (it happens, rarely) is killed and started again."""
    env = {**os.environ, **PORTABLE, "ONELAYER_SEED_OFFSET": str(offset)}
    err = ""
    for _ in range(ATTEMPTS):
        start = time.perf_counter()
        run = subprocess.Popen([sys.executable, __file__, "--run", name], env=env, cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, preexec_fn=lambda: os.nice(10))
        try:
            out, err = run.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)                # the run and its kernel
            err = f"no answer within {RUN_TIMEOUT} s\n" + run.communicate()[1]
            continue
        if run.returncode == 0:
            result = json.loads(out.strip().splitlines()[-1])
            result["seconds"] = round(time.perf_counter() - start, 1)
            return result
    raise RuntimeError(f"{name} at offset {offset} failed {ATTEMPTS} times:\n{err[-2000:]}")


def swept_chapters() -> list[str]:
    """The chapters with experiment claims."""
    return [p.stem for p in sorted(CHAPTERS.glob("[0-9][0-9]*_*.ipynb"))
            if any(c["experiment"] for c in chapter_claims(load(p)))]


def sweep(names: list[str], groups: int, jobs: int) -> None:
    results = load(RESULTS) if RESULTS.exists() else {"chapters": {}}
    current = swept_chapters()
    results["chapters"] = {n: e for n, e in results["chapters"].items() if n in current}
    results["scheme"] = (f"ONELAYER_SEED_OFFSET = {OFFSET_STEP}·g, g = 0 … {groups - 1}; "
                         + " ".join(f"{k}={v}" for k, v in PORTABLE.items()))
    todo = []
    for name in names:
        notebook = load(CHAPTERS / f"{name}.ipynb")
        entry = results["chapters"].get(name, {})
        if entry.get("source_hash") != source_hash(notebook):
            entry = {"source_hash": source_hash(notebook), "groups": {}}
        entry["claims"] = chapter_claims(notebook)
        results["chapters"][name] = entry
        todo += [(name, o) for o in offsets(groups) if str(o) not in entry["groups"]]
    lock = threading.Lock()

    def work(job: tuple[str, int]) -> None:
        name, offset = job
        result = sweep_one(name, offset)
        with lock:
            results["chapters"][name]["groups"][str(offset)] = result
            save(results)
            held = sum(r["held"] for r in result["claims"].values())
            print(f"{name} offset {offset}: {held}/{len(results['chapters'][name]['claims'])} "
                  f"held, {result['seconds']} s", flush=True)

    save(results)
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(work, todo))


def save(results: dict) -> None:
    """Write the results whole: a chapter run reading them (a notebook quoting a rate) never
    sees half a file."""
    partial = RESULTS.with_suffix(".json.partial")
    partial.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n",
                       encoding="utf-8")
    partial.replace(RESULTS)


def claim_rows(entry: dict) -> list[tuple[dict, int, int, dict[str, tuple[float, float]]]]:
    """(claim, groups it held in, groups run, range of each quantity over the groups)."""
    rows = []
    for claim in entry["claims"]:
        outcomes = [g["claims"].get(claim["key"]) for g in entry["groups"].values()]
        held = sum(bool(o and o["held"]) for o in outcomes)
        ranges: dict[str, tuple[float, float]] = {}
        for o in filter(None, outcomes):
            for q, (low, high) in o["values"].items():
                was = ranges.get(q, (low, high))
                ranges[q] = (min(was[0], low), max(was[1], high))
        rows.append((claim, held, len(outcomes), ranges))
    return rows


def shown(claim: dict, ranges: dict[str, tuple[float, float]]) -> bool:
    """The appendix lists experiment claims and any claim whose quantity varies with the seeds."""
    return claim["experiment"] or any(low != high for low, high in ranges.values())


def number(x: float) -> str:
    return f"{x:.0f}" if x == int(x) and abs(x) < 1e6 else f"{x:.3g}"


def cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def chapter_title(name: str) -> str:
    first = source(load(CHAPTERS / f"{name}.ipynb")["cells"][0])
    return first.splitlines()[0].lstrip("# ").strip()


def status(name: str, entry: dict | None) -> str:
    """"current" when the results cover the chapter as it is now, in every group."""
    if entry is None or not entry["groups"]:
        return "这一章还没有扫描。"
    if entry["source_hash"] != source_hash(load(CHAPTERS / f"{name}.ipynb")):
        return "这一章的实验单元在上次扫描之后改过，结果作废，要重新扫描。"
    if len(entry["groups"]) < GROUPS:
        return f"扫描还没有完成：已运行 {len(entry['groups'])}/{GROUPS} 组。"
    return "current"


# A row's label is the assert's comment (claims_of). It must read as a sentence on its own:
# no code, no fragment that leans on the line above ("……但不是 0"), at least a few words.
# A claim about how many seeds did something says how many per group ("5 个种子里至少 3 个…"):
# the table then adds the count over all seeds of all groups.
FRAGMENT = ("……", "...", "…", "而", "但", "也", "且")
MIN_LABEL = 8
PER_GROUP = re.compile(r"(\d+) 个(?:种子|模型)(?:里|中)")


def label_problem(claim: dict) -> str:
    """Why the claim's label does not read on its own ("" when it does)."""
    said = claim["statement"]
    if said == claim["code"] or not re.search(r"[\u4e00-\u9fff]", said):
        return "没有文字说明（断言旁没有注释）"
    if said.startswith(FRAGMENT):
        return "是半句话（接着上一条说）"
    if len(said) < MIN_LABEL:
        return f"太短（不到 {MIN_LABEL} 个字），离开上下文读不懂"
    return ""


def comparisons(test: ast.expr) -> dict[str, tuple[str, str]]:
    """Each compared quantity (as ``quantities`` names it) → the comparison that bounds it
    (the threshold a reader sets the observed range against) and, for all()/any(), which
    values it bounds."""
    if isinstance(test, ast.BoolOp):
        return {q: c for value in test.values for q, c in comparisons(value).items()}
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return {q: (f"not ({c})", how) for q, (c, how) in comparisons(test.operand).items()}
    if isinstance(test, ast.Call) and len(test.args) <= 1:
        func = test.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        inner = test.args[0] if test.args else getattr(func, "value", None)
        if name in ("all", "any") and inner is not None:
            every = "（每个值）" if name == "all" else "（至少一个值）"
            return {q: (c, every) for q, (c, _) in comparisons(inner).items()}
    if isinstance(test, ast.Compare):
        return {ast.unparse(q): (ast.unparse(test), "") for q in quantities(test)}
    return {}


def sections(notebook: dict) -> dict[str, tuple[str, str]]:
    """Cell id → (title, anchor) of the section the cell is in. The anchor is the slug that
    myst-parser gives the heading (myst_heading_anchors in _config.yml), so that
    ``[…](chapter.ipynb#anchor)`` is checked by the build."""
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.mdit_to_docutils.base import default_slugify
    from myst_parser.parsers.mdit import create_md_parser

    parser = create_md_parser(MdParserConfig(enable_extensions={"colon_fence", "dollarmath",
                                                                "amsmath", "substitution"}),
                              RendererHTML)
    found, slugs, here = {}, set(), ("", "")
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            tokens = parser.parse(source(cell))
            for opening, inline in zip(tokens, tokens[1:]):
                if opening.type != "heading_open" or opening.level != 0:
                    continue
                title = "".join(child.content for child in inline.children or []
                                if child.type in ("text", "code_inline"))
                slug, i = default_slugify(title), 1
                while slug in slugs:
                    slug, i = f"{default_slugify(title)}-{i}", i + 1
                slugs.add(slug)
                if int(opening.tag[1:]) <= HEADING_ANCHORS:
                    here = (inline.content, slug)
        found[cell.get("id", "")] = here
    return found


def seed_count(claim: dict, entry: dict, q: str) -> tuple[int, int] | None:
    """(seeds over all groups, of how many) for a claim whose label counts seeds per group
    ("5 个种子里…") and whose quantity ``q`` is that count in every group."""
    per_group = PER_GROUP.search(claim["statement"])
    if per_group is None:
        return None
    n = int(per_group.group(1))
    counts = [g["claims"].get(claim["key"], {}).get("values", {}).get(q) for g in
              entry["groups"].values()]
    if not counts or any(c is None or c[0] != c[1] or c[0] != int(c[0]) or not 0 <= c[0] <= n
                         for c in counts):
        return None
    return int(sum(c[0] for c in counts)), n * len(counts)


def count_quantity(claim: dict, entry: dict, ranges: dict) -> tuple[str, int, int] | None:
    """The first compared quantity that counts seeds (not a median, mean or extreme of them)."""
    for q in ranges:
        if re.search(r"\b(median|mean|min|max)\(", q):
            continue
        total = seed_count(claim, entry, q)
        if total is not None:
            return (q, *total)
    return None


# The models trained once and kept in models/ (tools/train_songci_gpt.py,
# tools/train_rhyme_study.py) are read through these functions. From the first cell of a page
# that calls one, its claims are about those fixed weights: a seed offset does not retrain
# them, so the 20 groups measure the same models again (only sampling, shuffles and the like
# change). Their rows say so.
STORED_LOADERS = re.compile(r"\b(?:load_songci_gpt|load_rhyme_study)\(")
STORED = "**固定检查点**（同一组权重，重测 20 次）"
STORED_NOTE = ("标着“固定检查点”的行，量的是 `models/` 里训练好存下来的模型"
               "（见 {ref}`stored-models`）："
               "种子偏移不重训它们，20 组重复测量同一组权重，随组而变的只有采样、打乱这类随机步骤。"
               "这些行的“20/20 组成立”不是 20 组训练种子。")


def stored_cells(notebook: dict) -> set[str]:
    """Ids of the code cells from the first one that loads a stored model on."""
    found, loaded = set(), False
    for cell in code_cells(notebook):
        loaded = loaded or bool(STORED_LOADERS.search(source(cell)))
        if loaded:
            found.add(cell.get("id", ""))
    return found


def stored_claims(entry: dict, stored: set[str]) -> bool:
    return any(c["key"].split("/")[0] in stored for c in entry["claims"])


def run_time(entry: dict) -> str:
    """How long one run of the page took in the sweep: the median and range over its groups."""
    seconds = sorted(g["seconds"] for g in entry["groups"].values() if "seconds" in g)
    if not seconds:
        return ""
    return (f"每次运行 {statistics.median(seconds):.0f} 秒（{len(seconds)} 组的中位数；"
            f"最快 {seconds[0]:.0f} 秒，最慢 {seconds[-1]:.0f} 秒）。")


def row(name: str, claim: dict, held: int, runs: int, ranges: dict, entry: dict,
        where: tuple[str, str], stored: bool = False) -> list[str]:
    """One claim: its label (linked to the section it checks), then what held (and, for a
    claim on a stored model, that the groups re-measure it), the bound and the range seen,
    and for seed counts the count over all seeds."""
    problem = label_problem(claim)
    label = claim["statement"] if not problem else f"`{claim['code']}`（这一条还没有文字说明）"
    _, anchor = where
    linked = f"[{label}]({name}.ipynb#{anchor})" if anchor else label
    bounds = comparisons(ast.parse(claim["code"], mode="eval").body)
    details = [f"{held}/{runs} 组成立"] + ([STORED] if stored else [])
    for q, (lo, hi) in ranges.items():
        seen = number(lo) if number(lo) == number(hi) else f"{number(lo)} ~ {number(hi)}"
        bound, every = bounds.get(q, (q, ""))
        details.append(f"要求 `{cell_text(bound)}`{every}，各组 {seen}" if bound != q
                       else f"`{cell_text(q)}`：各组 {seen}")
    counted = count_quantity(claim, entry, ranges)
    if counted:
        q, total, of = counted
        details.append(f"全部 {len(entry['groups'])} 组的种子合计：**{total}/{of}**")
    return [f"- {linked}\\", "  " + "；".join(details)]   # "\\" ends the line: details below


def anchor(name: str) -> str:
    """The label of a page's part of the table: claims-ch10 for 10_songci, claims-ch10a for
    its study page 10a_rhyme_study."""
    return f"claims-ch{name.split('_')[0]}"


def page_heading(name: str) -> str:
    """第 10 章 …, or 第 10 章的研究 … for a study page (10a_…)."""
    kind = "章" if name[2] == "_" else "章的研究"
    return f"第 {int(name[:2])} {kind} {chapter_title(name)}"


def sweep_time(results: dict, names: list[str]) -> str:
    """The sweep's total run time over the pages whose results are current, from the seconds
    each run recorded."""
    current = [n for n in names if status(n, results["chapters"].get(n)) == "current"]
    runs = [g.get("seconds", 0) for n in current for g in results["chapters"][n]["groups"].values()]
    return (f"最近一次扫描记下的运行时间：{len(current)} 页、{len(runs)} 次运行，"
            f"合计约 {sum(runs) / 3600:.1f} 小时；两页同时运行，要等的时间约为它的一半。")


def table(results: dict) -> str:
    names = swept_chapters()
    parts = [START, "", sweep_time(results, names), ""]
    for name in names:
        entry = results["chapters"].get(name)
        notebook = load(CHAPTERS / f"{name}.ipynb")
        parts += [f"({anchor(name)})=", f"### {page_heading(name)}", ""]
        said = status(name, entry)
        if said != "current":
            parts += [said, ""]
        if said == "current" or said.startswith("扫描还没有完成"):
            where, stored = sections(notebook), stored_cells(notebook)
            parts += [run_time(entry) + (STORED_NOTE if stored_claims(entry, stored) else ""), ""]
            for claim, held, runs, ranges in claim_rows(entry):
                if shown(claim, ranges):
                    cell = claim["key"].split("/")[0]
                    parts += row(name, claim, held, runs, ranges, entry, where.get(cell, ("", "")),
                                 cell in stored)
            parts.append("")
    return "\n".join(parts + [END])


def write_table(results: dict) -> None:
    text = APPENDIX.read_text(encoding="utf-8")
    before, rest = text.split(START)
    _, after = rest.split(END)
    APPENDIX.write_text(before + table(results) + after, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="*", help="e.g. 03_residual (default: all)")
    parser.add_argument("--groups", type=int, default=GROUPS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--table", action="store_true", help="only rewrite the appendix table")
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_group(args.run)))
        return
    if not args.table:
        sweep(args.chapters or swept_chapters(), args.groups, args.jobs)
    results = load(RESULTS)
    for name, entry in results["chapters"].items():   # statements as this script reads them now
        notebook = load(CHAPTERS / f"{name}.ipynb")
        if entry["source_hash"] == source_hash(notebook):
            entry["claims"] = chapter_claims(notebook)
    save(results)
    write_table(results)


if __name__ == "__main__":
    main()
