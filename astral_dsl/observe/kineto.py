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
  with a `Src Rank` / `Dst Rank` marks a pipeline transfer and its peer. Every other kernel is
  compute.
- iterations: the CPU-side `ProfilerStep#N` annotations; a kernel belongs to the step during which
  it was launched (its `cuda_runtime` launch, matched by `correlation`), as in
  HolisticTraceAnalysis. Without ProfilerStep annotations the iteration is the trace's repeating
  pattern of kernels (the shortest period under which the kernel names repeat), cut at the
  largest idle gap.

Errors never raise past `read`: it returns (trace or None, diagnostics)."""
from __future__ import annotations

import json
import math
import os
import re
from itertools import compress
from operator import attrgetter
from typing import Dict, List, Optional, Tuple

import numpy as np

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.observe import tracedoc
from astral_dsl.observe.period import find as find_period
from astral_dsl.observe.tracedoc import PEER_ATTRS
from astral_dsl.observe.records import OP_INDEX, PHASE_INDEX, ProcessGroup, RankTrace

US = 1e-6
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
# words in a process group's description or name -> the parallel dimension (Megatron-Core's
# group names: TENSOR_MODEL_PARALLEL_GROUP, PIPELINE_MODEL_PARALLEL_GROUP, DATA_PARALLEL_GROUP,
# CONTEXT_PARALLEL_GROUP, EXPERT_MODEL_PARALLEL_GROUP, ...)
_KIND_WORDS = (("expert_model", "ep"), ("tensor", "tp"), ("pipeline", "pp"), ("context", "cp"),
               ("expert", "ep"), ("data", "dp"))
_SHORT = {"tp": "tp", "pp": "pp", "dp": "dp", "cp": "cp", "ep": "ep"}


def diag(code: str, message: str, file: str, hint: Optional[str] = None,
         severity: Optional[Severity] = None) -> Diagnostic:
    sev = severity or (Severity.ERROR if code.startswith("E") else Severity.WARNING)
    return Diagnostic(code, sev, message, None, hint, file=file)


def group_kind(desc: str, name: str = "") -> str:
    """The parallel dimension a process group serves, from its description or name ('' when
    the words do not say)."""
    for text in (desc, name):
        low = (text or "").lower()
        if low in _SHORT:
            return _SHORT[low]
        for word, kind in _KIND_WORDS:
            if word in low:
                return kind
    return ""


def looks_like_trace(doc) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)


def read(path: str, doc) -> Tuple[Optional[RankTrace], List[Diagnostic]]:
    """A trace document (a `tracedoc.TraceDoc`, or a fully parsed dict) -> the rank's
    records."""
    if isinstance(doc, dict):
        doc = tracedoc.from_dict(doc)
    diags: List[Diagnostic] = []
    info = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else {}
    rank = _int(info.get("rank"))
    world = _int(info.get("world_size"))
    if rank is None:
        m = _RANK_IN_NAME.search(os.path.basename(path))
        if m is None:
            return None, [diag("E783", "the trace does not say which rank it is: no "
                                       "`distributedInfo.rank` and no `rank-N` in the file name",
                               path, "record with torch.distributed initialised, or name the "
                                     "file rank-N.json")]
        rank = int(m.group(1))
        diags.append(diag("W783", f"no `distributedInfo` in the trace: rank {rank} taken from "
                                  f"the file name", path))
    groups = list(_groups(info.get("pg_config")))
    group_index: Dict[Tuple, int] = {(g.name, g.ranks): i for i, g in enumerate(groups)}
    kernels, launches, steps = _split(doc.traceEvents)
    scan = _Scan(kernels, groups, group_index)
    if not len(scan.ts):
        return None, diags + [diag("E788", "the trace holds no GPU kernel: nothing to compare",
                                   path, "profile with ProfilerActivity.CUDA")]
    ts, dur = scan.ts, scan.dur
    if steps:
        assigned = _by_steps(ts, scan.corr, steps, launches)
        source = "ProfilerStep"
    else:
        assigned = _by_pattern(scan.names, ts, dur)
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
    trace = RankTrace(rank, world, path, "kineto", it.astype(np.int64), ph, st, du, pe, op, gr,
                      tuple(groups), _device(doc.deviceProperties, scan.devices), source)
    for n in _empty_steps(steps, trace):
        diags.append(diag("W788", f"iteration {n} of rank {rank} has no GPU kernel: it is left "
                                  f"out", path))
    return trace, diags


_NUMBER = (int, float)
_NUMBER_TYPES = frozenset(_NUMBER)
_SCALAR = (int, float, str)


def _split(events):
    """The events read, by what they are: GPU kernels (complete events of a kernel category),
    launches (correlation -> CPU time of complete `cuda_runtime` events; the last one of a
    correlation counts) and ProfilerStep annotations (start, end, number), sorted.

    Thousands of events per trace: one pass sorts them by category (a category of another type
    than a string matches none), list comprehensions (the cheapest loop CPython has) take the
    fields."""
    kernels, runtime, annotations = [], [], []
    add_kernel, add_launch, add_annotation = kernels.append, runtime.append, annotations.append
    for e in events:            # compared, not hashed: the strings are new, hashing costs more
        c = e.cat
        if c == "kernel" or c == "gpu_memcpy" or c == "gpu_memset":
            add_kernel(e)
        elif c == "cuda_runtime":
            add_launch(e)
        elif c == "cpu_op" or c == "user_annotation":
            add_annotation(e)
    kernels = [e for e in kernels if e.ph == "X"]
    runtime = [e for e in runtime if e.ph == "X"]
    corr = [e.args.correlation for e in runtime]
    ts = [e.ts for e in runtime]
    if not (set(map(type, corr)) <= {int} and set(map(type, ts)) <= _NUMBER_TYPES):
        keep = [type(c) is int and type(t) in _NUMBER for c, t in zip(corr, ts)]
        corr, ts = list(compress(corr, keep)), list(compress(ts, keep))
    try:
        launches = dict(zip(corr, map(float, ts)))
    except OverflowError:                   # an integer past a float's range: not a time
        keep = [_finite(t) for t in ts]
        launches = dict(zip(compress(corr, keep), map(float, compress(ts, keep))))
    steps = []
    for e in annotations:
        if e.ph == "X" and type(e.name) is str and e.name.startswith("ProfilerStep#"):
            m = _STEP.match(e.name)
            t, d = _num(e.ts), _num(e.dur)
            if m and t is not None and d is not None:
                steps.append((t, t + d, int(m.group(1))))
    steps.sort()
    return kernels, launches, steps


class _Scan:
    """Per GPU kernel (those with a finite start and a finite, non-negative duration): its start,
    duration, launch correlation, name and meaning (`code`, a row of `table`: phase, peer, op,
    process group); the devices the kernels ran on. A column holding an unexpected type is
    filtered element by element."""

    def __init__(self, kernels, groups, group_index):
        ts, dur = [e.ts for e in kernels], [e.dur for e in kernels]
        if not set(map(type, ts)) | set(map(type, dur)) <= _NUMBER_TYPES:
            keep = [type(t) in _NUMBER and type(d) in _NUMBER and _finite(t) and _finite(d)
                    for t, d in zip(ts, dur)]
            kernels = list(compress(kernels, keep))
            ts, dur = list(compress(ts, keep)), list(compress(dur, keep))
        self.ts = np.array(ts, dtype=np.float64)
        self.dur = np.array(dur, dtype=np.float64)
        ok = np.isfinite(self.ts) & np.isfinite(self.dur) & (self.dur >= 0)
        if not ok.all():
            kernels = list(compress(kernels, ok.tolist()))
            self.ts, self.dur = self.ts[ok], self.dur[ok]
        names = [e.name for e in kernels]
        if not set(map(type, names)) <= {str}:
            names = [n if type(n) is str else str(n or "") for n in names]
        self.names = names
        args = [e.args for e in kernels]
        corr = [a.correlation for a in args]
        if not set(map(type, corr)) <= {int}:
            corr = [c if type(c) in _SCALAR else None for c in corr]
        self.corr = corr
        self.devices = {d for d in {a.device for a in args} if type(d) in _SCALAR}
        self.code, self.table = _codes(names, [e.cat for e in kernels], args, groups,
                                       group_index)


def _codes(names, cats, args, groups, group_index) -> Tuple[np.ndarray, np.ndarray]:
    """Per kernel its meaning: a row of the table (0 compute, 1 a memory copy, then one row per
    distinct NCCL meaning, in order of first appearance); the table."""
    table: List[Tuple[int, int, int, int]] = [(PHASE_INDEX["compute"], -1, 0, -1),
                                              (PHASE_INDEX["memory"], -1, 0, -1)]
    is_nccl = {n: n[:4].lower() == "nccl" for n in dict.fromkeys(names)}
    kernel = np.fromiter(map("kernel".__eq__, cats), dtype=bool, count=len(cats))
    nccl = kernel & np.fromiter(map(is_nccl.__getitem__, names), dtype=bool, count=len(names))
    code = np.where(kernel, 0, 1).astype(np.int64)
    which = np.flatnonzero(nccl)
    if which.size:
        nccl_args = [args[i] for i in which.tolist()]
        keys = list(map(_KEY_GET, nccl_args))
        seen: Dict[Tuple, int] = {}
        try:                                # each distinct key numbered as it first appears
            number = [seen.setdefault(k, len(seen)) for k in keys]
        except TypeError:                   # a list (the group's ranks), an object: as text
            seen = {}
            number = [seen.setdefault(k, len(seen)) for k in map(_hashable_key, keys)]
        number = np.array(number, dtype=np.int64)
        _, first = np.unique(number, return_index=True)   # in the keys' order of appearance
        for i in first.tolist():            # its meaning depends on the key alone
            table.append(_nccl_meaning(nccl_args[i], groups, group_index))
        code[which] = number + 2
    return code, np.array(table, dtype=np.int64)


def _finite(v) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:                   # an integer past the range of a float
        return False


_KEY_GET = attrgetter(*[attr for _, attr in tracedoc.ARG_KEYS
                        if attr not in ("correlation", "device")])


def _hashable_key(key: Tuple) -> Tuple:
    """An NCCL kernel's key (its collective, process group and peer arguments: what its meaning
    depends on; its correlation and device do not) with unhashable values made hashable."""
    try:
        hash(key)
    except TypeError:
        key = tuple(tuple(v) if isinstance(v, list) and all(_hashable(x) for x in v) else
                    v if _hashable(v) else repr(v) for v in key)
    return key


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _text(v) -> str:
    return "" if v is None else str(v)


def _nccl_meaning(args, groups, group_index) -> Tuple[int, int, int, int]:
    """(phase, peer, op, process group) of an NCCL kernel from its arguments."""
    peer, group = -1, -1
    coll = _text(args.collective).lower()
    op = OP_INDEX.get(coll, OP_INDEX["collective"])
    for attr in PEER_ATTRS.get(coll, ()):
        value = _int(getattr(args, attr))
        if value is not None:
            peer = value
            break
    pg_ranks = _ranks(args.pg_ranks)
    pg_name = _text(args.pg_name)
    pg_desc = _text(args.pg_desc)
    if pg_ranks or pg_name:
        key = (pg_name, pg_ranks)
        group = group_index.get(key, -1)
        if group < 0:
            groups.append(ProcessGroup(pg_name, pg_desc, pg_ranks))
            group = group_index[key] = len(groups) - 1
        pg_desc = pg_desc or groups[group].desc
    kind = group_kind(pg_desc, pg_name)
    if not kind and coll in ("send", "recv"):
        kind = "pp"
    phase = PHASE_INDEX[f"{kind}_comm"] if kind else PHASE_INDEX["comm"]
    return phase, peer, op, group


def _int(v) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


def _num(v) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
        return None
    return float(v)


def _ranks(v) -> Tuple[int, ...]:
    if isinstance(v, list):
        if set(map(type, v)) <= {int}:
            return tuple(v)
        return tuple(x for x in (_int(r) for r in v) if x is not None)
    if isinstance(v, str):
        try:
            return _ranks(json.loads(v))
        except ValueError:
            return ()
    return ()


def _groups(config) -> Tuple[ProcessGroup, ...]:
    out = []
    if isinstance(config, list):
        for g in config:
            if isinstance(g, dict):
                out.append(ProcessGroup(str(g.get("pg_name", "")), str(g.get("pg_desc", "")),
                                        _ranks(g.get("ranks"))))
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


def _by_pattern(names, ts: np.ndarray, dur: np.ndarray) -> Optional[np.ndarray]:
    """Iterations as the repeating pattern of kernel names: the shortest period p under which
    at least 90 % of the names repeat, with two or more repetitions (period.py finds it); cut
    where the idle gap before a kernel is largest (the step boundary: optimizer, then data
    loading)."""
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
    window = gaps[:period] if period < n else gaps
    offset = int(np.argmax(window))
    pos = np.arange(n)
    out = np.full(n, -1, dtype=np.int64)
    out[order] = np.where(pos >= offset, (pos - offset) // period, -1)
    return out


def _empty_steps(steps, trace: RankTrace) -> List[int]:
    present = set(trace.iterations)
    return [n for _, _, n in steps if n not in present]


def _device(props, ids) -> str:
    if isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and (not ids or p.get("id") in ids):
                return str(p.get("name", ""))
    return ""
