"""A profiler trace's events as the reader's columns (`from_events`): the events decoded by
tracedoc.py (msgspec against a schema of the fields read, or a full parse brought to the same
shape).

A `Columns` holds, per GPU kernel (a complete event of a kernel category with a number start
and a non-negative number duration; the others counted, `skipped`), its start, duration, launch
correlation, name and meaning
(`code`, a row of `table`: phase, peer, op, process group); the devices the kernels ran on; the
launches (correlation -> CPU start of the complete `cuda_runtime` events, the last one of a
correlation counts); the ProfilerStep annotations (start, end, number), sorted."""
from __future__ import annotations

import json
import math
import re
from itertools import compress
from typing import Dict, List, Optional, Tuple

import numpy as np
from msgspec.structs import astuple

from astral_dsl import records
from astral_dsl.observe.records import OP_INDEX, PHASE_INDEX, ProcessGroup, op_of
from astral_dsl.observe.text import printable
from astral_dsl.observe.tracedoc import PEER_ATTRS

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_INT_TEXT = re.compile(r"-?[0-9]+")          # an integer as text (not "²", "--5", "٣")
_INT64 = 1 << 63                             # the columns are int64
# words in a process group's description or name -> the parallel dimension (Megatron-Core's
# group names: TENSOR_MODEL_PARALLEL_GROUP, PIPELINE_MODEL_PARALLEL_GROUP, DATA_PARALLEL_GROUP,
# CONTEXT_PARALLEL_GROUP, EXPERT_MODEL_PARALLEL_GROUP, ...). A group of several dimensions
# (TENSOR_AND_DATA_PARALLEL_GROUP, fp8's amax reduction; EXPERT_TENSOR_AND_MODEL_PARALLEL_GROUP;
# EXPERT_TENSOR_MODEL_PIPELINE_PARALLEL_GROUP, ETP x EP x PP) is none of them:
# "_and_" and "tensor_model_pipeline" first; the experts' data-parallel group reduces gradients,
# as DP's
_KIND_WORDS = (("_and_", ""), ("tensor_model_pipeline", ""), ("expert_model", "ep"),
               ("expert_data", "dp"), ("tensor", "tp"),
               ("pipeline", "pp"), ("context", "cp"), ("expert", "ep"), ("data", "dp"))
_SHORT = {"tp": "tp", "pp": "pp", "dp": "dp", "cp": "cp", "ep": "ep"}
_NUMBER = (int, float)
_NUMBER_TYPES = frozenset(_NUMBER)
_SCALAR = (int, float, str)
FIRST_NCCL = 2                  # the first row of an NCCL kernel's in a Columns' table
# DeepEP's kernels (deepseek-ai/DeepEP, Megatron-Core's `flex` token dispatcher): a MoE layer's
# dispatch and combine (intranode, internode, internode_ll) and their notify and barrier steps,
# no NCCL kernel; each waits inside for the EP group's slowest member, so as compute they had
# made every peer of a slow GPU as slow as it. Its layout kernel (tokens per rank) computes.
_DEEP_EP, _DEEP_EP_COMPUTE = "deep_ep::", "deep_ep::layout::"


@records.frozen(eq=False)
class Columns:
    ts: np.ndarray                  # float64, microseconds, per kernel in file order
    dur: np.ndarray
    corr: List                      # per kernel: its correlation (an int to match a launch)
    names: List[str]
    devices: set
    code: np.ndarray                # per kernel: its row of table
    table: np.ndarray               # (phase, peer, op, group) rows
    launches: Dict                  # correlation -> CPU start of its launch
    steps: List[Tuple[float, float, int]]
    # the kernels and ProfilerStep annotations left out for their `ts` or `dur` (a value that
    # is not a number, not finite, a negative duration): how many, and why one of them (the
    # step annotations' first, else the kernels': kineto.read says it, E784)
    skipped: int = 0
    skipped_why: str = ""


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


