"""Fitting Seer's constants (seer/calibration) on runs tables (runs/accuracy.py measures how well
they hold on runs left out of the fit).

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
refreshed every few steps and updated by Broyden's rule in between (_solve); rows that state one
configuration share its forecasts (configs.py). The
runtime choices Seer's rule makes for a row (micro-batch, virtual stages, recomputation,
offloading) are made once with the starting constants and held during the fit, then made again
with the fitted ones; if any changes, the fit runs once more from where it stopped.

A row's group (FitRow.group) is what the leave-one-group-out check (accuracy.py) leaves out
together: one configuration across releases and tables."""
from __future__ import annotations

import gc
import math
from contextlib import contextmanager
from typing import Dict, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.runs import score
from astral_dsl.runs.configs import configurations, named, stated
from astral_dsl.runs.evaluate import Prepared, prepare
from astral_dsl.runs.memo import Memo, exactly
from astral_dsl.runs.stacks import stated_settings
from astral_dsl.runs.table import RunsTable
from astral_dsl.runs.uses import uses
from astral_dsl.seer.calibration import CONSTANTS, Calibration, Constant, priors

PRIOR_WEIGHT = 0.01      # one half-width off the prior's centre costs as much as a 1 % error
LOSS_SCALE = 0.05        # soft-L1 loss: quadratic in a row's log error up to about 5 %, linear
#                          beyond (chosen once, before its effect on the left-out errors was seen)
DIGITS = 4               # fitted values are rounded to this many significant digits
AS_READ = ("system", "gpu", "precision")     # a group's columns taken as Seer reads them


@records.frozen
class FitRow:
    prepared: Prepared
    table: str               # the set (runs table) it comes from
    metric: str
    value: float

    @property
    def group(self) -> Tuple:
        """Its group of the leave-one-group-out check: one configuration across releases and
        tables (table.Run.key) as Seer reads it. The system, the GPU and the precision as read,
        not as labelled (a release's "FP8-CS" and another's "FP8 (unlabeled; main value)" are
        one recipe; the same row in a second table is the same configuration); an unpublished
        `fsdp` as 0, which Seer reads alike (no FSDP: the distributed optimizer; the tables from
        NeMo 26.06 on leave the column empty for the configurations earlier ones published
        with 0); and what the row's notes state of how it ran (stacks.stated_settings: torchtitan
        publishes a layout with and without torch.compile, async TP or an interleaved schedule
        as rows of their own, which are configurations of their own)."""
        p = self.prepared
        read = (p.expressed.system, p.gpu.name, p.spec.dtype, p.spec.fp8_recipe)
        columns = tuple((k, 0.0 if k == "fsdp" and v is None else v) for k, v in p.row.key
                        if k not in AS_READ)
        return read + columns + stated_settings(p.row)


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

    def __init__(self, rows: List[FitRow], free: Sequence[Constant], base: Calibration,
                 memo: Optional[Memo] = None):
        self.rows, self.free, self.base = rows, list(free), base
        # row -> its configuration (stated), and each configuration's first row: the rows of
        # one configuration share its forecasts, its rule's choices and its uses()
        self.config, self.first = configurations([r.prepared for r in rows])
        self.memo = memo or Memo(0)       # forecasts kept from an earlier fit (memo.py)
        self.specs = self._chosen(base)
        self.depends: Optional[List[List[int]]] = None
        self.forecasts = 0

    def _chosen(self, cal: Calibration) -> list:
        """Each row's job with the rule's choices made under `cal`: once per configuration,
        under the row's own name."""
        from astral_dsl.seer.forecast import run

        jobs = []
        for i in self.first:
            p = self.rows[i].prepared
            jobs.append(self.memo.get(("run", stated(p), exactly(cal)), lambda p=p: run(
                p.spec, p.gpu, p.net, calibration=cal).job))
        specs = [named(jobs[k], r.prepared.spec.name) for r, k in zip(self.rows, self.config)]
        # each configuration as chosen (configs.stated): what its forecasts are kept under
        self.as_chosen = [(attrs.evolve(specs[i], name=""),)
                          + stated(self.rows[i].prepared)[1:] for i in self.first]
        return specs

    def rechoose(self, cal: Calibration) -> bool:
        new = self._chosen(cal)
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

    def bounds(self):
        """(lowest, highest) of the free constants, as arrays in the fit's variables."""
        import numpy as np

        return (np.array([_x(c, c.bounds[0]) for c in self.free]),
                np.array([_x(c, c.bounds[1]) for c in self.free]))

    def residual(self, i: int, cal: Calibration) -> float:
        return self.residuals(cal, (i,))[i]

    def residuals(self, cal: Calibration, idx=None) -> Dict[int, float]:
        """Row -> its log error under `cal` (rows `idx`, default all), each configuration
        among them forecast once."""
        from astral_dsl.seer.forecast import iteration

        out, forecast = {}, {}
        for i in range(len(self.rows)) if idx is None else idx:
            k = self.config[i]
            if k not in forecast:
                first = self.rows[self.first[k]].prepared
                forecast[k] = self.memo.get((self.as_chosen[k], exactly(cal)), lambda: iteration(
                    self.specs[self.first[k]], first.gpu, first.net, calibration=cal))
                self.forecasts += 1
            r = self.rows[i]
            job, t = forecast[k]
            out[i] = math.log(score.forecast_metric(r.metric, r.prepared.row, job, t) / r.value)
        return out

    def find_depends(self, x=None) -> None:
        """For each free constant, the rows whose forecast it can move (uses(): a superset;
        `unlisted` finds a row it moves that uses() leaves out: tests/accuracy/test_uses.py),
        asked once per configuration."""
        used = [[uses(c.name, self.specs[i], self.rows[i].prepared.gpu) for i in self.first]
                for c in self.free]
        self.depends = [[i for i, k in enumerate(self.config) if row[k]] for row in used]

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


