"""The communication groups of a job's rank order (tp, cp, dp, pp, etp, ep, edp, amax), the slowest
of each kind laid out on the network (comm.Layout), and the kinds a job communicates over. The
lowering (lower.py) prices its collectives on them; the scenario checks (cluster.py,
validate_moe.py) read them without the lowering."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses.host_positions import Interval, merge
from astral_dsl.kept import Kept

from astral_dsl.seer import comm
from astral_dsl.seer.ranks import RankOrder, numbering
from astral_dsl.seer.spec import JobSpec


def groups(job: JobSpec, net: comm.Network) -> Dict[str, comm.Layout]:
    """The layout of each kind of communication group the job's collectives are priced on: the
    slowest group of the kind, over every rank of the job (the most hosts, the fewest members on
    one of them, the most on one: the highest tier any group of the kind climbs, the fewest NICs
    a ring of it runs on). Synchronous training waits for the slowest group: the optimizer step
    for every DP group, an expert layer's all-to-all for every EP group of the stage, the
    pipeline for its slowest stage. These are the job's slowest (the scenario checks read them:
    a group of any rank cut off stops the job); each stage's collectives are priced on its own
    (`stage_groups`). One code path with and without failures: under a scenario `net` carries
    the slowest GPU per tier (comm.layout, Network.worst).

    The gradient group ("dp") is DP x CP (CP ranks hold the same weights); "pp" is a pair of
    neighbouring stages; "etp" (expert tensor parallelism: the ranks that split each routed
    expert's GEMMs), "ep" and "edp" (the expert-data-parallel group, over which the routed
    experts' gradients are reduced: params.layer_expert_params) come from the expert numbering.
    A group whose neighbours sit at different GPU indices of their hosts crosses rails (p2p and
    all-to-all; NCCL's rings and trees are built rail by rail, so they cross rails only when the
    hosts of a group hold no member at a common GPU index: seer/ranks.spread). "pp" is the
    representative pair, ranks 0 and 0 + the PP stride; each boundary between stages is priced
    by its own pairs (seer/pipeline_pairs.boundaries, lower_comm.p2p_hops). Remembered
    (`_kept`): the dicts are shared, never changed."""
    return _kept(job, net)[0]


KEPT = 1024          # (rank numbering, network) pairs whose layouts are remembered
_KEPT = Kept(KEPT)


def _kept(job: JobSpec, net: comm.Network) -> list:
    """[groups(job, net), stage_groups(job, net) or None until asked], remembered for the most
    recent KEPT pairs of rank numbering (ranks.numbering: all that the layouts read of the job)
    and network: every candidate of the rule, every configuration of a search with the same
    parallel sizes and every forecast of a calibration row share them (a search of a 70B job
    made 5,886 lowerings of 422 numberings; their layouts were a sixth of its CPU)."""
    key = (numbering(job.parallel), net)
    hit = _KEPT.get(key)
    if hit is None:
        hit = _KEPT.put(key, [_groups(job, net, every=True), None])
    return hit


def _groups(job: JobSpec, net: comm.Network, every: bool,
            stage: Optional[int] = None) -> Dict[str, comm.Layout]:
    """`groups`, of the slowest group of each kind (every; of stage `stage`'s groups) or of
    rank 0's."""
    par, g = job.parallel, max(1, net.gpus_per_host)
    dense, expert = RankOrder(par), RankOrder(par, experts=True)

    def lay(kind, order, dims, n=None, cross=False):
        shape = order.shape(dims, g, every, stage)
        if n is not None and shape.n > 1:      # a pair of neighbours along the dimension
            span = (shape.stride * (n - 1)) // g + 1
            per_host = n if span == 1 else 1
            return comm.layout(net, kind, n, shape.stride, span, cross and shape.stride % g != 0,
                               per_host)
        return comm.layout(net, kind, shape.n, shape.stride, shape.span_hosts,
                           (cross and shape.stride % g != 0) or shape.rails == 0,
                           shape.per_host, hosts=shape.hosts, most=shape.crowd)

    return {"tp": lay("tp", dense, ("tp",)), "cp": lay("cp", dense, ("cp",), cross=True),
            "dp": lay("dp", dense, ("dp", "cp")),
            "pp": lay("pp", dense, ("pp",), n=2, cross=True),
            "etp": lay("etp", expert, ("tp",)),
            "ep": lay("ep", expert, ("ep",), cross=True),
            "edp": lay("edp", expert, ("dp",)),
            "amax": lay("amax", dense, ("tp", "cp", "dp"))}


def stage_groups(job: JobSpec, net: comm.Network,
                 whole: Optional[Dict[str, comm.Layout]] = None
                 ) -> Tuple[Dict[str, comm.Layout], ...]:
    """Per pipeline stage, the layout of each kind of group its collectives are priced on: the
    slowest of the stage's own groups (every group but "pp" lies inside one stage: its ranks
    differ only along the other dimensions), under failures for the slowest GPU of the stage's
    own hosts (Network.stage_worst); "pp" is the job's representative pair (each boundary is
    priced by its own pairs). A stage whose groups sit inside one NVLink domain is not priced
    as another's that straddles domains, nor slowed by a failure on another stage's hosts:
    synchronous training waits for the slowest group of each stage, and the pipeline (its
    schedule) for the slowest stage. A stage's groups sit as its first rank's GPU index (mod
    the GPUs of a host) and its failures say, so the layouts are made once per distinct pair
    and shared: stages that sit alike share one dict, the job's (`groups`) where they sit as
    its slowest (then every template and every number is as one set of groups gave them).
    `whole`: `groups(job, net)`, when made already. Remembered with it (`_kept`)."""
    kept = _kept(job, net)
    if whole is None or whole is kept[0]:
        if kept[1] is None:
            kept[1] = _stage_groups(job, net, kept[0])
        return kept[1]
    return _stage_groups(job, net, whole)


def _stage_groups(job: JobSpec, net: comm.Network, whole: Dict[str, comm.Layout]
                  ) -> Tuple[Dict[str, comm.Layout], ...]:
    par = job.parallel
    if par.pp <= 1:
        return (whole,)
    g = max(1, net.gpus_per_host)
    strides = (RankOrder(par).stride["pp"], RankOrder(par, experts=True).stride["pp"])
    made: Dict[tuple, Dict[str, comm.Layout]] = {}
    out = []
    for i in range(par.pp):
        worst = net.stage_worst[i] if len(net.stage_worst) == par.pp else net.worst
        key = (tuple(i * d % g for d in strides), worst)
        hit = made.get(key)
        if hit is None:
            at = net if worst == net.worst else attrs.evolve(net, worst=worst)
            hit = _groups(job, at, True, stage=i)
            hit["pp"] = whole["pp"]
            hit = made[key] = next((d for d in (whole, *made.values()) if d == hit), hit)
        out.append(hit)
    return tuple(out)


def stage_hosts(job: JobSpec, g: int, stage: int) -> List[Interval]:
    """The hosts (g GPUs each, in the job's order) of the ranks of pipeline stage `stage`:
    blocks of the PP stride's ranks, one per period of the stride x PP."""
    par = job.parallel
    d = RankOrder(par).stride["pp"]
    period = par.pp * d
    return merge([((k * period + stage * d) // g, (k * period + (stage + 1) * d - 1) // g + 1)
                  for k in range(max(1, par.gpus // period))])


def stage_worst(job: JobSpec, net: comm.Network, damaged) -> Tuple[tuple, ...]:
    """Network.stage_worst: per pipeline stage, Network.worst over the stage's own hosts (the
    slowest GPU of the stage per tier its traffic climbs to: `damaged`,
    pipeline_pairs.Damaged.worst); a stage whose slowest GPU is the job's keeps the job's entry
    (so that stages alike are priced as the job's slowest), () without a pipeline."""
    if job.parallel.pp <= 1 or damaged is None or not net.worst:
        return ()
    out = []
    for i in range(job.parallel.pp):
        hosts = stage_hosts(job, max(1, net.gpus_per_host), i)
        mine = []
        for top, bw, text in net.worst:
            hit = damaged.worst(top, hosts)
            if hit is None:
                continue
            mine.append((top, bw, text) if hit[0] <= bw else (top, hit[0], hit[1]))
        out.append(tuple(mine))
    return tuple(out)


def used_groups(job: JobSpec) -> frozenset:
    """The kinds of group of `groups` the job communicates over: the expert groups ("ep",
    "edp"; "etp" with expert tensor parallelism) only with experts, the amax group only under
    fp8 delayed scaling (`_amax_reduce`)."""
    kinds = {"tp", "cp", "dp", "pp"}
    if job.model.experts:
        kinds |= {"ep", "edp"} | ({"etp"} if job.parallel.etp > 1 else set())
    if job.dtype == "fp8" and job.fp8_recipe == "delayed":
        kinds.add("amax")
    return frozenset(kinds)


def straddle_notes(job: JobSpec, net: comm.Network,
                   per: Optional[Tuple[Dict[str, comm.Layout], ...]] = None) -> Tuple[str, ...]:
    """A note per kind of group the job communicates over whose groups do not all sit as rank
    0's: where the slowest group of each stage sits (by which the stage's collectives are
    priced: `stage_groups`, `per` when made already), the stages named where they sit
    unalike."""
    mine = _groups(job, net, every=False)
    per = stage_groups(job, net) if per is None else per
    out = []
    for kind in sorted(used_groups(job) - {"pp"}):
        a = mine[kind]
        where: Dict[tuple, List[int]] = {}
        for i, lays in enumerate(per):
            b = lays[kind]
            where.setdefault((b.hosts, b.per_host, b.hops), []).append(i)
        if list(where) == [(a.hosts, a.per_host, a.hops)]:
            continue
        lays = [per[st[0]][kind] for st in where.values()]
        if len(where) == 1:
            text = f"{kind} groups of other ranks {_sits(lays[0], net, 'straddle up to')}"
        else:
            text = (f"{kind} groups sit unalike across the pipeline: " + "; ".join(
                f"on {named_stages(st)} the slowest {_sits(b, net, 'straddles')}"
                for b, st in zip(lays, where.values())))
        out.append(f"{text} (rank 0's: "
                   f"{'one host' if a.hosts <= 1 else _sits(a, net, 'straddles')}); each "
                   f"stage's {kind} collectives are priced by its own slowest group "
                   f"(synchronous training waits for it), the pipeline paced by its slowest "
                   f"stage")
    return tuple(out)


def _sits(lay: comm.Layout, net: comm.Network, verb: str) -> str:
    """Where a group sits, in words."""
    if lay.hosts <= 1:
        return "sits inside one host (NVLink domain)"
    return (f"{verb} {lay.hosts:,} hosts (NVLink domains) of {net.gpus_per_host:,} GPUs with "
            f"{lay.per_host:,} of {lay.n:,} ranks on the fewest")


def named_stages(stages: List[int]) -> str:
    """Stages named: "stage 1", "stages 0, 2", the first six and how many more (notes)."""
    if len(stages) == 1:
        return f"stage {stages[0]}"
    more = f" and {len(stages) - 6:,} more" if len(stages) > 6 else ""
    return "stages " + ", ".join(str(i) for i in stages[:6]) + more
