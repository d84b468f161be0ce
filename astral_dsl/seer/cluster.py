"""The hardware a job runs on, read from the design: the GPU of its placement, GPUs and NIC
bandwidth per host, the fabric's tiers (reach: the hosts under a group in the scope instances
the job's hosts are in; rails, oversubscription) and, under a scenario,
its failed fractions of tiers (the tier below is oversubscribed by 1 / (1 - fraction)) and its
failed fabric parts (analyses/network_failures.py): Seer simulates one representative rank per
stage, so each of a stage's collectives is priced for the worst-affected group of its kind on
the stage (synchronous training waits for the slowest group), with the bandwidth of the slowest
GPU of the stage whose traffic climbs as high as that group's (Network.stage_worst; of the job:
Network.worst, by which a group cut off anywhere stops the job); only failures on the job's own
hosts (the first GPUs of its placement; with `hosts_per_rack`, of the first hosts of each rack:
analyses/job_racks.py) or on the paths above them count. In an NVLink domain of
several hosts a GPU whose NIC lost its path sends through a neighbour's (PXN: seer/pxn.py), and
each boundary between pipeline stages is priced by its own slowest pair, slowed only by the
failures on its pairs' hosts and paths (seer/pipeline_pairs.py)."""
from __future__ import annotations

import weakref
from typing import List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses import network_failures
from astral_dsl.analyses.host_positions import Interval, Positions
from astral_dsl.analyses.job_racks import described, hosts_per_rack, usable
from astral_dsl.analyses.network import fabric_counts
from astral_dsl.analyses.network_damage import partial_host
from astral_dsl.analyses.nvlink_share import domains
from astral_dsl.seer import pxn
from astral_dsl.seer.comm import Network
from astral_dsl.seer.costs import GpuSpec
from astral_dsl.seer.domain_size import domain_hosts
from astral_dsl.seer.job_tiers import hosts_of_job, job_scopes, tiers_of
from astral_dsl.analyses.walk import Resolver
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.values import Group, concat
from astral_dsl.units import Quantity, format_number

BITS = 8.0


@records.frozen(slots=False)
class Cluster:
    gpu: GpuSpec
    net: Network
    gpus: int               # GPUs in the placement
    hosts: int
    placement: str
    healthy: Optional[Network] = None    # under a scenario: the network without its failures
    damaged: Optional[object] = None     # under failed parts: pipeline_pairs.Damaged
    # `hosts_per_rack = N`: (N, racks with GPUs, the first with fewer than N hosts (template,
    # hosts) or None, the placement as written; job_racks.usable), for the checks (E772)
    per_rack: Optional[Tuple[int, int, Optional[Tuple[str, int]], str]] = None
    # the job's GPUs whose figures, or whose host's NICs, are not the first's, which every one
    # is priced as (W773): (how many, their GpuSpec, their host's NICs as `said_nics` says them,
    # "" when as the first's), in the placement's order; () when all are alike
    unlike: Tuple[Tuple[int, GpuSpec, str], ...] = ()
    nics: str = ""          # the first host's NICs, as said_nics says them (W773 names them)


def _q(inst, name, default=0.0) -> float:
    v = inst.field(name) if inst is not None else None
    return v.si if isinstance(v, Quantity) else default


def gpu_spec(gpu, host=None, cache: Optional[dict] = None) -> GpuSpec:
    flops = tuple((dt, _q(gpu, f"flops_{dt}")) for dt in ("bf16", "fp16", "fp8", "fp4", "fp32")
                  if _q(gpu, f"flops_{dt}") > 0)
    # NVLink per GPU: the lesser of what the GPU's links carry and what the host's NVLink
    # fabric gives each GPU, of those declared (docs/language.md, `host`); either one lowered,
    # in the design or a scenario, lowers it
    nv = min((v for v in (_q(gpu, "nvlink_bandwidth"), _q(host, "nvlink_bandwidth")) if v > 0),
             default=0.0)
    power = _q(gpu, "power")
    arch = gpu.field("architecture")
    host_memory = None                     # per GPU: the host's memory over its GPUs
    if host is not None and host.field("memory") is not None:
        per_host = count_of(host, ("gpu",), {} if cache is None else cache)
        host_memory = _q(host, "memory") / BITS / max(1, per_host)
    return GpuSpec(gpu.template, flops, _q(gpu, "memory") / BITS,
                   _q(gpu, "memory_bandwidth") / BITS, nv / BITS, power,
                   _q(gpu, "flops_power") or power, int(_q(gpu, "sms")),
                   getattr(arch, "name", arch) or "", _q(gpu, "host_bandwidth") / BITS,
                   host_memory)


