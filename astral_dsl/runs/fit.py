"""Fitting Seer's constants (seer/calibration) on runs tables, and measuring how well they hold on
runs left out of the fit.

The fit minimises a soft-L1 loss of the runs' log errors r = log(forecast / published) (on each
row's metric, score.py): 2 s^2 (sqrt(1 + (r / s)^2) - 1) with s = LOSS_SCALE (5 %), quadratic for
small errors and linear for large ones, so that the few rows a forecast misses by 40-130 %
(release effects, what the model lacks) do not outweigh the rest as squares would (the accuracy
reported is a mean |error|, an L1 figure); plus a weak prior per constant: PRIOR_WEIGHT x (value
- centre) / half-width of its prior range, so that a constant the runs say little about stays
near the centre of that
range. It starts from the prior centres (never from a shipped fit, so that a refit does not
depend on the last one) and runs a bounded Levenberg-Marquardt with a Jacobian by
forward differences, re-forecasting for each constant only the rows it moves (`depends`),
refreshed every few steps and updated by Broyden's rule in between (_solve). The
runtime choices Seer's rule makes for a row (micro-batch, virtual stages, recomputation,
offloading) are made once with the starting constants and held during the fit, then made again
with the fitted ones; if any changes, the fit runs once more from where it stopped.

Leave one group out: a group is one configuration across releases (table.Run.key). For each
group, the constants are refitted without its rows by one Gauss-Newton step from the full fit, on
the same loss (the Jacobian at the full fit with the group's rows removed: the standard
one-step approximation of a leave-out refit), and the group's rows are forecast exactly with those
constants. Their errors are the accuracy this module reports: on data left out of the fit.
`exact_refit` refits a group from scratch for checking the approximation (benchmarks/)."""
from __future__ import annotations

import gc
import hashlib
import math
from contextlib import contextmanager
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl import records
from astral_dsl.runs import score
from astral_dsl.runs.evaluate import Prepared, prepare
from astral_dsl.seer.regime import regime_key
from astral_dsl.runs.table import RunsTable
from astral_dsl.seer.calibration import (CONSTANTS, FIT_FORMAT, Calibration, Constant, priors)

PRIOR_WEIGHT = 0.01      # one half-width off the prior's centre costs as much as a 1 % error
LOSS_SCALE = 0.05        # soft-L1 loss: quadratic in a row's log error up to about 5 %, linear
#                          beyond (chosen once, before its effect on the left-out errors was seen)
DIGITS = 4               # fitted values are rounded to this many significant digits
SPREAD_FACTOR_MAX = 1e6   # the largest spread factor a log-scale constant is given (spread)
OUTSIDE_WIDEN = 2.0      # outside every checked regime: the overall band, twice as wide


@records.frozen
class FitRow:
    prepared: Prepared
    table: str               # the set (runs table) it comes from
    metric: str
    value: float

    @property
    def group(self) -> Tuple:
        return (self.table,) + self.prepared.row.key


def rows_of(tables: Sequence[Tuple[str, RunsTable]], systems=None
            ) -> Tuple[List[FitRow], List[Prepared]]:
    """The rows a fit can use (expressible, with a published metric), and every row prepared
    (`systems`: a user's own, runs/systems.py)."""
    out, every = [], []
    for name, table in tables:
        for p in prepare(table, systems):
            every.append(p)
            metric, value = score.published(p.row)
            if p.status == "ok" and metric:
                out.append(FitRow(p, name, metric, value))
    return out, every


def _x(c: Constant, value: float) -> float:
    return math.log10(value) if c.log else value


def _v(c: Constant, x: float) -> float:
    return 10 ** x if c.log else x


def _prior(c: Constant) -> Tuple[float, float]:
    lo, hi = c.prior
    if c.log:
        return (math.log10(lo) + math.log10(hi)) / 2, (math.log10(hi) - math.log10(lo)) / 2
    return (lo + hi) / 2, (hi - lo) / 2


