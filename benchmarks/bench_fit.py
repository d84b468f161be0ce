"""What one fit of the shipped runs tables costs, and a few exact leave-out refits
(runs/accuracy.py `leave_out_exact`: a whole fit without a group), each made alone as refits
were before runs/memo.py, and as leave_out_exact makes them now (with the forecasts of the
refits before it in the process, without choosing again after the last run of the fit): Seer's
iteration() and run() calls and CPU seconds of each, and whether the two refits of a group
fitted the same constants (to the bit: they must). Never asserted in the tests (a fit is a
minute and more of CPU; `astral calibrate --leave-out exact` is 85 refits and two sources').

    python benchmarks/bench_fit.py [GROUPS]     (default 3: refits of groups spread over the
                                                 tables; 0: the one fit alone)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from astral_dsl.runs.fit_document import grouped  # noqa: E402
from astral_dsl.runs.fit import fitted, rows_of  # noqa: E402
from astral_dsl.runs.memo import Memo  # noqa: E402
from astral_dsl.runs.table import read_table  # noqa: E402
from astral_dsl.seer.calibration import RUN_FILES  # noqa: E402
from benchmarks.bench_calibrate import counting  # noqa: E402


def timed(calls, rows, **kw):
    """(the fitted constants to the bit, iteration() calls, run() calls, CPU s) of a fit."""
    calls.update(iteration=0, run=0)
    t0 = time.process_time()
    cal = fitted(rows, **kw)[0]
    cpu = time.process_time() - t0
    return [v.hex() for v in cal.values().values()], calls["iteration"], calls["run"], cpu


def main(argv) -> None:
    n = int(argv[0]) if argv else 3
    calls = counting()
    rows, _ = rows_of([(name, read_table(RUN_FILES[name])) for name in ("a100", "modern")])
    _, it, run, cpu = timed(calls, rows)
    print(f"one fit: {len(rows)} rows, {it:,} iteration() + {run:,} run(), {cpu:.1f} s CPU")
    groups = grouped([row.group for row in rows])
    keys = sorted(groups, key=str)
    chosen = [keys[k] for k in range(0, len(keys), max(1, len(keys) // max(n, 1)))][:n]
    memo = Memo()
    print(f"{'left out':10s} {'alone: iteration()':>18s} {'run()':>6s} {'CPU s':>6s}   "
          f"{'shared: iteration()':>19s} {'run()':>6s} {'CPU s':>6s}  same")
    for key in chosen:
        part = [row for i, row in enumerate(rows) if i not in set(groups[key])]
        alone = timed(calls, part)               # as a refit was made before the memo
        shared = timed(calls, part, rechosen=False, memo=memo)
        print(f"{rows[groups[key][0]].prepared.row.id:10s} {alone[1]:>18,} {alone[2]:>6,} "
              f"{alone[3]:>6.1f}   {shared[1]:>19,} {shared[2]:>6,} {shared[3]:>6.1f}  "
              f"{'yes' if alone[0] == shared[0] else 'NO'}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
