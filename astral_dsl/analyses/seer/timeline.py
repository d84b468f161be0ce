"""The iteration as events: the block-level simulation expanded to operators from the block
templates (or to layers, or left as blocks), a Chrome trace-event writer (ui.perfetto.dev,
chrome://tracing) and a matplotlib Gantt chart.

One process per pipeline stage (its representative rank), one thread per stream. No two events
of one thread overlap, and the last event ends at the iteration time. A full operator trace of a
large run (a 1T model on 64 stages has millions of operators) is cut to a window of micro-batches
or to layer-level events, and the trace says so in `otherData`."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

STREAM_ORDER = ("compute", "tp", "cp", "ep", "pp", "dp")
STREAM_NAMES = {"compute": "compute", "tp": "TP comm", "cp": "CP comm", "ep": "EP comm",
                "pp": "PP p2p", "dp": "DP comm"}
MAX_EVENTS = 300_000     # ~50 MB of JSON: more is a file nobody can open


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
        total += sum(1 for x in run.sends if _in_window(x[4], window)) + len(run.dp) + 2
    return total


def choose(fc, level: Optional[str] = None, window=None, limit: int = MAX_EVENTS):
    """(level, window, note): the detail that keeps the trace under `limit` events."""
    if level is not None or window is not None:
        return level or "op", window, ""
    if count(fc, "op") <= limit:
        return "op", None, ""
    m = fc.job.microbatches
    per_mb = max(1, count(fc, "op", (0, 1)))
    mbs = max(1, min(m, limit // per_mb))
    if count(fc, "op", (0, mbs)) <= limit and mbs >= 1:
        return "op", (0, mbs), (f"operator events for micro-batches 0-{mbs - 1} of {m} "
                                f"(--window 0:{m} for all)")
    if count(fc, "layer") <= limit:
        return "layer", None, "layer-level events (use --window for operators)"
    return "block", None, "one event per pipeline block (use --window for operators)"


def events(fc, window=None, level: str = "op") -> Iterator[Event]:
    low = fc.lowering
    for i, run in enumerate(fc.runs):
        for b in run.blocks:
            if not _in_window(b.mb, window):
                continue
            tpl = low.template(i, b.chunk, b.phase)
            label = f"{'fwd' if b.phase == 'F' else 'bwd'} mb{b.mb}" + (
                f" chunk{b.chunk}" if fc.job.parallel.v > 1 else "")
            if level == "block":
                yield Event(i, "compute", label, "forward" if b.phase == "F" else "backward",
                            b.start, b.end, (("micro_batch", b.mb), ("chunk", b.chunk)))
                continue
            if level == "layer":
                yield from _layers(i, b, tpl, label)
                continue
            for o in tpl.ops:
                if o.dur <= 0:
                    continue
                args = [("micro_batch", b.mb), ("layer", o.layer)]
                if o.flops:
                    args.append(("flops", o.flops))
                if o.nbytes:
                    args.append(("bytes", o.nbytes))
                if o.group:
                    args.append(("group", f"{o.group} ({low.lay[o.group].n} ranks)"))
                if o.shape:
                    args.append(("shape", o.shape))
                yield Event(i, o.stream, o.name, o.cat, b.start + o.start, b.start + o.end,
                            tuple(args))
        for s, e, ph, c, j in run.sends:
            if _in_window(j, window):
                yield Event(i, "pp", f"send {'act' if ph == 'F' else 'grad'} mb{j}", "p2p", s, e,
                            (("micro_batch", j), ("group", "pp")))
        for s, e, params in run.dp:
            yield Event(i, "dp", "grad " + ("reduce-scatter" if fc.job.parallel.zero else
                                            "all-reduce"), "comm", s, e,
                        (("params", params), ("bytes", params * fc.job.grad_bytes),
                         ("group", f"dp ({low.lay['dp'].n} ranks)")))
        s, e = run.optimizer
        if e > s:
            yield Event(i, "compute", "optimizer step", "optimizer", s, e, ())
        s, e = run.gather
        if e > s:
            yield Event(i, "dp", "param all-gather", "comm", s, e, (("group", "dp"),))


def _layers(i, b, tpl, label) -> Iterator[Event]:
    """Compute merged per layer; communication kept per operator (it does not overlap)."""
    spans: Dict[int, List[float]] = {}
    for o in tpl.ops:
        if o.dur <= 0:
            continue
        if o.stream != "compute":
            yield Event(i, o.stream, o.name, o.cat, b.start + o.start, b.start + o.end,
                        (("micro_batch", b.mb), ("layer", o.layer)))
            continue
        lo_hi = spans.setdefault(o.layer, [o.start, o.end])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], o.start), max(lo_hi[1], o.end)
    for layer, (lo, hi) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        name = (f"layer {layer}" if layer >= 0 else "embedding/head") + f" {label}"
        yield Event(i, "compute", name, "forward" if b.phase == "F" else "backward",
                    b.start + lo, b.start + hi,
                    (("micro_batch", b.mb), ("layer", layer)))


def chrome_trace(fc, level: str = "op", window=None, note: str = "") -> dict:
    """The trace-event document (JSON object format, microseconds)."""
    out: List[dict] = []
    p = fc.job.parallel
    for i in range(p.pp):
        out.append({"ph": "M", "name": "process_name", "pid": i, "tid": 0,
                    "args": {"name": f"stage {i} (rank {i * p.tp * p.cp * p.dp})"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": i, "tid": 0,
                    "args": {"sort_index": i}})
        for k, s in enumerate(STREAM_ORDER):
            out.append({"ph": "M", "name": "thread_name", "pid": i, "tid": k,
                        "args": {"name": STREAM_NAMES[s]}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": i, "tid": k,
                        "args": {"sort_index": k}})
    tid = {s: k for k, s in enumerate(STREAM_ORDER)}
    for ev in events(fc, window, level):
        ts = round(ev.start * 1e6, 3)
        end = round(ev.end * 1e6, 3)
        out.append({"ph": "X", "name": ev.name, "cat": ev.cat, "pid": ev.stage,
                    "tid": tid[ev.stream], "ts": ts, "dur": round(end - ts, 3),
                    "args": {k: v for k, v in ev.args}})
    other = {"job": fc.job.name, "iteration_time_s": fc.iteration_time, "level": level,
             "window": list(window) if window else None}
    if note:
        other["note"] = note
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": other}


def write_trace(fc, path: str, level: Optional[str] = None, window=None) -> str:
    """Write the trace; returns a note when it had to be windowed or coarsened."""
    level, window, note = choose(fc, level, window)
    doc = chrome_trace(fc, level, window, note)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, separators=(",", ":"))
    return note


COLOURS = {"gemm": "#4C72B0", "attention": "#8172B2", "elementwise": "#64B5CD",
           "norm": "#8C8C8C", "recompute": "#CCB974", "comm": "#C44E52", "p2p": "#DD8452",
           "optimizer": "#55A868", "forward": "#4C72B0", "backward": "#8172B2"}


def plot(fc, path: str, window=None) -> None:
    """A Gantt chart of the iteration (needs matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    level = "op" if count(fc, "op", window) <= 60_000 else "layer" \
        if count(fc, "layer", window) <= 60_000 else "block"
    rows: Dict[Tuple[int, str], List[Tuple[float, float, str]]] = {}
    for ev in events(fc, window, level):
        rows.setdefault((ev.stage, ev.stream), []).append((ev.start, ev.end - ev.start, ev.cat))
    keys = sorted(rows, key=lambda k: (k[0], STREAM_ORDER.index(k[1])))
    fig, ax = plt.subplots(figsize=(14, max(3.0, 0.28 * len(keys) + 1.5)))
    for y, key in enumerate(keys):
        by_cat: Dict[str, list] = {}
        for s, d, cat in rows[key]:
            by_cat.setdefault(cat, []).append((s, d))
        for cat, bars in by_cat.items():
            ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=COLOURS.get(cat, "#999999"))
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([f"stage {s} {STREAM_NAMES[t]}" for s, t in keys], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(f"{fc.job.name}: {fc.iteration_time:.3f} s per iteration, MFU {fc.mfu:.1%}")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    seen = {cat for rs in rows.values() for _, _, cat in rs}
    ax.legend([h for h, c in zip(handles, COLOURS) if c in seen], [c for c in COLOURS if c in seen],
              loc="upper right", fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