def from_events(events, groups: List[ProcessGroup], group_index: Dict) -> Columns:
    """The columns of decoded events (tracedoc.Event). Thousands of events per trace: one pass
    sorts them by category (a category of another type than a string matches none), list
    comprehensions (the cheapest loop CPython has) take the fields; a column holding an
    unexpected type is filtered element by element."""
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
    launches = _launches([e for e in runtime if e.ph == "X"])
    marked = [e for e in annotations if e.ph == "X" and type(e.name) is str and
              e.name.startswith("ProfilerStep#")]
    steps = steps_of([(e.name, e.ts, e.dur) for e in marked])
    skipped = [e for e in marked if _unread(e.ts, e.dur)] if len(steps) < len(marked) else []
    ts, dur = [e.ts for e in kernels], [e.dur for e in kernels]
    types = set(map(type, ts)) | set(map(type, dur))
    if not types <= _NUMBER_TYPES or \
            (int in types and not (_floats_fit(ts) and _floats_fit(dur))):
        keep = [type(t) in _NUMBER and type(d) in _NUMBER and finite(t) and finite(d)
                for t, d in zip(ts, dur)]
        skipped += [e for e, k in zip(kernels, keep) if not k]
        kernels = list(compress(kernels, keep))
        ts, dur = list(compress(ts, keep)), list(compress(dur, keep))
    ts = np.array(ts, dtype=np.float64)
    dur = np.array(dur, dtype=np.float64)
    ok = np.isfinite(ts) & np.isfinite(dur) & (dur >= 0)
    if not ok.all():
        skipped += [e for e, k in zip(kernels, ok.tolist()) if not k]
        kernels = list(compress(kernels, ok.tolist()))
        ts, dur = ts[ok], dur[ok]
    names = [e.name for e in kernels]
    if not set(map(type, names)) <= {str}:
        names = [n if type(n) is str else str(n or "") for n in names]
    fixed = {n: printable(n) for n in dict.fromkeys(names)}     # a few dozen distinct names
    if any(n != m for n, m in fixed.items()):           # a lone surrogate: escaped
        names = [fixed[n] for n in names]
    args = [e.args for e in kernels]
    corr = [a.correlation for a in args]
    if not set(map(type, corr)) <= {int}:
        corr = [c if type(c) in _SCALAR else None for c in corr]
    found = [a.device for a in args]
    devices = set(found) if set(map(type, found)) <= {int} else \
        {d for d in found if type(d) in _SCALAR}
    kernel = np.array([e.cat == "kernel" for e in kernels], dtype=bool)
    is_nccl = {n: n[:4].lower() == "nccl" for n in dict.fromkeys(names)}   # a few dozen names
    nccl = kernel & np.fromiter(map(is_nccl.__getitem__, names), dtype=bool, count=len(names))
    which = np.flatnonzero(nccl)
    deep_ep = np.flatnonzero(kernel & np.fromiter(map(_is_deep_ep, names), dtype=bool,
                                                  count=len(names)))
    number, first = np.zeros(0, dtype=np.int64), []
    if which.size:
        nccl_args = [args[i] for i in which.tolist()]
        keys = [t[_KEY_FROM:] for t in map(astuple, nccl_args)]
        seen: Dict[Tuple, int] = {}
        try:                                # each distinct key numbered as it first appears
            numbers = [seen.setdefault(k, len(seen)) for k in keys]
        except TypeError:                   # a list (the group's ranks), an object: as text
            seen = {}
            numbers = [seen.setdefault(k, len(seen)) for k in map(_hashable_key, keys)]
        number = np.array(numbers, dtype=np.int64)
        _, at = np.unique(number, return_index=True)   # in the keys' order of appearance
        first = [nccl_args[i] for i in at.tolist()]
    code, table = _code_table(kernel, which, number, first, groups, group_index, deep_ep)
    return Columns(ts, dur, corr, names, devices, code, table, launches, steps, len(skipped),
                   _unread(skipped[0].ts, skipped[0].dur, skipped[0].name) if skipped else "")


def _unread(ts, dur, name=None) -> str:
    """Why an event's start `ts` and duration `dur` cannot be read ('' when they can); with
    `name`, the event's name before it."""
    why = ""
    for field, v in (("ts", ts), ("dur", dur)):
        if v is None:
            why = f"no `{field}`"
        elif type(v) not in _NUMBER:
            why = f"`{field}` is not a number: {printable(repr(v))[:40]}"
        elif not finite(v):
            shown = f"{v}" if isinstance(v, float) else "an integer past a float's range"
            why = f"`{field}` is {shown}: not a finite time"
        elif field == "dur" and v < 0:
            why = f"`dur` is {v:.4g}, a negative duration"
        if why:
            break
    if why and name is not None:
        why = f"`{printable(str(name))[:60]}`: {why}"
    return why


def _is_deep_ep(name: str) -> bool:
    """A DeepEP communication kernel (`void deep_ep::intranode::dispatch<8, 768, 8192>(...)`)."""
    return _DEEP_EP in name and _DEEP_EP_COMPUTE not in name


def _floats_fit(values) -> bool:
    """Every integer among the numbers within a float's range (a 400-digit integer is not)."""
    try:
        sum(map(float, values))
    except OverflowError:
        return False
    return True


