"""How well fitted constants hold on runs left out of the fit (`astral calibrate`'s measure), and
fit.json's document.

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
both. With fewer groups than free
constants the runs cannot fix every constant: the document carries a warning."""
from __future__ import annotations

import hashlib
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl.pools import forked_map
from astral_dsl.runs import score
from astral_dsl.runs.fit import FitRow, Problem, collector_paused, fit, fitted, robust, rows_of
from astral_dsl.runs.memo import Memo
from astral_dsl.runs.repeats import repeats
from astral_dsl.runs.table import RunsTable
from astral_dsl.seer import checked
from astral_dsl.seer.calibration import CONSTANTS, FIT_FORMAT, Calibration, Constant
from astral_dsl.seer.envelope import MIN_ROWS
from astral_dsl.seer.regime import regime_key

SPREAD_FACTOR_MAX = 1e6   # the largest spread factor a log-scale constant is given (spread)
EXACT_ROW_FITS = 400      # leave-out refits are exact where groups x rows is at most this


def moved_by(J, n: int):
    """Which constants (columns of J) the first `n` rows, the runs, move at all."""
    import numpy as np

    scale = np.linalg.norm(np.asarray(J[:n], dtype=float), axis=0)
    return scale > 1e-9 * max(1.0, float(scale.max()))


def spread(J, r: Dict[int, float], free: Sequence[Constant]) -> Dict[str, Optional[float]]:
    """One standard error per constant from the runs alone (the priors left out): sigma_i = s
    sqrt((J^T J)^+_ii), s^2 the residual variance; None when the runs do not determine it: no
    row moves the forecast along it, or the rows move it only together with others (it has a
    share in a direction of the constants that moves no row: fewer groups than constants).
    For a constant fitted on a log scale, the factor 10^sigma, at most SPREAD_FACTOR_MAX (a
    constant the runs barely move: beyond it the factor says nothing more, and 10^sigma would
    overflow to a JSON-less infinity)."""
    import numpy as np

    n = len(r)
    jac = np.asarray(J[:n], dtype=float)
    res = np.array([r[i] for i in range(n)])
    dof = max(1, n - len(free))
    s2 = float(res @ res) / dof
    scale = np.linalg.norm(jac, axis=0)
    moved = moved_by(J, n)
    out: Dict[str, Optional[float]] = {c.name: None for c in free}
    if moved.any():
        sub = jac[:, moved] / scale[moved]
        h = sub.T @ sub
        vals, vecs = np.linalg.eigh(h)
        null = vecs[:, vals <= 1e-10 * max(float(vals.max()), 1e-300)]
        cov = np.linalg.pinv(h, hermitian=True) * s2
        for j, i in enumerate(np.flatnonzero(moved)):
            if null.size and float(np.linalg.norm(null[j])) > 1e-6:
                continue            # not separable from the others by these runs
            c = free[i]
            sigma = float(np.sqrt(max(cov[j, j], 0.0))) / scale[i]
            value = 10 ** min(sigma, math.log10(SPREAD_FACTOR_MAX)) if c.log else sigma
            out[c.name] = float(f"{value:.2g}")
    return out


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