def _solve(prob: Problem, x0, max_iter: int, refresh: int, told=lambda what: None):
    """Bounded Levenberg-Marquardt on the rows' soft-L1 log errors (robust) and the priors, with
    the rows' Jacobian by forward differences at the start and every `refresh` iterations, and
    Broyden's rank-one updates from each step in between (a forecast per step instead of one per
    constant); deterministic. Returns (x, row residuals at x). `told(what)`: told each
    iteration (a progress line)."""
    import numpy as np

    n = len(prob.rows)
    lo, hi = prob.bounds()
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
    what = f"fitting {n:,} runs ({len(prob.first):,} configurations), iteration"
    for k in range(max_iter):
        told(f"{what} {k + 1}")
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
def collector_paused():
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


def fitted(rows: List[FitRow], free: Sequence[Constant] = CONSTANTS,
           base: Optional[Calibration] = None, max_iter: int = 40, refresh: int = 8,
           step=None, memo: Optional[Memo] = None, rechosen: bool = True):
    """(the fitted Calibration, the Problem): the fit alone, as a leave-out refit needs it (a
    tenth of a fit's CPU on the shipped tables is `fit`'s Jacobian at the end). `step(what)`:
    told what is being done (a progress line); `memo`: forecasts kept from the fits before
    (memo.py: the same fit, fewer forecasts made); `rechosen` False: the Problem's rule's
    choices left as the last run of the fit held them, not made again with the fitted
    constants (which changes no constant: for a caller that needs the constants alone)."""
    base = base or priors()
    step = step or (lambda what: None)
    with collector_paused():
        prob = Problem(rows, free, base, memo)
        x0 = prob.x(base)
        prob.find_depends()
        for again in (True, False):
            x, _r = _solve(prob, x0, max_iter, refresh, step)
            cal = _round(prob.calibration(list(x)), prob.free)
            if not (again or rechosen) or not prob.rechoose(cal):
                break
            x0 = prob.x(cal)
    return cal, prob


def fit(rows: List[FitRow], free: Sequence[Constant] = CONSTANTS,
        base: Optional[Calibration] = None, max_iter: int = 40, refresh: int = 8, step=None,
        memo: Optional[Memo] = None):
    """(the fitted Calibration, the Problem, the Jacobian of the rows at the fit, the rows'
    log errors there). `step(what)`: told what is being done (a progress line); `memo`: as
    fitted's."""
    cal, prob = fitted(rows, free, base, max_iter, refresh, step, memo)
    with collector_paused():
        x = prob.x(cal)
        r = prob.residuals(cal)
        J = prob.jacobian(x, r)
    return cal, prob, J, r
