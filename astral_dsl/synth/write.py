"""Writing generated data in the two observed formats: a compact rank log (CSV or JSON Lines, one
file for all ranks) and PyTorch-profiler-style Chrome traces (one file per rank, optionally
gzip-compressed), laid out as PyTorch 2.x writes them: `distributedInfo` with the process
groups, `deviceProperties`, CPU-side `ProfilerStep#N` annotations and `cudaLaunchKernel` runtime
events linked to their GPU kernels by `correlation`, NCCL kernels with their collective and
process-group arguments."""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import tempfile
from typing import Dict, List, Optional

import attrs
import numpy as np

from astral_dsl.regularfile import created, not_a_link
from astral_dsl.synth.generator import OPS, PHASE_NAMES, Synthetic
from astral_dsl.outputs.whole import whole

KERNELS = {   # representative kernel names (H100, cuBLAS / NCCL 2.2x)
    "forward": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cublas",
    "backward": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_cublas",
    "optimizer": "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>",
    "tp_comm": "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "dp_comm": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "comm": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "pp_comm": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
    "ep_comm": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
    "cp_comm": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)",
}
# a data-parallel collective's kernel and `Collective name` by the generator's op (PyTorch's
# names: ProcessGroupNCCL's allreduce, _reduce_scatter_base, _allgather_base)
DP_KERNELS = {
    "all_reduce": KERNELS["dp_comm"],
    "reduce_scatter":
        "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "all_gather": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
}
DP_COLLECTIVE = {"all_reduce": "allreduce", "reduce_scatter": "_reduce_scatter_base",
                 "all_gather": "_allgather_base"}
PG_DESC = {"tp": "TENSOR_MODEL_PARALLEL_GROUP", "dp": "DATA_PARALLEL_GROUP",
           "pp": "PIPELINE_MODEL_PARALLEL_GROUP", "ep": "EXPERT_MODEL_PARALLEL_GROUP",
           "cp": "CONTEXT_PARALLEL_GROUP", "dpcp": "DATA_PARALLEL_GROUP_WITH_CP",
           "edp": "EXPERT_DATA_PARALLEL_GROUP", "world": "default_pg"}
# the group each kind of record runs in: a DP collective over DP x CP with context parallelism
# (Megatron-Core's DATA_PARALLEL_GROUP_WITH_CP); a CP ring step is Transformer Engine's
# batched send and receive, no collective of ProcessGroupNCCL's names
GROUP_OF = {"tp_comm": ("tp",), "dp_comm": ("dpcp", "dp"), "pp_comm": ("pp",),
            "ep_comm": ("ep",), "cp_comm": ("cp",), "edp_comm": ("edp",), "comm": ("world",)}
CP_COLLECTIVE = "batch_isend_irecv"


def _order(s: Synthetic):
    return np.lexsort((s.start, s.rank))


TIMERS = ("kernels", "megatron")


def log_rows(s: Synthetic, timers: str = "kernels"):
    """Columns (rank, iteration, phase name, start_s, duration_s, peer, op name) as lists, in
    rank and time order (_log_columns)."""
    return _listed(_log_columns(s, timers))


