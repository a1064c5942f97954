"""references.bib as the references page shows it (_ext/book_bib.py): every entry has a label of
letters, no two share one, and an author written in Chinese sorts by the pinyin it gives."""

import re
import sys
from pathlib import Path

from pybtex.database import parse_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "_ext"))
import book_bib  # noqa: E402

BIB = parse_file(ROOT / "references.bib")
HAN = re.compile(r"[\u4e00-\u9fff]")
GROUPS = {"software", "web", "book"}  # the references page's sections besides the papers


def formatted():
    return list(book_bib.Style().format_bibliography(BIB))


def test_labels_have_letters_and_are_unique():
    labels = [entry.label for entry in formatted()]
    assert [label for label in labels if not re.search("[A-Za-z]", label)] == []
    assert len(set(labels)) == len(labels)


def test_chinese_authors_sort_with_the_others():
    for key, entry in BIB.entries.items():
        names = " ".join(str(p) for p in entry.persons.get("author", []))
        if HAN.search(names):
            assert {"sortkey", "shorthand"} <= set(entry.fields), key
    order = [entry.key for entry in formatted()]
    assert order.index("glorot2010understanding") > order.index("gezai1821cilin") > order.index(
        "elhage2021framework")
    assert order.index("loshchilov2019adamw") > order.index("long1978cipu")
    assert order.index("gemma2024gemma2") < order.index("geva2021keyvalue")  # {Gemma Team} under G


def test_every_entry_is_in_one_section_of_the_page():
    page = (ROOT / "chapters" / "references.md").read_text(encoding="utf-8")
    for group in GROUPS:
        assert f'keywords % "{group}"' in page
    stray = {key: e.fields["keywords"] for key, e in BIB.entries.items()
             if e.fields.get("keywords", "") not in GROUPS | {""}}
    assert stray == {}
