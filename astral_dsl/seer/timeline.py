"""The iteration as events (data): the block-level simulation expanded to operators from the
block templates, or to layers, or left as blocks. The Chrome trace writer and the plot that read
them live in outputs/forecast/.

One process per pipeline stage (its representative rank), one thread per stream. No two events
of one thread overlap, and the last event ends at the iteration time."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Tuple

STREAM_ORDER = ("compute", "tp", "cp", "ep", "pp", "dp")
STREAM_NAMES = {"compute": "compute", "tp": "TP comm", "cp": "CP comm", "ep": "EP comm",
                "pp": "PP p2p", "dp": "DP comm"}


@dataclass(frozen=True)
class Event:
    stage: int
    stream: str
    name: str
    cat: str
    start: float          # seconds
    end: float
    args: Tuple[Tuple[str, object], ...] = ()


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


def _blocks(run, window) -> Iterator[Tuple[int, str, int, int]]:
    """(index, phase, chunk, micro-batch) of the stage's blocks in the window, in order (no
    Block objects: only the window's blocks are decoded)."""
    m, vm = run.m, run.v * run.m
    lo, hi = (0, m) if window is None else window
    for k, x in enumerate(run.codes):
        j = x % m
        if lo <= j < hi:
            yield k, ("B" if x >= vm else "F"), (x % vm) // m, j


def events(fc, window=None, level: str = "op") -> Iterator[Event]:
    low = fc.lowering
    for i, run in enumerate(fc.runs):
        for k, phase, chunk, mb in _blocks(run, window):
            b = _Span(phase, chunk, mb, run.start[k], run.end[k])
            tpl = low.template(i, chunk, phase)
            first = low.chunks[i][chunk][0]
            label = f"{'fwd' if phase == 'F' else 'bwd'} mb{mb}" + (
                f" chunk{chunk}" if fc.job.parallel.v > 1 else "")
            if level == "block":
                yield Event(i, "compute", label, "forward" if phase == "F" else "backward",
                            b.start, b.end, (("micro_batch", mb), ("chunk", chunk)))
                continue
            if level == "layer":
                yield from _layers(i, b, tpl, label, first)
                continue
            for o in tpl.ops:
                if o.dur <= 0:
                    continue
                args = [("micro_batch", mb), ("layer", _absolute(o.layer, first))]
                if o.flops:
                    args.append(("flops", o.flops))
                if o.nbytes:
                    args.append(("bytes", o.nbytes))
                if o.group:
                    args.append(("group", f"{o.group} ({low.groups[o.group].n} ranks)"))
                if o.shape:
                    args.append(("shape", o.shape))
                yield Event(i, o.stream, o.name, o.cat, b.start + o.start, b.start + o.end,
                            tuple(args))
        for s, e, ph, c, j in run.transfers():
            if _in_window(j, window):
                yield Event(i, "pp", f"send {'act' if ph == 'F' else 'grad'} mb{j}", "p2p", s, e,
                            (("micro_batch", j), ("group", "pp")))
        for s, e, params in run.dp:
            yield Event(i, "dp", "grad " + ("reduce-scatter" if fc.job.parallel.zero else
                                            "all-reduce"), "comm", s, e,
                        (("params", params), ("bytes", params * fc.job.grad_bytes),
                         ("group", f"dp ({low.groups['dp'].n} ranks)")))
        s, e = run.optimizer
        if e > s:
            yield Event(i, "compute", "optimizer step", "optimizer", s, e, ())
        s, e = run.gather
        if e > s:
            yield Event(i, "dp", "param all-gather", "comm", s, e, (("group", "dp"),))


@dataclass(frozen=True)
class _Span:
    phase: str
    chunk: int
    mb: int
    start: float
    end: float


def _absolute(layer: int, first: int) -> int:
    return layer + first if layer >= 0 else layer


def _layers(i, b, tpl, label, first) -> Iterator[Event]:
    """Compute merged per layer; communication kept per operator (it does not overlap)."""
    spans: Dict[int, List[float]] = {}
    for o in tpl.ops:
        if o.dur <= 0:
            continue
        if o.stream != "compute":
            yield Event(i, o.stream, o.name, o.cat, b.start + o.start, b.start + o.end,
                        (("micro_batch", b.mb), ("layer", _absolute(o.layer, first))))
            continue
        lo_hi = spans.setdefault(o.layer, [o.start, o.end])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], o.start), max(lo_hi[1], o.end)
    for layer, (lo, hi) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        layer = _absolute(layer, first)
        name = (f"layer {layer}" if layer >= 0 else "embedding" if layer == -1 else "head") \
            + f" {label}"
        yield Event(i, "compute", name, "forward" if b.phase == "F" else "backward",
                    b.start + lo, b.start + hi,
                    (("micro_batch", b.mb), ("layer", layer)))
