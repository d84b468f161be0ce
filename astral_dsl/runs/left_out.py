"""How far a row of the shipped fit's own runs is forecast when its configuration is left out of
the fit: the figure that says how far to trust a forecast, which `astral runs` shows beside the
error in the fit.

With the shipped constants, a row of the tables they were fitted on (seer/calibration/a100.csv
and modern.csv) is forecast as the fit saw it: its `error` is the error in the fit, lower than a
run the fit never saw would get. fit-exact.json (`make calibrate-exact`) holds, for each of
those rows, its error under constants refitted without every row of its configuration (a group:
runs/table.py `Run.key`). A row of the user's table gets that figure when the forecast's
constants are the shipped fit's (seer.calibration.shipped: fit-exact.json of the same fit) and
the row is one of those rows, cell for cell (every column but the id, in any order: the same
published run under an id of the user's; a row whose published figure, source, layout or notes
differ is another run); any other row gets None."""
from __future__ import annotations

from functools import lru_cache
from typing import Dict, Optional, Tuple

from astral_dsl.seer import calibration as cal

TABLES = ("a100", "modern")       # the shipped tables, seer/calibration/<name>.csv


def cells(run) -> Tuple:
    """A row's every cell by column but its id, whatever their order in its file."""
    return (tuple(sorted(kv for kv in run.text if kv[0] != "id")),
            tuple(sorted(run.values, key=lambda kv: kv[0])))


@lru_cache(maxsize=1)
def _shipped_rows() -> Dict[Tuple, Optional[float]]:
    """The cells of each row of the shipped tables -> its error left out (a fraction), from
    fit-exact.json when it is the shipped fit's; empty otherwise."""
    from astral_dsl.runs.table import read_table

    doc = cal.shipped_exact_document()
    if doc is None:
        return {}
    left = {(r["set"], r["id"]): r["left_out_pct"] / 100 for r in doc.get("rows", ())
            if r.get("left_out_pct") is not None}
    out: Dict[Tuple, Optional[float]] = {}
    for name in TABLES:
        path = cal.HERE / f"{name}.csv"
        if not path.exists():
            continue
        for run in read_table(path).runs:
            err = left.get((name, run.id))
            if err is not None:
                key = cells(run)
                # two rows alike but for their ids and with other figures: neither is said
                out[key] = err if out.get(key, err) == err else None
    return out


def left_out(run, calibration=None) -> Optional[float]:
    """`run`'s error with its configuration left out of the shipped fit (forecast / published -
    1 on its metric, as `error`), or None: another fit's constants (`calibration`; None, as for
    a forecast, is the shipped fit), or not one of the shipped fit's rows."""
    if calibration is not None and calibration != cal.shipped():
        return None
    return _shipped_rows().get(cells(run))
