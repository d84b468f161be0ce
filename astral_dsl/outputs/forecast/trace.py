"""A forecast's timeline as Chrome trace events (JSON object format, microseconds) for
ui.perfetto.dev and chrome://tracing: one process per pipeline stage (its representative rank),
one thread per stream that has events. A full operator trace of a large run (a 1T model on 64
stages has millions of operators) is cut to a window of micro-batches or to layer-level events,
and the trace says so in `otherData.note`."""
from __future__ import annotations

import json
from typing import List, Optional

from astral_dsl.seer.timeline import STREAM_NAMES, STREAM_ORDER, count, events

MAX_EVENTS = 300_000     # ~50 MB of JSON: more is a file nobody can open


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


def chrome_trace(fc, level: str = "op", window=None, note: str = "") -> dict:
    """The trace-event document (JSON object format, microseconds). A stream with no event on a
    stage gets no thread there."""
    from astral_dsl.seer.ranks import RankOrder

    tid = {s: k for k, s in enumerate(STREAM_ORDER)}
    body: List[dict] = []
    used = set()
    for ev in events(fc, window, level):
        ts = round(ev.start * 1e6, 3)
        end = round(ev.end * 1e6, 3)
        used.add((ev.stage, ev.stream))
        body.append({"ph": "X", "name": ev.name, "cat": ev.cat, "pid": ev.stage,
                     "tid": tid[ev.stream], "ts": ts, "dur": round(end - ts, 3),
                     "args": {k: v for k, v in ev.args}})
    ranks = RankOrder(fc.job.parallel)
    head: List[dict] = []
    for i in range(fc.job.parallel.pp):
        head.append({"ph": "M", "name": "process_name", "pid": i, "tid": 0,
                     "args": {"name": f"stage {i} (rank {ranks.rank(pp=i)})"}})
        head.append({"ph": "M", "name": "process_sort_index", "pid": i, "tid": 0,
                     "args": {"sort_index": i}})
        for s in STREAM_ORDER:
            if (i, s) not in used:
                continue
            head.append({"ph": "M", "name": "thread_name", "pid": i, "tid": tid[s],
                         "args": {"name": STREAM_NAMES[s]}})
            head.append({"ph": "M", "name": "thread_sort_index", "pid": i, "tid": tid[s],
                         "args": {"sort_index": tid[s]}})
    other = {"job": fc.job.name, "iteration_time_s": fc.iteration_time, "level": level,
             "window": list(window) if window else None}
    if note:
        other["note"] = note
    return {"traceEvents": head + body, "displayTimeUnit": "ms", "otherData": other}


def write_trace(fc, path: str, level: Optional[str] = None, window=None) -> str:
    """Write the trace; returns a note when it had to be windowed or coarsened."""
    level, window, note = choose(fc, level, window)
    doc = chrome_trace(fc, level, window, note)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, separators=(",", ":"))
    return note


