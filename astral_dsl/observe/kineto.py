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
from typing import Dict, List, Optional, Tuple

import numpy as np

from astral_dsl.diagnostics import Diagnostic, Severity
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
_PEER_KEYS = {"send": ("Dst Rank", "dst_rank", "dst", "Peer", "peer"),
              "recv": ("Src Rank", "src_rank", "src", "Peer", "peer")}


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


def read(path: str, doc: dict) -> Tuple[Optional[RankTrace], List[Diagnostic]]:
    """A parsed trace document -> the rank's records."""
    diags: List[Diagnostic] = []
    info = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
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
    scan = _scan(doc["traceEvents"], groups, group_index)
    steps, launches = scan.steps, scan.launches
    if not scan.ts:
        return None, diags + [diag("E788", "the trace holds no GPU kernel: nothing to compare",
                                   path, "profile with ProfilerActivity.CUDA")]
    ts = np.array(scan.ts)
    dur = np.array(scan.dur)
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
    table = np.array(scan.table, dtype=np.int64).reshape(-1, 4)
    code = table[np.array(scan.code, dtype=np.int64)]
    rows_phase, rows_peer, rows_op, rows_group = code.T
    device_ids = scan.devices
    keep = assigned >= 0
    if not keep.any():
        return None, diags + [diag("E788", "no GPU kernel of the trace falls in a profiled "
                                           "iteration", path)]
    order = np.argsort(ts[keep], kind="stable")
    cols = [assigned[keep], np.asarray(rows_phase, dtype=np.int8)[keep],
            ts[keep] * US, dur[keep] * US, np.asarray(rows_peer, dtype=np.int64)[keep],
            np.asarray(rows_op, dtype=np.int8)[keep], np.asarray(rows_group, dtype=np.int64)[keep]]
    it, ph, st, du, pe, op, gr = (c[order] for c in cols)
    trace = RankTrace(rank, world, path, "kineto", it.astype(np.int64), ph, st, du, pe, op, gr,
                      tuple(groups), _device(doc, device_ids), source)
    for n in _empty_steps(steps, trace):
        diags.append(diag("W788", f"iteration {n} of rank {rank} has no GPU kernel: it is left "
                                  f"out", path))
    return trace, diags


_KERNEL_CATS = frozenset(("kernel", "gpu_memcpy", "gpu_memset"))
_NUMBER = (int, float)


class _Scan:
    """What one pass over the events keeps: ProfilerStep annotations (start, end, number),
    launches (correlation -> CPU time) and, per GPU kernel, its start, duration, correlation,
    name and meaning (an index into `table`: phase, peer, op, process group)."""

    def __init__(self):
        self.steps: List[Tuple[float, float, int]] = []
        self.launches: Dict[int, float] = {}
        self.ts: List[float] = []
        self.dur: List[float] = []
        self.corr: List = []
        self.names: List[str] = []
        self.code: List[int] = []
        self.table: List[int] = [PHASE_INDEX["compute"], -1, 0, -1,
                                 PHASE_INDEX["memory"], -1, 0, -1]
        self.devices: set = set()


