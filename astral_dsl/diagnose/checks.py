"""Checking the observed data against the job before any comparison (docs/diagnose.md, "Input
checks"): each problem is a diagnostic naming its file, and what remains is still analysed.

- world size and ranks (E785, E786): a trace of another world size is set aside before
  duplicates are resolved, so that a directory mixing two jobs keeps this job's trace;
- the rank order (E792): pipeline transfers name their peer and profiler traces their process
  groups; when they do not fit the job's parallel order but another order fits, the data is
  not this rank order's and nothing else can be compared (no order fitting at all, another
  parallel layout: layout.py);
- another job of the same world size (E790): a rank whose process groups are not its groups in
  any order, whose iterations are none of the others', or whose schedule (communication records
  per iteration) is not its pipeline stage's;
- iterations (W788): the iterations most ranks have; a rank lacking one is said."""
from __future__ import annotations

import itertools
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from astral_dsl.analyses import rankmap as rankmap_mod
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.observe.kineto import group_kind
from astral_dsl.observe.said import ranges, read_twice, said_once
from astral_dsl.observe.records import OP_INDEX, PHASE_INDEX, comm_mask, distinct
from astral_dsl.units.readable import whole_percent

ORDER_FIT = 0.9          # share of the structural evidence an order must explain
CUT = 0.9                # a last iteration with fewer records than this share of its stage's
SCHEDULE_OFF = 0.5       # communication records per iteration this far from the stage's median
# the phases of a pipeline transfer: a log's pp_comm, a trace's send or receive on the pipeline
# group or on none named (`comm`)
PIPELINE_PHASES = (PHASE_INDEX["pp_comm"], PHASE_INDEX["comm"])


def diag(code, message, file=None, hint=None, notes=()) -> Diagnostic:
    sev = Severity.ERROR if code.startswith("E") else Severity.WARNING
    return Diagnostic(code, sev, message, None, hint, file=file, notes=tuple(notes))


def usable(observed, rm, diags: List[Diagnostic]) -> Dict[int, object]:
    """rank -> trace: other world sizes set aside first (E785), then ranks outside the job and
    ranks read twice (E786, the first file kept), and the records of a transfer whose peer is
    outside the job (E786). One said alike for many files (another job's traces) is said
    once, with the count (load.said_once); the ranks outside the job, and those naming a peer
    outside it, are each said once for all of them (a log of 256 ranks read as a job of 128
    had been 256 diagnostics, 900 lines), and the ranks of one file read before from another
    once for the two files (a log passed twice: 128 diagnostics)."""
    out: Dict[int, object] = {}
    said: List[Diagnostic] = []
    beyond: List[object] = []             # traces of a rank outside the job
    peers: List[Tuple[object, int, int]] = []    # (trace, records, first peer) outside the job
    twice: Dict[Tuple[str, str], List[int]] = {}  # (file, the file read first) -> ranks
    for t in observed.traces:
        if t.world_size is not None and t.world_size != rm.world:
            said.append(diag("E785", f"the trace is from a job of {t.world_size} ranks, "
                                     f"`{rm.job}` has {rm.world}: left out", t.file,
                             "pass the traces of this job, or --job for the right one"))
            continue
        if not 0 <= t.rank < rm.world:
            beyond.append(t)
            continue
        if t.rank in out:
            twice.setdefault((t.file, out[t.rank].file), []).append(t.rank)
            continue
        outside = (t.peer >= rm.world) | (t.peer < -1)
        if outside.any():                 # a transfer with a rank the job does not have
            peers.append((t, int(outside.sum()), int(t.peer[outside][0])))
            t = t.select(~outside)
        out[t.rank] = t
    said.extend(read_twice(twice))         # a log of every rank appended twice: once
    diags.extend(said_once(said))
    if beyond:
        ranks = sorted(t.rank for t in beyond)
        which = f"rank {ranks[0]} is" if len(ranks) == 1 else \
            f"{len(ranks):,} ranks ({ranges(ranks)}) are"
        diags.append(diag("E786", f"{which} outside the job's {rm.world} ranks: left out",
                          beyond[0].file, f"`{rm.job}` has ranks 0-{rm.world - 1}: a file of "
                          f"another job (--job names the job observed) or a wrong rank column",
                          _files(t.file for t in beyond)))
    if peers:
        t, n, peer = peers[0]
        which = f"rank {t.rank}" if len(peers) == 1 else \
            f"{len(peers):,} ranks ({ranges(sorted(p[0].rank for p in peers))})"
        total = sum(p[1] for p in peers)
        diags.append(diag("E786", f"{which}: {total:,} record(s) name a peer outside the job's "
                                  f"{rm.world} ranks (e.g. {peer}"
                                  f"{'' if len(peers) == 1 else f', of rank {t.rank}'}): left "
                                  f"out", t.file, None, _files(p[0].file for p in peers)))
    return out


