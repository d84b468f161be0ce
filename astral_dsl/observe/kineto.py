"""PyTorch profiler (Kineto) traces: Chrome trace-event JSON, one file per rank.

What is read (the documented trace format: `traceEvents` of complete events, `ph = "X"`, `ts` and
`dur` in microseconds; PyTorch's `distributedInfo` and `deviceProperties`):
- rank and world size from `distributedInfo` (else a `rank-N` / `rank_N` / `rankN` in the file
  name, with a warning), its process groups from `pg_config`;
- GPU work: events with `cat` `kernel` (and `gpu_memcpy` / `gpu_memset` as memory copies). A
  kernel whose name starts with `nccl` is communication; its phase comes from the process group
  it runs in (`Process Group Description` / `Process Group Name` / `Process Group Ranks`
  arguments, as PyTorch records them: Megatron-Core's group names such as
  TENSOR_MODEL_PARALLEL_GROUP, or the rank map later); a `Collective name` of `send` / `recv`
  with a `Src Rank` / `Dst Rank` marks a pipeline transfer and its peer (the peer's rank within
  the process group, as PyTorch records it: the global rank at that index of `Process Group
  Ranks`, kernels.py). DeepEP's dispatch and
  combine kernels (`deep_ep::...`, no NCCL kernels) are EP exchanges (kernels.py). Every other
  kernel is compute.
- iterations: the CPU-side `ProfilerStep#N` annotations; a kernel belongs to the step during which
  it was launched (its `cuda_runtime` launch, matched by `correlation`), as in
  HolisticTraceAnalysis. Without ProfilerStep annotations the iteration is the trace's repeating
  pattern of kernels (the shortest period under which the kernel names repeat), cut at the
  largest idle gap at or before the first collective (so that every rank cuts alike).

The events, decoded by msgspec against a schema of the fields read (tracedoc.py), become
columns (kernels.py) without a Python object per kernel past that decode. Errors never raise:
`read` returns (trace or None, diagnostics)."""
from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional, Tuple

import numpy as np

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.observe import kernels, tracedoc
from astral_dsl.observe.kernels import as_int, as_ranks, group_kind
from astral_dsl.observe.period import find as find_period
from astral_dsl.observe.records import ProcessGroup, RankTrace
from astral_dsl.observe.text import printable

US = 1e-6
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


def diag(code: str, message: str, file: str, hint: Optional[str] = None,
         severity: Optional[Severity] = None) -> Diagnostic:
    sev = severity or (Severity.ERROR if code.startswith("E") else Severity.WARNING)
    return Diagnostic(code, sev, message, None, hint, file=file)


def looks_like_trace(doc) -> bool:
    return isinstance(doc, tracedoc.TraceDoc) or \
        isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)


