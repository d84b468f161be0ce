"""Collectives priced on the declared topology.

A communication group (TP, CP, DP, PP, EP) is laid out on the job's GPUs in the job's rank order
(seer/ranks.py; Megatron-Core's default: TP fastest, then CP, EP, DP, PP): its members sit
`per_host` to a host over `hosts` hosts (hosts holding unequal shares, as 5 ranks on hosts of 4
do, 4 + 1: `per_host` the fewest, `most` the most; seer/ranks.spread). Inside a host the group
runs on NVLink;
across hosts every member uses the NIC of its rail (rail-optimised wiring: GPU i of each host is
on rail i), so a ring or tree gets `per_host` NICs per host. Traffic between hosts climbs the
fabric to the lowest tier whose reach holds all of them (cross-rail traffic to the first tier not
replicated per rail) and is slowed by the oversubscription of every tier it climbs through.

Algorithms (NCCL's ring, double-binary tree and hierarchical variants; docs/seer.md), priced with
alpha-beta costs (Thakur et al., "Optimization of Collective Communication Operations in MPICH",
IJHPCA 2005):
- ring all-reduce: 2 (n-1)/n S / B_bus + 2 (n-1) alpha_step;
- tree all-reduce: 2 S / B_bus (pipelined) + 2 log2(hosts) alpha_net + ring inside hosts;
- hierarchical: reduce-scatter in the host, all-reduce of S/per_host across hosts on every
  member's NIC, all-gather in the host;
- reduce-scatter / all-gather: half an all-reduce; all-to-all: (n-1)/n S over the bisection.
The bus bandwidth of a group spanning hosts is min(NVLink, per_host x NIC) with each link at its
achieved efficiency. The cheapest algorithm is taken, as NCCL's tuner does.

A stage's collective is priced on the slowest group of its kind on that stage
(seer/comm_groups.stage_groups: the highest tier any of them climbs, the fewest NICs a host gives
it), with and without failures: synchronous training waits for the slowest. Under failed fabric
parts (a scenario) its NIC bandwidth is that of the slowest GPU of the stage whose traffic climbs
as high as the group's (Network.stage_worst; the job's: Network.worst, seer/cluster.py): its
live ports times the share of its slowest path (over / (1 - lost) for uplinks that lost a
share).
The pipeline's send/recv is priced per boundary between stages, by that boundary's slowest pair
(on NVLink when every pair is inside a domain), with the failures on its own pairs' hosts and
paths (Network.pp, seer/pipeline_pairs.py).

Latencies and efficiencies (docs/seer.md): NVLINK_EFF and NET_EFF are NCCL bus bandwidths over
link bandwidth reported by nccl-tests on DGX A100/H100 (~0.78-0.85 NVLink, ~0.9-0.95 InfiniBand);
step latencies follow NCCL's tuning model (src/graph/tuning.cc: ~0.6 us per NVLink hop, ~5 us per
network hop, ~7 us base) plus the declared switch hops at SWITCH_S each.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

from astral_dsl import records
from astral_dsl.seer.ranks import spread

NVLINK_EFF = 0.80      # published measurement: nccl-tests bus bandwidth / NVLink, DGX A100/H100
NET_EFF = 0.90         # published measurement: InfiniBand / RoCE bus bandwidth (Calculon: ~0.9)
BASE_S = 7e-6          # published model: NCCL tuning.cc base latency per collective launch
NVLINK_STEP_S = 0.6e-6  # published model: NCCL tuning.cc latency per NVLink step
NET_STEP_S = 5e-6      # published model: NCCL tuning.cc latency per network step
# ASSUMED (no data sheet cited): a switch hop's port-to-port latency, of the order InfiniBand
# switches (~0.1-0.2 us) and Ethernet switches (~0.5-1 us) are commonly quoted at; a hop's share
# of a network step (NET_STEP_S) is small either way
SWITCH_S = {"infiniband": 0.15e-6, "roce": 0.6e-6, "ethernet": 0.6e-6}


@records.frozen(slots=False)
class Tier:
    name: str
    reach_hosts: int        # hosts one group of this tier connects
    per_rail: bool
    oversub: float          # down / up bandwidth of this tier's switches (1 = non-blocking)


@records.frozen(slots=False)
class Network:
    gpus_per_host: int
    nvlink_bw: float                 # bytes/s per GPU per direction
    rail_bw: Tuple[float, ...]       # bytes/s per direction available to GPU i of a host
    tiers: Tuple[Tier, ...] = ()
    protocol: str = "infiniband"
    notes: Tuple[str, ...] = ()
    # under failed fabric parts: per tier a group's traffic climbs to, the bandwidth (bytes/s
    # per direction) of the slowest GPU of the job whose traffic climbs there, and why
    # (seer/cluster.py): a group is priced for the worst-affected group of its kind
    worst: Tuple[Tuple[int, float, str], ...] = ()
    # per tier, the job's ranks with no live path for traffic that climbs there (E775's notes)
    cut: Tuple[Tuple[int, Tuple[str, ...]], ...] = ()
    # under failed fabric parts: per boundary between pipeline stages (the last: from the last
    # stage back to the first) the layout of its slowest pair under them
    # (seer/pipeline_pairs.under_failures); () without failures: pipeline_pairs.boundaries
    pp: Tuple["Layout", ...] = ()
    # under failed fabric parts: per pipeline stage, `worst` over the stage's own hosts (its
    # groups are priced for its own slowest GPU: comm_groups.stage_groups); (): `worst` for all
    stage_worst: Tuple[Tuple[Tuple[int, float, str], ...], ...] = ()

    @property
    def nic_bw(self) -> float:
        """The slowest rail: every DP group waits for the slowest at the optimizer step."""
        return min(self.rail_bw) if self.rail_bw else 0.0

    def worst_at(self, top: int) -> Optional[float]:
        """The slowest GPU's bandwidth for traffic that climbs to tier `top` (None: none is
        slowed by a failure)."""
        for t, bw, _ in self.worst:
            if t == top:
                return bw
        return None


@records.frozen(slots=False)
class Layout:
    kind: str
    n: int                 # ranks
    per_host: int          # ranks of the group on one host (the fewest, hosts unalike)
    hosts: int             # hosts the group spans
    hops: int              # switches between two hosts of the group (0: one host)
    net_bw: float          # bytes/s per member NIC after failures and oversubscription
    alpha_net: float       # latency of one network step
    most: int = 0          # the most ranks of the group on one host (0: per_host, hosts alike)

    @property
    def crowd(self) -> int:
        """Ranks on its fullest host: its phases inside a host wait for that one."""
        return max(self.per_host, self.most)


def layout(net: Network, kind: str, n: int, stride: int, span_hosts: Optional[int] = None,
           cross_rail: bool = False, per_host: Optional[int] = None,
           top: Optional[int] = None, hosts: Optional[int] = None,
           most: int = 0) -> Layout:
    """Group of n ranks whose consecutive members are `stride` GPUs apart from rank 0 (or, for a
    group over several dimensions of the rank order, at least `per_host` of them on each of its
    `hosts` hosts over `span_hosts` consecutive hosts: seer/ranks.py); `top`: the tier its
    traffic climbs to, when known (a pair of stages, seer/pipeline_pairs.py) in place of the
    climb its span gives. Hosts holding unequal shares of the group (5 ranks on hosts of 4:
    4 + 1) are priced at the fewest across hosts (its rings and trees run on as many NICs per
    host) and at the `most` inside one (its phases there wait for the fullest host)."""
    g = max(1, net.gpus_per_host)
    if n <= 1:
        return Layout(kind, 1, 1, 1, 0, 0.0, 0.0)
    if per_host is None:
        per_host, hosts, span_hosts, _, most = spread(((stride, n),), (), g)
    if per_host >= n:
        return Layout(kind, n, n, 1, 0, 0.0, 0.0)
    hosts = hosts or max(2, -(-n // per_host))
    span = max(hosts, span_hosts or 1)
    hops, factor = _climb(net, span, cross_rail) if top is None else _climb_to(net, top)
    bw = net.nic_bw * factor
    slowest = net.worst_at((hops - 1) // 2)     # the worst-affected group of its kind
    if slowest is not None:
        bw = min(bw, slowest)
    lat = NET_STEP_S + hops * SWITCH_S.get(net.protocol, 0.6e-6)
    return Layout(kind, n, per_host, hosts, hops, bw, lat, most if most > per_host else 0)


def _climb(net: Network, span_hosts: int, cross_rail: bool) -> Tuple[int, float]:
    """(switches traversed, bandwidth factor) to connect `span_hosts` consecutive hosts."""
    if not net.tiers:
        return 1, 1.0
    factor = 1.0
    for i, tier in enumerate(net.tiers):
        if tier.reach_hosts >= span_hosts and not (cross_rail and tier.per_rail):
            return 2 * i + 1, factor
        factor = min(factor, 1.0 / max(1.0, tier.oversub))
    return 2 * len(net.tiers) - 1, factor


def _climb_to(net: Network, top: int) -> Tuple[int, float]:
    """(switches traversed, bandwidth factor) for traffic that climbs to tier `top`."""
    top = max(0, min(top, len(net.tiers) - 1))
    return 2 * top + 1, min((1.0 / max(1.0, t.oversub) for t in net.tiers[:top]), default=1.0)


def _bus(net: Network, lay: Layout) -> float:
    nv = net.nvlink_bw * NVLINK_EFF
    if lay.hosts <= 1:
        return nv
    return min(nv, lay.per_host * lay.net_bw * NET_EFF)


def all_reduce(net: Network, lay: Layout, nbytes: float) -> float:
    n = lay.n
    if n <= 1 or nbytes <= 0:
        return 0.0
    if lay.hosts <= 1:
        return BASE_S + 2 * (n - 1) / n * nbytes / _bus(net, lay) + 2 * (n - 1) * NVLINK_STEP_S
    ring = BASE_S + 2 * (n - 1) / n * nbytes / _bus(net, lay) + 2 * (n - 1) * lay.alpha_net
    k, hosts = lay.per_host, lay.hosts
    inner = _in_host(net, lay.crowd, nbytes)
    tree = (BASE_S + 2 * nbytes / k / (lay.net_bw * NET_EFF)
            + 2 * math.log2(hosts) * lay.alpha_net + 2 * inner)
    hier = (BASE_S + 2 * inner + 2 * (hosts - 1) / hosts * nbytes / k / (lay.net_bw * NET_EFF)
            + 2 * (hosts - 1) * lay.alpha_net)
    return min(ring, tree, hier)


def _in_host(net: Network, k: int, nbytes: float) -> float:
    """Reduce-scatter (or all-gather) of nbytes among k GPUs of a host."""
    if k <= 1:
        return 0.0
    return (k - 1) / k * nbytes / (net.nvlink_bw * NVLINK_EFF) + (k - 1) * NVLINK_STEP_S


def reduce_scatter(net: Network, lay: Layout, nbytes: float) -> float:
    """nbytes: the full (unsharded) buffer; all-gather costs the same."""
    n = lay.n
    if n <= 1 or nbytes <= 0:
        return 0.0
    if lay.hosts <= 1:
        return BASE_S + (n - 1) / n * nbytes / _bus(net, lay) + (n - 1) * NVLINK_STEP_S
    ring = BASE_S + (n - 1) / n * nbytes / _bus(net, lay) + (n - 1) * lay.alpha_net
    k, hosts = lay.per_host, lay.hosts
    hier = (BASE_S + _in_host(net, lay.crowd, nbytes) + (hosts - 1) / hosts * nbytes / k
            / (lay.net_bw * NET_EFF) + (hosts - 1) * lay.alpha_net)
    return min(ring, hier)


all_gather = reduce_scatter


def all_to_all(net: Network, lay: Layout, nbytes: float, eff: float = NVLINK_EFF) -> float:
    """Each rank holds nbytes and sends (n-1)/n of it, a share to every other rank: to the
    ranks of its host (NVLink domain) at `eff` of NVLink's bandwidth (the expert-parallel
    dispatcher's: seer/calibration `a2a_eff`, whose prior is one DGX H100's all-to-all), to the
    others over its NIC at NET_EFF, as every NCCL transfer between hosts is priced (p2p's
    included). NCCL has no all-to-all algorithm of its own: Megatron-Core 0.16.1's alltoall
    dispatcher calls torch.distributed.all_to_all_single (tensor_parallel/mappings.py
    `_AllToAll`), which PyTorch's NCCL backend runs as torch::cuda::nccl::
    all2all_single_unequal_split (declared in the torch wheel's torch/csrc/cuda/nccl.h; its
    nccl.cpp, PyTorch's source, not the wheel's), one ncclSend and one ncclRecv per peer in a
    group, and NCCL carries a send to another host over its network transport, as it
    does the pipeline's sends and the inter-host steps of its rings and trees. Until stop 67
    both sides were priced at `eff`."""
    n = lay.n
    if n <= 1 or nbytes <= 0:
        return 0.0
    inside = (lay.crowd - 1) / n * nbytes / (net.nvlink_bw * eff)
    if lay.hosts <= 1:
        return BASE_S + inside + (n - 1) * NVLINK_STEP_S / 4
    outside = (n - lay.per_host) / n * nbytes / (lay.net_bw * NET_EFF)
    return BASE_S + max(inside, outside) + lay.alpha_net * math.log2(lay.hosts)


def dispatch(net: Network, lay: Layout, copy: float, hit: Tuple[float, float],
             eff: float) -> float:
    """A fused expert-parallel dispatch or combine (DeepEP, HybridEP): each rank's tokens, `copy`
    bytes, go once to each rank that holds one of their experts (Megatron-Core 0.16.1,
    transformer/moe/fused_a2a.py: DeepEP's get_dispatch_layout gives `is_token_in_rank`, and
    the dispatch sends a token to each such rank once, with its top-k indices); `hit` = (the
    expected ranks, the expected NVLink domains) of the group holding one of a token's experts
    (routing.spread), a given other rank (domain) receiving a token in proportion. Across NVLink
    domains a token crosses the network once per remote domain that holds one of its experts
    (the dispatcher sends it once and forwards it over NVLink there: DeepEP's internode
    kernels); inside its own domain it goes to the GPUs holding its experts over NVLink, and in
    a remote one it is forwarded from the GPU that received it."""
    n = lay.n
    if n <= 1 or copy <= 0:
        return 0.0
    ranks, domains = hit
    inside = copy * ranks * (lay.crowd - 1) / n / (net.nvlink_bw * eff)
    if lay.hosts <= 1:
        return BASE_S + inside + (n - 1) * NVLINK_STEP_S / 4
    hosts = lay.hosts
    outside = copy * domains * (hosts - 1) / hosts / (lay.net_bw * eff)
    forward = (copy * ranks * (n - lay.per_host) / n * (lay.per_host - 1) / lay.per_host
               / (net.nvlink_bw * eff))
    return BASE_S + max(inside + forward, outside) + lay.alpha_net * math.log2(hosts)


def p2p(net: Network, lay: Layout, nbytes: float) -> float:
    """One point-to-point transfer between neighbouring pipeline stages (per rank)."""
    if nbytes <= 0:
        return 0.0
    if lay.hosts <= 1:
        return BASE_S + nbytes / (net.nvlink_bw * NVLINK_EFF)
    return BASE_S + lay.alpha_net + nbytes / (lay.net_bw * NET_EFF)
