"""The communication groups of a rank in a job's rank order (tp, cp, dp, pp, ep, edp, amax),
each laid out on the network (comm.Layout), and the kinds a job communicates over. The lowering
(lower.py) prices its collectives on them; the scenario checks (cluster.py, validate_moe.py)
read them without the lowering."""
from __future__ import annotations

from typing import Dict

from astral_dsl.seer import comm
from astral_dsl.seer.ranks import RankOrder
from astral_dsl.seer.spec import JobSpec


def groups(job: JobSpec, net: comm.Network) -> Dict[str, comm.Layout]:
    """The layout of each communication group of a rank in the job's rank order. The gradient
    group ("dp") is DP x CP (CP ranks hold the same weights); "pp" is a pair of neighbouring
    stages; "ep" and "edp" (the expert-data-parallel group, over which the routed experts'
    gradients are reduced: params.layer_expert_params) come from the expert numbering. A group
    whose neighbours sit at different GPU indices of their hosts crosses rails (p2p and
    all-to-all; NCCL's rings and trees are built rail by rail). "pp" is the representative pair,
    ranks 0 and 0 + the PP stride; each boundary between stages is priced by its own pairs
    (seer/pipeline_pairs.boundaries, lower_comm.p2p_hops)."""
    par, g = job.parallel, max(1, net.gpus_per_host)
    dense, expert = RankOrder(par), RankOrder(par, experts=True)

    def lay(kind, order, dims, n=None, cross=False):
        shape = order.shape(dims, g)
        if n is not None and shape.n > 1:      # a pair of neighbours along the dimension
            span = (shape.stride * (n - 1)) // g + 1
            per_host = n if span == 1 else 1
            return comm.layout(net, kind, n, shape.stride, span, cross and shape.stride % g != 0,
                               per_host)
        return comm.layout(net, kind, shape.n, shape.stride, shape.span_hosts,
                           cross and shape.stride % g != 0, shape.per_host)

    return {"tp": lay("tp", dense, ("tp",)), "cp": lay("cp", dense, ("cp",), cross=True),
            "dp": lay("dp", dense, ("dp", "cp")),
            "pp": lay("pp", dense, ("pp",), n=2, cross=True),
            "ep": lay("ep", expert, ("ep",), cross=True),
            "edp": lay("edp", expert, ("dp",)),
            "amax": lay("amax", dense, ("tp", "cp", "dp"))}


def used_groups(job: JobSpec) -> frozenset:
    """The kinds of group of `groups` the job communicates over: the expert groups ("ep",
    "edp") only with experts, the amax group only under fp8 delayed scaling (`_amax_reduce`)."""
    kinds = {"tp", "cp", "dp", "pp"}
    if job.model.experts:
        kinds |= {"ep", "edp"}
    if job.dtype == "fp8" and job.fp8_recipe == "delayed":
        kinds.add("amax")
    return frozenset(kinds)
