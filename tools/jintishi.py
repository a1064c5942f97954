"""Make data/jintishi.jsonl, the 近体诗 the rhyme study's arm "more rhymed text" mixes into
training, from the same pinned npm package as the 宋词 (tools/songci.py).

`make jintishi` runs it. Steps: the package's tarball as tools/songci.py fetches and checks it;
only `package/dist/quantangshi/poet.tang.*.json` (全唐诗, in traditional characters) is read,
in memory; each poem is turned into simplified characters with OpenCC (t2s) and kept when it is
a 五绝, 七绝, 五律 or 七律 rhymed on 平 (``onelayer.chapters.ch10_rhyme.jinti_kind``); kept
poems are written one per line as {"rhythmic": the kind, "author", "paragraphs"}, like the 宋词,
and the file's sha256 must equal the pin, so every machine trains on these poems.
Usage: python tools/jintishi.py [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
from pathlib import Path

import opencc
from songci import ROOT, check_integrity, download, read_entries, to_jsonl

from onelayer.chapters.ch10_rhyme import jinti_kind

OUT = ROOT / "data" / "jintishi.jsonl"
JINTISHI_SHA256 = "58af4039f0b3f038794d684eba34418dc1797a9b9438cc2de3db5dbdd0915712"
TANG_FILE = re.compile(r"package/dist/quantangshi/poet\.tang\.([^/]+)\.json")


def jintishi(poems: list[dict]) -> list[dict]:
    """The poems that are 近体诗 rhymed on 平 once in simplified characters, each as a ci row."""
    simplify = opencc.OpenCC("t2s").convert
    kept = []
    for poem in poems:
        paragraphs = [simplify(p) for p in poem["paragraphs"]]
        kind = jinti_kind("".join(paragraphs))
        if kind:
            kept.append({"rhythmic": kind, "author": simplify(poem["author"]),
                         "paragraphs": paragraphs})
    return kept


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"输出文件（默认 {OUT}）")
    out = parser.parse_args(argv).out
    with tempfile.TemporaryDirectory() as folder:
        tarball = download(Path(folder))
        check_integrity(tarball)
        poems = read_entries(tarball, TANG_FILE)
    kept = jintishi(poems)
    data = to_jsonl(kept)
    actual = hashlib.sha256(data).hexdigest()
    if actual != JINTISHI_SHA256:
        sys.exit(f"{out.name} 的 sha256 应为 {JINTISHI_SHA256}，实际为 {actual}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    kinds = {k: sum(p["rhythmic"] == k for p in kept) for k in ("五绝", "七绝", "五律", "七律")}
    print(f"全唐诗 {len(poems)} 首里留下 {len(kept)} 首近体诗（{kinds}）；写入 {out}")


if __name__ == "__main__":
    main()
