"""Compact per-rank logs, for clusters that do not keep full profiler traces: CSV with a header
row, or JSON Lines (one object per line), with the columns

    rank, iteration, phase, start_s, duration_s [, peer] [, op]

- `phase`: forward, backward, optimizer, compute, tp_comm, cp_comm, ep_comm, dp_comm, pp_comm,
  comm, memory or other; Megatron-LM's timer names are understood too (forward-compute,
  backward-compute, forward-send, forward-recv, backward-send, backward-recv, grads-all-reduce,
  grads-reduce-scatter, params-all-gather, optimizer, ...).
- `start_s`: seconds on the rank's clock (any epoch; hosts' clocks may differ), `duration_s`
  seconds, both finite and of magnitude at most 10^12 (MAX_SECONDS), the duration not
  negative; `rank` and `iteration` not negative either.
- `peer` (optional): the partner rank of a pipeline send or receive; `op` (optional): `send`,
  `recv` or a collective's name. With them the diagnosis matches each transfer's two ends; a
  collective named an all-reduce, reduce-scatter or all-gather (records.op_of; Megatron-LM's
  grads-all-reduce, grads-reduce-scatter, params-all-gather name theirs) is compared with its
  own kind.
- every value is a scalar (a JSON list or object is not a value), and `rank`, `iteration` and
  `peer` are whole numbers of magnitude at most 2^53 (MAX_WHOLE: beyond it a float64, which the
  columns are read as, no longer holds every whole number, and 2^63 no longer fits the int64
  columns).
One file may hold one rank or many. A bad row is skipped and reported (E784 with its line);
the rest of the file is still read."""
from __future__ import annotations

import csv
import io
import json
from collections import Counter
from typing import Dict, List, Optional, Tuple

import attrs
import numpy as np

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.line_ends import lines_of
from astral_dsl.observe.kineto import diag
from astral_dsl.observe.log_numbers import (MAX_SECONDS, MAX_WHOLE, SCALARS, SCALAR_TYPES,
                                            floats_of, ints_of, json_kind, rounded_to_max,
                                            seconds_of, whole_number)
from astral_dsl.observe.records import PHASE_INDEX, RankTrace, make, op_of
from astral_dsl.observe.relog import relogged, said, suspects
from astral_dsl.observe.text import printable

REQUIRED = ("rank", "iteration", "phase", "start_s", "duration_s")
# Megatron-LM timer names -> (phase, op)
ALIASES = {
    "forward-compute": ("forward", ""), "backward-compute": ("backward", ""),
    "forward-send": ("pp_comm", "send"), "forward-recv": ("pp_comm", "recv"),
    "backward-send": ("pp_comm", "send"), "backward-recv": ("pp_comm", "recv"),
    "forward-send-backward-recv": ("pp_comm", ""), "backward-send-forward-recv": ("pp_comm", ""),
    "grads-all-reduce": ("dp_comm", "all_reduce"),
    "grads-reduce-scatter": ("dp_comm", "reduce_scatter"),
    "params-all-gather": ("dp_comm", "all_gather"), "optimizer": ("optimizer", ""),
    "optimizer-inner-step": ("optimizer", ""), "embedding-grads-all-reduce": ("pp_comm", ""),
}
# Megatron-LM's compute timers (megatron/core/pipeline_parallel/schedules.py, `forward-compute`
# around forward_step, `backward-compute` around backward_step; NeMo, built on Megatron-Core,
# logs the same timers): wall time of the step on the rank, so the tensor-parallel collectives
# inside the layers and the wait for the slowest TP peer are in it. A log naming them measures
# "megatron" timers (RankTrace.timers).
WALL_TIMERS = frozenset(("forward-compute", "backward-compute"))


def timers_of(names) -> str:
    """What a log's compute rows measure, from its phase names (RankTrace.timers)."""
    return "megatron" if any(str(n or "").strip().lower() in WALL_TIMERS
                             for n in set(names)) else "compute"


def looks_like_csv(text: str) -> bool:
    first = lines_of(text.lstrip("\ufeff"), 1)[0].lower()
    return all(c in [x.strip() for x in first.split(",")] for c in ("rank", "phase"))


# a rank log's budget, counted on its text before a row is built (each costs about 700 bytes
# read: a 780 kB gzip log of 25 million rows took 17 GB, out of memory): 1,024 ranks' 100
# iterations of 8 phases in one file are 819,200 rows
MAX_ROWS = 4_000_000


def too_many_rows(path: str, text: str) -> Optional[Diagnostic]:
    """E781 for a log of more lines than MAX_ROWS (\n, \r\n or a lone \r each), else None."""
    lines = text.count("\n") + text.count("\r") - text.count("\r\n")
    if lines <= MAX_ROWS:
        return None
    return diag("E781", f"the rank log holds {lines:,} lines, more than the {MAX_ROWS:,} rows "
                        f"one file is read with (their memory): not read", path,
                "split the log by rank, or log fewer iterations per file")


