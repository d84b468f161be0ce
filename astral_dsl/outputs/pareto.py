"""Two columns of a sweep against each other, with the Pareto front marked: the valid points no
other valid point beats on both columns at once."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

# the better direction of each known column
SENSES: Dict[str, str] = {
    "gpus": "max", "hosts": "max", "racks": "max", "switches": "min",
    "it_power_kw": "min", "it_power_avg_kw": "min", "facility_power_kw": "min", "pue": "min",
    "cost_usd": "min",
    "iteration_time_s": "min", "tokens_per_s": "max", "mfu": "max",
}
_NUMBER = re.compile(r"\s*([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*(.*)$")


class AxisError(ValueError):
    pass


def axis(spec: str, known: Sequence[str]) -> Tuple[str, str]:
    """`COLUMN`, `min:COLUMN` or `max:COLUMN` -> (column, sense)."""
    sense = None
    if ":" in spec and spec.split(":", 1)[0] in ("min", "max"):
        sense, spec = spec.split(":", 1)
    if spec not in known:
        raise AxisError(f"`{spec}` is not a column (columns: {', '.join(known)})")
    sense = sense or SENSES.get(spec)
    if sense is None:
        raise AxisError(f"say which way `{spec}` is better: `min:{spec}` or `max:{spec}`")
    return spec, sense


def front(points: Sequence[Tuple[float, float]], senses: Tuple[str, str]) -> List[int]:
    """Indices of the non-dominated points (both senses applied), in order of x."""
    sign = tuple(1.0 if s == "min" else -1.0 for s in senses)
    keyed = sorted((sign[0] * x, sign[1] * y, i) for i, (x, y) in enumerate(points))
    out, best_y, last = [], float("inf"), None
    for x, y, i in keyed:
        if y < best_y or (x, y) == last:       # better than every point to its left, or a tie
            out.append(i)
            best_y, last = y, (x, y)
    return sorted(out, key=lambda i: (points[i][0], i))


def number(value) -> Tuple[Optional[float], str]:
    """A cell as a number and its unit (`45 kW` -> (45.0, 'kW'))."""
    if isinstance(value, bool) or value is None:
        return None, ""
    if isinstance(value, (int, float)):
        return float(value), ""
    m = _NUMBER.fullmatch(str(value))
    return (float(m.group(1)), m.group(5)) if m else (None, "")


def plot(cells: Sequence[Dict[str, object]], valid: Sequence[bool], labels: Sequence[str],
         x: Tuple[str, str], y: Tuple[str, str], path: str, title: str,
         names: Dict[str, str] = None) -> Tuple[int, int, List[str]]:
    """Draw; returns (points drawn, points on the front, the labels of those on the front that
    may not fit in GPU memory: a forecast's `may_not_fit`, drawn hollow). Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = names or {}
    good, bad, units, missing = [], [], ["", ""], 0
    for cell, ok, label in zip(cells, valid, labels):
        xv, xu = number(cell.get(x[0]))
        yv, yu = number(cell.get(y[0]))
        units = [units[0] or xu, units[1] or yu]
        if xv is None or yv is None:
            missing += 1
            continue
        (good if ok else bad).append((xv, yv, label, cell.get("may_not_fit") is True))
    fig, ax = plt.subplots(figsize=(7.5, 5), dpi=110)
    if bad:
        ax.scatter([p[0] for p in bad], [p[1] for p in bad], marker="x", color="0.6",
                   label=f"invalid ({len(bad)})")
    fits = [p for p in good if not p[3]]
    tight = [p for p in good if p[3]]
    ax.scatter([p[0] for p in fits], [p[1] for p in fits], color="tab:blue", s=18,
               label=f"valid ({len(fits)})")
    if tight:
        ax.scatter([p[0] for p in tight], [p[1] for p in tight], s=18, facecolors="none",
                   edgecolors="tab:blue", label=f"valid, may not fit in memory ({len(tight)})")
    idx = front([(p[0], p[1]) for p in good], (x[1], y[1]))
    if idx:
        fx = [good[i][0] for i in idx]
        fy = [good[i][1] for i in idx]
        ax.plot(fx, fy, color="tab:red", lw=1.5, marker="o", ms=6, mfc="none",
                label=f"Pareto front ({len(idx)})")
        if len(idx) <= 12:
            for i in idx:
                ax.annotate(good[i][2] + (" (may not fit)" if good[i][3] else ""),
                            (good[i][0], good[i][1]), fontsize=7,
                            textcoords="offset points", xytext=(4, 4))

    def label(col, sense, unit):
        text = names.get(col, col) + (f" [{unit}]" if unit else "")
        return f"{text} ({'lower' if sense == 'min' else 'higher'} is better)"

    ax.set_xlabel(label(x[0], x[1], units[0]))
    ax.set_ylabel(label(y[0], y[1], units[1]))
    counts = f"{len(good)} valid of {len(cells)} points"
    if missing:
        counts += f"; {missing} without a value for both columns (not drawn)"
    ax.set_title(f"{title}\n{counts}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None} if path.lower().endswith(".png") else None)
    plt.close(fig)
    return len(good) + len(bad), len(idx), [good[i][2] for i in idx if good[i][3]]
