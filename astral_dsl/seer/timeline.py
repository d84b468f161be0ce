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
    """Events the timeline would hold."""
    low, total = fc.lowering, 0
    for i, run in enumerate(fc.runs):
        for b in run.blocks:
            if not _in_window(b.mb, window):
                continue
            if level == "op":
                total += sum(1 for o in low.template(i, b.chunk, b.phase).ops if o.dur > 0)
            elif level == "layer":
                tpl = low.template(i, b.chunk, b.phase)
                total += low.chunks[i][b.chunk][1] + 2 + sum(
                    1 for o in tpl.ops if o.stream != "compute" and o.dur > 0)
            else:
                total += 1
        total += sum(1 for x in run.transfers() if _in_window(x[4], window)) + len(run.dp) + 2
    return total


def events(fc, window=None, level: str = "op") -> Iterator[Event]:
    low = fc.lowering
    for i, run in enumerate(fc.runs):
        for b in run.blocks:
            if not _in_window(b.mb, window):
                continue
            tpl = low.template(i, b.chunk, b.phase)
            first = low.chunks[i][b.chunk][0]
            label = f"{'fwd' if b.phase == 'F' else 'bwd'} mb{b.mb}" + (
                f" chunk{b.chunk}" if fc.job.parallel.v > 1 else "")
            if level == "block":
                yield Event(i, "compute", label, "forward" if b.phase == "F" else "backward",
                            b.start, b.end, (("micro_batch", b.mb), ("chunk", b.chunk)))
                continue
            if level == "layer":
                yield from _layers(i, b, tpl, label, first)
                continue
            for o in tpl.ops:
                if o.dur <= 0:
                    continue
                args = [("micro_batch", b.mb), ("layer", _absolute(o.layer, first))]
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
