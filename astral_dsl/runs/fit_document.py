"""fit.json's document (seer/calibration, FIT_FORMAT), from a fit and its left-out errors
(runs/accuracy.py makes both): the constants and how well the runs alone determine each
(`spread`), per regime the error bands forecasts carry (`bands`), per GPU x precision family the
errors (`summary`), per row its errors and the dimensions in which its left-out forecast
extrapolated (`beyond_left_out`)."""
from __future__ import annotations

import hashlib
import math
from typing import Dict, List, Optional, Sequence

from astral_dsl.runs import score
from astral_dsl.runs.fit import FitRow, Problem
from astral_dsl.runs.repeats import repeats
from astral_dsl.seer import checked
from astral_dsl.seer.calibration import CONSTANTS, FIT_FORMAT, Calibration, Constant
from astral_dsl.seer.regime import regime_key

SPREAD_FACTOR_MAX = 1e6   # the largest spread factor a log-scale constant is given (spread)


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


def grouped(keys) -> Dict[object, List[int]]:
    groups: Dict[object, List[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return groups


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


__all__ = ["SPREAD_FACTOR_MAX", "bands", "beyond_left_out", "beyond_summary", "digest",
           "document", "grouped", "moved_by", "spread", "summary"]