def _log_columns(s: Synthetic, timers: str = "kernels"):
    """Columns (rank, iteration, phase name, start_s, duration_s, peer, op name) as lists, in
    rank and time order. As Megatron-LM's timers print them, compute is one row per rank and
    iteration for the forward blocks and one for the backward blocks (start: the first block,
    duration: the sum); pipeline transfers, gradient reductions and the optimizer step are one
    row each. `timers`:
    - `kernels`: `forward` and `backward` sum the GPU's own compute, and the TP collectives are
      a `tp_comm` row of their own (what a profiler's kernels give), each collective a row of
      its own where a TP group leaves its NVLink domain (`tp_apart`: the diagnosis matches
      them across hosts, and their sum's end is no collective's end to align clocks on);
    - `megatron`: Megatron-LM's `forward-compute` and `backward-compute`, wall time of the
      blocks: compute, the in-block TP collectives and the wait for the slowest TP peer.
    Either way each EP all-to-all (a MoE layer's dispatch or combine) is an `ep_comm` row of its
    own, from the rank's arrival (less the share `ep_overlap` hides) to the exchange's end: the
    forward and backward rows leave them out. As arrays (the op's code, not its name): a
    drill's millions of rows are formatted a slice at a time (write_log)."""
    if timers not in TIMERS:
        raise ValueError(f"unknown timers {timers}")
    s = _folded(s)
    code = {p: PHASE_NAMES.index(p) for p in ("forward", "backward")
            + (() if s.tp_apart and timers != "megatron" else ("tp_comm",))}
    summed = np.isin(s.phase, list(code.values()))
    names = np.array(PHASE_NAMES, dtype=object)[s.phase]
    if timers == "megatron":
        names = np.where(s.block == 1, "forward-compute",
                         np.where(s.block == 2, "backward-compute", names))
        groups = [("forward-compute", 0), ("backward-compute", 0)]
    else:
        groups = [("forward", 0), ("backward", 0), ("tp_comm", OPS.index("collective"))]
    keep = ~summed
    rank, it, ph = s.rank[keep], s.iteration[keep], names[keep]
    start, dur, peer, op = s.start[keep], s.duration[keep], s.peer[keep], s.op[keep]
    for name, op_code in groups:
        sel = summed & (names == name)
        if not sel.any():
            continue
        key = s.rank[sel] * 100000 + s.iteration[sel]
        uniq, inv = np.unique(key, return_inverse=True)
        total = np.bincount(inv, weights=s.duration[sel])
        first = np.full(uniq.size, np.inf)
        np.minimum.at(first, inv, s.start[sel])
        rank = np.r_[rank, uniq // 100000]
        it = np.r_[it, uniq % 100000]
        ph = np.r_[ph, np.full(uniq.size, name, dtype=object)]
        start, dur = np.r_[start, first], np.r_[dur, total]
        peer = np.r_[peer, np.full(uniq.size, -1)]
        op = np.r_[op, np.full(uniq.size, op_code, dtype=op.dtype)]
    order = np.lexsort((start, rank))
    return rank[order], it[order], ph[order], start[order], dur[order], peer[order], op[order]


def _listed(cols):
    """Columns of _log_columns (or a slice of them) as log_rows gives them: lists."""
    rank, it, ph, start, dur, peer, op = cols
    return (rank.tolist(), it.tolist(), ph.tolist(), start.tolist(), dur.tolist(),
            peer.tolist(), [OPS[o] for o in op.tolist()])


def _folded(s: Synthetic) -> Synthetic:
    """`s` with each expert-data-parallel collective of ZeRO-3 with experts (`edp_comm`) folded
    into the dense weights' collective it follows on its rank (the generator emits the two one
    after the other: sharded.run): a log has no group to tell them apart, and Megatron-LM's
    timers time the two as one (`params-all-gather`, `grads-reduce-scatter`)."""
    edp = s.phase == PHASE_NAMES.index("edp_comm")
    if not edp.any():
        return s
    dp = s.phase == PHASE_NAMES.index("dp_comm")
    both = np.flatnonzero(dp | edp)
    both = both[np.argsort(s.rank[both], kind="stable")]     # by rank, in emission order
    # the rank's DP collective emitted last before it: the latest dense one in that order
    last = np.maximum.accumulate(np.where(dp[both], np.arange(both.size), -1))
    mine = edp[both]
    at, pos = both[mine], last[mine]
    partner = both[np.maximum(pos, 0)]
    if (pos < 0).any() or (s.rank[partner] != s.rank[at]).any():
        raise ValueError("an expert-data-parallel collective without a dense one before it")
    duration = s.duration.copy()
    duration[partner] = s.start[at] + s.duration[at] - s.start[partner]
    keep = ~edp
    return attrs.evolve(s, rank=s.rank[keep], iteration=s.iteration[keep], phase=s.phase[keep],
                        start=s.start[keep], duration=duration[keep], peer=s.peer[keep],
                        op=s.op[keep], block=None if s.block is None else s.block[keep])


# rows formatted at a time: as Python objects and text a row costs about 650 bytes, so a drill
# of MAX_RECORDS (cli/synth.py) written whole took some 10 GB beside its columns' 2 GB
WRITE_ROWS = 1 << 16


class TooLong(ValueError):
    """A log of more lines than the caller's `max_lines`: nothing written."""

    def __init__(self, lines: int):
        super().__init__(f"{lines:,} lines")
        self.lines = lines


def write_log(s: Synthetic, path: str, fmt: str = "csv", timers: str = "kernels",
              max_lines: Optional[int] = None) -> int:
    """One file for every rank; returns the rows written. TooLong, before the file is opened,
    for a log of more than `max_lines` lines (the header too)."""
    if fmt not in ("csv", "jsonl"):
        raise ValueError(f"unknown log format {fmt}")
    cols = _log_columns(s, timers)
    n = len(cols[0])
    if max_lines is not None and n + (fmt == "csv") > max_lines:
        raise TooLong(n + (fmt == "csv"))
    with whole(path, "utf-8") as fh:     # whole or not at all: Ctrl-C left half a log
        if fmt == "csv":
            fh.write("rank,iteration,phase,start_s,duration_s,peer,op\n")
            if not n:
                fh.write("\n")
        for at in range(0, n, WRITE_ROWS):
            fh.write(_formatted(_listed([c[at:at + WRITE_ROWS] for c in cols]), fmt))
    return n


def _formatted(cols, fmt: str) -> str:
    """Rows of the log as text, each with its line end."""
    rank, it, ph, st, du, pe, op = cols
    rank_s, it_s = list(map(str, rank)), list(map(str, it))
    st_s, du_s = [f"{v:.7f}" for v in st], [f"{v:.7f}" for v in du]
    if fmt == "csv":                 # column by column: formatting is most of the time
        pe_s = ["" if v < 0 else str(v) for v in pe]
        return "".join(f"{line}\n" for line in map(",".join, zip(rank_s, it_s, ph, st_s, du_s,
                                                                  pe_s, op)))
    pe_s = [f',"peer":{v}' if v >= 0 else "" for v in pe]
    op_s = [f',"op":"{v}"' if v else "" for v in op]
    return "".join(
        f'{{"rank":{r},"iteration":{i},"phase":"{p}","start_s":{a},"duration_s":{d}'
        f'{e}{o}}}\n' for r, i, p, a, d, e, o in zip(rank_s, it_s, ph, st_s, du_s, pe_s, op_s))


def to_observed(s: Synthetic, name: str = "<generated log>", timers: str = "kernels"):
    """The rank log of `s` as the log reader makes it (observe.ranklog's column path: phase
    names and aliases, one trace per rank), without formatting and parsing the text: times
    rounded to 0.1 us as write_log writes them. For the proof's many trials."""
    from astral_dsl.observe.load import Observed
    from astral_dsl.observe.ranklog import columns_to_traces

    rank, it, ph, st, du, pe, op = log_rows(s, timers)
    cols = {"rank": rank, "iteration": it, "phase": ph,
            "start_s": np.round(np.asarray(st), 7).tolist(),
            "duration_s": np.round(np.asarray(du), 7).tolist(),
            "peer": [None if p < 0 else p for p in pe], "op": op}
    traces, diags = columns_to_traces(name, cols)
    return Observed(tuple(traces), tuple(diags), (name,), (name,))


def write_traces(s: Synthetic, directory: str, compress: bool = True) -> List[str]:
    """One Kineto-style trace per rank: rank-N.json(.gz). All or none of them: each is written
    into a folder of its own inside `directory` and the traces are moved out of it once every
    one is written (a drill's thousand traces take seconds: Ctrl-C left some of them, which
    `astral diagnose` read as a job with missing ranks, or beside an earlier drill's as one
    job); when that fails, the folder goes, and `directory` too if it was made here."""
    names = [f"rank-{r}.json" + (".gz" if compress else "") for r in range(s.world)]
    made = not os.path.isdir(directory)
    os.makedirs(directory, exist_ok=True)
    for name in names:          # a link named as a trace is refused, as `created` refuses it
        not_a_link(os.path.join(directory, name))
    staging = tempfile.mkdtemp(prefix=".astral-", dir=directory)
    try:
        order = _order(s)
        bounds = np.searchsorted(s.rank[order], np.arange(s.world + 1))
        member = _membership(s)
        for r, name in enumerate(names):
            sel = order[bounds[r]:bounds[r + 1]]
            doc = _trace(s, r, sel, member[r])
            data = json.dumps(doc, separators=(",", ":")).encode("utf-8")
            with open(created(os.path.join(staging, name)), "wb") as raw:
                # mtime 0: the gzip header holds no time of writing (same input, same bytes)
                with (gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0,
                                    filename="") if compress else raw) as fh:
                    fh.write(data)
        for name in names:      # (a link put there since is replaced, never followed)
            os.replace(os.path.join(staging, name), os.path.join(directory, name))
        os.rmdir(staging)
    except BaseException:        # a disk full, Ctrl-C
        shutil.rmtree(staging, ignore_errors=True)
        if made:
            with contextlib.suppress(OSError):
                os.rmdir(directory)             # only when nothing else is in it
        raise
    return [os.path.join(directory, name) for name in names]


