"""The hardware a job runs on, read from the design: the GPU of its placement, GPUs and NIC
bandwidth per host, the fabric's tiers (reach, rails, oversubscription) and, under a scenario,
the failed fabric parts (a failed plane darkens one port of every dual-port NIC on it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from astral_dsl.analyses.network import fabric_counts, _SCOPE_KINDS
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import GpuSpec
from astral_dsl.analyses.walk import Resolver
from astral_dsl.model.rollup import count_of, group_of
from astral_dsl.model.values import Group, plane_label
from astral_dsl.units import Quantity

BITS = 8.0


@dataclass(frozen=True)
class Cluster:
    gpu: GpuSpec
    net: Network
    gpus: int               # GPUs in the placement
    hosts: int
    placement: str


def _q(inst, name, default=0.0) -> float:
    v = inst.field(name) if inst is not None else None
    return v.si if isinstance(v, Quantity) else default


def gpu_spec(gpu, host=None) -> GpuSpec:
    flops = tuple((dt, _q(gpu, f"flops_{dt}")) for dt in ("bf16", "fp16", "fp8", "fp32")
                  if _q(gpu, f"flops_{dt}") > 0)
    nv = _q(gpu, "nvlink_bandwidth") or _q(host, "nvlink_bandwidth")
    return GpuSpec(gpu.template, flops, _q(gpu, "memory") / BITS,
                   _q(gpu, "memory_bandwidth") / BITS, nv / BITS)


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
    return pairs, name


def cluster_of(design, job, fabric_failures=()) -> Optional[Cluster]:
    pairs, name = placement_of(design, job)
    if not pairs:
        return None
    cache: dict = {}
    gpus = sum(c * count_of(inst, ("gpu",), cache) for c, inst in pairs)
    hosts = sum(c * count_of(inst, ("host",), cache) for c, inst in pairs)
    host = next((h for _, inst in pairs for _, h in group_of(inst, ("host",), cache).flat()), None)
    gpu = next((g for _, inst in pairs for _, g in group_of(inst, ("gpu",), cache).flat()), None)
    if gpu is None:
        return None
    per_host = count_of(host, ("gpu",), cache) if host is not None else 1
    nics = list(group_of(host, ("nic",), cache).flat()) if host is not None else []
    ports: List[Tuple[float, int]] = []      # per NIC: (port speed bytes/s, ports)
    for c, nic in nics:
        ports.extend([(_q(nic, "port_speed") / BITS, int(_q(nic, "ports", 1) or 1))] * c)
    fabric = _fabric_for(design, pairs, cache)
    rails = fabric.rails if fabric else max(1, len(ports))
    planes = fabric.planes if fabric else 1
    rail_bw, notes = _rail_bandwidth(ports, per_host, rails, planes, fabric_failures)
    tiers = _tiers(design, fabric, host, hosts, cache) if fabric else ()
    protocol = "infiniband"
    for _, nic in nics:
        p = nic.field("protocol")
        protocol = getattr(p, "name", protocol)
    net = Network(per_host, gpu_spec(gpu, host).nvlink_bw, tuple(rail_bw), tuple(tiers), protocol,
                  tuple(notes))
    return Cluster(gpu_spec(gpu, host), net, gpus, hosts, name)


def _fabric_for(design, pairs, cache):
    counts = fabric_counts(design, cache)
    paths = [inst.path for _, inst in pairs]
    best = None
    for f in counts:
        for p in paths:
            if p == f.owner or p.startswith(f.owner + ".") or f.owner.startswith(p + ".") \
                    or f.owner.startswith(p + "["):
                if best is None or len(f.owner) > len(best.owner):
                    best = f
    return best or (counts[0] if len(counts) == 1 else None)


def _tiers(design, fabric, host, job_hosts, cache) -> List[Tier]:
    owner = design.instance(fabric.owner)
    out: List[Tier] = []
    host_ports = 0
    if host is not None:
        for c, nic in group_of(host, ("nic",), cache).flat():
            host_ports += c * int(_q(nic, "ports", 1) or 1)
    for i, t in enumerate(fabric.tiers):
        if owner is not None and t.scope != owner.kind:
            scopes = group_of(owner, _SCOPE_KINDS.get(t.scope, (t.scope,)), cache).flat()
            reach = count_of(scopes[0][1], ("host",), cache) if scopes else job_hosts
        elif owner is not None:
            reach = count_of(owner, ("host",), cache)
        else:
            reach = job_hosts
        if i == 0 and t.down_ports:
            split = (fabric.rails if "rail" in t.per else 1) * (fabric.planes if "plane" in t.per else 1)
            per_group = max(1.0, host_ports / split)
            reach = min(reach, int(t.down_ports / per_group)) or 1
        out.append(Tier(t.name, max(1, reach), "rail" in t.per, t.oversubscription or 1.0))
    return out


def _rail_bandwidth(ports, per_host, rails, planes, failures):
    """Bytes/s per direction for GPU i of a host, after the scenario's fabric failures."""
    notes = []
    if not ports:
        return [0.0] * max(1, per_host), notes
    if len(ports) >= per_host:
        nic_of = [ports[i] for i in range(per_host)]
        alive = [[True] * n for _, n in nic_of]
        for sel in failures:
            for i in range(per_host):
                rail = i % max(1, rails)
                if sel.rail is not None and sel.rail != rail:
                    continue
                for j in range(len(alive[i])):
                    if sel.plane is None or j % max(1, planes) == sel.plane:
                        alive[i][j] = False
            notes.append(_describe(sel))
        bw = [speed * sum(a) for (speed, _), a in zip(nic_of, alive)]
        return bw, notes
    total = sum(speed * n for speed, n in ports)
    return [total / per_host] * per_host, notes


def _describe(sel) -> str:
    out = "fabric"
    if sel.rail is not None:
        out += f" rail {sel.rail}"
    if sel.plane is not None:
        out += f" plane {plane_label(sel.plane)}"
    if sel.tier:
        out += f" tier {sel.tier}"
    return out + " failed"
