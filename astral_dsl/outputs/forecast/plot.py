"""A forecast's timeline as a Gantt chart (matplotlib): one lane per pipeline stage (its compute
stream), its communication streams as thin sub-lanes under it (only those with something in
them), and the compute stream's idle time shaded (the pipeline bubble, and waits for
communication), with the bubble's share of the iteration in the title. Every stage is
labelled; the stage of the report's breakdown and the fullest stage in memory are marked.

So that 64 stages of tens of thousands of operators stay readable, a compute lane is drawn a
pixel at a time: each pixel in the category (operator kind, or forward / backward block) that
fills most of it, so that no bar hides another (a 1F1B steady state of blocks narrower than a
pixel shows as alternating forward and backward stripes, not as one backward bar). The detail
(operators, layers or pipeline blocks) follows the event count."""
from __future__ import annotations

from typing import Dict, List, Tuple

from astral_dsl.seer.timeline import STREAM_ORDER, count, events

COMPUTE = {"gemm": "#4C72B0", "attention": "#8172B2", "elementwise": "#64B5CD",
           "norm": "#8C8C8C", "recompute": "#CCB974", "forward": "#4C72B0",
           "backward": "#E39B3B", "optimizer": "#17BECF"}
STREAM = {"tp": ("TP", "#C44E52"), "cp": ("CP", "#E17C05"), "ep": ("EP", "#937860"),
          "pp": ("PP p2p", "#D37FC0"), "dp": ("DP", "#2CA02C")}
BUBBLE = "#E4E4E4"
WIDTH_IN, DPI = 14.0, 110
LANE, SUB, GAP = 1.0, 0.32, 0.45          # heights, in lane units
MAX_EVENTS = 60_000


def _merge(bars: List[Tuple[float, float]], tol: float) -> List[Tuple[float, float]]:
    """(start, duration) bars, sorted and merged when less than `tol` apart."""
    out: List[List[float]] = []
    for s, d in sorted(bars):
        if out and s <= out[-1][0] + out[-1][1] + tol:
            out[-1][1] = max(out[-1][1], s + d - out[-1][0])
        else:
            out.append([s, d])
    return [(s, d) for s, d in out]


def _runs(bars: List[Tuple[float, float, str]], tol: float) -> Dict[str, List[Tuple[float, float]]]:
    """(start, duration, category) bars of one lane -> category -> bars, one pixel (`tol`
    seconds) at a time: a pixel takes the category that fills most of it, and is left empty
    (the idle shading shows) when less than half of it is busy; neighbouring pixels of one
    category make one bar (module docstring)."""
    if not bars or tol <= 0:
        return {}
    import numpy as np

    cats = sorted({c for _, _, c in bars})
    n = int(max(s + d for s, d, _ in bars) / tol) + 2
    fill = np.zeros((len(cats), n))
    for s, d, cat in bars:
        row, a, b = fill[cats.index(cat)], s / tol, (s + d) / tol
        lo, hi = int(a), int(b)
        if lo == hi:
            row[lo] += b - a
            continue
        row[lo] += lo + 1 - a
        row[lo + 1:hi] += 1.0
        row[hi] += b - hi
    best = fill.argmax(axis=0)
    best[fill.sum(axis=0) < 0.5] = -1
    out: Dict[str, List[Tuple[float, float]]] = {}
    edges = np.flatnonzero(np.diff(np.concatenate(([-2], best, [-2]))))
    for a, b in zip(edges[:-1], edges[1:]):
        if best[a] >= 0:
            out.setdefault(cats[best[a]], []).append((a * tol, (b - a) * tol))
    return out


def _idle(busy: List[Tuple[float, float]], end: float, tol: float) -> List[Tuple[float, float]]:
    out, t = [], 0.0
    for s, d in _merge(busy, 0.0):
        if s - t > tol:
            out.append((t, s - t))
        t = max(t, s + d)
    if end - t > tol:
        out.append((t, end - t))
    return out


