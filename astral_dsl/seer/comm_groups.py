"""The communication groups of a job's rank order (tp, cp, dp, pp, etp, ep, edp, amax), the slowest
of each kind laid out on the network (comm.Layout), and the kinds a job communicates over. The
lowering (lower.py) prices its collectives on them; the scenario checks (cluster.py,
validate_moe.py) read them without the lowering."""
from __future__ import annotations

from typing import Dict, Tuple

from astral_dsl.seer import comm
from astral_dsl.seer.ranks import RankOrder
from astral_dsl.seer.spec import JobSpec


def groups(job: JobSpec, net: comm.Network) -> Dict[str, comm.Layout]:
    """The layout of each kind of communication group the job's collectives are priced on: the
    slowest group of the kind, over every rank of the job (the most hosts, the fewest members on
    one of them, the most on one: the highest tier any group of the kind climbs, the fewest NICs
    a ring of it runs on). Synchronous training waits for the slowest group: the optimizer step
    for every DP group, an expert layer's all-to-all for every EP group of the stage, the
    pipeline for its slowest stage. Seer's stages share one set of groups (its templates are
    built once per shape), so every stage is priced by the job's slowest group (`straddle_notes`
    says where rank 0's sits otherwise). One code path with and without failures: under a
    scenario `net` carries the slowest GPU per tier (comm.layout, Network.worst).

    The gradient group ("dp") is DP x CP (CP ranks hold the same weights); "pp" is a pair of
    neighbouring stages; "etp" (expert tensor parallelism: the ranks that split each routed
    expert's GEMMs), "ep" and "edp" (the expert-data-parallel group, over which the routed
    experts' gradients are reduced: params.layer_expert_params) come from the expert numbering.
    A group whose neighbours sit at different GPU indices of their hosts crosses rails (p2p and
    all-to-all; NCCL's rings and trees are built rail by rail, so they cross rails only when the
    hosts of a group hold no member at a common GPU index: seer/ranks.spread). "pp" is the
    representative pair, ranks 0 and 0 + the PP stride; each boundary between stages is priced
    by its own pairs (seer/pipeline_pairs.boundaries, lower_comm.p2p_hops)."""
    return _groups(job, net, every=True)


def _groups(job: JobSpec, net: comm.Network, every: bool) -> Dict[str, comm.Layout]:
    """`groups`, of the slowest group of each kind (every) or of rank 0's."""
    par, g = job.parallel, max(1, net.gpus_per_host)
    dense, expert = RankOrder(par), RankOrder(par, experts=True)

    def lay(kind, order, dims, n=None, cross=False):
        shape = order.shape(dims, g, every)
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


def straddle_notes(job: JobSpec, net: comm.Network) -> Tuple[str, ...]:
    """A note per kind of group the job communicates over whose slowest group (by which its
    collectives are priced: `groups`) sits on more hosts, or fewer members to a host, than rank
    0's: every stage is priced by it, a stage whose own groups sit better too (an
    approximation: Seer's stages share one set of groups)."""
    mine, worst = _groups(job, net, every=False), groups(job, net)
    out = []
    for kind in sorted(used_groups(job) - {"pp"}):
        a, b = mine[kind], worst[kind]
        if (a.hosts, a.per_host, a.hops) == (b.hosts, b.per_host, b.hops):
            continue
        where = "one host" if a.hosts <= 1 else \
            f"{a.hosts:,} hosts, {a.per_host:,} of its {a.n:,} ranks on the fewest"
        out.append(f"approximation: {kind} groups of other ranks straddle up to {b.hosts:,} hosts "
                   f"(NVLink domains) of {net.gpus_per_host:,} GPUs with {b.per_host:,} of their "
                   f"{b.n:,} ranks on the fewest (rank 0's: {where}); every stage's {kind} "
                   f"collectives are priced by the slowest group (synchronous training waits for "
                   f"it), a stage whose own groups sit better too")
    return tuple(out)