def placement_of(design, job) -> Tuple[list, str]:
    """(count, instance) pairs the job is placed on (default: the first site)."""
    res = Resolver(design)
    target = job.field("placement")
    pairs = res.group(target) if target is not None else []
    if not pairs and design.roots:
        pairs = [(1, design.roots[0])]
    name = getattr(target, "display", None) or (pairs[0][1].path if pairs else "?")
    if isinstance(target, Group):
        name = str(target)
    route = job.route("placement")    # as written: `Hall.sus[1]`, whose instance is sus[0]'s
    if route is not None and not route.from_template:
        name = route.display
    return pairs, name


# The clusters of a design's jobs by (the job, its GPU count), made once per design: a compiled
# design and its jobs are frozen, and a job's cluster reads nothing else (its `placement`,
# `hosts_per_rack` and the design's hardware), while its layout's options (a search's or a
# rule's candidates, a sweep's points: validate_job with other degrees) change only the GPU
# count. Kept while the design lives; at most _KEPT jobs and counts a design.
_CLUSTERS: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()
_KEPT = 256


def cluster_of(design, job, applied=None, ranks: Optional[int] = None) -> Optional[Cluster]:
    """The hardware `job` runs on; under a scenario (`applied`: analyses.scenarios.Applied) its
    failed fabric parts and failed fractions of tiers. `ranks`: the job's GPU count (the
    failures that matter are those on its hosts, the first `ranks` GPUs of its placement).
    Without a scenario, made once per design, job and count (_CLUSTERS)."""
    if applied:
        return _cluster_of(design, job, applied, ranks)
    kept = _CLUSTERS.get(design)
    if kept is None:
        kept = _CLUSTERS[design] = {}
    hit = kept.get((id(job), ranks))
    if hit is not None and hit[0] is job:       # (the job is kept with it: its id is its own)
        return hit[1]
    cluster = _cluster_of(design, job, None, ranks)
    if len(kept) >= _KEPT:
        kept.clear()
    kept[id(job), ranks] = (job, cluster)
    return cluster


