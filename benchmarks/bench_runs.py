"""What `astral runs` costs as a table grows by repeats: a shipped runs table (a100.csv's 14 runs,
or modern.csv's 125 with --table modern) given N times (ids of their own, the same
configurations), prepared (expressed once per row; compiled and validated once per
configuration, runs/evaluate.prepare) and forecast (once per configuration, runs/configs.py):
rows, configurations, compiles, Seer's run() calls, the CPU seconds of each stage and the rows
prepared and forecast per CPU second.

    python benchmarks/bench_runs.py [--table a100|modern] [N ...]      (default: a100, 1 20)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from astral_dsl.runs import evaluate as runs_evaluate  # noqa: E402
from astral_dsl.runs.configs import configurations  # noqa: E402
from astral_dsl.runs.table import read_table  # noqa: E402
from astral_dsl.seer.calibration import shipped  # noqa: E402
from benchmarks.bench_calibrate import counting, repeats  # noqa: E402


def compiles(patch=setattr) -> dict:
    """The expressions runs/evaluate.py compiles and validates from now on: {"compile": n}."""
    calls = {"compile": 0}
    real = runs_evaluate._check

    def wrapped(*args, **kw):
        calls["compile"] += 1
        return real(*args, **kw)

    patch(runs_evaluate, "_check", wrapped)
    return calls


def main(argv) -> None:
    table = "a100"
    if argv[:1] == ["--table"]:
        table, argv = argv[1], argv[2:]
    calls, compiled = counting(), compiles()
    cal = shipped()
    print(f"{'table':<12} {'rows':>6} {'configs':>8} {'compiles':>9} {'run()':>7} "
          f"{'prepare CPU s':>14} {'forecast CPU s':>15} {'rows/s':>7}")
    for path in repeats(argv, [1, 20], table):
        runs = read_table(path)
        calls.update(iteration=0, run=0)
        compiled.update(compile=0)
        t0 = time.process_time()
        prepared = runs_evaluate.prepare(runs)
        t1 = time.process_time()
        runs_evaluate.evaluate(prepared, cal)
        t2 = time.process_time()
        configs = len(configurations([p for p in prepared if p.status == "ok"])[1])
        print(f"{path.stem:<12} {len(prepared):>6,} {configs:>8,} {compiled['compile']:>9,} "
              f"{calls['run']:>7,} {t1 - t0:>14.2f} {t2 - t1:>15.2f} "
              f"{len(prepared) / (t2 - t0):>7,.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
