"""Start-up benchmark: prints the figures quoted in the README (never asserted in tests).

The CPU time (user + system of the whole process, children included) of

    astral check examples/astral.astral          (python -m astral_dsl.cli, this checkout)

against `python -c "import lark"` in the same interpreter: the median of RUNS runs after one
warm-up run each, and their ratio. Target: at most 3x. CPU time rather than wall time, so that
the other work of a shared machine changes the figures little. The runs may write byte code
(PYTHONDONTWRITEBYTECODE is dropped), as an installed copy has it: the warm-up run writes it.

    python benchmarks/bench_startup.py            # RUNS=5 by default (BENCH_RUNS=...)
    python benchmarks/bench_startup.py --profile  # and where the time of one run goes
"""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
TARGET = 3.0
CHECK = [sys.executable, "-m", "astral_dsl.cli", "check", "examples/astral.astral"]
LARK = [sys.executable, "-c", "import lark"]


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def cpu(cmd) -> float:
    """User + system CPU seconds of one run of `cmd` (a child process) from the checkout."""
    env = _env()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(cmd):
    cpu(cmd)                                  # warm-up: file cache, the per-user parser cache
    runs = [cpu(cmd) for _ in range(RUNS)]
    return statistics.median(runs), runs


def main() -> int:
    lark, lark_runs = median_cpu(LARK)
    check, check_runs = median_cpu(CHECK)
    print(f"CPU time (user + system), median of {RUNS} runs after one warm-up run:")
    print(f"  python -c 'import lark'               {lark * 1000:7.0f} ms   "
          f"runs: {', '.join(f'{x * 1000:.0f}' for x in lark_runs)}")
    print(f"  astral check examples/astral.astral   {check * 1000:7.0f} ms   "
          f"runs: {', '.join(f'{x * 1000:.0f}' for x in check_runs)}")
    print(f"  ratio {check / lark:.2f} (target: at most {TARGET:g})")
    if "--profile" in sys.argv:
        env = _env()
        out = subprocess.run([sys.executable, "-X", "importtime", *CHECK[1:]], cwd=ROOT, env=env,
                             capture_output=True, text=True)
        rows = []
        for line in out.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1].strip().isdigit():
                rows.append((int(parts[1]), parts[2].rstrip()))
        print("slowest imports (cumulative us, -X importtime):")
        for us, name in sorted(rows, reverse=True)[:15]:
            print(f"  {us:8d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