def read_csv(path: str, text: str) -> Tuple[List[RankTrace], List[Diagnostic]]:
    too_many = too_many_rows(path, text)
    if too_many is not None:
        return [], [too_many]
    # newline="": csv reads a lone \r as a line end too (without it, a file of \r line ends
    # was one line, and csv's "new-line character seen in unquoted field" an E000)
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"), newline="")))
    header = [h.strip().lower() for h in (rows[0] if rows else [])]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        return [], [diag("E782", "the rank log's header lacks " + ", ".join(missing), path,
                         "the header row names: " + ", ".join(REQUIRED) + " [, peer, op]")]
    twice = [c for c in (*REQUIRED, "peer", "op") if header.count(c) > 1]
    if twice:       # the last one was read: a log whose ranks were all one rank's number
        at = [i + 1 for i, h in enumerate(header) if h == twice[0]]
        return [], [diag("E782", f"the rank log's header names `{twice[0]}` {len(at)} times "
                                 f"(columns {', '.join(map(str, at))}): which is the "
                                 f"`{twice[0]}` is not known", path,
                         "keep one column of each name: " + ", ".join(REQUIRED)
                         + " [, peer, op]")]
    body = [(n + 2, r) for n, r in enumerate(rows[1:]) if r]
    width = len(header)
    cols: Dict[str, list] = {}
    if all(len(r) == width for _, r in body):
        transposed = list(zip(*(r for _, r in body))) if body else [()] * width
        cols = {name: list(transposed[i]) for i, name in enumerate(header)}
        fast = _columns(path, [n for n, _ in body], cols)
        if fast is not None:
            return fast
    pos = {name: i for i, name in enumerate(header)}
    return _build(path, ((n, {k: r[i] if i < len(r) else "" for k, i in pos.items()})
                         for n, r in body))


def read_jsonl(path: str, text: str) -> Tuple[List[RankTrace], List[Diagnostic]]:
    too_many = too_many_rows(path, text)
    if too_many is not None:
        return [], [too_many]
    lines = [(n, line) for n, line in enumerate(lines_of(text), start=1) if line.strip()]
    try:
        objs = json.loads("[" + ",".join(line for _, line in lines) + "]",
                          object_pairs_hook=_once)
    except (ValueError, RecursionError):    # a bad line; one nested past the parser's depth
        objs = None
    if objs is not None and all(isinstance(o, dict) for o in objs):
        keys = set(REQUIRED) | {"peer", "op"}
        cols = {k: [o.get(k) for o in objs] for k in keys}
        fast = _columns(path, [n for n, _ in lines], cols)
        if fast is not None:
            return fast

    def rows():
        for n, line in lines:
            try:
                obj = json.loads(line, object_pairs_hook=_once)
            except (ValueError, RecursionError):
                yield n, None
                continue
            yield n, obj if isinstance(obj, (dict, _Twice)) else None
    return _build(path, rows())


class _Twice(str):
    """A JSON object naming a key twice (json keeps the last value, silently): why its row
    cannot be read."""


