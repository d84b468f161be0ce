"""The units a channel's traffic crosses: what the diagnosis can name.

- `nic port`: the NIC of a member with its ports and their cables. Timings cannot tell a port
  from its cable, nor one port of a dual-homed NIC from the other (both carry every
  collective): one unit, `...nics[4].port[a|b]`.
- `switch`: a member's first-tier switch, the same index in every plane (a transfer runs over
  every port of the NIC, so every plane carries it): `...rail[4].plane[A|B].tor[1]`.
- `link`: an uplink between tiers that the channel climbs through, from a first-tier switch (or
  a tier group) to the group above, or to its one switch when the group has one; every plane.
- `tier`: a tier group the channel climbs into (ECMP: any of its switches), every plane.
- `host`: a channel inside one NVLink domain: its host, or the hosts of an NVL72 rack
  (`nvlink_domain = rack`), `...racks[0].hosts[0|1|...]` (no NIC carries it).
- `nvlink`: the NVLink port of a member's GPU (`...hosts[1].gpus[4]`) where the channel holds
  another member of its NVLink domain: the traffic between them runs over it (NCCL's rings and
  trees pass through a node's GPUs over NVLink, each node's GPUs one after the other: NCCL 2.x
  src/graph/search.cc), inside one host or on the way to the NICs. Where every channel of the
  GPU is its host's (tp 8 on a host of 8) it crosses what the host crosses: one suspect, named
  as the host; a TP group of 2, or a DP group with several members on one host, tells them
  apart.

A unit's path names what it is in the rank map's names; where the planes (or ports) cannot be
told apart the differing index lists them all (`plane[A|B]`). Its parts are the real names."""
from __future__ import annotations

import functools
import re
from typing import Dict, Iterable, List, Sequence, Tuple

from astral_dsl.analyses.fabric_names import link_name
from astral_dsl.analyses.rankmap import RankMap, climb, domain_of, natural, one_domain

Unit = Tuple[str, str]      # (kind, path)
KIND_ORDER = ("nic port", "switch", "tier", "link", "host", "nvlink")  # named first in a class
ECMP_KINDS = ("tier", "link")
_INDEX = re.compile(r"\[([^\]]*)\]")


def merge_names(names: Iterable[str]) -> str:
    """One name for parts that differ only in some indices: `plane[A]` and `plane[B]` ->
    `plane[A|B]`. Names that differ otherwise: the first."""
    return _merge(tuple(sorted(set(names))))


@functools.lru_cache(maxsize=1 << 16)
def _merge(names: Tuple[str, ...]) -> str:
    if len(names) <= 1:
        return names[0] if names else ""
    if len({_INDEX.sub("[]", n) for n in names}) != 1:
        return names[0]
    columns = list(zip(*(_INDEX.findall(n) for n in names)))
    merged = iter(["|".join(sorted(set(c), key=lambda v: (len(v), v))) for c in columns])
    return _INDEX.sub(lambda m: f"[{next(merged)}]", names[0])


@functools.lru_cache(maxsize=1 << 16)
def plane_free(name: str) -> str:
    return re.sub(r"\.plane\[[^\]]*\]", ".plane[]", name)


def display(u: Unit) -> str:
    return u[1]


def set_name(units: List[Unit], parts) -> str:
    """What is known of a suspect whose units cross the same collectives (one class): where
    they are several NICs (one DP or EP group a stage: every member's NIC carries each of its
    collectives) or several first-tier switches, the set, not its first name (which the
    evidence does not single out): `one of the 48 NICs of the 12 hosts A to B, or the switches
    between them`; '' where one NIC (its ports, its cable) or one switch is what it names."""
    kinds = {u[0] for u in units}
    if kinds == {"nvlink"} and len(units) > 1:       # the GPUs of one group: each one's port
        return merge_names(display(u) for u in units)
    nics = sorted({p.rsplit(".port[", 1)[0] for p in parts
                   if " -- " not in p and ".port[" in p}, key=natural)
    between = " or the switches between them" if kinds & {"switch", "tier", "link"} else ""
    if len(nics) > 1:
        hosts = sorted({n.rsplit(".nics[", 1)[0] for n in nics}, key=natural)
        where = (f"host {hosts[0]}" if len(hosts) == 1 else
                 f"hosts {hosts[0]} and {hosts[1]}" if len(hosts) == 2 else
                 f"the {len(hosts)} hosts {hosts[0]} to {hosts[-1]}")
        return f"one of the {len(nics)} NICs of {where}" + ("," + between if between else "")
    switches = sorted({display(u) for u in units if u[0] == "switch"}, key=natural)
    if not nics and len(switches) > 1:
        tiers = " or the tier groups between them" if kinds & {"tier", "link"} else ""
        return (f"one of the {len(switches)} first-tier switches {switches[0]} to "
                f"{switches[-1]}" + ("," + tiers if tiers else ""))
    return ""


def channel_units(rm: RankMap, ranks: Sequence[int]) -> Dict[Unit, Tuple[str, ...]]:
    """The units a channel among `ranks` crosses, with the parts of each."""
    key = ("units", tuple(ranks))
    hit = rm._paths.get(key)
    if hit is None:
        hit = rm._paths[key] = _units(rm, ranks)
    return hit


@functools.lru_cache(maxsize=1 << 16)
def _rank_units(ports: Tuple[Tuple[str, str], ...]) -> Tuple[Tuple[Unit, Tuple[str, ...]], ...]:
    """The NIC and first-tier switch units of one rank, from its ports' (name, switch)."""
    names = [name for name, _ in ports]
    switches = tuple(sorted({switch for _, switch in ports}))
    return ((("nic port", merge_names(names)), tuple(names) + tuple(
                link_name(name, switch) for name, switch in ports)),
            (("switch", merge_names(switches)), switches))


def _units(rm: RankMap, ranks: Sequence[int]) -> Dict[Unit, Tuple[str, ...]]:
    infos = [rm.ranks[r] for r in ranks]
    hosts = {i.host for i in infos}
    domain = [domain_of(i) for i in infos]
    nvlink = {("nvlink", i.gpu): (i.gpu,) for i, d in zip(infos, domain)
              if domain.count(d) > 1}
    if len(hosts) <= 1 or one_domain(infos):     # NVLink: the host, or an NVL72's hosts
        return {("host", merge_names(hosts)): tuple(sorted(hosts, key=natural))} | nvlink
    out: Dict[Unit, Tuple[str, ...]] = dict(nvlink)
    by_port: Dict[int, list] = {}
    for info in infos:
        if not info.ports:
            continue
        (nic, nic_parts), (switch, switches) = _rank_units(tuple((p.name, p.switch)
                                                                 for p in info.ports))
        out[nic] = nic_parts
        out[switch] = switches
        for p in info.ports:
            by_port.setdefault(p.port, []).append(p)
    sizes = rm.size_of
    tiers: Dict[str, set] = {}
    links: Dict[str, set] = {}
    for members in by_port.values():
        for below, (above, group) in climb(members, sizes):
            tiers.setdefault(plane_free(group), set()).add(group)
            name = link_name(below, above)
            links.setdefault(plane_free(name), set()).add(name)
    for names in tiers.values():
        out[("tier", merge_names(names))] = tuple(sorted(names))
    for names in links.values():
        out[("link", merge_names(names))] = tuple(sorted(names))
    return out


__all__ = ["ECMP_KINDS", "KIND_ORDER", "Unit", "channel_units", "display", "merge_names",
           "plane_free", "set_name"]
