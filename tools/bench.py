"""Wall-time benchmarks of the book's own workflow (make bench).

Prints the median (and the spread) over several runs of: strict nbval over each chapter,
a no-change book rebuild, `make check` on a clean tree, and with --full the whole `make test`.
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
    args = parser.parse_args()

    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        cmd = [str(BIN / "pytest"), "--nbval", "--nbval-current-env",
               "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", str(nb.relative_to(ROOT))]
        report(f"nbval {nb.name}", wall_times(cmd, args.runs))

    build = [str(BIN / "jupyter-book"), "build", ".", "--warningiserror", "--keep-going"]
    subprocess.run(build, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)  # warm the cache
    report("无改动时重建 HTML 书", wall_times(build, args.runs))

    report("make check（没有改动时）", wall_times(["make", "check"], args.runs))
    if args.full:
        report("make test", wall_times(["make", "test"], args.runs))


if __name__ == "__main__":
    sys.exit(main())