def read(path: str, doc) -> Tuple[Optional[RankTrace], List[Diagnostic]]:
    """A trace document (a `tracedoc.TraceDoc`, or a fully parsed dict) -> the rank's
    records."""
    if isinstance(doc, dict):
        doc = tracedoc.from_dict(doc)
    diags: List[Diagnostic] = []
    info = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else {}
    said = info.get("rank")
    rank = as_int(said)
    world, bad_world = _world(info.get("world_size"))
    if bad_world:
        diags.append(diag("W785", f"`distributedInfo.world_size` is {bad_world}, not a world "
                                  f"size (a whole number from 1 to {MAX_WORLD:,}): the trace "
                                  f"is not checked against the job's world size", path,
                          "the trace's `distributedInfo` is damaged: check it is this job's"))
    if rank is not None and not 0 <= rank < MAX_WORLD:
        # not a rank (negative, or past c10d's int: a 401-digit rank was printed whole in
        # E786): as if unsaid, and said so below
        rank = None
    if rank is None:
        # a value that is not a rank (negative, fractional, text): named, not taken
        bad = "" if said is None else f"`distributedInfo.rank` is {_shown(said)}, not a rank"
        m = _RANK_IN_NAME.search(os.path.basename(path))
        if m is None:
            return None, [diag("E783", "the trace does not say which rank it is: "
                                       + (f"{bad}," if bad else "no `distributedInfo.rank`")
                                       + " and no `rank-N` in the file name", path,
                               "record with torch.distributed initialised, or name the "
                               "file rank-N.json")]
        digits = m.group(1).lstrip("0") or "0"
        if len(digits) > len(str(MAX_WORLD)) or int(digits) >= MAX_WORLD:
            return None, [diag("E783", f"the trace does not say which rank it is: "
                                       f"{bad + ', and ' if bad else ''}the file name's rank "
                                       f"{digits[:20]}{'...' if len(digits) > 20 else ''} is "
                                       f"past any world size ({MAX_WORLD:,})", path,
                               "name the file rank-N.json with the trace's own rank")]
        rank = int(digits)
        # the rank is the file name's (the diagnostic names the file): said without it, so
        # that a job's traces alike are said once (load.said_once), not once per rank
        diags.append(diag("W783", f"{bad or 'no `distributedInfo` in the trace'}: the rank is "
                                  f"taken from the file name (`rank-N`)", path))
    groups = list(_groups(info.get("pg_config")))
    group_index: Dict[Tuple, int] = {(g.name, g.ranks): i for i, g in enumerate(groups)}
    scan = kernels.from_events(doc.traceEvents, groups, group_index)
    if scan.skipped:
        diags.append(diag("E784", f"{scan.skipped} GPU kernel or ProfilerStep event(s) of the "
                                  f"trace cannot be read and are skipped; one of them, "
                                  f"{scan.skipped_why}", path,
                          "a complete event's `ts` and `dur` are microseconds: finite numbers, "
                          "the duration not negative (the trace is damaged)"))
    if not len(scan.ts):
        return None, diags + [diag("E788", "the trace holds no GPU kernel: nothing to compare",
                                   path, "profile with ProfilerActivity.CUDA")]
    ts, dur, steps = scan.ts, scan.dur, scan.steps
    if steps:
        assigned = _by_steps(ts, scan.corr, steps, scan.launches)
        source = "ProfilerStep"
    else:
        assigned = _by_pattern(scan.names, ts, dur, scan.code >= kernels.FIRST_NCCL)
        source = "pattern"
        if assigned is None:
            return None, diags + [diag(
                "E788", "the trace has no ProfilerStep annotations and its kernels do not "
                        "repeat: its iterations cannot be told apart", path,
                "call prof.step() once per iteration (torch.profiler.schedule)")]
    rows_phase, rows_peer, rows_op, rows_group = scan.table[scan.code].T
    keep = assigned >= 0
    if not keep.any():
        return None, diags + [diag("E788", "no GPU kernel of the trace falls in a profiled "
                                           "iteration", path)]
    order = np.argsort(ts[keep], kind="stable")
    cols = [assigned[keep], rows_phase.astype(np.int8)[keep], ts[keep] * US, dur[keep] * US,
            rows_peer[keep], rows_op.astype(np.int8)[keep], rows_group[keep]]
    it, ph, st, du, pe, op, gr = (c[order] for c in cols)
    ids: Dict[str, int] = {}
    names = scan.names
    kernel = np.array([ids.setdefault(names[i], len(ids))
                       for i in np.flatnonzero(keep)[order].tolist()], dtype=np.int32)
    trace = RankTrace(rank, world, path, "kineto", it.astype(np.int64), ph, st, du, pe, op, gr,
                      tuple(groups), _device(doc.deviceProperties, scan.devices), source,
                      kernel=kernel, kernel_names=tuple(ids))
    for n in _empty_steps(steps, trace):
        diags.append(diag("W788", f"iteration {n} of rank {rank} has no GPU kernel: it is left "
                                  f"out", path))
    return trace, diags


# c10d's ProcessGroup keeps its size in a C int (torch/csrc/distributed/c10d/ProcessGroup.hpp:
# `int getSize()`): no PyTorch job has more ranks
MAX_WORLD = 2 ** 31 - 1