class Problem:
    """The least-squares problem of a fit: residuals and their Jacobian over the free
    constants, with the rule's choices held (module docstring)."""

    def __init__(self, rows: List[FitRow], free: Sequence[Constant], base: Calibration):
        self.rows, self.free, self.base = rows, list(free), base
        self.specs = [self._choose(r, base) for r in rows]
        self.depends: Optional[List[List[int]]] = None
        self.forecasts = 0

    def _choose(self, r: FitRow, cal: Calibration):
        from astral_dsl.seer.forecast import run

        p = r.prepared
        return run(p.spec, p.gpu, p.net, calibration=cal).job

    def rechoose(self, cal: Calibration) -> bool:
        new = [self._choose(r, cal) for r in self.rows]
        changed = new != self.specs
        self.specs = new
        self.find_depends()
        return changed

    def calibration(self, x) -> Calibration:
        values = self.base.values()
        for c, v in zip(self.free, x):
            values[c.name] = _v(c, float(v))
        return Calibration(values)

    def x(self, cal: Calibration) -> List[float]:
        return [_x(c, getattr(cal, c.name)) for c in self.free]

    def residual(self, i: int, cal: Calibration) -> float:
        from astral_dsl.seer.forecast import iteration

        r = self.rows[i]
        p = r.prepared
        job, t = iteration(self.specs[i], p.gpu, p.net, calibration=cal)
        self.forecasts += 1
        f = score.forecast_metric(r.metric, p.row, job, t)
        return math.log(f / r.value)

    def residuals(self, cal: Calibration, idx=None) -> Dict[int, float]:
        return {i: self.residual(i, cal) for i in (range(len(self.rows)) if idx is None
                                                   else idx)}

    def find_depends(self, x=None) -> None:
        """For each free constant, the rows whose forecast it can move (uses(): a superset;
        tests/accuracy checks that the other rows do not move)."""
        self.depends = [[i for i, spec in enumerate(self.specs)
                         if uses(c.name, spec, self.rows[i].prepared.gpu)] for c in self.free]

    def priors(self, x) -> List[float]:
        out = []
        for c, v in zip(self.free, x):
            ctr, hw = _prior(c)
            out.append(PRIOR_WEIGHT * c.weight * (v - ctr) / hw)
        return out

    def jacobian(self, x, r0: Dict[int, float]):
        import numpy as np

        n = len(self.rows)
        J = np.zeros((n + len(self.free), len(self.free)))
        for j, c in enumerate(self.free):
            h = 1e-3 * max(abs(x[j]), 0.1)
            hi = _x(c, c.bounds[1])
            if x[j] + h > hi:
                h = -h
            xx = list(x)
            xx[j] += h
            r1 = self.residuals(self.calibration(xx), self.depends[j])
            for i in self.depends[j]:
                J[i, j] = (r1[i] - r0[i]) / h
            J[n + j, j] = PRIOR_WEIGHT * c.weight / _prior(c)[1]
        return J


def uses(name: str, spec, gpu) -> bool:
    """Whether the forecast of `spec` on `gpu` can depend on constant `name` (a superset of
    the rows it moves, from what each constant prices: seer/costs.py, lower.py)."""
    m, par = spec.model, spec.parallel
    moe = m.experts > 0
    fused = spec.attention != "unfused"
    if name == "gemm_waves":
        return True
    if name.startswith("gemm_eff"):
        from astral_dsl.seer.costs import eff_name

        base = "bf16" if spec.fp8 else spec.gemm_precision
        return name in (eff_name(base, gpu.arch), eff_name(spec.gemm_precision, gpu.arch))
    if name == "interfere":
        return par.tp > 1 or par.zero >= 3
    if name == "softmax_eff":
        return not fused
    if name == "attn_eff":
        return (fused and spec.framework != "torchtitan" and gpu.arch != "blackwell") or (
            m.hybrid and gpu.arch != "blackwell")
    if name == "attn_eff_blackwell":
        return (fused and spec.framework != "torchtitan" or m.hybrid) and gpu.arch == "blackwell"
    if name == "attn_seq_half":
        return fused or m.hybrid
    if name == "attn_eff_sdpa":
        return fused and spec.framework == "torchtitan"
    if name == "host_layer_s":
        return not spec.cuda_graphs
    if name == "moe_layer_s":
        return moe
    if name == "moe_sync_s":
        return moe and not spec.cuda_graphs
    if name == "ep_hidden":
        return moe and spec.ep_overlap and par.ep > 1
    if name == "a2a_eff":
        return moe and par.ep > 1 and spec.moe_dispatcher == "alltoall"
    if name == "a2a_eff_fused":
        return moe and par.ep > 1 and spec.moe_dispatcher != "alltoall"
    if name == "permute_eff":
        return moe
    if name == "power_exponent":
        return gpu.capped
    return True


