"""Network capacity formulas: fat-tree and Astral pod sizes, oversubscription.

Part of astral_dsl/analyses/formulas/ (see its __init__ for units and conventions); sources are
cited per function.
"""
from __future__ import annotations

import math
from typing import Optional

from astral_dsl.analyses.formulas._checks import _non_negative, _positive


# --------------------------------------------------------------------------- network capacity

def _switch_radix(k: int) -> int:
    if isinstance(k, bool) or int(k) != k or k < 2 or int(k) % 2:
        raise ValueError(f"switch radix k must be an even integer >= 2, got {k!r}")
    return int(k)


def _rails(rails: int) -> int:
    if isinstance(rails, bool) or int(rails) != rails or rails < 1:
        raise ValueError(f"rails must be a positive integer, got {rails!r}")
    return int(rails)


def fat_tree_hosts(k: int) -> int:
    """End ports of a three-tier fat tree of k-port switches: k^3 / 4.

    Source: Al-Fares et al., "A Scalable, Commodity Data Center Network Architecture", SIGCOMM 2008.
    Worked values: k = 128 -> 524,288; k = 64 -> 65,536."""
    k = _switch_radix(k)
    return k ** 3 // 4


def astral_pod_gpus(rails: int, k: int) -> int:
    """GPUs in one Astral same-rail pod: R * k^2 / 2.

    Per rail and plane, k/2 ToRs (of the Agg's k/2 down ports) each serve k hosts, i.e. k^2/2 hosts
    with one GPU on that rail; the pod spans R rails.  Source: inferred from Meng et al., "Astral",
    ACM SIGCOMM 2025 (a reconstruction matching its ~64K-GPU pods: R = 8, k = 128 -> 65,536)."""
    return _rails(rails) * _switch_radix(k) ** 2 // 2


def astral_pods(rails: int, k: int) -> int:
    """Pods one k-port core layer can join: k / (2R), rounded down (2 planes, R rails).

    Source: inferred from Meng et al., ACM SIGCOMM 2025 (R = 8, k = 128 -> 8 pods).  When 2R does
    not divide k the remaining core ports are unused, so the result is floored."""
    return _switch_radix(k) // (2 * _rails(rails))


def oversubscription(down_bw: float, up_bw: float) -> float:
    """Oversubscription ratio of a switch tier = downlink bandwidth / uplink bandwidth.

    1.0 is non-blocking; 3.0 means 3:1.  Raises ValueError without uplinks (top tier): the ratio is
    undefined there.  Source: Al-Fares et al., SIGCOMM 2008 (oversubscription; 1:1 is non-blocking,
    up = down)."""
    return _non_negative("down_bw", down_bw) / _positive("up_bw", up_bw)


# --------------------------------------------------------------------------- switch counts

def _whole(name: str, value: int, low: int = 0) -> int:
    if isinstance(value, bool) or int(value) != value or value < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    return int(value)


def smallest_divisor_at_least(n: int, low: int) -> int:
    """The smallest divisor of n that is >= low (n itself when low > every other divisor).

    72, 16 -> 18; 32, 12 -> 16; 64, 64 -> 64."""
    n = _whole("n", n, 1)
    low = max(1, _whole("low", low))
    if low >= n:
        return n
    for d in range(low, n + 1):
        if n % d == 0:
            return d
    return n


def even_upper_switches(needed: int, lower_per_group: int, uplinks: int, merged: int,
                        downlinks: int, lower_total: Optional[int] = None) -> tuple:
    """Switches per group of an upper tier such that every lower switch's uplinks divide evenly
    across the upper switches it reaches: (count, plane) where `plane` is the number of upper
    switches each lower switch reaches.

    `needed`: ceil(links from below / downlinks), the count before the rule; `lower_per_group`:
    lower switches in each lower group (L); `uplinks`: uplinks per lower switch (u); `merged`:
    lower groups one upper group serves (m); `downlinks`: per upper switch (d); `lower_total`:
    the lower switches the upper group serves when its lower groups differ in size (L is then
    the largest's; L * m otherwise).

    - Full mesh, when each upper switch can take a link from every lower switch it serves
      (L * m <= d): every lower switch reaches every upper switch with u / S links, so S must
      divide u: S = the smallest divisor of u that is >= needed.  (A leaf with 72 uplinks under
      16 spines would have 4.5 links per spine; 18 spines take 4 each.)
    - Planes, when it cannot (L * m > d, m >= 1): the upper tier splits into L planes, plane p
      reaching switch p of every lower group (Al-Fares et al., SIGCOMM 2008: core switch group p
      of a fat tree serves aggregation switch p of every pod); each lower switch spreads its u
      uplinks over the P switches of its plane, so P divides u and m * u / P <= d:
      P = the smallest divisor of u that is >= ceil(m * u / d), S = L * P.
    Where neither fits (E604: the radix cannot reach the size) or nothing is merged evenly, the
    count is left as `needed`.  Example: the Astral core, L = 64 aggs per (rail, plane) group,
    m = 128 groups, u = 64, d = 128: P = 64, S = 4,096 (the (k/2)^2 core switches of Al-Fares et
    al.'s k^3/4 fat tree with k = 128)."""
    needed = _whole("needed", needed)
    L = _whole("lower_per_group", lower_per_group)
    u = _whole("uplinks", uplinks)
    m = _whole("merged", merged)
    d = _whole("downlinks", downlinks)
    if not (needed and L and u and m and d):
        return needed, None
    if (L * m if lower_total is None else _whole("lower_total", lower_total)) <= d:
        if needed > u:
            return needed, None
        s = smallest_divisor_at_least(u, needed)
        return s, s
    if m > d or (m == 1 and L > d):
        return needed, None
    p = smallest_divisor_at_least(u, -(-m * u // d))
    return max(L * p, needed), p


def modules_for(links: float, switches: int, ports_per_module: int) -> int:
    """Modules (transceivers or cable connectors) for `links` spread as evenly as possible over
    `switches`, `ports_per_module` links each: r switches carry q + 1 links and the others q
    (q, r = divmod(links, switches)), each rounded up to whole modules.  A twin-port module (2)
    carries two links; a 1-to-4 breakout counts once for its four links."""
    switches = _whole("switches", switches)
    p = _whole("ports_per_module", ports_per_module, 1)
    n = math.ceil(_non_negative("links", links) - 1e-9)
    if not switches or not n:
        return 0
    q, r = divmod(n, switches)
    return r * -(-(q + 1) // p) + (switches - r) * -(-q // p)
