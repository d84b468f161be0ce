"""Size benchmark: prints figures quoted in the README (never asserted in tests).

The CPU time (user + system of the whole process) of `astral check` on generated designs of
100 kB, 300 kB and 1 MB (benchmarks/gen_design.py: one site of distinct pods, each its own
templates), cold (an empty user cache: the file is parsed and its syntax tree cached) and warm
(the tree from the cache), the median of RUNS runs; targets: the 1 MB figure at most 11 times
the 100 kB one (linear), and 1 MB at most 3 s of CPU cold. Then `astral fmt --check` of three
formatted 1 MB designs (3 MB; target: at most 10 s of CPU).

    python benchmarks/bench_scale.py              # RUNS=3 by default (BENCH_RUNS=...)
"""
from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_design import design  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
SIZES = (100, 300, 1000)
ASTRAL = [sys.executable, "-m", "astral_dsl.cli"]


def cpu(cmd, cache: str, cold: bool) -> float:
    """User + system CPU seconds of one run of `cmd` with the user cache `cache` (emptied
    first when `cold`)."""
    if cold:
        shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), ASTRAL_CACHE_DIR=cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed: {proc.stderr.decode()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(cmd, cache: str, cold: bool) -> float:
    return statistics.median(cpu(cmd, cache, cold) for _ in range(RUNS))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        cpu([*ASTRAL, "check", "examples/astral.astral"], cache, True)    # byte code, warm-up
        print(f"astral check, CPU time (user + system), median of {RUNS} runs")
        print(f"{'design':>10} {'bytes':>11} {'cold':>8} {'warm':>8}")
        cold = {}
        for kb in SIZES:
            path = os.path.join(tmp, f"gen{kb}.astral")
            text = design(kb)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            cmd = [*ASTRAL, "check", path]
            cold[kb] = median(cmd, cache, True)
            warm = median(cmd, cache, False)
            print(f"{kb:>7} kB {len(text.encode()):>11,} {cold[kb]:>7.2f}s {warm:>7.2f}s")
        print(f"1 MB / 100 kB, cold: {cold[1000] / cold[100]:.1f}x (target: at most 11x); "
              f"1 MB cold: {cold[1000]:.2f} s (target: at most 3 s)")
        folder = os.path.join(tmp, "fmt")
        os.mkdir(folder)
        for k in range(3):
            with open(os.path.join(folder, f"d{k}.astral"), "w", encoding="utf-8") as fh:
                fh.write(design(1000))
        cpu([*ASTRAL, "fmt", folder], cache, False)             # the canonical layout first
        size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
        check = median([*ASTRAL, "fmt", "--check", folder], cache, False)
        print(f"astral fmt --check of 3 formatted designs ({size / 1e6:.1f} MB): {check:.2f} s "
              f"of CPU (target: at most 10 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
