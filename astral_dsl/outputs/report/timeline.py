"""A forecast's iteration as an SVG timeline for the page: one lane per pipeline stage and
stream (compute, TP, PP, DP, ...), time to the right. The page's script zooms and pans it
(assets.JS); without a script it is the whole iteration at once.

A long timeline is aggregated so that the page stays small: operators when they are few, else
one bar per layer, else one bar per pipeline block; beyond that, neighbouring bars of one lane
and category closer than a fraction of the iteration are merged, then (a pipeline's forward and
backward blocks alternate) of any category (the title of a merged bar says how many it holds). At the block level the communication streams, whose operators run inside the
blocks, are lanes of their own, each slice of the iteration as dark as the share of it the
stream is busy (seer.timeline.occupancy). The note under the timeline says which detail it
shows."""
from __future__ import annotations

from typing import Dict, List, Tuple


from astral_dsl import records
from astral_dsl.outputs.forecast.report import _time as duration
from astral_dsl.outputs.report.html import esc
from astral_dsl.seer.timeline import STREAM_NAMES, STREAM_ORDER, count

LIMIT = 12_000           # bars drawn per timeline: about 1 MB of SVG
PLOT_W = 1000.0          # width of the plot at zoom 1 (SVG user units)
LABEL_W = 150.0
LANE_H = 12.0
AXIS_H = 22.0
LEVEL_TEXT = {"op": "one bar per operator", "layer": "one bar per layer (communication per "
              "operator)", "block": "one bar per pipeline block (forward or backward of a "
              "micro-batch's chunk)"}


@records.frozen
class Bar:
    start: float
    end: float
    name: str
    cat: str
    merged: int = 1


def choose_level(fc, limit: int = LIMIT) -> str:
    for level in ("op", "layer"):
        if count(fc, level) <= limit:
            return level
    return "block"


def lanes(fc, level: str) -> Dict[Tuple[int, str], List[Bar]]:
    """(stage, stream) -> its bars in time order."""
    out: Dict[Tuple[int, str], List[Bar]] = {}
    for ev in fc.timeline(level=level):
        if ev.end <= ev.start:
            continue
        out.setdefault((ev.stage, ev.stream), []).append(Bar(ev.start, ev.end, ev.name, ev.cat))
    for bars in out.values():
        bars.sort(key=lambda b: (b.start, b.end, b.name))
    return dict(sorted(out.items(), key=lambda kv: (kv[0][0], STREAM_ORDER.index(kv[0][1]))))


def merge(bars: List[Bar], gap: float, mixed: bool = False) -> List[Bar]:
    """Neighbouring bars of one category closer than `gap` seconds as one bar; `mixed`: of any
    category (a bar that holds several is of category MIXED, named by theirs)."""
    out: List[Bar] = []
    for b in bars:
        last = out[-1] if out else None
        if last is not None and (mixed or last.cat == b.cat) and b.start - last.end <= gap:
            cat = last.cat if last.cat == b.cat else MIXED
            name = last.name if cat != MIXED else _kinds(last, b)
            out[-1] = Bar(last.start, max(last.end, b.end), name, cat, last.merged + b.merged)
        else:
            out.append(b)
    return out


MIXED = "mixed"


def _kinds(a: Bar, b: Bar) -> str:
    """The name of a bar that holds bars of several categories: theirs, in order."""
    seen = (a.name.split(" and ") if a.cat == MIXED else [a.cat])
    return " and ".join(seen + ([b.cat] if b.cat not in seen else []))


def aggregate(by_lane: Dict[Tuple[int, str], List[Bar]], total: float, limit: int = LIMIT):
    """The bars within `limit`, merging ever wider gaps, first between bars of one category,
    then (a pipeline's forward and backward blocks alternate, so that alone may never get
    there) between any; returns (lanes, gap merged or 0, whether categories were merged)."""
    gap, mixed = 0.0, False
    while sum(len(b) for b in by_lane.values()) > limit:
        gap = total / 20_000 if not gap else gap * 2
        if gap > total:
            if mixed:
                break
            gap, mixed = total / 20_000, True
        by_lane = {k: merge(v, gap, mixed) for k, v in by_lane.items()}
    return by_lane, gap, mixed


def _cls(stream: str, cat: str) -> str:
    if stream != "compute":
        return f"s-{stream}"
    return f"s-compute c-{cat}" if cat in ("forward", "backward", "optimizer", MIXED) else \
        f"s-compute c-op-{cat}"


def ticks(total: float, lo: float = 0.0, hi: float = None, want: int = 8) -> List[float]:
    """Round tick times (1, 2 or 5 x 10^n apart) between lo and hi (the script's axis does the
    same after a zoom)."""
    hi = total if hi is None else hi
    span = hi - lo
    if span <= 0:
        return [lo]
    import math

    raw = span / want
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, t = [], first
    while t <= hi + step * 1e-9:
        out.append(round(t, 12))
        t += step
    return out


SLICES = 1000            # communication lanes of a block-level timeline: slices of the iteration
INSIDE = ("tp", "cp", "ep")   # the streams whose operators run inside a block (PP p2p and DP
#                               communication are events of their own at every level)