def _round(cal: Calibration, free) -> Calibration:
    values = cal.values()
    for c in free:
        values[c.name] = float(f"{values[c.name]:.{DIGITS}g}")
    return Calibration(values)


def robust(res):
    """The soft-L1 loss as residuals (module docstring): (f, w) with f_i^2 = 2 s^2 (sqrt(1 +
    (r_i / s)^2) - 1) (sign kept) and w_i = df_i / dr_i, so that least squares on f minimises
    the loss and w scales the rows' Jacobian (the chain rule). s = LOSS_SCALE."""
    import numpy as np

    u = np.asarray(res, dtype=float) / LOSS_SCALE
    root = np.sqrt(1.0 + u * u)
    q = np.sqrt(2.0 / (1.0 + root))        # 2 (root - 1) = 2 u^2 / (root + 1), exact near 0
    return LOSS_SCALE * u * q, 1.0 / (q * root)


def _solve(prob: Problem, x0, max_iter: int, refresh: int):
    """Bounded Levenberg-Marquardt on the rows' soft-L1 log errors (robust) and the priors, with
    the rows' Jacobian by forward differences at the start and every `refresh` iterations, and
    Broyden's rank-one updates from each step in between (a forecast per step instead of one per
    constant); deterministic. Returns (x, row residuals at x)."""
    import numpy as np

    n = len(prob.rows)
    lo = np.array([_x(c, c.bounds[0]) for c in prob.free])
    hi = np.array([_x(c, c.bounds[1]) for c in prob.free])
    x = np.clip(np.array(x0, dtype=float), lo, hi)

    def evaluate(x):
        r = prob.residuals(prob.calibration(list(x)))
        raw = np.array([r[i] for i in range(n)])
        f, w = robust(raw)
        return r, raw, np.concatenate([f, prob.priors(list(x))]), w

    r, raw, f, w = evaluate(x)
    J = prob.jacobian(list(x), r)          # of the raw log errors (and the priors)
    lam, since = 1e-3, 0
    cost = float(f @ f)
    for _ in range(max_iter):
        if since >= refresh:           # refreshed here, not after the last step: never unused
            J = prob.jacobian(list(x), r)
            since = 0
        Jt = J.copy()
        Jt[:n] *= w[:, None]
        H, g = Jt.T @ Jt, Jt.T @ f
        d = np.diag(H).copy()
        d[d <= 0] = 1e-12
        step = np.linalg.solve(H + lam * np.diag(d), -g)
        xn = np.clip(x + step, lo, hi)
        dx = xn - x
        if float(dx @ dx) < 1e-16:
            break
        rn, rawn, fn, wn = evaluate(xn)
        # Broyden's update of the rows' part (the priors' part is exact)
        Jr = J[:n]
        J[:n] = Jr + np.outer((rawn - raw) - Jr @ dx, dx) / float(dx @ dx)
        new = float(fn @ fn)
        if new < cost:
            gain = (cost - new) / max(cost, 1e-300)
            x, r, raw, f, w, cost = xn, rn, rawn, fn, wn, new
            lam = max(lam / 3, 1e-9)
            if gain < 1e-6:
                break
        else:
            lam *= 4
        since += 1
    return x, r


