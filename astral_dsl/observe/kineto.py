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

import bisect
import json
import os
import re
from typing import Dict, List, Optional, Tuple

import numpy as np

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.observe.records import OP_INDEX, PHASE_INDEX, ProcessGroup, RankTrace, make

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
    groups = _groups(info.get("pg_config"))
    events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    steps = _steps(events)
    launches = _launches(events)
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and _num(e.get("ts")) is not None and (_num(e.get("dur")) or -1.0) >= 0]
    if not kernels:
        return None, diags + [diag("E788", "the trace holds no GPU kernel: nothing to compare",
                                   path, "profile with ProfilerActivity.CUDA")]
    group_index: Dict[Tuple, int] = {(g.name, g.ranks): i for i, g in enumerate(groups)}
    rows = []
    device_ids = set()
    if steps:
        assigned = _by_steps(kernels, steps, launches)
        source = "ProfilerStep"
    else:
        assigned = _by_pattern(kernels)
        source = "pattern"
        if assigned is None:
            return None, diags + [diag(
                "E788", "the trace has no ProfilerStep annotations and its kernels do not "
                        "repeat: its iterations cannot be told apart", path,
                "call prof.step() once per iteration (torch.profiler.schedule)")]
    groups = list(groups)
    for e, it in zip(kernels, assigned):
        if it is None:
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if "device" in args:
            device_ids.add(args.get("device"))
        name = str(e.get("name", ""))
        cat = e.get("cat")
        peer, op, group = -1, 0, -1
        if cat != "kernel":
            phase = PHASE_INDEX["memory"]
        elif name.lower().startswith("nccl"):
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
        else:
            phase = PHASE_INDEX["compute"]
        rows.append((it, phase, float(e["ts"]) * US, float(e["dur"]) * US, peer, op, group))
    if not rows:
        return None, diags + [diag("E788", "no GPU kernel of the trace falls in a profiled "
                                           "iteration", path)]
    trace = make(rank, world, path, "kineto", rows, groups, _device(doc, device_ids), source)
    for it in _empty_steps(steps, trace):
        diags.append(diag("W788", f"iteration {it} of rank {rank} has no GPU kernel: it is left "
                                  f"out", path))
    return trace, diags


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


def _steps(events) -> List[Tuple[float, float, int]]:
    out = []
    for e in events:
        if e.get("cat") not in ("user_annotation", "cpu_op"):
            continue
        m = _STEP.match(str(e.get("name", "")))
        ts, dur = _num(e.get("ts")), _num(e.get("dur"))
        if m and ts is not None and dur is not None:
            out.append((ts, ts + dur, int(m.group(1))))
    out.sort()
    return out


def _launches(events) -> Dict[int, float]:
    out = {}
    for e in events:
        if e.get("cat") == "cuda_runtime":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            corr = _int(args.get("correlation"))
            if corr is not None and _num(e.get("ts")) is not None:
                out[corr] = float(e["ts"])
    return out


def _by_steps(kernels, steps, launches) -> List[Optional[int]]:
    starts = [s for s, _, _ in steps]
    out: List[Optional[int]] = []
    for e in kernels:
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        t = launches.get(_int(args.get("correlation")), float(e["ts"]))
        k = bisect.bisect_right(starts, t) - 1
        out.append(steps[k][2] if k >= 0 and t < steps[k][1] else None)
    return out


def _by_pattern(kernels) -> Optional[List[Optional[int]]]:
    """Iterations as the repeating pattern of kernel names: the shortest period p under which
    at least 90 % of the names repeat, with two or more repetitions; cut where the idle gap
    before a kernel is largest (the step boundary: optimizer, then data loading)."""
    names: Dict[str, int] = {}
    order = sorted(range(len(kernels)), key=lambda i: float(kernels[i]["ts"]))
    seq = np.array([names.setdefault(str(kernels[i].get("name", "")), len(names))
                    for i in order], dtype=np.int64)
    n = len(seq)
    period = None
    for p in range(1, n // 2 + 1):
        if np.mean(seq[:-p] == seq[p:]) >= 0.9:
            period = p
            break
    if period is None:
        return None
    ts = np.array([float(kernels[i]["ts"]) for i in order])
    ends = ts + np.array([float(kernels[i]["dur"]) for i in order])
    gaps = np.zeros(n)
    gaps[1:] = ts[1:] - np.maximum.accumulate(ends)[:-1]
    window = gaps[:period] if period < n else gaps
    offset = int(np.argmax(window))
    out: List[Optional[int]] = [None] * n
    for pos, i in enumerate(order):
        if pos >= offset:
            out[i] = (pos - offset) // period
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