def shaded_lanes(fc, slices: int = SLICES) -> Dict[Tuple[int, str], List[Bar]]:
    """The TP, CP and EP lanes of a timeline whose events are whole blocks (their operators
    are inside them): per (stage, stream), one bar per run of slices of the iteration equally busy
    (the share in fifths, in `merged`: 1 to 5), from seer.timeline.occupancy."""
    import numpy as np

    from astral_dsl.seer.timeline import occupancy

    total = fc.iteration_time
    width = total / slices
    out: Dict[Tuple[int, str], List[Bar]] = {}
    for stream in INSIDE:
        occ = occupancy(fc, stream, 0.0, total, slices)
        for stage in range(len(occ)):
            level = np.ceil(occ[stage] * 5 - 1e-9).astype(int)
            edges = np.flatnonzero(np.diff(np.concatenate(([-1], level, [-1]))))
            bars = [Bar(a * width, b * width, f"busy {20 * (int(level[a]) - 1)}-"
                                              f"{20 * int(level[a])} % of the time", "comm",
                        int(level[a]))
                    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()) if level[a] > 0]
            if bars:
                out[(stage, stream)] = bars
    return out


def svg(fc, uid: str, limit: int = LIMIT) -> Tuple[str, str]:
    """(the timeline's SVG, the note saying what it shows)."""
    level = choose_level(fc, limit)
    total = fc.iteration_time
    by_lane, gap, mixed = aggregate(lanes(fc, level), total, limit)
    shaded: Dict[Tuple[int, str], List[Bar]] = {}
    slices = SLICES
    if level == "block":               # as fine as the page's budget of bars allows
        budget = max(limit - sum(len(v) for v in by_lane.values()), limit // 10)
        shaded = shaded_lanes(fc, slices)
        while sum(len(v) for v in shaded.values()) > budget and slices > 50:
            slices //= 2
            shaded = shaded_lanes(fc, slices)
    if shaded:                          # the communication the blocks hold, as shares busy
        by_lane = dict(sorted({**by_lane, **shaded}.items(),
                              key=lambda kv: (kv[0][0], STREAM_ORDER.index(kv[0][1]))))
    scale = PLOT_W / total if total > 0 else 1.0
    n = len(by_lane)
    height = AXIS_H + n * LANE_H + 4
    width = LABEL_W + PLOT_W + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" id="{uid}" '
           f'viewBox="0 0 {width:g} {height:g}" data-t="{total!r}" data-plotw="{PLOT_W:g}" '
           f'data-left="{LABEL_W:g}" data-axis="{AXIS_H:g}" role="img" '
           f'aria-label="timeline of one iteration of {esc(fc.job.name)}">',
           f'<defs><clipPath id="{uid}-clip"><rect x="{LABEL_W:g}" y="0" width="{PLOT_W:g}" '
           f'height="{height:g}"/></clipPath></defs>']
    # lane labels and stripes
    for k, (stage, stream) in enumerate(by_lane):
        y = AXIS_H + k * LANE_H
        if k % 2 == 0:
            out.append(f'<rect class="stripe" x="{LABEL_W:g}" y="{y:g}" width="{PLOT_W:g}" '
                       f'height="{LANE_H:g}"/>')
        out.append(f'<text class="lane" x="{LABEL_W - 6:g}" y="{y + LANE_H - 3:g}">stage '
                   f'{stage} {esc(STREAM_NAMES[stream])}</text>')
    out.append(f'<g class="tl-axis">{_axis(total, 0.0, total, scale)}</g>')
    out.append(f'<g clip-path="url(#{uid}-clip)"><g class="tl-data" '
               f'transform="translate({LABEL_W:g} 0) scale(1 1)">')
    for k, ((stage, stream), bars) in enumerate(by_lane.items()):
        y = AXIS_H + k * LANE_H + 1
        for b in bars:
            x, w = b.start * scale, max((b.end - b.start) * scale, 0.05)
            share = (stage, stream) in shaded
            what = esc(b.name) if b.merged == 1 or share else \
                f"{b.merged:,} bars from {esc(b.name)}"
            opacity = f' fill-opacity="{b.merged / 5:g}"' if share else ""
            out.append(f'<rect class="{_cls(stream, b.cat)}" x="{x:.3f}" y="{y:g}" '
                       f'width="{w:.3f}" height="{LANE_H - 2:g}"{opacity}><title>stage {stage} '
                       f'{esc(STREAM_NAMES[stream])}: {what}, {duration(b.start)} to '
                       f'{duration(b.end)} ({duration(b.end - b.start)})</title></rect>')
    out.append("</g></g></svg>")
    bars = sum(len(v) for v in by_lane.values())
    note = f"{LEVEL_TEXT[level]}; {bars:,} bars on {n} lanes"
    if shaded:
        note += (f"; TP, CP and EP communication inside the blocks: each 1/{slices:,} of "
                 f"the iteration as dark as the share of it the stream is busy")
    if gap:
        note += (f"; bars of one lane closer than {duration(gap)} merged"
                 + (", forward and backward alike where they alternate too closely" if mixed else ""))
    return "".join(out), note


def _axis(total: float, lo: float, hi: float, scale: float) -> str:
    out = []
    for t in ticks(total, lo, hi):
        x = LABEL_W + (t - lo) * scale
        out.append(f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{AXIS_H - 4:g}" y2="{AXIS_H:g}"/>'
                   f'<text x="{x:.2f}" y="{AXIS_H - 7:g}">{duration(t)}</text>')
    return "".join(out)
