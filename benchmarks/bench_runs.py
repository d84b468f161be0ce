"""What `astral runs` costs as a table grows by repeats: a100.csv's 14 runs given N times (ids
of their own, the same configurations), prepared (expressed, compiled, validated: once per row,
runs/evaluate.prepare) and forecast (once per configuration, runs/configs.py): rows,
configurations, Seer's run() calls and the CPU seconds of each stage.

    python benchmarks/bench_runs.py [N ...]      (default: 1 20)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from astral_dsl.runs.configs import configurations  # noqa: E402
from astral_dsl.runs.evaluate import evaluate, prepare  # noqa: E402
from astral_dsl.runs.table import read_table  # noqa: E402
from astral_dsl.seer.calibration import shipped  # noqa: E402
from benchmarks.bench_calibrate import counting, repeats  # noqa: E402


def main(argv) -> None:
    calls = counting()
    cal = shipped()
    print(f"{'table':<10} {'rows':>6} {'configs':>8} {'run()':>7} {'prepare CPU s':>14} "
          f"{'forecast CPU s':>15}")
    for path in repeats(argv, [1, 20]):
        t0 = time.process_time()
        prepared = prepare(read_table(path))
        t1 = time.process_time()
        calls.update(iteration=0, run=0)
        evaluate(prepared, cal)
        t2 = time.process_time()
        configs = len(configurations([p for p in prepared if p.status == "ok"])[1])
        print(f"{path.stem:<10} {len(prepared):>6,} {configs:>8,} {calls['run']:>7,} "
              f"{t1 - t0:>14.1f} {t2 - t1:>15.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
