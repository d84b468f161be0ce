"""Start-up benchmark: prints the figures quoted in the README (never asserted in tests).

The CPU time (user + system of the whole process, children included) of

    astral check examples/astral.astral          (python -m astral_dsl.cli, this checkout)
    astral --help, astral --version

against `python -c "import lark"` in the same interpreter: RUNS rounds after one warm-up run
each, every round running each command once, and the median of the rounds' ratios (a drift of
the machine's speed while the script runs moves a round's commands alike). Targets: `check` at
most 2x with the user cache warm (the syntax trees and parser tables of earlier runs), at most
3x with a fresh user cache
(ASTRAL_CACHE_DIR an empty folder before every run: the grammar's tables built, every module
parsed); `--help` and `--version` at most 1.3x. CPU time rather than wall time, so that the
other work of a shared machine changes the figures little. The runs may write byte code
(PYTHONDONTWRITEBYTECODE is dropped), as an installed copy has it: the warm-up run writes it.

    python benchmarks/bench_startup.py            # RUNS=5 by default (BENCH_RUNS=...)
    python benchmarks/bench_startup.py --profile  # and where the time of one run goes
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

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
ASTRAL = [sys.executable, "-m", "astral_dsl.cli"]
CHECK = [*ASTRAL, "check", "examples/astral.astral"]
LARK = [sys.executable, "-c", "import lark"]
CACHE = tempfile.mkdtemp(prefix="astral-bench-cache-")


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ASTRAL_CACHE_DIR=CACHE)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def cpu(cmd, fresh: bool = False) -> float:
    """User + system CPU seconds of one run of `cmd` (a child process) from the checkout; with
    `fresh`, the user cache emptied first."""
    if fresh:
        shutil.rmtree(CACHE, ignore_errors=True)
        os.mkdir(CACHE, 0o700)
    env = _env()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


LARK_LABEL = "python -c 'import lark'"
MEASURED = ((LARK_LABEL, LARK, False, None),
            ("astral check examples/astral.astral", CHECK, False, 2.0),
            ("astral check examples/astral.astral, fresh cache", CHECK, True, 3.0),
            ("astral --help", [*ASTRAL, "--help"], False, 1.3),
            ("astral --version", [*ASTRAL, "--version"], False, 1.3))


def main() -> int:
    # RUNS rounds, each running every command once: a change of the machine's speed while the
    # script runs (a shared machine's other work) moves a round's `import lark` as much as its
    # `astral` runs, and the ratio of each round cancels it; the medians of the commands alone
    # (each taken over the whole script) move with it
    for _, cmd, _, _ in MEASURED:
        cpu(cmd)                              # warm-up: file cache, byte code, the user cache
    runs = {label: [] for label, _, _, _ in MEASURED}
    for _ in range(RUNS):
        for label, cmd, fresh, _ in MEASURED:
            runs[label].append(cpu(cmd, fresh))
    lark_runs = runs[LARK_LABEL]
    lark = statistics.median(lark_runs)
    print(f"CPU time (user + system), median of {RUNS} rounds after one warm-up run, each round "
          "running every command once; the ratio: the median of the rounds' ratios to their "
          "`import lark` (the ratio of the medians in brackets):")
    print(f"  {LARK_LABEL:<50} {lark * 1000:5.0f} ms                  "
          f"runs: {', '.join(f'{x * 1000:.0f}' for x in lark_runs)}")
    for label, _, _, target in MEASURED[1:]:
        t = statistics.median(runs[label])
        ratio = statistics.median(x / y for x, y in zip(runs[label], lark_runs))
        print(f"  {label:<50} {t * 1000:5.0f} ms {ratio:4.2f}x ({t / lark:4.2f}x)   "
              f"runs: {', '.join(f'{x * 1000:.0f}' for x in runs[label])}   (target: at most "
              f"{target:g}x)")
    if "--profile" in sys.argv:
        env = _env()
        cpu(CHECK)
        # through main(), not the console entry: its exit skips the flush of what -X importtime
        # wrote to standard error
        code = f"from astral_dsl.cli import main; main({CHECK[3:]!r})"
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, env=env,
                             capture_output=True, text=True)
        rows = []
        for line in out.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1].strip().isdigit():
                rows.append((int(parts[1]), parts[2].rstrip()))
        print("slowest imports (cumulative us, -X importtime):")
        for us, name in sorted(rows, reverse=True)[:15]:
            print(f"  {us:8d}  {name}")
    shutil.rmtree(CACHE, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