def plot(fc, path: str, window=None) -> None:
    """Draw the iteration to `path` (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(fc, window)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def figure(fc, window=None):  # noqa: C901 - one figure, drawn in order
    """The chart as a matplotlib Figure (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    level = "op" if count(fc, "op", window) <= MAX_EVENTS else "layer" \
        if count(fc, "layer", window) <= MAX_EVENTS else "block"
    compute: Dict[int, List[Tuple[float, float, str]]] = {}
    comm: Dict[Tuple[int, str], list] = {}
    end = 0.0
    for ev in events(fc, window, level):
        end = max(end, ev.end)
        if ev.stream == "compute":
            compute.setdefault(ev.stage, []).append((ev.start, ev.end - ev.start, ev.cat))
        else:
            comm.setdefault((ev.stage, ev.stream), []).append((ev.start, ev.end - ev.start))
    stages = fc.job.parallel.pp
    tol = end / (WIDTH_IN * DPI) if end else 0.0         # one pixel
    subs = {i: [s for s in STREAM_ORDER if (i, s) in comm] for i in range(stages)}
    units = sum(LANE + SUB * len(subs[i]) + GAP for i in range(stages))
    height = min(20.0, max(3.5, 0.2 * units + 1.6))
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    y, ticks, labels, idle_total, busy_total = 0.0, [], [], 0.0, 0.0
    seen = set()
    for i in range(stages):
        bars = compute.get(i, [])
        idle = _idle([(s, d) for s, d, _ in bars], end, tol)
        idle_total += sum(d for _, d in idle)
        busy_total += end
        ax.broken_barh(idle, (y, LANE), facecolors=BUBBLE, edgecolors="none", hatch="////",
                       linewidth=0)
        runs = _runs(bars, tol)
        seen |= set(runs)
        for cat in runs:
            ax.broken_barh(runs[cat], (y, LANE), facecolors=COMPUTE.get(cat, "#999999"),
                           edgecolors="none")
        ticks.append(y + LANE / 2)
        marks = [m for m, on in (("breakdown", i == fc.stage),
                                 ("fullest memory", i == fc.memory.stage)) if on]
        labels.append(f"stage {i}" + (f" ({', '.join(marks)})" if marks else ""))
        yy = y + LANE
        for s in subs[i]:                   # thin sub-lanes, told apart by colour
            ax.broken_barh(_merge(comm[(i, s)], tol), (yy + 0.04, SUB - 0.08),
                           facecolors=STREAM[s][1], edgecolors="none")
            yy += SUB
        y = yy + GAP
    ax.set_ylim(y, -GAP / 2)
    ax.set_xlim(0, end * 1.001 if end else 1.0)
    ax.set_yticks(ticks)
    # every stage named, in a size that fits the spacing of the lanes (points)
    spacing = (height - 1.6) * 72.0 * (units / len(ticks)) / (units + GAP / 2) if ticks else 8
    ax.set_yticklabels(labels, fontsize=max(4.0, min(8.0, 0.8 * spacing)))
    for k, lab in enumerate(ax.get_yticklabels()):
        if k in (fc.stage, fc.memory.stage):
            lab.set_fontweight("bold")
    ax.set_xlabel("seconds into the iteration")
    bubble = fc.breakdown.get("bubble", 0.0) / fc.iteration_time if fc.iteration_time else 0.0
    ax.set_title(f"{fc.job.name}: {fc.iteration_time:.2f} s per iteration, MFU {fc.mfu:.1%}, "
                 f"pipeline bubble {bubble:.0%} (stage {fc.stage}); shaded: compute idle, "
                 f"{idle_total / busy_total if busy_total else 0.0:.0%} over all stages"
                 + (f"; micro-batches {window[0]}-{window[1] - 1}" if window else ""),
                 fontsize=10)
    handles = [Patch(facecolor=COMPUTE[c], label=c) for c in COMPUTE if c in seen]
    handles += [Patch(facecolor=STREAM[s][1], label=STREAM[s][0])
                for s in STREAM if any(s in v for v in subs.values())]
    handles.append(Patch(facecolor=BUBBLE, hatch="////", label="compute idle (bubble, waits)"))
    if level != "op":
        handles.append(Patch(facecolor="white", edgecolor="white",
                             label=f"({level}-level bars; --window A:B for operators)"))
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=min(8, len(handles)), fontsize=8,
               frameon=False)
    return fig
