"""The paths between GPUs and the size the radix can reach, from a fabric's derived tiers
(network.py): pure functions of its TierCounts."""
from __future__ import annotations

from typing import Optional, Tuple

# the grouping levels a tier's scope names, narrowest first
LEVEL = {"rack": 2, "row": 3, "block": 3, "pod": 4, "hall": 5, "site": 6}


def hops(tiers) -> Tuple[Tuple[str, int], ...]:
    """Switches on the shortest path between two GPUs on different first-tier switches:
    through tiers 0..i is 2i + 1 switches, where i is the lowest tier whose groups hold both
    ends (its scope at least as wide as what they share, and not split by rail when they are
    on different rails). A fabric whose widest tier serves less than a pod counts its whole
    span as the pod."""
    if not tiers:
        return ()
    pod = min(LEVEL["pod"], max(LEVEL.get(t.scope, 9) for t in tiers))

    def meet(level: int, same_rail: bool) -> Optional[int]:
        return next((2 * i + 1 for i, t in enumerate(tiers) if i and
                     LEVEL.get(t.scope, 9) >= level and (same_rail or "rail" not in t.per)),
                    None)
    out = [("same ToR", 1)]
    for label, n in (("same rail, same pod", meet(pod, True)),
                     ("cross-rail", meet(pod, False))):
        if n is not None:
            out.append((label, n))
    if any(t.scope == "pod" for t in tiers):
        cross_pod = meet(LEVEL["pod"] + 1, True)
        if cross_pod is not None:
            out.append(("cross-pod", cross_pod))
    return tuple(out)


def _split(t, rails: int, planes: int) -> int:
    return (rails if "rail" in t.per else 1) * (planes if "plane" in t.per else 1)


def capacity(tiers, rails, planes, gpus_per_host, host_ports,
              hosts) -> Optional[int]:
    """GPUs the tiers can reach, from the radix. Hosts reachable per group: one tier-1 switch
    reaches down_ports / (host ports per group) hosts; an upper tier over the same groups
    multiplies that by its downlinks (one link to every lower switch of the group); an upper tier
    that merges groups reaches `down` lower groups, each host counted once although it sits in
    several rail/plane groups."""
    if not tiers or not hosts or not host_ports or not tiers[0].down_ports:
        return None
    first = tiers[0]
    per_group_ports = (host_ports / hosts) / _split(first, rails, planes)
    reach = first.down_ports / per_group_ports
    for lower, upper in zip(tiers, tiers[1:]):
        if not upper.down_ports or not lower.up_ports:
            break
        same = upper.per == lower.per and LEVEL.get(upper.scope) == LEVEL.get(lower.scope)
        if same:
            reach *= upper.down_ports
        else:
            reach *= upper.down_ports * _split(upper, rails, planes) / _split(lower, rails, planes)
    return int(reach * gpus_per_host)
