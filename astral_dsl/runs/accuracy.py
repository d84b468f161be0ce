"""How well fitted constants hold on runs left out of the fit (`astral calibrate`'s measure).

Leave one group out: a group is one configuration across releases and tables (fit.FitRow.group:
table.Run.key, with the system, GPU and precision as Seer reads them). For each group the
constants are refitted without its rows and the group's rows forecast with them; their errors
are the accuracy reported: on data left out of the fit. Where groups x rows is at most
EXACT_ROW_FITS (a user's own small table: a few seconds a refit) every refit is exact, a fit
from the prior centres as fit.fit runs it (`leave_out_exact`); otherwise (the shipped tables:
over a hundred groups, a minute and more a refit) it is one Gauss-Newton step from the full
fit, on the same loss (the Jacobian at the full fit with the group's rows removed: the standard
one-step approximation of a leave-out refit, `leave_out`), which the document says
(`leave_out`: "exact" | "one-step"); `calibrate(leave_out_by=...)` (`astral calibrate
--leave-out`) chooses either whatever the size: the one step stays near a fit that saw the
group and understates its error (on the shipped tables 37 points of |error| over the 116 modern
rows, stop 66), so the shipped figures and bands are exact ones (`make calibrate-exact`,
fit-exact.json), the one-step ones serving between a refit and its exact refits.
benchmarks/bench_leave_out.py refits chosen groups of the shipped tables exactly and prints
both. With fewer groups than free constants the runs cannot fix every constant: the document
carries a warning. The document itself (the constants' spreads, the bands, the families, the
rows beyond the others' ranges) is runs/fit_document.py's."""
from __future__ import annotations

import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl.pools import forked_map
from astral_dsl.runs.fit import FitRow, Problem, collector_paused, fit, fitted, robust, rows_of
from astral_dsl.runs.fit_document import digest, document, grouped, moved_by
from astral_dsl.runs.memo import Memo
from astral_dsl.runs.table import RunsTable
from astral_dsl.seer.calibration import CONSTANTS, Calibration, Constant
from astral_dsl.seer.envelope import MIN_ROWS

EXACT_ROW_FITS = 400      # leave-out refits are exact where groups x rows is at most this


def leave_out(prob: Problem, cal: Calibration, J, r: Dict[int, float], keys,
              told=None, what: str = "configuration") -> Dict[int, float]:
    """row -> its error (forecast / published - 1) with the constants refitted without the rows
    that share its key (`keys[i]`: a group or a set), by one Gauss-Newton step within the
    constants' bounds (module docstring); a row whose key is None is not left out (and not in
    the result). `told(what)`: told which `what` is left out (a progress line)."""
    import numpy as np
    from scipy.optimize import lsq_linear

    n = len(prob.rows)
    x = np.array(prob.x(cal))
    pri = np.array(prob.priors(list(x)))
    lo, hi = prob.bounds()
    res, w = robust([r[i] for i in range(n)])
    Jr, Jp = J[:n] * w[:, None], J[n:]
    out: Dict[int, float] = {}
    groups = grouped(keys)
    groups.pop(None, None)
    with collector_paused():
        for g, key in enumerate(sorted(groups, key=str)):
            if told is not None:
                told(f"leaving out {what} {g + 1:,} of {len(groups):,}")
            idx = groups[key]
            keep = np.ones(n, dtype=bool)
            keep[idx] = False
            A = np.vstack([Jr[keep], Jp])
            b = np.concatenate([res[keep], pri])
            step = lsq_linear(A, -b, bounds=(lo - x, hi - x), method="bvls").x
            xg = np.clip(x + step, lo, hi)
            cg = prob.calibration(list(xg))
            for i, v in prob.residuals(cg, idx).items():
                out[i] = math.exp(v) - 1.0
    return out