def _files(files) -> Tuple[str, ...]:
    """A note naming the files of a diagnostic said once for several (none for one)."""
    files = list(dict.fromkeys(files))
    if len(files) < 2:
        return ()
    shown = ", ".join(files[:4]) + (f" and {len(files) - 4:,} more" if len(files) > 4 else "")
    return (f"the files: {shown}",)


def unnamed_groups(traces) -> Optional[Diagnostic]:
    """W795 when profiler traces' NCCL kernels name neither a process group nor a peer: their
    collectives and transfers cannot be matched across ranks, so the network they cross is not
    judged (their compute is), and nothing suspect there is no all-clear."""
    files = [t.file for t in traces.values() if t.source == "kineto" and _unnamed(t)]
    if not files:
        return None
    shown = ", ".join(files[:4]) + (f" and {len(files) - 4:,} more" if len(files) > 4 else "")
    return Diagnostic(
        "W795", Severity.WARNING,
        f"the NCCL kernels of {len(files):,} of the {len(traces):,} ranks' traces name no "
        f"process group and no peer (no `Process Group Ranks`, `Process Group Description`, "
        f"`Src Rank` or `Dst Rank` argument): their collectives and transfers cannot be "
        f"matched across ranks, so the network they cross is not judged, only their compute",
        None, "profile with a PyTorch recent enough to record the process group of each "
              "NCCL kernel, or give rank logs with their phases", file=files[0],
        notes=(f"the files: {shown}",) if len(files) > 1 else ())


def _unnamed(t) -> bool:
    comm = comm_mask(t.phase)
    return bool(comm.any()) and not bool(((t.group[comm] >= 0) | (t.peer[comm] >= 0)).any())


