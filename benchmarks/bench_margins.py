"""What `astral check --margins` costs: prints the CPU time of a whole process on each example
(never asserted in tests).

Each example is checked with `--margins` by a `python -m astral_dsl.cli` process; the figure is
its CPU time (user + system, children included), median of RUNS runs after one warm-up run (the
user cache warm: parser tables, syntax trees, sizing's result, climate digests). On the
reference (examples/astral.astral) most of it is the numeric brackets: each probe compiles the
design at another value of a parameter and checks it (about 300 compiles and checks of the
524,288-GPU design).

    python benchmarks/bench_margins.py                  # every example, RUNS=3 (BENCH_RUNS=...)
    python benchmarks/bench_margins.py examples/astral.astral
"""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def cpu(path: Path) -> float:
    """The CPU seconds of one `astral check --margins` of `path`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "astral_dsl.cli", "check", "--margins", str(path)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-800:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv) -> None:
    paths = [Path(a) for a in argv] or sorted((ROOT / "examples").glob("*.astral"))
    for path in paths:
        cpu(path)                                   # warm-up: the user cache
        runs = [cpu(path) for _ in range(RUNS)]
        print(f"{path.name:24} {statistics.median(runs):6.2f} s of CPU "
              f"(median of {RUNS}: {', '.join(f'{r:.2f}' for r in runs)})")


if __name__ == "__main__":
    main(sys.argv[1:])