def leave_out_exact(rows: List[FitRow], free: Sequence[Constant], keys,
                    max_iter: int, step=None, workers: int = 1,
                    what: str = "configuration", memo: Optional[Memo] = None
                    ) -> Dict[int, float]:
    """row -> its error with the constants refitted from scratch without the rows that share
    its key (fit.fitted), forecast as `astral runs --calibration` forecasts it (its rule's choices
    made with those constants); a row whose key is None is not left out (and not in the
    result). The refits run in `workers` forked processes (pools.forked_map): the same errors
    whatever their number. `step(what)`: told what is being done (a progress line). `memo`:
    the forecasts of the fits before (memo.py), which the refits share, each process its
    own: every refit starts where the full fit started, with the same forecasts."""
    global _EXACT
    groups = sorted(((k, idx) for k, idx in grouped(keys).items() if k is not None),
                    key=lambda kv: str(kv[0]))
    told = None if step is None else (
        lambda k: step(f"left out {k:,} of {len(groups):,} {what}s, each refitted"))
    _EXACT = (rows, tuple(free), max_iter, step, what, len(groups), os.getpid(),
              memo or Memo())
    try:
        errors = forked_map(_refit_without, list(enumerate(idx for _, idx in groups)), workers,
                            done=told)
    finally:
        _EXACT = ()
    return {i: e for (_, idx), errs in zip(groups, errors) for i, e in zip(idx, errs)}


# what the refits of leave_out_exact share: (rows, free constants, max_iter, step, what, the
# number of groups, the process that set it: a forked child tells no progress line; the
# forecasts kept from the refits before, in each process: memo.py)
_EXACT: tuple = ()


def _refit_without(item: Tuple[int, List[int]]) -> List[float]:
    """The errors of rows `idx` (item: (g, idx), the g-th group) with the constants refitted
    without them (leave_out_exact; run where the rows are: this process, or a child forked
    from it)."""
    from astral_dsl.runs.evaluate import evaluate_one

    g, idx = item
    rows, free, max_iter, step, what, count, parent, memo = _EXACT
    told = None if step is None or os.getpid() != parent else (
        lambda doing: step(f"leaving out {what} {g + 1:,} of {count:,}: {doing}"))
    drop = set(idx)
    cal = fitted([row for i, row in enumerate(rows) if i not in drop], free, max_iter=max_iter,
                 step=told, memo=memo, rechosen=False)[0]
    return [evaluate_one(rows[i].prepared, cal).error for i in idx]


LEAVE_OUT = ("exact", "one-step")     # how the refits without each group are made


