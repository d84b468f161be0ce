"""`astral sweep` benchmark: prints figures quoted in the README (never asserted in tests).

A 100-point sweep of the reference design (524,288 GPUs): hosts_per_rack 1..10 x rack_limit
36..54 kW, every point compiled, checked (engineering, the required scenario compiled again
under it) and summarised; then the same with the forecast of its job at every point. Whole
`astral sweep` processes on the default local pool (every core), and on one process."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRID = ["--grid", "hosts_per_rack=1..10", "--grid", "rack_limit=36kW..54kW:2kW"]


def timed(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "astral_dsl.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    rows = proc.stdout.count("\n")
    return elapsed, cpu, rows


def main() -> None:
    print(f"astral sweep of examples/astral.astral, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, load average before: {os.getloadavg()[0]:.1f}")
    print("  (wall time depends on what else runs; CPU time is the work itself)")
    for label, extra in (("100 points, default pool", []),
                         ("100 points + forecast, default pool", ["--job", "llama405b"]),
                         ("100 points, one process", ["--workers", "1"])):
        elapsed, cpu, rows = timed(["sweep", "examples/astral.astral", *GRID, "--format",
                                    "json", *extra])
        print(f"  {label:38} {rows:4d} rows  wall {elapsed:5.1f} s  CPU {cpu:5.1f} s  "
              f"({cpu / rows * 1000:.0f} ms CPU per point)")
    print("target: a 100-point sweep of the reference design under 30 s")


if __name__ == "__main__":
    main()
