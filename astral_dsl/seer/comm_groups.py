"""The communication groups of a rank in a job's rank order (tp, cp, dp, pp, etp, ep, edp, amax),
each laid out on the network (comm.Layout), and the kinds a job communicates over. The lowering
(lower.py) prices its collectives on them; the scenario checks (cluster.py, validate_moe.py)
read them without the lowering."""
from __future__ import annotations

from typing import Dict, Tuple

from astral_dsl.seer import comm
from astral_dsl.seer.ranks import RankOrder
from astral_dsl.seer.spec import JobSpec


def groups(job: JobSpec, net: comm.Network, every: bool = False) -> Dict[str, comm.Layout]:
    """The layout of each communication group of a rank in the job's rank order. The gradient
    group ("dp") is DP x CP (CP ranks hold the same weights); "pp" is a pair of neighbouring
    stages; "etp" (expert tensor parallelism: the ranks that split each routed expert's
    GEMMs), "ep" and "edp" (the expert-data-parallel group, over which the routed experts'
    gradients are reduced: params.layer_expert_params) come from the expert numbering. A group
    whose neighbours sit at different GPU indices of their hosts crosses rails (p2p and
    all-to-all; NCCL's rings and trees are built rail by rail, so they cross rails only when the
hosts of a group hold no member at a common GPU index: seer/ranks.spread). Each kind is laid out
as its worst group: the most hosts, the fewest members on one of them. "pp" is the representative pair,
    ranks 0 and 0 + the PP stride; each boundary between stages is priced by its own pairs
    (seer/pipeline_pairs.boundaries, lower_comm.p2p_hops). The groups are rank 0's, as the
    lowering's representative ranks price them (`straddle_notes` says where others differ);
    every: the worst group of each kind, for the checks that a failure cuts none off."""
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
    """A note per kind of group the job communicates over whose groups of other ranks sit on
    more hosts, or fewer members to a host, than rank 0's, by which the collectives are priced
    (an approximation: Seer prices one representative rank per stage)."""
    mine, worst = groups(job, net), groups(job, net, every=True)
    out = []
    for kind in sorted(used_groups(job) - {"pp"}):
        a, b = mine[kind], worst[kind]
        if (a.hosts, a.per_host, a.hops) == (b.hosts, b.per_host, b.hops):
            continue
        where = "one host" if a.hosts <= 1 else \
            f"{a.hosts:,} hosts, {a.per_host:,} of its {a.n:,} ranks on the fewest"
        out.append(f"approximation: {kind} groups of other ranks straddle up to {b.hosts:,} hosts "
                   f"(NVLink domains) of {net.gpus_per_host:,} GPUs with {b.per_host:,} of their {b.n:,} ranks on "
                   f"the fewest; priced as rank 0's ({where})")
    return tuple(out)
