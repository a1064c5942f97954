"""The errata page keeps its promise: each entry quotes the article (000/002/003/004 of the
source tutorials) and names its section, entries are numbered 1, 2, … in order under the
page's groups (the errors that change a result first), each is proved by a code cell with an
`assert`, and every "{doc}`errata` 第 N 条" in the book points to an entry that exists."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ERRATA = ROOT / "chapters" / "errata.ipynb"
ENTRY = re.compile(r"^#{2,3} (\d+)\. ", re.M)
# 原话（003，“…”一节）, 原教程 000 的 §4, or 出处：… for an entry that is not a quote.
SOURCE = re.compile(r"\*\*原话\*\*（0\d\d，“[^”]+”一节）|原教程 0\d\d 的 §\d|\*\*出处\*\*：")
REFERENCE = re.compile(r"\{doc\}`errata` 第 (\d+) 条")


def entries(cells: list[dict]) -> list[tuple[int, str]]:
    """(number, markdown) of each entry's heading cell."""
    found = []
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and (m := ENTRY.search(source)):
            found.append((int(m.group(1)), source))
    return found


def errata_cells() -> list[dict]:
    return json.loads(ERRATA.read_text(encoding="utf-8"))["cells"]


def errata_entries() -> list[tuple[int, str]]:
    return entries(errata_cells())


def proofs(cells: list[dict]) -> dict[int, int]:
    """For each entry, the number of code cells with an `assert` before the next heading."""
    found, current = {}, None
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"^#{1,3} ", source, re.M):
            m = ENTRY.search(source)
            current = int(m.group(1)) if m else None
            if current is not None:
                found[current] = 0
        elif cell["cell_type"] == "code" and current is not None and "assert " in source:
            found[current] += 1
    return found


def test_entries_are_numbered_in_order():
    numbers = [n for n, _ in errata_entries()]
    assert numbers == list(range(1, len(numbers) + 1)), numbers


def test_every_entry_names_its_source():
    missing = [n for n, text in errata_entries() if not SOURCE.search(text)]
    assert missing == [], f"勘误第 {missing} 条没有注明出处（哪一篇原教程的哪一节，或注明不是原话）"


def test_every_entry_is_proved_by_code():
    unproved = [n for n, count in proofs(errata_cells()).items() if count == 0]
    assert unproved == [], f"勘误第 {unproved} 条没有带 assert 的证明代码"


def test_references_to_errata_entries_exist():
    count = len(errata_entries())
    pages = [*(ROOT / "chapters").glob("*.ipynb"), *(ROOT / "chapters").glob("*.md"),
             ROOT / "intro.md"]
    dangling = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if page.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        dangling += [f"{page.name}：第 {n} 条" for n in map(int, REFERENCE.findall(text))
                     if not 1 <= n <= count]
    assert dangling == [], f"指向不存在的勘误条目：{dangling}"


def test_source_guard_tells_a_quote_from_an_unsourced_entry():
    def md(text):
        return {"cell_type": "markdown", "source": text}

    def code(text):
        return {"cell_type": "code", "source": text}

    cells = [md("## 会改变结果的错误\n\n### 1. “乘 26”\n\n"
                "**原话**（004，“一个极简算例”一节）：“……”"),
             code("assert 8 == 2 * 4"),
             md("### 2. 常见误区\n\n**出处**：不是原话。"),
             md("## 其他\n\n### 3. “这里没有负数”\n\n一篇教程说……"),
             code("print(3)"),
             md("## 常见陷阱"),
             code("assert True")]
    assert [bool(SOURCE.search(t)) for _, t in entries(cells)] == [True, True, False]
    assert proofs(cells) == {1: 1, 2: 0, 3: 0}
    assert REFERENCE.findall("见 {doc}`errata` 第 3 条、{doc}`errata` 第 12 条") == ["3", "12"]