def _scan(events, groups, group_index) -> _Scan:
    out = _Scan()
    meaning: Dict[Tuple, int] = {}
    ts_a, dur_a, corr_a, names_a, code_a = out.ts.append, out.dur.append, out.corr.append, \
        out.names.append, out.code.append
    launches, devices, finite = out.launches, out.devices, math.isfinite
    for e in events:
        if type(e) is not dict:
            continue
        cat = e.get("cat")
        if cat == "cuda_runtime":
            args = e.get("args")
            t = e.get("ts")
            if type(args) is dict and type(t) in _NUMBER and e.get("ph") == "X":
                corr = args.get("correlation")
                if type(corr) is int:
                    launches[corr] = float(t)
        elif cat in _KERNEL_CATS:
            t, d = e.get("ts"), e.get("dur")
            if type(t) not in _NUMBER or type(d) not in _NUMBER or not d >= 0 or \
                    not finite(t) or not finite(d) or e.get("ph") != "X":
                continue
            args = e.get("args")
            name = e.get("name")
            name = name if type(name) is str else str(name or "")
            if type(args) is dict:
                corr_a(args.get("correlation"))
                dev = args.get("device")
                if dev is not None:
                    devices.add(dev)
            else:
                args = None
                corr_a(None)
            ts_a(t)
            dur_a(d)
            names_a(name)
            if cat != "kernel":
                code_a(1)
            elif name[:4].lower() == "nccl":
                key = _nccl_key(args)
                c = meaning.get(key)
                if c is None:
                    c = meaning[key] = len(out.table) // 4
                    out.table.extend(_nccl_meaning(args or {}, groups, group_index))
                code_a(c)
            else:
                code_a(0)
        elif cat == "user_annotation" or cat == "cpu_op":
            name = e.get("name")
            if type(name) is str and name.startswith("ProfilerStep#") and e.get("ph") == "X":
                m = _STEP.match(name)
                t, d = _num(e.get("ts")), _num(e.get("dur"))
                if m and t is not None and d is not None:
                    out.steps.append((t, t + d, int(m.group(1))))
    out.steps.sort()
    return out


def _nccl_key(args) -> Tuple:
    """What an NCCL kernel's meaning depends on (its correlation does not): its collective,
    process group (by name: a trace names each group once; by members when unnamed) and
    peer."""
    if not args:
        return ()
    get = args.get
    coll = get("Collective name")
    name = get("Process Group Name")
    peer = tuple(get(k) for k in _PEER_KEYS[coll.lower()]) \
        if type(coll) is str and coll.lower() in _PEER_KEYS else None
    if name is not None:
        return coll, name, get("Process Group Description"), peer
    ranks = get("Process Group Ranks")
    return (coll, None, get("Process Group Description"),
            tuple(ranks) if isinstance(ranks, list) else ranks, peer)


def _nccl_meaning(args, groups, group_index) -> Tuple[int, int, int, int]:
    """(phase, peer, op, process group) of an NCCL kernel from its arguments."""
    peer, group = -1, -1
    coll = str(args.get("Collective name", "")).lower()
    op = OP_INDEX.get(coll, OP_INDEX["collective"])
    if coll in _PEER_KEYS:
        for key in _PEER_KEYS[coll]:
            if _int(args.get(key)) is not None:
                peer = _int(args[key])
                break
    pg_ranks = _ranks(args.get("Process Group Ranks"))
    pg_name = str(args.get("Process Group Name", ""))
    pg_desc = str(args.get("Process Group Description", ""))
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
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if np.isfinite(v) else None


def _ranks(v) -> Tuple[int, ...]:
    if isinstance(v, list):
        if all(type(x) is int for x in v):
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
    launch = np.array([launches.get(c, t) if c is not None else t
                       for c, t in zip(correlations, ts.tolist())])
    starts = np.array([s for s, _, _ in steps])
    ends = np.array([e for _, e, _ in steps])
    numbers = np.array([n for _, _, n in steps])
    k = np.searchsorted(starts, launch, side="right") - 1
    inside = (k >= 0) & (launch < ends[np.maximum(k, 0)])
    return np.where(inside, numbers[np.maximum(k, 0)], -1)


def _by_pattern(names, ts: np.ndarray, dur: np.ndarray) -> Optional[np.ndarray]:
    """Iterations as the repeating pattern of kernel names: the shortest period p under which
    at least 90 % of the names repeat, with two or more repetitions; cut where the idle gap
    before a kernel is largest (the step boundary: optimizer, then data loading)."""
    ids: Dict[str, int] = {}
    order = np.argsort(ts, kind="stable")
    seq = np.array([ids.setdefault(names[i], len(ids)) for i in order.tolist()],
                   dtype=np.int64)
    n = len(seq)
    period = None
    for p in range(1, n // 2 + 1):
        if np.count_nonzero(seq[:-p] == seq[p:]) >= 0.9 * (n - p):
            period = p
            break
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


def _device(doc, ids) -> str:
    props = doc.get("deviceProperties")
    if isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and (not ids or p.get("id") in ids):
                return str(p.get("name", ""))
    return ""