def grouped(keys) -> Dict[object, List[int]]:
    groups: Dict[object, List[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return groups


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


def bands(rows: List[FitRow], errors: Dict[int, float]) -> Dict[str, dict]:
    """Per regime (and coarser keys: gpu/precision, precision, all), the spread of the
    leave-one-group-out errors as the forecast's time error: [5th, 95th] percentile of forecast
    time / true time - 1 (a negative low end: the true time may be that much shorter), widened
    to hold 0 (the forecast itself) where every left-out error has one sign."""
    import numpy as np

    buckets: Dict[str, List[float]] = {}
    for i, row in enumerate(rows):
        reg = row.prepared.regime
        t = score.time_error(row.metric, errors[i])
        for key in (regime_key(reg), f"{reg['gpu']}/{reg['precision']}", reg["precision"], "*"):
            buckets.setdefault(key, []).append(t)
    out = {}
    for key, ts in sorted(buckets.items()):
        a = np.array(ts)
        # forecast too fast by x: the true time is (1 + x) times the forecast; the band is on
        # the true time relative to the forecast
        true = 1.0 / (1.0 + a) - 1.0
        out[key] = {"low": round(min(0.0, float(np.percentile(true, 5))), 4),
                    "high": round(max(0.0, float(np.percentile(true, 95))), 4),
                    "rows": len(ts)}
    return out


def summary(rows: List[FitRow], errors: Dict[int, float]) -> Dict[str, dict]:
    """Per GPU x precision family (and dense / MoE): rows, mean |error|, max |error|, mean
    signed error (%), and overall (score.family_summary)."""
    return score.family_summary((row.prepared.regime, errors[i]) for i, row in enumerate(rows))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def document(cal: Calibration, prob: Problem, J, r, rows: List[FitRow], logo: Dict[int, float],
             sets: Dict[str, str], by_set: Dict[str, Dict[int, float]]) -> dict:
    """fit.json (seer/calibration, FIT_FORMAT)."""
    free = prob.free
    spreads = spread(J, r, free)
    outside = [c.name for c in free if not c.prior[0] <= getattr(cal, c.name) <= c.prior[1]]
    in_fit = {i: math.exp(v) - 1.0 for i, v in r.items()}
    band = bands(rows, logo)
    points = [checked.point(prob.specs[i], row.prepared.net) for i, row in enumerate(rows)]
    beyond = beyond_left_out(points, [row.group for row in rows])
    per_row = []
    for i, row in enumerate(rows):
        per_row.append({"id": row.prepared.row.id, "set": row.table, "metric": row.metric,
                        "regime": regime_key(row.prepared.regime),
                        "in_fit_pct": round(100 * in_fit[i], 2),
                        "left_out_pct": round(100 * logo[i], 2),
                        "beyond_left_out": beyond[i]})
    set_errors = {}
    for name in sets:
        idx = [i for i, row in enumerate(rows) if row.table == name]
        if not idx:
            continue
        lo = by_set.get(name, {})
        set_errors[name] = {
            "rows": len(idx),
            "in_fit_mean_pct": round(100 * sum(abs(in_fit[i]) for i in idx) / len(idx), 2),
            "in_fit_max_pct": round(100 * max(abs(in_fit[i]) for i in idx), 2),
            "logo_mean_pct": round(100 * sum(abs(logo[i]) for i in idx) / len(idx), 2),
            "logo_max_pct": round(100 * max(abs(logo[i]) for i in idx), 2)}
        if lo:
            set_errors[name]["left_out_mean_pct"] = round(
                100 * sum(abs(lo[i]) for i in idx) / len(idx), 2)
            set_errors[name]["left_out_max_pct"] = round(
                100 * max(abs(lo[i]) for i in idx), 2)
    rep = repeats(rows, logo, {i: row.value * math.exp(r[i]) for i, row in enumerate(rows)})
    repeated = {"repeats": rep} if rep is not None else {}
    return {"format": FIT_FORMAT,
            "generated_by": "astral calibrate",
            "fitted_on": sorted(sets),
            "tables": {k: v for k, v in sorted(sets.items())},
            "constants": {c.name: getattr(cal, c.name) for c in CONSTANTS},
            "free": [c.name for c in free],
            "spread": spreads, "outside_prior": outside,
            "sets": set_errors,
            "families": summary(rows, logo),
            "families_in_fit": summary(rows, in_fit),
            "bands": band,
            "ranges": {k: [_num(lo), _num(hi)]
                       for k, (lo, hi) in checked.ranges(points).items()},
            "beyond_left_out": beyond_summary(beyond, logo),
            "rows": per_row, **repeated}


def _num(x):
    return int(x) if float(x).is_integer() else x


def beyond_left_out(points, keys) -> List[List[str]]:
    """Per row, the dimensions (seer/checked.py) in which it lies outside the ranges of the
    runs of the other groups: where its left-out forecast, fitted without its group, was an
    extrapolation. The other groups' ranges are merged from each group's own, those before it
    and those after it (not the other rows' points read again for every group: groups x rows)."""
    groups = list(grouped(keys).values())
    own = [checked.ranges(points[i] for i in idx) for idx in groups]
    before, after = [{}], [{}]
    for r in own[:-1]:
        before.append(_merged(before[-1], r))
    for r in reversed(own[1:]):
        after.append(_merged(after[-1], r))
    after.reverse()
    out: List[List[str]] = [[] for _ in points]
    for g, idx in enumerate(groups):
        others = _merged(before[g], after[g])
        for i in idx:
            out[i] = [b.field for b in checked.beyond(points[i], others)]
    return out


def _merged(*ranges) -> dict:
    """The ranges (checked.ranges) that hold all of `ranges`."""
    return checked.ranges(p for r in ranges for p in ({k: lo for k, (lo, _) in r.items()},
                                                      {k: hi for k, (_, hi) in r.items()}))


def beyond_summary(beyond: List[List[str]], logo: Dict[int, float]) -> dict:
    """The left-out errors of the rows whose left-out forecast extrapolated (beyond_left_out)
    against the others': mean |error| of each, in % (docs/seer.md, "How far to trust a
    forecast": what extrapolating cost on the calibration runs)."""
    def mean(idx):
        return round(100 * sum(abs(logo[i]) for i in idx) / len(idx), 2) if idx else None

    out_idx = [i for i, b in enumerate(beyond) if b]
    in_idx = [i for i, b in enumerate(beyond) if not b]
    return {"rows": len(out_idx), "mean_abs_pct": mean(out_idx),
            "others_rows": len(in_idx), "others_mean_abs_pct": mean(in_idx)}


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
