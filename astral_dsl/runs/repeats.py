"""The runs Seer reads as one run published more than once (several releases of one recipe, a
user's repeated runs), and how far their published figures lie from the one value that fits
each: the spread no constants remove (fit.json's `repeats`, runs/fit_document.py)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl.runs.fit import FitRow


def repeats(rows: List[FitRow], logo: Dict[int, float], forecast: Dict[int, float]
            ) -> Optional[dict]:
    """The runs Seer reads as one run published more than once: rows of one group (one
    configuration) and metric whose forecasts are the same (`forecast`, row -> its value with
    the fitted constants; a release whose stack Seer reads differently, runs/stacks.py, is
    forecast differently and is not a repeat): several releases of one recipe, or a user's
    repeated runs. How far their published figures lie from the one value that fits each such
    set best (the least mean |value / published - 1|, found at one of the published values:
    that mean is piecewise linear and convex in the value), in % over those rows, against the
    left-out error on the same rows; and that spread summed over every scored row
    (`overall_floor_pct`): what this reading of the runs cannot take off the overall mean
    |error| whatever the constants. None when no run is published twice."""
    sets: Dict[Tuple, List[int]] = {}
    for i, row in enumerate(rows):
        sets.setdefault((row.group, row.metric, float(f"{forecast[i]:.9g}")), []).append(i)
    spread_sum, logo_sum, n, configs = 0.0, 0.0, 0, 0
    for idx in (v for _, v in sorted(sets.items(), key=lambda kv: str(kv[0])) if len(v) > 1):
        spread_sum += least_spread([rows[i].value for i in idx])
        logo_sum += sum(abs(logo[i]) for i in idx)
        n, configs = n + len(idx), configs + 1
    if not configs:
        return None
    return {"sets": configs, "rows": n,
            "spread_mean_pct": round(100 * spread_sum / n, 2),
            "left_out_mean_pct": round(100 * logo_sum / n, 2),
            "overall_floor_pct": round(100 * spread_sum / len(rows), 2)}


def least_spread(values: Sequence[float]) -> float:
    """The least over c among `values` (> 0) of sum |c / v - 1| over them (repeats). The sum is
    convex and piecewise linear in c, its slope sum(1 / v, v < c) - sum(1 / v, v > c): it is
    least at the median of the values weighted 1 / v, and the sums at the few values around it
    are compared, not every value's (n^2 for a run given n times: a table may hold 100,000)."""
    order = sorted(values)
    weights = [1.0 / v for v in order]
    half, acc, m = sum(weights) / 2, 0.0, 0
    for m, w in enumerate(weights):
        acc += w
        if acc >= half:
            break
    return min(sum(abs(c / v - 1.0) for v in values) for c in order[max(0, m - 2):m + 3])