def _launches(runtime) -> Dict:
    corr = [e.args.correlation for e in runtime]
    ts = [e.ts for e in runtime]
    if not (set(map(type, corr)) <= {int} and set(map(type, ts)) <= _NUMBER_TYPES):
        keep = [type(c) is int and type(t) in _NUMBER for c, t in zip(corr, ts)]
        corr, ts = list(compress(corr, keep)), list(compress(ts, keep))
    try:
        return dict(zip(corr, map(float, ts)))
    except OverflowError:                   # an integer past a float's range: not a time
        keep = [finite(t) for t in ts]
        return dict(zip(compress(corr, keep), map(float, compress(ts, keep))))


# an NCCL kernel's key: its arguments after the correlation and the device (the first two fields
# of tracedoc.Args), taken as one tuple by msgspec
_KEY_FROM = 2


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


def steps_of(rows) -> List[Tuple[float, float, int]]:
    """(start, end, number) of the ProfilerStep annotations among (name, ts, dur) rows of
    complete annotation events named ProfilerStep#..., sorted."""
    steps = []
    for name, ts, dur in rows:
        m = _STEP.match(name)
        t, d = as_num(ts), as_num(dur)
        # a number of more than 19 digits is past int64 (and int() refuses 4,300 digits); a
        # negative duration is no step (from_events says it, as _unread finds it)
        if m and t is not None and d is not None and d >= 0 and \
                len(m.group(1).lstrip("0")) <= 19 \
                and int(m.group(1)) < _INT64:
            steps.append((t, t + d, int(m.group(1))))
    steps.sort()
    return steps


def _code_table(kernel: np.ndarray, which: np.ndarray, number: np.ndarray, first, groups,
                group_index, deep_ep: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per kernel its meaning: a row of the table (0 compute, 1 a memory copy, then one row per
    distinct NCCL key, numbered in order of first appearance: `number` per NCCL kernel
    `which`, `first` the arguments of each key's first kernel; last, for DeepEP's kernels
    `deep_ep`, an EP exchange of no process group: matched on the rank's EP group by its
    order, as a rank log's ep_comm rows are); the table."""
    table: List[Tuple[int, int, int, int]] = [(PHASE_INDEX["compute"], -1, 0, -1),
                                              (PHASE_INDEX["memory"], -1, 0, -1)]
    code = np.where(kernel, 0, 1).astype(np.int64)
    for args in first:                      # its meaning depends on the key alone
        table.append(_nccl_meaning(args, groups, group_index))
    if which.size:
        code[which] = number + FIRST_NCCL
    if deep_ep.size:
        code[deep_ep] = len(table)
        table.append((PHASE_INDEX["ep_comm"], -1, OP_INDEX["collective"], -1))
    return code, np.array(table, dtype=np.int64)


def _nccl_meaning(args, groups, group_index) -> Tuple[int, int, int, int]:
    """(phase, peer, op, process group) of an NCCL kernel from its arguments."""
    peer, group = -1, -1
    coll = _text(args.collective).lower()
    op = op_of(coll) or OP_INDEX["collective"]
    for attr in PEER_ATTRS.get(coll, ()):
        value = as_int(getattr(args, attr))
        if value is not None:
            peer = value if 0 <= value < _INT64 else -1     # no rank: unknown
            break
    pg_ranks = as_ranks(args.pg_ranks)
    if 0 <= peer < len(pg_ranks):
        # a send's `Dst Rank` and a recv's `Src Rank` are the peer's rank within the process
        # group, as torch.distributed passes it to ProcessGroupNCCL::send / recv (isend and
        # batch_isend_irecv turn the global rank into the group's, get_group_rank) and its
        # RECORD_PARAM_COMMS records it; the group's `Process Group Ranks` are global. Taken as
        # global, stage 1 of a pipeline group [0, 64] had "peer 1" (rank 1, of stage 0's TP
        # group) where its peer is rank 0. A peer past the listed ranks (no list, or a list cut
        # short) is read as it is written.
        peer = pg_ranks[peer]
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


def _text(v) -> str:
    return "" if v is None else printable(str(v))


def finite(v) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:                   # an integer past the range of a float
        return False


def as_int(v) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and _INT_TEXT.fullmatch(v.strip()):
        return int(v)
    return None


def as_num(v) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not finite(v):
        return None
    return float(v)


def as_ranks(v) -> Tuple[int, ...]:
    if isinstance(v, list):
        if set(map(type, v)) <= {int}:
            return tuple(v)
        return tuple(x for x in (as_int(r) for r in v) if x is not None)
    if isinstance(v, str):
        try:
            return as_ranks(json.loads(v))
        except (ValueError, RecursionError):    # not JSON; nested past the parser's depth
            return ()
    return ()


__all__ = ["Columns", "as_int", "as_num", "as_ranks", "finite", "from_events",
           "group_kind", "steps_of"]