def _world(value) -> Tuple[Optional[int], str]:
    """(the world size, or None when unsaid or not one; the value shown when it is not one)."""
    if value is None:
        return None, ""
    world = as_int(value)
    if world is None or not 1 <= world <= MAX_WORLD:
        return None, _shown(value)
    return world, ""


def _shown(value) -> str:
    """A JSON value as a message shows it: at most 40 characters."""
    try:
        text = printable(json.dumps(value))
    except (TypeError, ValueError):       # not JSON's (never from a parsed file)
        text = printable(repr(value))
    return text if len(text) <= 40 else text[:37] + "..."


def _groups(config) -> Tuple[ProcessGroup, ...]:
    out = []
    if isinstance(config, list):
        for g in config:
            if isinstance(g, dict):
                out.append(ProcessGroup(str(g.get("pg_name", "")), str(g.get("pg_desc", "")),
                                        as_ranks(g.get("ranks"))))
    return tuple(out)


def _by_steps(ts: np.ndarray, correlations, steps, launches) -> np.ndarray:
    """Per kernel: the ProfilerStep during which it was launched (its launch's CPU time, else
    its own start), -1 outside every step."""
    launch = np.fromiter(map(launches.get, correlations, ts.tolist()), dtype=np.float64,
                         count=len(correlations))
    starts = np.array([s for s, _, _ in steps])
    ends = np.array([e for _, e, _ in steps])
    numbers = np.array([n for _, _, n in steps])
    k = np.searchsorted(starts, launch, side="right") - 1
    inside = (k >= 0) & (launch < ends[np.maximum(k, 0)])
    return np.where(inside, numbers[np.maximum(k, 0)], -1)


def _by_pattern(names, ts: np.ndarray, dur: np.ndarray,
                comm: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
    """The iteration of each kernel (-1 before the first): iterations as the repeating pattern
    of kernel names, the shortest period p under which at least 90 % of the names repeat, with
    two or more repetitions (period.py finds it), cut where the idle gap before a kernel is
    largest on average over the whole repetitions (the step boundary: optimizer, then data
    loading; the first repetition alone, a GC pause in it, had decided), but never after the
    trace's first communication kernel (`comm`: per kernel, in file order).

    Each rank's trace is cut on its own: where kernels run back to back no gap marks the step
    boundary, and the largest gap on average falls at another place on every rank. The
    collectives are what must be cut alike (the diagnosis matches the k-th collective of a
    group in an iteration across its members): cut at or before its first collective, every
    rank's first iteration starts at collective number 0 of each of its groups, and holds the
    same collectives as every other member's, when the traces start at the same step (as
    torch.profiler's schedule starts them on every rank)."""
    ids: Dict[str, int] = {}
    order = np.argsort(ts, kind="stable")
    seq = np.array([ids.setdefault(names[i], len(ids)) for i in order.tolist()],
                   dtype=np.int64)
    n = len(seq)
    period = find_period(seq)
    if period is None:
        return None
    t, d = ts[order], dur[order]
    gaps = np.zeros(n)
    gaps[1:] = t[1:] - np.maximum.accumulate(t + d)[:-1]
    whole = gaps[:n - n % period].reshape(-1, period)      # one row per whole repetition
    sums = whole.sum(axis=0)
    first = np.flatnonzero(comm[order]) if comm is not None else ()
    if len(first):
        sums = sums[:min(int(first[0]), period - 1) + 1]
    offset = int(np.argmax(sums))
    pos = np.arange(n)
    out = np.full(n, -1, dtype=np.int64)
    out[order] = np.where(pos >= offset, (pos - offset) // period, -1)
    return out


def _empty_steps(steps, trace: RankTrace) -> List[int]:
    present = set(trace.iterations)
    return [n for _, _, n in steps if n not in present]


def _device(props, ids) -> str:
    """The name of the first device the kernels ran on (an `id` that is a list or an object
    names none)."""
    if isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and (not ids or _among(p.get("id"), ids)):
                return printable(str(p.get("name", "")))
    return ""


def _among(value, ids) -> bool:
    try:
        return value in ids
    except TypeError:                       # unhashable
        return False


__all__ = ["diag", "group_kind", "looks_like_trace", "read"]