def _cluster_of(design, job, applied, ranks: Optional[int]) -> Optional[Cluster]:
    pairs, name = placement_of(design, job)
    if not pairs:
        return None
    cache: dict = {}
    gpus = sum(c * count_of(inst, ("gpu",), cache) for c, inst in pairs)
    hosts = sum(c * count_of(inst, ("host",), cache) for c, inst in pairs)
    n_rack = hosts_per_rack(job)
    per_rack = None
    if n_rack is not None:          # the job's share of each rack (analyses/job_racks.py)
        gpus, hosts, racks, short = usable(pairs, n_rack, cache)
        per_rack, name = (n_rack, racks, short, name), described(name, n_rack)
    host = next((h for _, inst in pairs for _, h in group_of(inst, ("host",), cache).flat()), None)
    gpu = next((g for _, inst in pairs for _, g in group_of(inst, ("gpu",), cache).flat()), None)
    if gpu is None:
        return None
    per_host = count_of(host, ("gpu",), cache) if host is not None else 1
    first_nics = nics_read(host, cache)      # what is read of the host's NICs, read once
    ports: List[Tuple[float, int]] = []      # per NIC: (port speed bytes/s, ports)
    for c, speed, n_ports, _ in first_nics:
        ports.extend([(speed / BITS, n_ports)] * c)
    fabrics = network_failures.counts(design, cache, applied.tier_failures, applied.fabric) \
        if applied else _fabric_counts(design, cache)
    fabric = _fabric_for(fabrics, pairs)
    rail_bw = _rail_bandwidth(ports, per_host)
    spans = job_scopes(design, job, fabric, per_host, ranks, cache) if fabric else None
    layout = [int(_q(nic, "ports", 1) or 1) for nic in
              group_of(host, ("nic",), cache).items(1 << 12) or ()] if host is not None else []
    tiers = tiers_of(design, fabric, layout, hosts, cache, spans) if fabric else ()
    # the failures are on the design's hosts (trays), whose GPUs share their NICs: taken
    # before an NVLink domain makes Seer's "host" a rack of them (whose GPUs reach one
    # another's NICs: PXN, seer/pxn.py)
    domain, domain_note = domain_hosts(host, pairs, cache,
                                       -(-(ranks or gpus) // max(1, per_host)), per_host,
                                       n_rack)
    worst, cut, pxn_note, damaged = _worst(design, job, fabric, len(tiers), ports, per_host,
                                           ranks, cache, domain) \
        if fabric is not None and fabric.damage is not None else ((), (), (), None)
    if domain > 1:           # an NVLink domain of whole racks: Seer's "host" is the domain
        per_host, rail_bw = per_host * domain, rail_bw * domain
        tiers = [attrs.evolve(t, reach_hosts=max(1, t.reach_hosts // domain)) for t in tiers]
    protocol = "infiniband"
    for *_, said in first_nics:           # the last NIC that states one
        protocol = said or protocol
    spec = gpu_spec(gpu, host, cache)
    unlike = _unlike(pairs, gpu, first_nics, None if n_rack is not None else (ranks or gpus),
                     cache)
    net = Network(per_host, spec.nvlink_bw, tuple(rail_bw), tuple(tiers), protocol,
                  domain_note + pxn_note, worst, cut)
    healthy = None
    if applied:
        plain = _fabric_for(_fabric_counts(design, cache), pairs)
        healthy = attrs.evolve(net, worst=(),
                               tiers=tuple(tiers_of(design, plain, layout, hosts, cache, spans))
                               if plain else ())
    return Cluster(spec, net, gpus, hosts, name, healthy, damaged, per_rack, unlike,
                   said_nics(first_nics) if unlike else "")


def _unlike(pairs, first, first_nics: tuple, ranks: Optional[int], cache: dict):
    """The job's GPUs (the first `ranks` of its placement; None: all of them, as with
    `hosts_per_rack`, whose hosts are the first of each rack) whose figures Seer reads differ
    from the first GPU's, or whose host's NICs (nics_read) differ from the first host's, by
    which every rank is priced: (count, spec, their NICs said or "") per distinct figures (the
    GPUs' own and their hosts' NICs, the hosts' NVLink and memory aside). A design of two kinds
    of GPU, or of host NICs (8 x 400 Gb/s and 4 x 200 Gb/s), or a scenario that sets a field of
    some of them (`power`, a cap, a `port_speed`), had its forecast priced as the first GPU and
    host alone, and said nothing."""
    placed = concat([group_of(inst, ("gpu",), cache).repeat(c) for c, inst in pairs])
    used = placed.slice(0, ranks) if ranks is not None else placed
    mine, out = (attrs.evolve(gpu_spec(first), name=""), first_nics), {}
    for count, gpu, nics in _with_nics(pairs, placed, used, first_nics, cache):
        if gpu is first and nics == first_nics:
            continue
        other = gpu_spec(gpu)
        figures = (attrs.evolve(other, name=""), nics)
        if figures != mine:
            seen = out.setdefault(figures, [0, other, "" if nics == first_nics
                                            else said_nics(nics)])
            seen[0] += count
    return tuple((c, other, nics) for c, other, nics in out.values())


def _with_nics(pairs, placed, used, first_nics: tuple, cache: dict):
    """(count, GPU, its host's NICs) of the job's GPUs `used` (the first of `placed`): all with
    the first host's NICs when the hosts' NICs are alike (or some GPUs are in no host, whose
    order is then not the hosts'), else host by host in the placement's order."""
    hosts = concat([group_of(inst, ("host",), cache).repeat(c) for c, inst in pairs])
    alike = all(nics_read(h, cache) == first_nics for _, h in hosts.flat())
    if alike or sum(c * count_of(h, ("gpu",), cache) for c, h in hosts.flat()) != placed.count:
        return ((c, gpu, first_nics) for c, gpu in used.flat())
    return _host_by_host(hosts, used.count, cache)


def _host_by_host(hosts, left: int, cache: dict):
    """(count, GPU, its host's NICs) of the first `left` GPUs of `hosts`, a run of alike hosts
    at a time (a run's last host may be the job's in part)."""
    for count, host in _in_order(hosts):
        if left <= 0:
            return
        gpus = group_of(host, ("gpu",), cache)
        if not gpus.count:
            continue
        nics = nics_read(host, cache)
        whole = min(count, left // gpus.count)
        if whole:
            yield from ((c * whole, gpu, nics) for c, gpu in gpus.flat())
        left -= whole * gpus.count
        if whole < count and 0 < left < gpus.count:
            yield from ((c, gpu, nics) for c, gpu in gpus.slice(0, left).flat())
            left = 0


def _in_order(group):
    """The runs (count, instance) of a Group in its order (Group.flat sums them by instance)."""
    for run in group.runs:
        if isinstance(run.item, Group):
            for _ in range(run.count):
                yield from _in_order(run.item)
        else:
            yield run.count, run.item


def nics_read(host, cache: dict) -> tuple:
    """What Seer reads of a host's NICs (_cluster_of): per run of alike NICs, in order, (how
    many, port speed, ports, protocol)."""
    if host is None:
        return ()
    return tuple((c, _q(nic, "port_speed"), int(_q(nic, "ports", 1) or 1),
                  getattr(nic.field("protocol"), "name", None) or "")
                 for c, nic in group_of(host, ("nic",), cache).flat())


def said_nics(nics: tuple) -> str:
    """A host's NICs as nics_read reads them, for a message: `8 x 400 Gb/s infiniband`,
    `4 x 2 ports of 200 Gb/s`, `none`."""
    return ", ".join(f"{c:,} x " + (f"{ports} ports of " if ports > 1 else "")
                     + f"{format_number(speed / 1e9)} Gb/s" + (f" {protocol}" if protocol else "")
                     for c, speed, ports, protocol in nics) or "none"


_FABRICS: "weakref.WeakKeyDictionary[object, list]" = weakref.WeakKeyDictionary()


def _fabric_counts(design, cache) -> list:
    """The design's fabrics with their switch counts (analyses/network.py), counted once per
    design: a compiled design is frozen, and every forecast on it (each job, the rule's
    candidates, a sweep's points) reads the same counts. Kept while the design lives."""
    hit = _FABRICS.get(design)
    if hit is None:
        hit = _FABRICS[design] = fabric_counts(design, cache)
    return hit


def _fabric_for(counts, pairs):
    paths = [inst.path for _, inst in pairs]
    best = None
    for f in counts:
        for p in paths:
            if p == f.owner or p.startswith(f.owner + ".") or f.owner.startswith(p + ".") \
                    or f.owner.startswith(p + "["):
                if best is None or len(f.owner) > len(best.owner):
                    best = f
    return best or (counts[0] if len(counts) == 1 else None)


def _worst(design, job, fabric, n_tiers, ports, per_host, ranks, cache, domain=1):
    """(Network.worst: per tier a group's traffic climbs to, the slowest GPU of the job (bytes/s)
    and what slows it; Network.cut; a note when GPUs send through a neighbour's NIC; the
    failures per host, for the pipeline's pairs: pipeline_pairs.Damaged). In an NVLink domain of
    `domain` hosts, a GPU whose NIC has no live path uses another's (PXN)."""
    from astral_dsl.seer.pipeline_pairs import Damaged   # start-up: only under failed parts

    damage = fabric.damage
    owner = design.instance(fabric.owner)
    if owner is None or not ports:
        return (), (), (), None
    hosts = hosts_of_job(design, job, owner, Positions(owner, cache), per_host, ranks)
    partial = partial_host(hosts, per_host, ranks)     # the last host: only the job's GPUs
    speed = min(s for s, _ in ports)
    shared = min(1.0, len(ports) / max(1, per_host))      # GPUs sharing a NIC split it
    out, cut, moved = [], [], 0
    # the racks that are one NVLink domain, where they are (of any sizes): as `astral check`
    domain_at = domains(owner, Positions(owner, cache), cache) if domain > 1 else None
    for top in range(max(1, n_tiers)):
        if domain_at is not None:
            lowest, causes, gpus, rerouted, dead = pxn.worst(damage, top, hosts, domain_at,
                                                             partial)
        else:
            (lowest, causes, gpus), rerouted, dead = damage.worst(top, hosts, partial), 0, None
        if lowest is None or damage.shares.issuperset(causes):
            continue        # a failed share of a tier alone: the tier's oversubscription
        text = f"{damage.named(causes)} failed: {gpus:,} of the job's GPUs behind it"
        if rerouted:
            moved = max(moved, rerouted)
            text += (f"; {rerouted:,} of them send{'s' if rerouted == 1 else ''} through an "
                     f"NVLink neighbour's NIC (PXN), sharing it")
        out.append((top, lowest * speed * shared, text))
        if lowest <= 0:
            cut.append((top, _cut_ranks(damage, top, hosts, per_host, ranks,
                                        Positions(owner, cache).path_at, dead)))
    note = (f"pxn: {moved:,} GPU{'s' if moved != 1 else ''} of the job whose NIC lost its "
            f"path send{'s' if moved == 1 else ''} through the NIC of another GPU of "
            f"{'their' if moved != 1 else 'its'} NVLink domain (NCCL's PXN, on by default since "
            "NCCL 2.12), sharing it; assumed: the neighbour may sit on another tray of the "
            "domain, and the rerouted GPUs go one at a time onto the live NIC of the domain "
            "that leaves each the most bandwidth (a max-min share: a faster NIC takes more of "
            "them; NCCL picks a NIC by topology, not by load)",) if moved else ()
    return tuple(out), tuple(cut), note, Damaged(damage, tuple(hosts), domain, speed * shared,
                                                  domain_at, partial)


def _cut_ranks(damage, top: int, hosts: List[Interval], per_host: int, ranks: Optional[int],
               where, only: Optional[List[Interval]] = None) -> Tuple[str, ...]:
    """The job's ranks with no live path for traffic that climbs to tier `top`: rank = (the
    host's index among the job's hosts) x GPUs per host + the GPU's index (the rank map's
    order, analyses/rankmap.py); GPU g uses NIC g mod NICs. `only`: the hosts cut off (with
    PXN, those of NVLink domains with no live NIC), None: every host with a dead NIC."""
    starts, at = [], 0
    for a, b in hosts:
        starts.append(at)
        at += b - a
    out: List[str] = []
    segs = [s for k in range(damage.nics) for s in damage.segments(k, top, hosts)
            if s.live == 0]
    if only is not None:
        segs = [attrs.evolve(s, start=max(s.start, a), stop=min(s.stop, b))
                for s in segs for a, b in only if s.start < b and s.stop > a]
    shown_runs = 0
    for s in segs:
        i = max(j for j, (a, _) in enumerate(hosts) if a <= s.start)
        first_host = starts[i] + s.start - hosts[i][0]
        if s.nic >= per_host or (ranks is not None and first_host * per_host + s.nic >= ranks):
            continue      # the NIC of GPUs past the job's last rank
        shown_runs += 1
        if shown_runs > 3:
            continue
        gs = range(s.nic, per_host, max(1, damage.nics))
        got = sorted(h * per_host + g for h in range(first_host, first_host + s.stop - s.start)
                     for g in gs if ranks is None or h * per_host + g < ranks)
        shown = ", ".join(f"{r:,}" for r in got) if len(got) <= 4 else \
            ", ".join(f"{r:,}" for r in got[:3]) + f", ..., {got[-1]:,}"
        n = s.stop - s.start
        out.append(f"cut off: rank{'s' if len(got) > 1 else ''} {shown} (NIC {s.nic} of "
                   f"{n:,} host{'s' if n != 1 else ''} from `{where(s.start)}`)")
    if shown_runs > 3:
        out.append(f"cut off: ... and {shown_runs - 3:,} more runs of hosts")
    return tuple(out)


def under_failures(spec, cluster: Cluster) -> Tuple[Cluster, List[str], List[str]]:
    """The job's collectives under failed fabric parts: the cluster with a note per kind of
    group they slow (priced for its worst-affected group; the pipeline per boundary between
    stages, by its own pairs: pipeline_pairs.under_failures), the kinds whose slowest group
    has no network left (the job cannot run) and which of its ranks are cut off."""
    net, healthy = cluster.net, cluster.healthy
    if healthy is None or (not net.worst and net.tiers == healthy.tiers):
        return cluster, [], []
    from astral_dsl.seer import comm, pipeline_pairs   # start-up: only under failed parts
    from astral_dsl.seer.comm_groups import (groups, named_stages, stage_groups,
                                              stage_worst, used_groups)

    used = used_groups(spec) - {"pp"}    # (not a group the job has no traffic on)
    # the slowest group of each kind, as the forecast prices it: a group of any rank cut off
    # stops the job
    now = {k: v for k, v in groups(spec, net).items() if k in used}
    before = groups(spec, healthy)
    if spec.parallel.gpus > 1:
        now["world"] = comm.layout(net, "world", spec.parallel.gpus, 1)
        before["world"] = comm.layout(healthy, "world", spec.parallel.gpus, 1)
    why = {t: text for t, _, text in net.worst}
    for i, (a, b) in enumerate(zip(net.tiers, healthy.tiers)):
        if a.oversub != b.oversub:
            for top in range(i + 1, len(net.tiers)):
                why.setdefault(top, f"tier `{a.name}` oversubscribed {a.oversub:.4g}:1 instead "
                                    f"of {b.oversub:.4g}:1")
    notes, lost, cut = [], [], []
    cut_at = dict(net.cut)
    # each stage's groups for the slowest GPU of its own hosts (comm_groups.stage_groups)
    net = attrs.evolve(net, stage_worst=stage_worst(spec, net, cluster.damaged))
    stages = stage_groups(spec, net)
    if spec.parallel.pp > 1:
        pairs, notes, dark = pipeline_pairs.under_failures(spec, net, healthy, cluster.damaged,
                                                           why)
        net = attrs.evolve(net, pp=pairs)
        for text, top in dark:
            lost.append(text)
            cut += [c for c in cut_at.get(top, ()) if c not in cut]
    for kind, lay in now.items():
        if lay.hosts <= 1:
            continue
        top = (lay.hops - 1) // 2
        if lay.net_bw <= 0:
            what = "the job-wide reduction" if kind == "world" else f"the {kind} groups"
            lost.append(f"{what} ({why.get(top, 'a failed part')})")
            cut += [c for c in cut_at.get(top, ()) if c not in cut]
        elif kind != "world" and lay.net_bw < before[kind].net_bw * (1 - 1e-9):
            slow = [i for i, lays in enumerate(stages) if lays[kind].net_bw <= lay.net_bw]
            on = "" if len(slow) == len(stages) else f" (on {named_stages(slow)})"
            notes.append(f"{kind}: the slowest group{on} runs at {lay.net_bw / 1e9:,.2f} GB/s "
                         f"per GPU instead of {before[kind].net_bw / 1e9:,.2f} GB/s "
                         f"({why.get(top, 'a failed part')})")
    return attrs.evolve(cluster, net=attrs.evolve(net, notes=net.notes + tuple(notes))), \
        lost, cut


def _rail_bandwidth(ports, per_host):
    """Bytes/s per direction for GPU i of a host (GPU i uses NIC i; fewer NICs are shared)."""
    if not ports:
        return [0.0] * max(1, per_host)
    if len(ports) >= per_host:
        return [speed * n for speed, n in ports[:per_host]]
    total = sum(speed * n for speed, n in ports)
    return [total / per_host] * per_host
