"""A forecast's timeline as a Gantt chart (matplotlib): one lane per pipeline stage (its compute
stream), its communication streams (TP, CP, EP, PP, DP) as thin sub-lanes under it (only those
with something in them; each pixel as dark as the share of it the stream is busy, at every
level of detail: seer.timeline.occupancy), and the compute stream's idle time shaded (the pipeline bubble, and waits for
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
from astral_dsl.units.readable import whole_percent

COMPUTE = {"gemm": "#4C72B0", "attention": "#8172B2", "elementwise": "#64B5CD",
           "norm": "#8C8C8C", "recompute": "#CCB974", "forward": "#4C72B0",
           "backward": "#E39B3B", "optimizer": "#17BECF"}
STREAM = {"tp": ("TP", "#C44E52"), "cp": ("CP", "#E17C05"), "ep": ("EP", "#937860"),
          "pp": ("PP p2p", "#D37FC0"), "dp": ("DP", "#2CA02C"),
          "offload_out": ("offload to host", "#7F7F7F"),
          "offload_in": ("reload from host", "#BCBD22")}
BUBBLE = "#E4E4E4"
OTHER = "#C9D1DC"          # with --window: blocks of the micro-batches outside it
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


def _runs(bars: List[Tuple[float, float, str]], tol: float, origin: float = 0.0
          ) -> Dict[str, List[Tuple[float, float]]]:
    """(start, duration, category) bars of one lane -> category -> bars, one pixel (`tol`
    seconds) at a time: a pixel takes the category that fills most of it, and is left empty
    (the idle shading shows) when less than half of it is busy; neighbouring pixels of one
    category make one bar (module docstring)."""
    if not bars or tol <= 0:
        return {}
    import numpy as np

    cats = sorted({c for _, _, c in bars})
    n = int((max(s + d for s, d, _ in bars) - origin) / tol) + 2
    fill = np.zeros((len(cats), n))
    for s, d, cat in bars:
        row, a, b = fill[cats.index(cat)], (s - origin) / tol, (s + d - origin) / tol
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
            out.setdefault(cats[best[a]], []).append((origin + a * tol, (b - a) * tol))
    return out


def _idle(busy: List[Tuple[float, float]], lo: float, hi: float, tol: float
          ) -> List[Tuple[float, float]]:
    """The gaps of (start, duration) bars within [lo, hi) wider than `tol` (a bar after the
    span, the optimizer step beyond a window's, ends no gap in it)."""
    out, t = [], lo
    for s, d in _merge(busy, 0.0):
        if s >= hi:
            break
        if s - t > tol:
            out.append((t, s - t))
        t = max(t, s + d)
    if hi - t > tol:
        out.append((t, hi - t))
    return out


def plot(fc, path: str, window=None) -> None:
    """Draw the iteration to `path` (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(fc, window)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _comm_lane(ax, occ, lo: float, width: float, y: float, colour: str) -> None:
    """A communication lane from its occupancy (seer.timeline.occupancy, one value a pixel):
    each pixel as dark as the share of it the stream is busy, in five steps, so that a
    stream busy a fifth of the time never reads as a solid bar."""
    import numpy as np

    level = np.ceil(occ * 5 - 1e-9).astype(int)          # 0 (idle) to 5 (busy throughout)
    edges = np.flatnonzero(np.diff(np.concatenate(([-1], level, [-1]))))
    by_level: Dict[int, List[Tuple[float, float]]] = {}
    for a, b in zip(edges[:-1], edges[1:]):
        if level[a] > 0:
            by_level.setdefault(int(level[a]), []).append((lo + a * width, (b - a) * width))
    for k, bars in by_level.items():
        ax.broken_barh(bars, (y + 0.04, SUB - 0.08), facecolors=colour, alpha=k / 5,
                       edgecolors="none")


def _span(fc, window, evs) -> Tuple[float, float]:
    """The time the chart shows: the iteration, or the window's micro-batches' first start
    to last end (their own work: the optimizer step, which the timeline gives with every
    window, belongs to no micro-batch)."""
    if window is None:
        return 0.0, fc.iteration_time
    evs = [e for e in evs if dict(e.args).get("micro_batch") is not None]
    starts = [e.start for e in evs]
    return (min(starts), max(e.end for e in evs)) if starts else (0.0, fc.iteration_time)


def title(fc, window, lo: float, hi: float, idle_share: float) -> str:
    """The chart's title: the iteration's time with how far to trust it (its band), MFU and
    bubble; of a window, its span within the iteration."""
    if window is None:
        bubble = fc.breakdown.get("bubble", 0.0) / fc.iteration_time if fc.iteration_time \
            else 0.0
        return (f"{fc.job.name}: {fc.iteration_time:.2f} s per iteration "
                f"{fc.envelope().brief()}, MFU {fc.mfu * 100:.1f} %, "
                f"pipeline bubble {whole_percent(bubble)} (stage {fc.stage}); shaded: compute "
                f"idle, {whole_percent(idle_share)} over all stages")
    return (f"{fc.job.name}: micro-batches {window[0]}-{window[1] - 1}, {lo:.3f} to "
            f"{hi:.3f} s of the {fc.iteration_time:.2f} s iteration; shaded: compute "
            f"idle, {whole_percent(idle_share)} of this span over all stages")


def figure(fc, window=None):  # noqa: C901 - one figure, drawn in order
    """The chart as a matplotlib Figure (the caller closes it). With `window` (micro-batches
    lo, hi) the axis, the idle shading and the title's figures are those of the window's
    span; the blocks of other micro-batches in that span are drawn plain, not as idle."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from astral_dsl.seer.timeline import occupancy

    level = "op" if count(fc, "op", window) <= MAX_EVENTS else "layer" \
        if count(fc, "layer", window) <= MAX_EVENTS else "block"
    compute: Dict[int, List[Tuple[float, float, str]]] = {}
    evs = [ev for ev in events(fc, window, level) if ev.stream == "compute"]
    for ev in evs:
        compute.setdefault(ev.stage, []).append((ev.start, ev.end - ev.start, ev.cat))
    lo, hi = _span(fc, window, evs)
    others: Dict[int, List[Tuple[float, float]]] = {}
    if window is not None:                 # blocks of the micro-batches outside the window
        for ev in events(fc, None, "block"):
            mb = dict(ev.args).get("micro_batch")
            if ev.stream == "compute" and mb is not None and not window[0] <= mb < window[1] \
                    and ev.end > lo and ev.start < hi:
                others.setdefault(ev.stage, []).append((ev.start, ev.end - ev.start))
    stages = fc.job.parallel.pp
    pixels = int(WIDTH_IN * DPI)
    tol = (hi - lo) / pixels if hi > lo else 0.0         # one pixel
    occ = {s: occupancy(fc, s, lo, hi, pixels, window) for s in STREAM_ORDER if s != "compute"}
    subs = {i: [s for s in STREAM_ORDER if s in occ and occ[s][i].any()] for i in range(stages)}
    units = sum(LANE + SUB * len(subs[i]) + GAP for i in range(stages))
    height = min(20.0, max(3.5, 0.2 * units + 1.6))
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    y, ticks, labels, idle_total, span_total = 0.0, [], [], 0.0, 0.0
    seen = set()
    for i in range(stages):
        bars = compute.get(i, [])
        idle = _idle([(s, d) for s, d, _ in bars] + others.get(i, []), lo, hi, tol)
        idle_total += sum(d for _, d in idle)
        span_total += hi - lo
        ax.broken_barh(idle, (y, LANE), facecolors=BUBBLE, edgecolors="none", hatch="////",
                       linewidth=0)
        if others.get(i):
            ax.broken_barh(_merge(others[i], tol), (y, LANE), facecolors=OTHER,
                           edgecolors="none")
        runs = _runs(bars, tol, lo)
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
            _comm_lane(ax, occ[s][i], lo, tol, yy, STREAM[s][1])
            yy += SUB
        y = yy + GAP
    ax.set_ylim(y, -GAP / 2)
    ax.set_xlim(lo, lo + (hi - lo) * 1.001 if hi > lo else lo + 1.0)
    ax.set_yticks(ticks)
    # every stage named, in a size that fits the spacing of the lanes (points)
    spacing = (height - 1.6) * 72.0 * (units / len(ticks)) / (units + GAP / 2) if ticks else 8
    ax.set_yticklabels(labels, fontsize=max(4.0, min(8.0, 0.8 * spacing)))
    for k, lab in enumerate(ax.get_yticklabels()):
        if k in (fc.stage, fc.memory.stage):
            lab.set_fontweight("bold")
    ax.set_xlabel("seconds into the iteration")
    idle_share = idle_total / span_total if span_total else 0.0
    ax.set_title(title(fc, window, lo, hi, idle_share), fontsize=10)
    handles = [Patch(facecolor=COMPUTE[c], label=c) for c in COMPUTE if c in seen]
    handles += [Patch(facecolor=STREAM[s][1], label=STREAM[s][0] + " (shade: share busy)")
                for s in STREAM if any(s in v for v in subs.values())]
    handles.append(Patch(facecolor=BUBBLE, hatch="////", label="compute idle (bubble, waits)"))
    if others:
        handles.append(Patch(facecolor=OTHER, label="other micro-batches"))
    if level != "op":
        handles.append(Patch(facecolor="white", edgecolor="white",
                             label=f"({level}-level bars; --window A:B for operators)"))
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=min(8, len(handles)), fontsize=8,
               frameon=False)
    return fig
