"""Wall-time benchmarks of the book's own workflow (make bench).

Prints the median (and the spread) over several runs of: strict nbval over each chapter,
a no-change book rebuild, `make check` on a clean tree, and with --full the whole `make test`
(with the list of notebooks it ran); --only picks some of these.
Targets live in the issues; nothing here fails when a target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
PARTS = ("nbval", "rebuild", "check", "test")


def wall_times(cmd: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def report(name: str, times: list[float]) -> None:
    runs = ", ".join(f"{t:.1f}" for t in times)
    print(f"{name:36s} 中位数 {statistics.median(times):6.1f} s   （{len(times)} 次：{runs}）")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="也测整个 make test")
    parser.add_argument("--only", nargs="+", choices=PARTS,
                        help="只测这几项（nbval：每章的严格 nbval；rebuild：无改动时重建；"
                             "check、test：make check、make test）")
    args = parser.parse_args()
    parts = args.only or [p for p in PARTS if p != "test" or args.full]
    notebooks = sorted((ROOT / "chapters").glob("*.ipynb"))

    if "nbval" in parts:
        for nb in notebooks:
            cmd = [str(BIN / "pytest"), "--nbval", "--nbval-current-env",
                   "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
                   str(nb.relative_to(ROOT))]
            report(f"nbval {nb.name}", wall_times(cmd, args.runs))
    if "rebuild" in parts:
        build = [str(BIN / "jupyter-book"), "build", ".", "--warningiserror", "--keep-going"]
        subprocess.run(build, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)  # warm the cache
        report("无改动时重建 HTML 书", wall_times(build, args.runs))
    if "check" in parts:
        report("make check（没有改动时）", wall_times(["make", "check"], args.runs))
    if "test" in parts:
        print("make test 运行的笔记本：" + "、".join(nb.stem for nb in notebooks))
        report("make test", wall_times(["make", "test"], args.runs))


if __name__ == "__main__":
    sys.exit(main())