def _once(pairs):
    """A JSON object's pairs -> its dict, or _Twice when a key comes twice."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    twice = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
    return _Twice(f"the key `{printable(twice)}` is given twice: which value is meant is "
                  f"not known")


def columns_to_traces(path: str, cols) -> Tuple[List[RankTrace], List[Diagnostic]]:
    """Rows given as columns (rank, iteration, phase, start_s, duration_s, peer, op) -> one
    trace per rank, as reading them from a file would give (every row must be good)."""
    out = _columns(path, list(range(2, len(cols["rank"]) + 2)), cols)
    if out is None:
        raise ValueError("a row of the columns cannot be read")
    return out


def _columns(path: str, line_numbers, cols) -> "Tuple[List[RankTrace], List[Diagnostic]] | None":
    """All rows at once (numpy); None when any row is bad, so that the row-by-row reader can
    say which."""
    n = len(line_numbers)
    # each column's types, found once (the numbers' readers check them again otherwise)
    kinds = {k: set(map(type, c)) for k, c in cols.items() if c is not None}
    if any(not kind <= SCALAR_TYPES for kind in kinds.values()):
        return None                 # a list or an object: the row-by-row reader names the row
    try:
        rank = ints_of(cols["rank"], kinds.get("rank"))
        it = ints_of(cols["iteration"], kinds.get("iteration"))
        start = floats_of(cols["start_s"], kinds.get("start_s"))
        dur = floats_of(cols["duration_s"], kinds.get("duration_s"))
        peers = cols.get("peer") or [None] * n
        peer = floats_of([-1 if v in (None, "") else v for v in peers])
    except (ValueError, TypeError):
        return None
    if not (np.isfinite(start).all() and np.isfinite(dur).all() and (dur >= 0).all()
            and (np.abs(start) <= MAX_SECONDS).all() and (dur <= MAX_SECONDS).all()
            and (rank >= 0).all() and (it >= 0).all() and np.isfinite(peer).all()
            and (peer == np.round(peer)).all() and (np.abs(peer) <= MAX_WHOLE).all()
            and not rounded_to_max(peers, peer)):
        return None
    unknown: Dict[str, int] = {}
    phase = np.empty(n, dtype=np.int8)
    op = np.zeros(n, dtype=np.int8)
    ops = cols.get("op") or [""] * n
    # each distinct (phase, op) read once, in the order the rows first name them; the rows
    # then take their codes by one index each (not two numpy item assignments a row)
    first: Dict[Tuple[object, object], int] = dict.fromkeys(zip(cols["phase"], ops), 0)
    codes = np.empty((len(first), 2), dtype=np.int8)
    for j, (name, o) in enumerate(first):
        first[(name, o)] = j
        codes[j] = _phase_op(str(name or "").strip().lower(), str(o or "").strip().lower(),
                             unknown)
    at = np.fromiter(map(first.__getitem__, zip(cols["phase"], ops)), np.intp, n)
    phase[:], op[:] = codes[at, 0], codes[at, 1]
    if unknown:                 # counted in one pass (a pass per name was quadratic)
        counts = Counter(str(v or "").strip().lower() for v in cols["phase"])
        for name in unknown:
            unknown[name] = counts[name]
    order = np.lexsort((start, rank))
    rank, it, phase, start, dur, peer, op = (a[order] for a in (rank, it, phase, start, dur,
                                                                  peer.astype(np.int64), op))
    lines = np.asarray(line_numbers)[order]
    keep, repeated = _repeats(lines, rank, it, phase, start, dur, peer, op)
    if repeated is not None:
        rank, it, phase, start, dur, peer, op, lines = (
            a[keep] for a in (rank, it, phase, start, dur, peer, op, lines))
        n = int(keep.sum())
    keep, twice = np.ones(n, dtype=bool), []
    for r in suspects(rank, it, phase).tolist():          # a restart's ranks, if any
        lo, hi = np.searchsorted(rank, r), np.searchsorted(rank, r, side="right")
        mask, found = relogged(r, lines[lo:hi], it[lo:hi], phase[lo:hi])
        if mask is not None:
            keep[lo:hi] = mask
            twice.append(found)
    if twice:
        rank, it, phase, start, dur, peer, op = (a[keep] for a in (rank, it, phase, start, dur,
                                                                    peer, op))
        n = int(keep.sum())
    bounds = np.flatnonzero(np.diff(rank)) + 1
    timers = timers_of(cols["phase"])
    traces = []
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, n]):
        if hi <= lo:
            continue
        traces.append(RankTrace(int(rank[lo]), None, path, "log", it[lo:hi], phase[lo:hi],
                                start[lo:hi], dur[lo:hi], peer[lo:hi], op[lo:hi],
                                np.full(hi - lo, -1, dtype=np.int64), (), "", "log", timers))
    diags = _unknown_phases(path, unknown) + _repeated(path, repeated) + said(path, twice)
    if not traces:
        diags.append(diag("E788", "the rank log has no rows", path))
    return traces, diags


def _repeats(lines, *cols):
    """The rows (sorted by rank and start, `lines` their line numbers) that repeat an earlier
    row in every column: (the mask of the rows kept, None or (count, first line, the line it
    repeats)). Repeats share a rank and a start, so only runs of those are compared."""
    rank, start = cols[0], cols[3]
    same = (rank[1:] == rank[:-1]) & (start[1:] == start[:-1])
    if not same.any():
        return None, None
    keep = np.ones(rank.size, dtype=bool)
    seen: Dict[tuple, int] = {}
    for i in sorted({int(j) for j in np.flatnonzero(same)} |
                    {int(j) + 1 for j in np.flatnonzero(same)}):
        key = tuple(c[i].item() for c in cols)
        first = seen.setdefault(key, int(lines[i]))
        if first != int(lines[i]):
            keep[i] = False
    if keep.all():
        return None, None
    dropped = np.flatnonzero(~keep)
    at = int(dropped[np.argmin(lines[dropped])])
    key = tuple(c[at].item() for c in cols)
    return keep, (int(dropped.size), int(lines[at]), seen[key])


def _repeated(path: str, repeated) -> List[Diagnostic]:
    """W786 for rows that repeat an earlier row exactly (kept once)."""
    if repeated is None:
        return []
    count, line, first = repeated
    return [diag("W786", f"{count:,} row(s) of the rank log repeat an earlier row in every "
                         f"column and are read once; the first, line {line}, repeats line "
                         f"{first}", path,
                 "a log appended or collected twice into one file: one rank cannot run the "
                 "same phase twice from the same moment")]


def _phase_op(name: str, op: str, unknown) -> Tuple[int, int]:
    if name in ALIASES:
        name, alias_op = ALIASES[name]
        op = op or alias_op
    phase = PHASE_INDEX.get(name)
    if phase is None:
        unknown[name] = unknown.get(name, 0) + 1
        phase = PHASE_INDEX["other"]
    return phase, op_of(op)


UNKNOWN_SHOWN = 8       # named one by one, the rest in one W784 (100,000 made as many)


def _unknown_phases(path: str, unknown: Dict[str, int]) -> List[Diagnostic]:
    """W784 for each phase name not known, with its count of rows (past UNKNOWN_SHOWN, one)."""
    hint = "phases: " + ", ".join(PHASE_INDEX)
    names = sorted(unknown.items())
    out = [diag("W784", f"phase `{printable(name)}` is not known ({count} row(s)): counted as "
                        f"`other`, neither compute nor communication", path, hint)
           for name, count in names[:UNKNOWN_SHOWN]]
    if len(names) > UNKNOWN_SHOWN:
        rest = names[UNKNOWN_SHOWN:]
        out.append(diag("W784", f"{len(rest):,} more phases are not known "
                                f"({sum(c for _, c in rest):,} row(s)): counted as `other`, "
                                f"neither compute nor communication", path, hint))
    return out


def _build(path: str, rows) -> Tuple[List[RankTrace], List[Diagnostic]]:
    per_rank: Dict[int, list] = {}
    seen: Dict[tuple, int] = {}
    repeats: List[Tuple[int, int]] = []
    bad: List[Tuple[int, str]] = []
    unknown: Dict[str, int] = {}
    names = set()
    for line, row in rows:
        if row is None or isinstance(row, _Twice):
            bad.append((line, row or "not a JSON object"))
            continue
        names.add(str(row.get("phase", "")))
        parsed = _row(row, unknown)
        if isinstance(parsed, str):
            bad.append((line, parsed))
            continue
        rank, rec = parsed
        first = seen.setdefault((rank, rec), line)
        if first != line:
            repeats.append((line, first))
            continue
        per_rank.setdefault(rank, []).append(rec + (line,))
    diags: List[Diagnostic] = []
    if bad:
        line, why = bad[0]
        diags.append(diag("E784", f"{len(bad)} row(s) of the rank log cannot be read and are "
                                  f"skipped; the first, line {line}: {why}", path,
                          "columns: rank, iteration, phase, start_s, duration_s [, peer, op]"))
    diags += _unknown_phases(path, unknown)
    diags += _repeated(path, (len(repeats),) + repeats[0] if repeats else None)
    if not per_rank and not bad:
        diags.append(diag("E788", "the rank log has no rows", path))
    timers = timers_of(names)
    traces, twice = [], []
    for rank, recs in sorted(per_rank.items()):
        recs.sort(key=lambda rec: rec[2])                   # in time order (stable)
        mask, found = relogged(rank, *(np.array([rec[k] for rec in recs]) for k in (7, 0, 1)))
        if found:
            twice.append(found)
        rows = [rec[:7] for rec, kept in zip(recs, mask if mask is not None else
                                             [True] * len(recs)) if kept]
        traces.append(attrs.evolve(make(rank, None, path, "log", rows, iterations_from="log"),
                                   timers=timers))
    return traces, diags + said(path, twice)


def _row(row, unknown) -> "Tuple[int, tuple] | str":
    try:
        rank = whole_number(row.get("rank"), "rank")
        it = whole_number(row.get("iteration"), "iteration")
        start = seconds_of(row.get("start_s"), "start_s")
        dur = seconds_of(row.get("duration_s"), "duration_s")
    except ValueError as exc:
        return str(exc)
    if rank < 0:
        return f"rank {rank} is negative"
    if it < 0:
        return f"iteration {it} is negative"
    if dur < 0:
        return f"duration_s {dur} is negative"
    odd = next((k for k, v in row.items() if k in REQUIRED + ("peer", "op")
                and type(v) not in SCALARS), None)
    if odd is not None:
        return f"`{odd}` is not a single value: a JSON {json_kind(row[odd])}"
    phase, op = _phase_op(str(row.get("phase", "")).strip().lower(),
                          str(row.get("op", "") or "").strip().lower(), unknown)
    peer = row.get("peer")
    peer_i = -1
    if peer not in (None, ""):
        try:
            peer_i = whole_number(peer, "peer")
        except ValueError as exc:
            return str(exc)
    return rank, (it, phase, start, dur, peer_i, op, -1)


__all__ = ["ALIASES", "REQUIRED", "WALL_TIMERS", "timers_of", "looks_like_csv",
           "read_csv", "read_jsonl"]
