"""How far the one-step leave-one-group-out approximation (runs/accuracy.py `leave_out`) is from
exact refits on the shipped runs tables: prints, for each group chosen, its rows' left-out
errors by the one-step approximation (fit.json's `left_out_pct`) and by an exact refit without
the group (fit.fit from the prior centres, the rows then forecast as `astral runs
--calibration` forecasts them; the refits share the forecasts they start with, as
accuracy.leave_out_exact's do: runs/memo.py), and the mean |difference|. Never asserted in the tests: each
exact refit costs a full fit (one to three minutes of CPU).

    python benchmarks/bench_leave_out.py            # the six groups of the largest errors, and
                                                    # six more spread over the table
    python benchmarks/bench_leave_out.py r131 r185  # the groups of these rows

The groups are those of the shipped fit.json's rows (its `left_out_pct`): run after `make
calibrate`."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from astral_dsl.runs.fit_document import grouped  # noqa: E402
from astral_dsl.runs.evaluate import evaluate_one  # noqa: E402
from astral_dsl.runs.fit import fitted, rows_of  # noqa: E402
from astral_dsl.runs.memo import Memo  # noqa: E402
from astral_dsl.runs.table import read_table  # noqa: E402
from astral_dsl.seer.calibration import FIT_FILE, RUN_FILES  # noqa: E402


def main(ids) -> None:
    doc = json.loads(FIT_FILE.read_text(encoding="utf-8"))
    one_step = {r["id"]: r["left_out_pct"] for r in doc["rows"]}
    rows, _ = rows_of([(name, read_table(RUN_FILES[name])) for name in ("a100", "modern")])
    groups = grouped([row.group for row in rows])
    of_row = {rows[i].prepared.row.id: key for key, idx in groups.items() for i in idx}
    if not ids:
        ranked = sorted(one_step, key=lambda k: -abs(one_step[k]))
        ids = ranked[:6] + ranked[6::max(1, (len(ranked) - 6) // 6)][:6]
    chosen = []
    for rid in ids:
        if of_row[rid] not in chosen:
            chosen.append(of_row[rid])
    diffs, memo = [], Memo()
    print(f"{'row':12s} {'one-step':>9s} {'exact':>9s}   (left-out error, %; CPU s of the refit)")
    for key in chosen:
        drop = set(groups[key])
        t0 = time.process_time()
        cal = fitted([row for i, row in enumerate(rows) if i not in drop], memo=memo,
                     rechosen=False)[0]
        cpu = time.process_time() - t0
        for i in groups[key]:
            rid = rows[i].prepared.row.id
            exact = 100 * evaluate_one(rows[i].prepared, cal).error
            diffs.append(abs(exact - one_step[rid]))
            print(f"{rid:12s} {one_step[rid]:+9.2f} {exact:+9.2f}   ({cpu:.0f} s)", flush=True)
    print(f"mean |one-step - exact| over {len(diffs)} rows: {sum(diffs) / len(diffs):.2f} points"
          f"; largest {max(diffs):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
