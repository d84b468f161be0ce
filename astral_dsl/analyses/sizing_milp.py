"""Sizing's one mixed-integer program (sizing.py's docstring): a binary y_s per feasible
combination (sum = 1) and, per combination and equipment count, an integer x_su with
max(min_su, low_u) * y_s <= x_su <= high_u * y_s; the objective is sum_s value_s * y_s plus,
for cost, sum price_su * x_su. cvxpy solves it with HiGHS; without an equipment count it is the
choice of the best combination, taken directly (no solver to import)."""
from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, List

from astral_dsl.model.design import UnknownSite

if TYPE_CHECKING:
    from astral_dsl.analyses.sizing import Combination


def milp(feasible: List[Combination], counts: List[UnknownSite], price_counts: bool):
    """(the chosen combination, {count's key: its value}), or (None, {}) when the solver finds
    no optimum."""
    if not counts:
        # no equipment count: the program is min sum_s value_s y_s with one y_s = 1, whose
        # optimum is the best combination (the first of equals): no solver to import
        best = min(range(len(feasible)), key=lambda k: (feasible[k].value, k))
        return feasible[best], {}
    import cvxpy as cp
    import numpy as np

    n = len(feasible)
    y = cp.Variable(n, boolean=True)
    values = np.array([c.value for c in feasible])
    scale = max(1.0, float(np.max(np.abs(values)))) if n else 1.0
    objective = values @ y / scale
    constraints = [cp.sum(y) == 1]
    xs = {}
    for u in counts:
        x = cp.Variable(n, integer=True)
        lows = np.array([max(c.minima.get(u.key, 0), u.low) for c in feasible], dtype=float)
        constraints += [x >= cp.multiply(lows, y), x <= u.high * y]
        weights = np.array([c.prices.get(u.key, 0.0) for c in feasible]) if price_counts \
            else np.zeros(n)
        # counts cost their price; without prices, fewer units still win ties
        objective = objective + (weights / scale + 1e-9) @ x
        xs[u.key] = x
    problem = cp.Problem(cp.Minimize(objective), constraints)
    try:
        with _quiet_stdout():       # HiGHS prints a banner from C, whatever its options say
            problem.solve(solver=cp.HIGHS, output_flag=False)
    except cp.error.SolverError:
        return None, {}
    if problem.status not in ("optimal", "optimal_inaccurate") or y.value is None:
        return None, {}
    k = int(np.argmax(y.value))
    chosen = {key: int(round(float(x.value[k]))) for key, x in xs.items()}
    return feasible[k], chosen


@contextlib.contextmanager
def _quiet_stdout():
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


__all__ = ["milp"]
