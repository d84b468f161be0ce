"""`astral size` benchmark: prints figures quoted in the README (never asserted in tests).

The whole `astral size examples/astral.astral` process (fresh interpreter, imports, CoolProp and
all engineering analyses), median of N runs; and the sizing example, whose unknowns go through
the mixed-integer solver (cvxpy + HiGHS)."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def timed(argv):
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "astral_dsl.cli", *argv], cwd=ROOT,
                              capture_output=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode not in (0, 1):
            raise SystemExit(proc.stderr.decode())
    return statistics.median(times), min(times)


def main() -> None:
    print(f"astral size, {RUNS} runs each (whole process), Python {sys.version.split()[0]}")
    for label, argv in (("reference, 524,288 GPUs", ["size", "examples/astral.astral"]),
                        ("reference, JSON", ["size", "examples/astral.astral", "--format",
                                             "json"]),
                        ("sizing example (MILP)", ["size", "examples/sizing.astral"]),
                        ("check --all-scenarios", ["check", "examples/astral.astral",
                                                   "--all-scenarios"])):
        med, best = timed(argv)
        print(f"  {label:28} median {med * 1000:7.0f} ms   best {best * 1000:7.0f} ms")
    print("target: `astral size examples/astral.astral` under 3 s")


if __name__ == "__main__":
    main()