def iterations(traces, diags: List[Diagnostic]) -> List[int]:
    """Iterations seen on at least half as many ranks as the most common one; a rank missing
    one is said (W788), unless it has none of them (another job: `foreign`)."""
    count: Dict[int, int] = {}
    for t in traces.values():
        for it in t.iterations:
            count[it] = count.get(it, 0) + 1
    need = max(count.values()) if count else 0
    keep = sorted(it for it, c in count.items() if c >= max(1, need // 2))
    for rank, t in traces.items():
        have = set(t.iterations)
        lacking = [it for it in keep if it not in have]
        if lacking and len(lacking) < len(keep):
            diags.append(diag("W788", f"rank {rank} has no record of iteration(s) "
                                      f"{', '.join(map(str, lacking))}: compared on the others",
                              t.file))
    return keep


def clipped(traces, rm, diags: List[Diagnostic]):
    """Each rank without its last iteration when that one holds fewer records than CUT of its
    stage's ranks' in that iteration (median; three ranks of the stage or more) while its
    earlier ones hold their share: a trace or log cut mid-iteration (the profiler stopped, a
    file copied while it was written). Said (W788) and left out, rather than read as an
    iteration with part of its compute and collectives."""
    stage = {r.rank: r.stage for r in rm.ranks}
    counts: Dict[int, Dict[int, int]] = {}
    per_stage: Dict[Tuple[int, int], List[int]] = {}
    for rank, t in traces.items():
        its, n = np.unique(t.iteration, return_counts=True)
        counts[rank] = dict(zip(its.tolist(), n.tolist()))
        for it, c in counts[rank].items():
            per_stage.setdefault((stage[rank], it), []).append(c)
    median = {k: float(np.median(v)) for k, v in per_stage.items() if len(v) >= 3}

    def short(rank, it):
        m = median.get((stage[rank], it))
        return m is not None and counts[rank][it] < CUT * m

    out = {}
    for rank, t in traces.items():
        its = sorted(counts[rank])
        if len(its) < 2 or not short(rank, its[-1]) or any(short(rank, i) for i in its[:-1]):
            out[rank] = t
            continue
        last = its[-1]
        diags.append(diag("W788", f"iteration {last} of rank {rank} holds "
                                  f"{counts[rank][last]:,} records, its stage's ranks "
                                  f"{median[(stage[rank], last)]:,.0f} (median): cut short, it "
                                  f"is left out", t.file,
                          "a trace or log cut mid-iteration (the profiler stopped, a file "
                          "copied while it was written)"))
        out[rank] = t.select(t.iteration != last)
    return out


# ---- the rank order ---------------------------------------------------------------------------
def candidate_orders(sizes: Dict[str, int]) -> List[str]:
    """Every order that differs in how the dimensions of size above one nest (dimensions of
    size one do not change the ranks), the default's placement of the others kept."""
    real = [k for k in rankmap_mod.KINDS if sizes.get(k, 1) > 1]
    base = list(rankmap_mod.parse_order(None))
    out = []
    for perm in itertools.permutations(real):
        it = iter(perm)
        out.append("-".join(next(it) if k in real else k for k in base))
    return out


def _peers_fit(traces, rm) -> Tuple[int, int]:
    """(pipeline records whose peer is a pipeline neighbour of the rank, pipeline records
    naming a peer)."""
    pp_of = np.asarray(rm.group_of_rank["pp"])
    fit = total = 0
    for rank, t in traces.items():
        p2p = pipeline(t) & (t.peer < rm.world)
        if not p2p.any():
            continue
        peers = distinct(t.peer[p2p])
        fit += int(np.count_nonzero((pp_of[peers] == pp_of[rank]) & (peers != rank)))
        total += int(peers.size)
    return fit, total


def _groups_fit(traces, rm) -> Tuple[int, int]:
    """(process groups used by NCCL kernels that are the rank's group of their kind, groups
    whose kind the trace names)."""
    fit = total = 0
    for rank, t in traces.items():
        for gi in (used_groups(t) if t.groups else ()):
            g = t.groups[gi]
            kind = group_kind(g.desc, g.name)
            if kind not in ("tp", "dp", "pp", "cp", "ep") or len(g.ranks) < 2:
                continue
            total += 1
            fit += int(tuple(sorted(g.ranks)) in groups_of(rm, kind, rank))
    return fit, total


def order_fit(traces, rm) -> Optional[float]:
    """Share of the structural evidence (pipeline peers, process groups) the rank map's order
    explains; None when the data holds none."""
    a, n = _peers_fit(traces, rm)
    b, m = _groups_fit(traces, rm)
    return (a + b) / (n + m) if n + m else None


def rank_order(traces, rm, fit_of=None, tiebreak=None) -> Optional[Diagnostic]:
    """E792 when the order does not fit the data and another one does; `fit_of(rank_map)`
    scores an order (default: pipeline peers and process groups), `tiebreak(rank_map)` ranks
    the orders that fit equally well (pipeline peers say nothing of how tp and dp nest: the
    collectives' clocks do)."""
    fit_of = fit_of or (lambda m: order_fit(traces, m))
    own = fit_of(rm)
    if own is None or own >= ORDER_FIT:
        return None
    here = "-".join(rm.order)
    fits = []
    for order in candidate_orders(dict(rm.sizes)):
        if order == here:
            continue
        score = fit_of(rankmap_mod.reorder(rm, order))
        if score is not None and score >= ORDER_FIT:
            fits.append((score, order))
    if not fits:
        return None
    best = max(score for score, _ in fits)
    fits = [(score, o) for score, o in fits if score >= best - 1e-9]
    if tiebreak is not None and len(fits) > 1:
        fits = [(tiebreak(rankmap_mod.reorder(rm, o)), o) for _, o in fits]
        top = max(t for t, _ in fits)
        fits = [(best, o) for t, o in fits if t >= top - 1e-9]
    default = "-".join(rankmap_mod.parse_order(None))
    fits.sort(key=lambda x: (-x[0], x[1] != default, x[1]))
    files = sorted({t.file for t in traces.values()})
    return diag("E792", f"the observed data does not match the rank order {here}: it explains "
                        f"{whole_percent(own)} of the pipeline peers and process groups seen, "
                        f"while "
                        f"{' and '.join(o for _, o in fits[:3])} explain{'s' if len(fits) == 1 else ''} "
                        f"{whole_percent(fits[0][0])}", files[0] if files else None,
                f"pass --order {fits[0][1]} (or declare `order` in the job's `parallel`)")


def pipeline(t) -> np.ndarray:
    """The rank's pipeline transfers that name a peer (a CP ring's or an EP exchange's sends,
    of their own phase, are not its pipeline's)."""
    # one comparison a code, not np.isin: on a rank's int8 codes isin builds a lookup table
    # each call, 10-100 times the cost (this runs for every rank under every candidate order)
    pp_comm, comm = PIPELINE_PHASES
    return ((t.op == OP_INDEX["send"]) | (t.op == OP_INDEX["recv"])) & (t.peer >= 0) & \
        ((t.phase == pp_comm) | (t.phase == comm))


# ---- another job of the same world size -------------------------------------------------------
def foreign(traces, rm, keep_iterations: Sequence[int], diags: List[Diagnostic]):
    """The ranks whose records are this job's; the others said (E790) and left out."""
    keep = set(keep_iterations)
    counts = {}
    for rank, t in traces.items():
        its = [it for it in t.iterations if it in keep]
        if its:
            comm = comm_mask(t.phase)
            if len(its) < len(t.iterations):
                comm &= np.isin(t.iteration, list(keep))
            counts[rank] = float(np.count_nonzero(comm)) / len(its)
    stage = {r.rank: r.stage for r in rm.ranks}
    by_stage: Dict[int, List[float]] = {}
    for rank, c in counts.items():
        by_stage.setdefault(stage[rank], []).append(c)
    median = {s: float(np.median(v)) for s, v in by_stage.items()}
    out = {}
    for rank, t in traces.items():
        why = None
        if not any(it in keep for it in t.iterations):
            why = (f"its iterations ({_its(t.iterations)}) are none of the other ranks' "
                   f"({_its(keep_iterations)})")
        else:
            groups = _foreign_groups(t, rm)
            m = median.get(stage[rank], 0.0)
            if groups:
                why = groups
            elif m > 0 and len(by_stage[stage[rank]]) >= 3 and \
                    abs(counts[rank] - m) > SCHEDULE_OFF * m:
                why = (f"its schedule is not stage {stage[rank]}'s: {counts[rank]:.0f} "
                       f"communication records per iteration, the stage's ranks {m:.0f}")
        if why:
            diags.append(diag("E790", f"rank {rank} does not look like a rank of `{rm.job}`: "
                                      f"{why}; left out", t.file,
                              "traces of another job or run with the same world size"))
            continue
        out[rank] = t
    return out


def _foreign_groups(t, rm) -> Optional[str]:
    """A process group of the trace whose members are not the rank's group of that kind in any
    rank order (a wrong order is E792's)."""
    if not t.groups:
        return None
    for gi in used_groups(t):
        g = t.groups[gi]
        kind = group_kind(g.desc, g.name)
        if kind not in ("tp", "dp", "pp", "cp", "ep") or len(g.ranks) < 2:
            continue
        mine = groups_of(rm, kind, t.rank)
        if t.rank not in g.ranks or len(g.ranks) not in {len(m) for m in mine}:
            return (f"its {kind.upper()} group `{g.name or g.desc}` holds ranks "
                    f"{short(g.ranks)}, the job's {kind.upper()} groups have "
                    f"{' or '.join(str(n) for n in sorted({len(m) for m in mine}))} ranks and "
                    f"this one's {'are' if len(mine) > 1 else 'is'} "
                    f"{' or '.join(short(m) for m in mine)}")
    return None


def groups_of(rm, kind: str, rank: int) -> List[Tuple[int, ...]]:
    """The rank's groups a process group the trace says is of `kind` may be: for data
    parallelism the DP group, and the DP x CP one (context parallelism: Megatron-Core's
    DATA_PARALLEL_GROUP_WITH_CP, which reduces the gradients) and the expert-data-parallel one
    (expert parallelism: EXPERT_DATA_PARALLEL_GROUP, the experts' gradients) where the job has
    them; for tensor parallelism the TP group and the expert-tensor-parallel one (expert
    tensor parallelism: EXPERT_TENSOR_PARALLEL_GROUP, which splits each routed expert)."""
    kinds = ("dp", "dpcp", "edp") if kind == "dp" else ("tp", "etp") if kind == "tp" else (kind,)
    return [rm.group(k, rank).ranks for k in kinds if k in rm.groups]


def used_groups(t) -> List[int]:
    """The process-group indices the trace's records name, ascending."""
    return distinct(t.group[t.group >= 0]).tolist()


def _its(its) -> str:
    its = sorted(its)
    if not its:
        return "none"
    return f"{its[0]}-{its[-1]}" if len(its) > 2 and its == list(range(its[0], its[-1] + 1)) \
        else ", ".join(map(str, its))


def short(ranks) -> str:
    ranks = list(ranks)
    return "[" + ", ".join(map(str, ranks[:6])) + (", ..." if len(ranks) > 6 else "") + "]"


__all__ = ["ORDER_FIT", "candidate_orders", "foreign", "groups_of", "iterations", "order_fit",
           "pipeline", "rank_order", "short", "usable", "used_groups"]