def _membership(s: Synthetic):
    out: List[Dict[str, tuple]] = [{} for _ in range(s.world)]
    for kind, groups in s.groups.items():
        for i, ranks in enumerate(groups):
            for r in ranks:
                out[r][kind] = (f"{kind}-{i}", ranks)
    for r in range(s.world):
        out[r]["world"] = ("0", tuple(range(s.world)))
    return out


def _trace(s: Synthetic, rank: int, sel: np.ndarray, groups: Dict[str, tuple]) -> dict:
    pid, tid = 1000 + rank, 1000 + rank
    events: List[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}]
    streams = {"forward": 7, "backward": 7, "optimizer": 7, "tp_comm": 20, "dp_comm": 24,
               "edp_comm": 24, "comm": 24, "pp_comm": 28, "ep_comm": 32, "cp_comm": 36}
    iters = s.iteration[sel]
    starts_us = s.start[sel] * 1e6
    for it in np.unique(iters).tolist():
        m = iters == it
        lo = float(starts_us[m].min()) - 50.0
        hi = float((starts_us[m] + s.duration[sel][m] * 1e6).max())
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{it}",
                       "pid": pid, "tid": tid, "ts": round(lo, 3), "dur": round(hi - lo, 3),
                       "args": {}})
    corr = rank * 10_000_000
    # the rows' columns as Python values, rounded as arrays (np.round: what round() of each
    # numpy float gave, value for value), each group's ranks as JSON once: a rank's thousands
    # of events cost a microsecond each, not tens
    phases = [PHASE_NAMES[p] for p in s.phase[sel].tolist()]
    ops, peers = s.op[sel].tolist(), s.peer[sel].tolist()
    launch = np.round(starts_us - 5.0, 3).tolist()
    ts_us = np.round(starts_us, 3).tolist()
    dur_us = np.round(s.duration[sel] * 1e6, 3).tolist()
    listed = {name: json.dumps(list(ranks)) for name, ranks in groups.values()}
    for phase, o, peer, launch_ts, ts, dur in zip(phases, ops, peers, launch, ts_us, dur_us):
        corr += 1
        args = {"device": 0, "stream": streams[phase], "correlation": corr}
        if phase.endswith("comm"):
            kind = next((k for k in GROUP_OF[phase] if k in groups), "world")
            op = OPS[o]
            name, ranks = groups[kind]
            args.update({"Collective name": op if op in ("send", "recv") else
                         DP_COLLECTIVE[op] if op in DP_COLLECTIVE else
                         ("allreduce" if kind in ("dp", "dpcp", "world") else
                          "all_to_all" if kind == "ep" else
                          CP_COLLECTIVE if kind == "cp" else "reduce_scatter"),
                         "Process Group Name": name, "Process Group Description": PG_DESC[kind],
                         "Process Group Ranks": listed[name],
                         "Group size": len(ranks), "dtype": "BFloat16"})
            # the peer's rank within the pipeline group, as PyTorch records it (observe/kernels.py
            # reads it back through `Process Group Ranks`)
            if op == "send":
                args["Dst Rank"] = ranks.index(int(peer))
            elif op == "recv":
                args["Src Rank"] = ranks.index(int(peer))
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid,
                       "tid": tid, "ts": launch_ts, "dur": 4.0,
                       "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": "kernel",
                       "name": DP_KERNELS.get(OPS[o], KERNELS.get(phase)), "pid": 0,
                       "tid": streams[phase], "ts": ts, "dur": dur,
                       "args": args})
    pgs = [{"pg_name": name, "pg_desc": PG_DESC[kind], "backend_config": "cuda:nccl",
            "pg_size": len(ranks), "ranks": list(ranks)} for kind, (name, ranks) in
           sorted(groups.items())]
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": s.device}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": s.world,
                                "pg_count": len(pgs), "pg_config": pgs},
            "traceEvents": events, "displayTimeUnit": "ms"}


__all__ = ["KERNELS", "TIMERS", "log_rows", "to_observed", "write_log", "write_traces"]
