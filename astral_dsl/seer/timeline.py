"""The iteration as events (data): the block-level simulation expanded to operators from the
block templates, or to layers, or left as blocks. The Chrome trace writer and the plot that read
them live in outputs/forecast/.

One process per pipeline stage (its representative rank), one thread per stream. No two events
of one thread overlap, and the last event ends at the iteration time.

A timeline is a table of columns (numpy arrays), one row per event: a full operator timeline
holds hundreds of thousands of events (GPT-3 175B on 1,024 GPUs: 316,000), so its rows are
not objects. Each block of a stage repeats the rows of its template (chunk, phase) shifted to
the block's start: the rows of every block are made at once, as array operations. What a row
needs besides its times (name, category, arguments) is a `Kind`, shared by all the rows of one
template operator; `Event` objects are made only when the rows are iterated."""
from __future__ import annotations

from typing import Dict, Iterator, List, Tuple

import numpy as np

from astral_dsl import records

# the copy streams of activation offloading (seer/lower.py `_offload`) are last
STREAM_ORDER = ("compute", "tp", "cp", "ep", "pp", "dp", "offload_out", "offload_in")
STREAM_NAMES = {"compute": "compute", "tp": "TP comm", "cp": "CP comm", "ep": "EP comm",
                "pp": "PP p2p", "dp": "DP comm", "offload_out": "offload to host",
                "offload_in": "reload from host"}
_STREAM = {s: k for k, s in enumerate(STREAM_ORDER)}


@records.frozen
class Event:
    stage: int
    stream: str
    name: str
    cat: str
    start: float          # seconds
    end: float
    args: Tuple[Tuple[str, object], ...] = ()


@records.frozen
class Kind:
    """What rows of one kind share. `form` says how a row's name and arguments are made:
    "op" an operator (its micro-batch, its layer and the operator's own arguments), "comm" a
    communication of the layer level (micro-batch, layer), "layer" a layer's computation merged
    (its name carries the layer and the block's label), "block" a whole block, "fixed" an event
    whose name and arguments are all here (p2p sends, DP communication, the optimizer)."""
    form: str
    stream: str
    name: str
    cat: str
    layer: int = 0                                 # counted from the chunk's first layer
    args: Tuple[Tuple[str, object], ...] = ()      # after micro_batch and layer (op) or all


@records.define
class Timeline:
    """Events as columns, in the order of `events` (stage by stage; a stage's blocks in order,
    each block's rows in its template's order; then its p2p sends, its DP communication, the
    optimizer step and the parameter all-gather). `kind` indexes `kinds`; `mb` is the row's
    micro-batch, `chunk` its chunk, `first` the first layer of its chunk (-1 where none)."""
    stage: np.ndarray
    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray
    mb: np.ndarray
    chunk: np.ndarray
    first: np.ndarray
    kinds: List[Kind]
    v: int                                         # chunks per stage (labels name them if > 1)

    def __len__(self) -> int:
        return len(self.start)

    def __iter__(self) -> Iterator[Event]:
        kinds, v = self.kinds, self.v
        for i, k, s, e, mb, c, first in zip(self.stage.tolist(), self.kind.tolist(),
                                             self.start.tolist(), self.end.tolist(),
                                             self.mb.tolist(), self.chunk.tolist(),
                                             self.first.tolist()):
            kind = kinds[k]
            name, args = describe(kind, mb, c, first, v)
            yield Event(i, kind.stream, name, kind.cat, s, e, args)


def describe(kind: Kind, mb: int, chunk: int, first: int, v: int):
    """(name, args) of a row of `kind`."""
    form = kind.form
    if form == "op":
        return kind.name, (("micro_batch", mb), ("layer", _absolute(kind.layer, first))) \
            + kind.args
    if form == "fixed":
        return kind.name, kind.args
    if form == "comm":
        return kind.name, (("micro_batch", mb), ("layer", _absolute(kind.layer, first)))
    label = f"{'fwd' if kind.cat == 'forward' else 'bwd'} mb{mb}" + (
        f" chunk{chunk}" if v > 1 else "")
    if form == "block":
        return label, (("micro_batch", mb), ("chunk", chunk))
    layer = _absolute(kind.layer, first)
    name = (f"layer {layer}" if layer >= 0 else "embedding" if layer == -1 else "head") \
        + f" {label}"
    return name, (("micro_batch", mb), ("layer", layer))


