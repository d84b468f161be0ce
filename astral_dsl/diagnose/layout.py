"""Whether the observed data is of the job's parallel layout at all (docs/diagnose.md, "Input
checks"): a run of other parallel sizes than the job states (tp 4, pp 4 read as tp 8, pp 2; a
MoE run read as a dense job of the same GPUs, or a dense run's traces as a MoE job's) would
have its collectives matched on groups they never ran in. When more than half of the ranks
that show their structure (a log's pipeline peers, a trace's process groups, EP or CP
exchanges) are not the job's in its order, and no other order fits them
(checks.rank_order), it is said once for the job (E792) and nothing is compared."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from astral_dsl.analyses import rankmap as rankmap_mod
from astral_dsl.diagnose.checks import groups_of, pipeline, short, used_groups
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.observe.kineto import group_kind
from astral_dsl.observe.records import PHASE_INDEX, distinct

LAYOUT_OFF = 0.5         # more than this share of the ranks not the job's: another layout


def layout(traces, rm, observed=None) -> Optional[Diagnostic]:
    """E792 when more than LAYOUT_OFF of the ranks that name pipeline peers or process groups,
    or log EP or CP exchanges, are not the job's in its order (a peer that is no pipeline
    neighbour, a group that is not theirs, an exchange of a dimension of size 1) and
    rank_order found no other order that fits: the run had other parallel sizes than the job
    states (tp 4, pp 4 read as tp 8, pp 2; DeepSeek-V3's ep 64, pp 4 read as Llama 3.1 405B's
    tp 4, pp 16 on the same 256 GPUs of examples/gb200_nvl72.astral, whose pipeline peers
    share a pipeline group, 64 ranks apart: 9 hosts had been named, each at 100 %, for EP
    exchanges of one rank). Its collectives would be matched on groups they never ran in: from
    a log, the clocks of half its hosts had been set aside (E789) and the rest said `healthy`;
    each of its traces had been E790, one diagnostic a rank. `observed`: the data as read,
    before `usable` left out the ranks outside the job and the transfers with a peer outside it
    (E786), which count here: a log of 256 ranks read as a job of 128 (its ranks beyond, its
    pipeline peers 128 apart) had been diagnosed on its first 128 ranks, their pipeline transfers left out."""
    why = {rank: _misfit(t, rm) for rank, t in traces.items()}
    for t in (observed.traces if observed is not None else ()):
        if t.world_size is not None and t.world_size != rm.world:
            continue                      # another world size's: E785, not this job's data
        if not 0 <= t.rank < rm.world:
            why.setdefault(t.rank, f"is outside the job's {rm.world} ranks")
            continue
        peer = t.peer[pipeline(t) & (t.peer >= rm.world)] if t.source == "log" else ()
        if len(peer) and t.rank in traces and traces[t.rank].file == t.file:
            why[t.rank] = (f"exchanges pipeline transfers with rank {int(peer[0])}, outside the "
                           f"job's {rm.world} ranks")
    said = [(rank, w) for rank, w in sorted(why.items()) if w is not None]
    off = [(rank, why) for rank, why in said if why]
    if not said or len(off) <= LAYOUT_OFF * len(said):
        return None
    sizes = ", ".join(f"{k} {v}" for k, v in rm.sizes if v > 1 and k in rankmap_mod.KINDS)
    files = sorted({t.file for t in traces.values()})
    return Diagnostic(
        "E792", Severity.ERROR,
        f"the observed data fits no rank order of `{rm.job}`'s layout ({sizes or 'one rank'}): "
        f"{len(off):,} of the {len(said):,} ranks whose number, pipeline peers, process groups or "
        f"exchanges are read are not the job's in its order {'-'.join(rm.order)}, and no "
        f"other order fits them: the run had other parallel sizes", None,
        "diagnose it against a job of the sizes the run used (its `parallel`), or name the "
        "job observed with --job", file=files[0] if files else None,
        notes=(f"e.g. rank {off[0][0]} {off[0][1]}",))


def _misfit(t, rm) -> Optional[str]:
    """What of the rank's structure is not its in the job (a pipeline peer outside its
    pipeline group, a process group that is not its), '' when all is, None when it names no
    peer or group. A log's peers are global ranks (its `peer` column); a trace's structure is
    taken from its process groups alone, whose `Process Group Ranks` are global (its peers,
    read through them in observe/kernels.py, are global only where the list is whole)."""
    pp_of, rank = rm.group_of_rank["pp"], t.rank
    sizes = dict(rm.sizes)
    for kind in ("ep", "cp"):             # an EP exchange or CP ring the job does not have
        if sizes.get(kind, 1) == 1 and bool((t.phase == PHASE_INDEX[f"{kind}_comm"]).any()):
            return (f"records {'EP all-to-alls' if kind == 'ep' else 'a CP ring'}; the job has "
                    f"no {'expert' if kind == 'ep' else 'context'} parallelism ({kind} 1)")
        if sizes.get(kind, 1) > 1 and t.groups and not _shows(t, rm, kind):
            return (f"lists no {kind.upper()} process group and records no "
                    f"{'EP all-to-all' if kind == 'ep' else 'CP ring step'}; the job has "
                    f"{'expert' if kind == 'ep' else 'context'} parallelism "
                    f"({kind} {sizes[kind]})")
    seen = False
    logged = pipeline(t) & (t.peer < rm.world) if t.source == "log" else np.zeros(0, bool)
    stage, pp = rm.ranks[rank].stage, sizes.get("pp", 1)
    for peer in distinct(t.peer[logged]).tolist():
        seen = True
        # a transfer runs between neighbouring stages (the last and the first: an
        # interleaved schedule's next chunk)
        if peer == rank or pp_of[peer] != pp_of[rank] or \
                (rm.ranks[peer].stage - stage) % pp not in (1, pp - 1):
            return (f"exchanges pipeline transfers with rank {peer}; its pipeline neighbours "
                    f"in the job are ranks {short(_neighbours(rm, rank))}")
    for gi in (used_groups(t) if t.groups else ()):
        g = t.groups[gi]
        kind = group_kind(g.desc, g.name)
        if kind not in ("tp", "dp", "pp", "cp", "ep") or len(g.ranks) < 2:
            continue
        seen = True
        mine = groups_of(rm, kind, rank)
        if tuple(sorted(g.ranks)) not in mine:
            return (f"runs in the {kind.upper()} group `{g.name or g.desc}` of ranks "
                    f"{short(g.ranks)}; in the job its {kind.upper()} group is ranks "
                    f"{' or '.join(short(m) for m in mine)}")
    return "" if seen else None


def _shows(t, rm, kind: str) -> bool:
    """Whether a profiler trace that lists its process groups shows the rank's expert or
    context parallelism: an exchange of that kind, or a process group of two ranks or more that
    its words name of that kind or that holds the ranks of the rank's group of that kind in the
    job. A dense run's trace lists none (Megatron-Core's EXPERT_MODEL_PARALLEL_GROUP of one
    rank); a rank log lists no group, and need not log its EP all-to-alls: it is not judged."""
    if bool((t.phase == PHASE_INDEX[f"{kind}_comm"]).any()):
        return True
    mine = tuple(sorted(rm.group(kind, t.rank).ranks))
    return any(len(g.ranks) >= 2 and (group_kind(g.desc, g.name) == kind
                                      or tuple(sorted(g.ranks)) == mine) for g in t.groups)


def _neighbours(rm, rank: int) -> List[int]:
    """The ranks of the stages before and after the rank's in its pipeline group (the last
    and the first stage neighbours too)."""
    pp = dict(rm.sizes).get("pp", 1)
    stage = rm.ranks[rank].stage
    return sorted({r for r in rm.group("pp", rank).ranks
                   if (rm.ranks[r].stage - stage) % pp in (1, pp - 1) and r != rank})


__all__ = ["LAYOUT_OFF", "layout"]
