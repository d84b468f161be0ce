"""A forecast's timeline as Chrome trace events (JSON object format, microseconds) for
ui.perfetto.dev and chrome://tracing: one process per pipeline stage (its representative rank),
one thread per stream that has events. A full operator trace of a large run (a 1T model on 64
stages has millions of operators) is cut to a window of micro-batches or to layer-level events,
and the trace says so in `otherData.note`. A window or level asked for explicitly may hold up to
MAX_ASKED_EVENTS; beyond, TraceTooLarge says how many events it would hold. The file is written
event by event: its size, not the process's memory, grows with the trace."""
from __future__ import annotations

import json
from typing import Iterator, List, Optional

from astral_dsl.seer.timeline import STREAM_NAMES, STREAM_ORDER, count, describe, events, \
    timeline
from astral_dsl.outputs.whole import whole

MAX_EVENTS = 300_000          # ~50 MB of JSON: more is a file nobody can open
MAX_ASKED_EVENTS = 3_000_000  # ~500 MB of JSON, about what Perfetto's UI loads


class TraceTooLarge(ValueError):
    """The trace asked for would exceed MAX_ASKED_EVENTS; `hint` names a window or level that
    stays within it (E704's hint)."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


def within(fc, level: str, window, limit: int) -> str:
    """A hint for a trace of `window` at `level` beyond `limit` events: the longest window from
    the same first micro-batch that stays within it at that level (count() is per stage, not
    per event: cheap), and the coarser levels that hold the whole window."""
    lo, hi = window if window is not None else (0, fc.job.microbatches)
    k = hi - lo
    if k > 1:      # one micro-batch's events, each further one's: the window that fits
        one = count(fc, level, (lo, lo + 1))
        per = max(1, count(fc, level, (lo, lo + 2)) - one)
        k = max(1, min(k - 1, 1 + (limit - one) // per))
        while k > 1 and count(fc, level, (lo, lo + k)) > limit:     # (a ragged schedule)
            k -= 1
    fits = count(fc, level, (lo, lo + k))
    out = [f"--window {lo}:{lo + k} holds {fits:,} events at --level {level}"] \
        if fits <= limit else []
    for coarser in ("layer", "block")[("op", "layer", "block").index(level):]:
        n = count(fc, coarser, window)
        if coarser != level and n <= limit:
            out.append(f"--level {coarser} holds {n:,} events of "
                       + ("the window asked for" if window is not None else "the iteration"))
            break
    return "; ".join(out) or "even one micro-batch at --level block is beyond the limit"


def choose(fc, level: Optional[str] = None, window=None, limit: int = MAX_EVENTS):
    """(level, window, note): the detail that keeps the trace under `limit` events; the level
    and window asked for, when they stay within MAX_ASKED_EVENTS."""
    if level is not None or window is not None:
        n = count(fc, level or "op", window)
        if n > MAX_ASKED_EVENTS:
            raise TraceTooLarge(
                f"the trace of {'--window ' + ':'.join(map(str, window)) if window else 'all'}"
                f" at --level {level or 'op'} would hold {n:,} events (about {n * 165 / 1e9:.1f}"
                f" GB of JSON), beyond the limit of {MAX_ASKED_EVENTS:,}: choose a smaller "
                f"--window or a coarser --level (layer, block)",
                within(fc, level or "op", window, MAX_ASKED_EVENTS))
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
    """The trace-event document (JSON object format, microseconds) that write_trace writes. A
    stream with no event on a stage gets no thread there."""
    used: set = set()
    body = list(_body(fc, level, window, used))
    return {"traceEvents": body + _head(fc, used), "displayTimeUnit": "ms",
            "otherData": _other(fc, level, window, note)}


def _body(fc, level, window, used: set) -> Iterator[dict]:
    tid = {s: k for k, s in enumerate(STREAM_ORDER)}
    for ev in events(fc, window, level):
        ts = round(ev.start * 1e6, 3)
        end = round(ev.end * 1e6, 3)
        used.add((ev.stage, ev.stream))
        yield {"ph": "X", "name": ev.name, "cat": ev.cat, "pid": ev.stage,
               "tid": tid[ev.stream], "ts": ts, "dur": round(end - ts, 3),
               "args": {k: v for k, v in ev.args}}


def _head(fc, used: set) -> List[dict]:
    from astral_dsl.seer.ranks import RankOrder

    tid = {s: k for k, s in enumerate(STREAM_ORDER)}
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
    return head


def _other(fc, level, window, note) -> dict:
    other = {"job": fc.job.name, "iteration_time_s": fc.iteration_time,
             "calibration": fc.envelope().as_json(),       # how far to trust the time
             "level": level, "window": list(window) if window else None}
    if fc.scenario is not None:         # a what-if's timeline says so (forecast --scenario)
        other["scenario"] = fc.scenario[0]
    if note:
        other["note"] = note
    return other


def write_trace(fc, path: str, level: Optional[str] = None, window=None) -> str:
    """Write the trace; returns a note when it had to be windowed or coarsened. Raises
    TraceTooLarge (nothing written) and OSError. The events are written as they are made; the
    metadata events that name the threads (which need every event seen) follow them: a trace's
    events may come in any order. The bytes are those of `chrome_trace`'s document dumped as
    compact JSON; each event's text is made from the timeline's columns and the parts its
    operator shares with every block (test_seer.py compares)."""
    level, window, note = choose(fc, level, window)
    dump = json.JSONEncoder(separators=(",", ":")).encode
    tl = timeline(fc, window, level)
    used = _used(tl)
    with whole(path, "utf-8") as fh:     # whole or not at all: Ctrl-C left half a trace
        fh.write('{"traceEvents":[')
        first = True
        for text in _texts(tl, dump):
            fh.write(text if first else "," + text)
            first = False
        for ev in _head(fc, used):
            fh.write(("" if first else ",") + dump(ev))
            first = False
        fh.write('],"displayTimeUnit":"ms","otherData":' + dump(_other(fc, level, window, note))
                 + "}")
    return note


def _used(tl) -> set:
    """(stage, stream) of every event of the timeline."""
    streams = [k.stream for k in tl.kinds]
    return {(i, streams[k]) for i, k in set(zip(tl.stage.tolist(), tl.kind.tolist()))}


_BATCH = 4096


def _texts(tl, dump) -> Iterator[str]:
    """The JSON text of each event of `tl` (what `dump` makes of _body's dict), in batches of
    rows joined by commas."""
    tid = {s: k for k, s in enumerate(STREAM_ORDER)}
    # per kind: the text before the process id, between the thread id and the times, and, for
    # the forms whose arguments are constant, the arguments
    heads, tids, fixed = [], [], []
    for kind in tl.kinds:
        named = kind.form not in ("layer", "block")
        heads.append('{"ph":"X","name":' + dump(kind.name) + ',"cat":' + dump(kind.cat)
                     + ',"pid":' if named else None)
        tids.append(f',"tid":{tid[kind.stream]},"ts":')
        if kind.form == "fixed":
            fixed.append(dump(dict(kind.args)) + "}")
        elif kind.form == "op":
            fixed.append("".join("," + dump(k) + ":" + dump(v) for k, v in kind.args) + "}}")
        else:
            fixed.append("}}")
    kinds, v = tl.kinds, tl.v
    n = len(tl)
    for lo in range(0, n, _BATCH):
        hi = min(n, lo + _BATCH)
        out = []
        for i, k, s, e, mb, c, first in zip(tl.stage[lo:hi].tolist(), tl.kind[lo:hi].tolist(),
                                             tl.start[lo:hi].tolist(), tl.end[lo:hi].tolist(),
                                             tl.mb[lo:hi].tolist(), tl.chunk[lo:hi].tolist(),
                                             tl.first[lo:hi].tolist()):
            ts = round(s * 1e6, 3)
            dur = round(round(e * 1e6, 3) - ts, 3)
            times = _number(ts) + ',"dur":' + _number(dur) + ',"args":'
            kind = kinds[k]
            form = kind.form
            if form == "fixed":
                out.append(heads[k] + str(i) + tids[k] + times + fixed[k])
            elif form == "op" or form == "comm":
                layer = kind.layer + first if kind.layer >= 0 else kind.layer
                out.append(heads[k] + str(i) + tids[k] + times + '{"micro_batch":' + str(mb)
                           + ',"layer":' + str(layer) + fixed[k])
            else:
                name, args = describe(kind, mb, c, first, v)
                out.append('{"ph":"X","name":' + dump(name) + ',"cat":' + dump(kind.cat)
                           + ',"pid":' + str(i) + tids[k] + times + dump(dict(args)) + "}")
        yield ",".join(out)


def _number(x: float) -> str:
    """A float as json writes it."""
    return float.__repr__(x) if x - x == 0 else json.dumps(x)