def fitted_window(m: int, window) -> Tuple[int, int]:
    """The micro-batches (lo, hi) of `window` (first, last + 1) that a job of `m` micro-batches
    per pipeline has: hi None or past the last micro-batch stops at the last; ValueError when
    the window is not two whole numbers with 0 <= lo < hi, or holds none of the micro-batches
    (its trace would hold the optimizer step alone and its chart nothing, in silence). The one
    check of `Forecast.timeline(window=...)` and `astral forecast --window`."""
    try:
        lo, hi = window
    except (TypeError, ValueError):
        raise ValueError(f"a window is (first, last + 1) micro-batches, got {window!r}") \
            from None
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi or 0)) \
            or lo < 0 or (hi is not None and hi <= lo):
        raise ValueError(f"a window is (first, last + 1) micro-batches with 0 <= first < "
                         f"last + 1 (last + 1 None: to the last), got {window!r}")
    if lo >= m:
        raise ValueError(f"the job has {m:,} micro-batch{'es' if m > 1 else ''} per pipeline "
                         f"(0..{m - 1}): the window holds none of them")
    return lo, m if hi is None else min(hi, m)


def _in_window(mb: int, window) -> bool:
    return window is None or window[0] <= mb < window[1]


def count(fc, level: str = "op", window=None) -> int:
    """Events the timeline would hold: per stage, the events of each block template (chunk,
    phase) times the micro-batches of the window (every stage runs each (phase, chunk,
    micro-batch) once), without visiting the blocks: a budget-sized run has a million."""
    low, total = fc.lowering, 0
    for i, run in enumerate(fc.runs):
        m = run.m
        lo, hi = (0, m) if window is None else (max(0, window[0]), min(m, window[1]))
        mbs = max(0, hi - lo)
        if level == "block":
            per = 2 * run.v
        else:
            per = sum(_per_block(low, i, c, ph, level) for c in range(run.v) for ph in "FB")
        if len(run.codes) == 2 * run.v * m:
            total += per * mbs
        else:                                     # (not a full schedule: count block by block)
            total += sum(_per_block(low, i, (x // m) % run.v, "B" if x >= run.v * m else "F",
                                    level) for x in run.codes if lo <= x % m < hi)
        if window is None:
            total += len(run.sends)
        else:
            total += sum(1 for _, _, key in run.sends if lo <= key % m < hi)
        total += len(run.dp) + 2
    return total


def _per_block(low, i: int, chunk: int, phase: str, level: str) -> int:
    if level == "block":
        return 1
    tpl = low.template(i, chunk, phase)
    comm = sum(1 for o in tpl.ops if o.stream != "compute" and o.dur > 0)
    if level == "layer":
        return low.chunks[i][chunk][1] + 2 + comm
    return comm + sum(1 for o in tpl.ops if o.stream == "compute" and o.dur > 0)


def events(fc, window=None, level: str = "op") -> Iterator[Event]:
    """The events of `timeline`, one by one."""
    return iter(timeline(fc, window, level))


def timeline(fc, window=None, level: str = "op") -> Timeline:
    """The iteration's events (the operators, or `level` "layer" or "block"), of the
    micro-batches in `window` (lo, hi) or all (checked and fitted by fitted_window)."""
    if window is not None:
        window = fitted_window(fc.job.microbatches, window)
    low = fc.lowering
    kinds: List[Kind] = []
    index: Dict[Kind, int] = {}
    rows: Dict[tuple, Tuple[np.ndarray, np.ndarray, np.ndarray]] = {}    # (stage, chunk, phase)
    cols: Dict[str, list] = {c: [] for c in ("stage", "kind", "start", "end", "mb", "chunk",
                                             "first")}

    def kind_of(kind: Kind) -> int:
        k = index.get(kind)
        if k is None:
            k = index[kind] = len(kinds)
            kinds.append(kind)
        return k

    def template_rows(i: int, chunk: int, phase: str):
        hit = rows.get((i, chunk, phase))
        if hit is None:
            tpl = low.template(i, chunk, phase)
            made = [(kind_of(k), s, e) for k, s, e in _rows(tpl, phase, level, low.groups)]
            hit = rows[i, chunk, phase] = (np.array([r[0] for r in made], dtype=np.int32),
                                           np.array([r[1] for r in made], dtype=np.float64),
                                           np.array([r[2] for r in made], dtype=np.float64))
        return hit

    def add(stage, kind, start, end, mb, chunk, first):
        for name, value in (("stage", stage), ("kind", kind), ("start", start), ("end", end),
                            ("mb", mb), ("chunk", chunk), ("first", first)):
            cols[name].append(value)

    for i, run in enumerate(fc.runs):
        m, vm = run.m, run.v * run.m
        codes = np.asarray(run.codes, dtype=np.int64)
        mbs = codes % m
        keep = np.ones(len(codes), dtype=bool) if window is None else \
            (mbs >= window[0]) & (mbs < window[1])
        picked = np.flatnonzero(keep)
        phases = np.where(codes[picked] >= vm, 1, 0)
        chunks = (codes[picked] % vm) // m
        templates = [template_rows(i, c, "FB"[p])
                     for c, p in zip(chunks.tolist(), phases.tolist())]
        lengths = np.array([len(t[0]) for t in templates], dtype=np.int64)
        if len(templates):
            kind = np.concatenate([t[0] for t in templates])
            rel_start = np.concatenate([t[1] for t in templates])
            rel_end = np.concatenate([t[2] for t in templates])
            begin = np.repeat(np.asarray(run.start, dtype=np.float64)[picked], lengths)
            # a block's own end (it may outlast its template: weights that came late)
            finish = np.asarray(run.end, dtype=np.float64)[picked] if level == "block" \
                else begin + rel_end
            firsts = np.array([low.chunks[i][c][0] for c in range(run.v)], dtype=np.int64)
            add(np.full(len(kind), i, dtype=np.int32), kind, begin + rel_start, finish,
                np.repeat(mbs[picked], lengths), np.repeat(chunks, lengths),
                np.repeat(firsts[chunks], lengths))
        fixed = []
        for s, e, ph, c, j in run.transfers():
            if _in_window(j, window):
                fixed.append((Kind("fixed", "pp", f"send {'act' if ph == 'F' else 'grad'} mb{j}",
                                   "p2p", args=(("micro_batch", j), ("group", "pp"))), s, e))
        for s, e, (dense, expert) in run.dp:
            params = dense + expert
            experts = ((("expert_params", expert),
                        ("expert_group", f"edp ({low.groups['edp'].n} ranks)")) if expert else ())
            fixed.append((Kind("fixed", "dp", "grad " + ("reduce-scatter" if fc.job.parallel.zero
                                                         else "all-reduce"), "comm",
                               args=(("params", params), ("bytes", params * fc.job.grad_bytes),
                                     ("group", f"dp ({low.groups['dp'].n} ranks)"))
                               + experts), s, e))
        s, e = run.optimizer
        if e > s:
            fixed.append((Kind("fixed", "compute", "optimizer step", "optimizer"), s, e))
        s, e = run.gather
        if e > s:
            fixed.append((Kind("fixed", "dp", "param all-gather", "comm",
                               args=(("group", "dp"),)), s, e))
        if fixed:
            n = len(fixed)
            add(np.full(n, i, dtype=np.int32),
                np.array([kind_of(k) for k, _, _ in fixed], dtype=np.int32),
                np.array([s for _, s, _ in fixed], dtype=np.float64),
                np.array([e for _, _, e in fixed], dtype=np.float64),
                np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
                np.full(n, -1, dtype=np.int64))
    dtypes = {"stage": np.int32, "kind": np.int32, "start": np.float64, "end": np.float64,
              "mb": np.int64, "chunk": np.int64, "first": np.int64}
    arrays = {name: (np.concatenate(parts) if parts else np.zeros(0, dtype=dtypes[name]))
              for name, parts in cols.items()}
    return Timeline(kinds=kinds, v=fc.job.parallel.v, **arrays)


def occupancy(fc, stream: str, lo: float, hi: float, bins: int, window=None) -> np.ndarray:
    """How busy `stream` is, per stage, in each of `bins` equal slices of [lo, hi): an array
    (stages x bins) of the busy share of each slice (0 to 1), from the block templates'
    operators of that stream shifted to their blocks' starts, without making an event: the
    communication lanes of a picture whose events are whole blocks (a forward block's TP
    all-reduces are inside it), and of any picture where an operator is narrower than a slice
    (outputs/forecast/plot.py, outputs/report/timeline.py). `window`: the micro-batches
    (lo, hi) counted, as `timeline`'s; the p2p sends and DP communication ("pp", "dp")
    are counted as they are timed."""
    low = fc.lowering
    out = np.zeros((len(fc.runs), bins), dtype=np.float64)
    width = (hi - lo) / bins if bins and hi > lo else 0.0
    if not width:
        return out
    for i, run in enumerate(fc.runs):
        starts: List[np.ndarray] = []
        ends: List[np.ndarray] = []
        m, vm = run.m, run.v * run.m
        codes = np.asarray(run.codes, dtype=np.int64)
        begin = np.asarray(run.start, dtype=np.float64)
        keep = np.ones(len(codes), dtype=bool) if window is None else \
            (codes % m >= window[0]) & (codes % m < window[1])
        for c in range(run.v):
            for p, phase in enumerate("FB"):
                picked = keep & ((codes % vm) // m == c) & ((codes >= vm) == bool(p))
                if not picked.any():
                    continue
                ops = [(o.start, o.end) for o in low.template(i, c, phase).ops
                       if o.stream == stream and o.dur > 0]
                if ops:
                    rel = np.asarray(ops, dtype=np.float64)
                    b = begin[picked][:, None]
                    starts.append((b + rel[:, 0]).ravel())
                    ends.append((b + rel[:, 1]).ravel())
        fixed: List[Tuple[float, float]] = []
        if stream == "pp":
            fixed = [(s, e) for s, e, _, _, j in run.transfers() if _in_window(j, window)]
        elif stream == "dp":
            fixed = [(s, e) for s, e, _ in run.dp] + (
                [run.gather] if run.gather[1] > run.gather[0] else [])
        if fixed:
            starts.append(np.asarray([s for s, _ in fixed], dtype=np.float64))
            ends.append(np.asarray([e for _, e in fixed], dtype=np.float64))
        if starts:
            _cover(out[i], np.concatenate(starts), np.concatenate(ends), lo, width)
    return np.clip(out, 0.0, 1.0)


def _cover(row: np.ndarray, start: np.ndarray, end: np.ndarray, lo: float, width: float):
    """Add to each slice of `row` the share of it the intervals [start, end) cover."""
    n = len(row)
    a = np.clip((start - lo) / width, 0.0, n)
    b = np.clip((end - lo) / width, 0.0, n)
    i, j = np.minimum(a.astype(np.int64), n - 1), np.minimum(b.astype(np.int64), n - 1)
    same = i == j
    np.add.at(row, i[same], (b - a)[same])
    d = ~same
    np.add.at(row, i[d], (i[d] + 1) - a[d])
    np.add.at(row, j[d], b[d] - j[d])
    full = np.zeros(n + 1)
    np.add.at(full, i[d] + 1, 1.0)
    np.add.at(full, j[d], -1.0)
    row += np.cumsum(full)[:n]


def _rows(tpl, phase: str, level: str, groups) -> List[Tuple[Kind, float, float]]:
    """(kind, start, end) of a block template's rows, times from the block's start."""
    cat = "forward" if phase == "F" else "backward"
    if level == "block":                   # (its end: the block's own, see `timeline`)
        return [(Kind("block", "compute", "", cat), 0.0, 0.0)]
    if level == "layer":
        return _layer_rows(tpl, cat)
    out = []
    for o in tpl.ops:
        if o.dur <= 0:
            continue
        args = []
        if o.flops:
            args.append(("flops", o.flops))
        if o.nbytes:
            args.append(("bytes", o.nbytes))
        if o.group:
            args.append(("group", f"{o.group} ({groups[o.group].n} ranks)"))
        if o.shape:
            args.append(("shape", o.shape))
        out.append((Kind("op", o.stream, o.name, o.cat, o.layer, tuple(args)), o.start, o.end))
    return out


def _absolute(layer: int, first: int) -> int:
    return layer + first if layer >= 0 else layer


def _layer_rows(tpl, cat: str) -> List[Tuple[Kind, float, float]]:
    """Compute merged per layer; communication kept per operator (it does not overlap)."""
    out = []
    spans: Dict[int, List[float]] = {}
    for o in tpl.ops:
        if o.dur <= 0:
            continue
        if o.stream != "compute":
            out.append((Kind("comm", o.stream, o.name, o.cat, o.layer), o.start, o.end))
            continue
        lo_hi = spans.setdefault(o.layer, [o.start, o.end])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], o.start), max(lo_hi[1], o.end)
    for layer, (lo, hi) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        out.append((Kind("layer", "compute", "", cat, layer), lo, hi))
    return out


__all__ = ["Event", "Kind", "STREAM_NAMES", "STREAM_ORDER", "Timeline", "count", "describe",
           "events", "occupancy", "timeline"]