@contextmanager
def _collector_paused():
    """Python's cycle collector paused (as it was after): a fit's forecasts allocate millions
    of short-lived operators, blocks and transfers that reference counting frees (they form no
    cycles), and the collector's passes over them took a sixth of a fit's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def fit(rows: List[FitRow], free: Sequence[Constant] = CONSTANTS,
        base: Optional[Calibration] = None, max_iter: int = 40, refresh: int = 8):
    """(the fitted Calibration, the Problem, the Jacobian of the rows at the fit, the rows'
    log errors there)."""
    base = base or priors()
    with _collector_paused():
        prob = Problem(rows, free, base)
        x0 = prob.x(base)
        prob.find_depends()
        for _ in range(2):
            x, _r = _solve(prob, x0, max_iter, refresh)
            cal = _round(prob.calibration(list(x)), prob.free)
            if not prob.rechoose(cal):
                break
            x0 = prob.x(cal)
        x = prob.x(cal)
        r = prob.residuals(cal)
        J = prob.jacobian(x, r)
    return cal, prob, J, r


def spread(J, r: Dict[int, float], free: Sequence[Constant]) -> Dict[str, Optional[float]]:
    """One standard error per constant from the runs alone (the priors left out): sigma_i = s
    sqrt((J^T J)^-1_ii), s^2 the residual variance; None when the runs do not determine it.
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
    moved = scale > 1e-9 * max(1.0, float(scale.max()))
    out: Dict[str, Optional[float]] = {c.name: None for c in free}
    if moved.any():
        sub = jac[:, moved] / scale[moved]
        h = sub.T @ sub
        if np.linalg.cond(h) < 1e10:
            cov = np.linalg.inv(h) * s2
            for j, i in enumerate(np.flatnonzero(moved)):
                c = free[i]
                sigma = float(np.sqrt(cov[j, j])) / scale[i]
                value = 10 ** min(sigma, math.log10(SPREAD_FACTOR_MAX)) if c.log else sigma
                out[c.name] = float(f"{value:.2g}")
    return out


def leave_out(prob: Problem, cal: Calibration, J, r: Dict[int, float], keys) -> Dict[int, float]:
    """row -> its error (forecast / published - 1) with the constants refitted without the rows
    that share its key (`keys[i]`: a group or a set), by one Gauss-Newton step within the
    constants' bounds (module docstring)."""
    import numpy as np
    from scipy.optimize import lsq_linear

    n = len(prob.rows)
    x = np.array(prob.x(cal))
    pri = np.array(prob.priors(list(x)))
    lo = np.array([_x(c, c.bounds[0]) for c in prob.free])
    hi = np.array([_x(c, c.bounds[1]) for c in prob.free])
    res, w = robust([r[i] for i in range(n)])
    Jr, Jp = J[:n] * w[:, None], J[n:]
    out: Dict[int, float] = {}
    groups: Dict[object, List[int]] = {}
    for i in range(n):
        groups.setdefault(keys[i], []).append(i)
    with _collector_paused():
        for key in sorted(groups, key=str):
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


def bands(rows: List[FitRow], errors: Dict[int, float]) -> Dict[str, dict]:
    """Per regime (and coarser keys: gpu/precision, precision, all), the spread of the
    leave-one-group-out errors as the forecast's time error: [5th, 95th] percentile of forecast
    time / true time - 1 (a negative low end: the true time may be that much shorter)."""
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
        out[key] = {"low": round(float(np.percentile(true, 5)), 4),
                    "high": round(float(np.percentile(true, 95)), 4), "rows": len(ts)}
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
    per_row = []
    for i, row in enumerate(rows):
        per_row.append({"id": row.prepared.row.id, "set": row.table, "metric": row.metric,
                        "regime": regime_key(row.prepared.regime),
                        "in_fit_pct": round(100 * in_fit[i], 2),
                        "left_out_pct": round(100 * logo[i], 2)})
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
            "bands": band, "rows": per_row}


def calibrate(tables: Sequence[Tuple[str, RunsTable]], by_source: Sequence[str] = (),
              free: Sequence[Constant] = CONSTANTS, max_iter: int = 40, systems=None):
    """Fit on every usable row of `tables` ((name, table) pairs) and measure: leave one group
    out for every row, and leave one source out (the rows of one `source_version`, e.g. one
    paper) for the tables named in `by_source`. Returns (document, Calibration, rows, every
    prepared row). `systems`: a user's own (runs/systems.py, `--gpu-file`)."""
    rows, every = rows_of(tables, systems)
    if not rows:
        raise ValueError("no row of the runs tables can be forecast and scored")
    cal, prob, J, r = fit(rows, free, max_iter=max_iter)
    logo = leave_out(prob, cal, J, r, [row.group for row in rows])
    by_set: Dict[str, Dict[int, float]] = {}
    if by_source:
        keys = [(row.table, row.prepared.row.source_version) if row.table in by_source
                else ("kept", i) for i, row in enumerate(rows)]
        lso = leave_out(prob, cal, J, r, keys)
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
    return doc, Calibration(doc["constants"], tuple(sorted(sets)), doc["bands"], "fit"), rows, \
        every