def calibrate(tables: Sequence[Tuple[str, RunsTable]], by_source: Sequence[str] = (),
              free: Sequence[Constant] = CONSTANTS, max_iter: int = 40, systems=None,
              step=None, leave_out_by: Optional[str] = None, workers: int = 1):
    """Fit on every usable row of `tables` ((name, table) pairs) and measure: leave one group
    out for every row, and leave one source out (the rows of one `source_version`, e.g. one
    paper) for the tables named in `by_source`. `leave_out_by`: "exact" (each refit a whole
    fit without the rows left out), "one-step" (one Gauss-Newton step from the full fit), or
    None: exact where groups x rows is at most EXACT_ROW_FITS (module docstring); exact refits
    run in `workers` forked processes (the same figures whatever their number). Returns
    (document, Calibration, rows, every prepared row). `systems`: a user's own
    (runs/systems.py, `--gpu-file`). `step(what)`: told what is being done (a progress
    line)."""
    if leave_out_by not in (None, *LEAVE_OUT):
        raise ValueError(f"leave_out_by is one of {', '.join(LEAVE_OUT)} or None, not "
                         f"{leave_out_by!r}")
    if step is not None:
        step("reading the runs")
    rows, every = rows_of(tables, systems)
    if not rows:        # say why, row by row (the first few): the command stops here
        why = [f"{p.row.id} (line {p.row.line}) "
               + (f"{p.field}: {p.reason}" if p.status != "ok" else "publishes no figure")
               for p in every[:3]]
        raise ValueError("no row of the runs tables can be forecast and scored"
                         + (": " + "; ".join(why) if why else ": they have no rows")
                         + ("; ..." if len(every) > 3 else ""))
    keys = [row.group for row in rows]
    groups = len(set(keys))
    if groups < 2:
        raise ValueError("the rows that can be forecast and scored are all one configuration: "
                         "leaving one out leaves nothing to fit (a fit needs runs of at least "
                         "two configurations)")
    (only, *more) = {(row.table, row.prepared.row.source_version) for row in rows}
    if not more and only[0] in by_source:     # left out, the priors alone would remain
        raise ValueError(f"--by-source {only[0]}: its source `{only[1]}` is every usable run, "
                         "and leaving it out leaves none to fit (give a table of several "
                         "sources, or fit it beside other tables)")
    exact = (groups * len(rows) <= EXACT_ROW_FITS if leave_out_by is None
             else leave_out_by == "exact")
    memo = Memo() if exact else None      # the forecasts every exact refit starts with
    cal, prob, J, r = fit(rows, free, max_iter=max_iter, step=step, memo=memo)
    logo = (leave_out_exact(rows, free, keys, max_iter, step, workers, memo=memo) if exact
            else leave_out(prob, cal, J, r, keys, step))
    by_set: Dict[str, Dict[int, float]] = {}
    if by_source:
        keys = [(row.table, row.prepared.row.source_version) if row.table in by_source
                else None for row in rows]
        lso = (leave_out_exact(rows, free, keys, max_iter, step, workers, "source", memo)
               if exact
               else leave_out(prob, cal, J, r, keys, step, "source"))
        for i, row in enumerate(rows):
            if row.table in by_source:
                by_set.setdefault(row.table + ": " + row.prepared.row.source_version, {})[i] = \
                    lso[i]
    sets = {name: digest("\n".join(f"{run.line}:{run.id}" for run in table.runs))
            for name, table in tables}
    sources = {}
    for key, errs in by_set.items():
        sources[key] = {"rows": len(errs),
                        "left_out_mean_pct": round(100 * sum(abs(e) for e in errs.values())
                                                   / len(errs), 2),
                        "left_out_max_pct": round(100 * max(abs(e) for e in errs.values()), 2),
                        "in_fit_mean_pct": round(100 * sum(abs(math.exp(r[i]) - 1)
                                                           for i in errs) / len(errs), 2),
                        "in_fit_max_pct": round(100 * max(abs(math.exp(r[i]) - 1)
                                                          for i in errs), 2)}
    doc = document(cal, prob, J, r, rows, logo, sets, {})
    doc["sources"] = sources
    doc["leave_out"] = "exact" if exact else "one-step"
    doc["groups"] = groups
    warnings = fit_warnings(doc, groups, int(moved_by(J, len(rows)).sum()), len(rows))
    if warnings:
        doc["warnings"] = warnings
    return doc, Calibration(doc["constants"], tuple(sorted(sets)), doc["bands"], "fit",
                            {k: tuple(v) for k, v in doc["ranges"].items()}), rows, every


def fit_warnings(doc: dict, groups: int, moved: int, rows: int) -> List[str]:
    """What a fit (`doc`, fit.json's form) of `rows` runs in `groups` configurations, whose
    runs move `moved` constants, cannot stand for (W769 in `astral calibrate`)."""
    warnings = []
    if groups < moved:
        warnings.append(f"{groups} configurations for the {moved} constants they move: the "
                        "runs cannot fix every constant, whose priors hold them (`not "
                        "determined`), and each configuration left out weighs on the fit")
    wild = [n for n in doc["outside_prior"] if doc["spread"].get(n) is None]
    if wild:        # not determined, yet far from the prior: moved along a combination
        it = "it" if len(wild) == 1 else "them"
        warnings.append(", ".join(f"{n} = {doc['constants'][n]:.4g}" for n in wild)
                        + ": outside the prior range, not determined by the runs, which move "
                        f"{it} only together with other constants: not a measurement of {it}")
    if rows < MIN_ROWS:
        warnings.append(f"{rows} runs, fewer than the {MIN_ROWS} a measured error band "
                        "needs: a forecast with this fit is outside its envelope, with the "
                        "default band (W753)")
    return warnings
