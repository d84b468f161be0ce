"""Network capacity formulas: fat-tree and Astral pod sizes, oversubscription.

Part of astral_dsl/analyses/formulas/ (see its __init__ for units and conventions); sources are
cited per function.
"""
from __future__ import annotations

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

    Source: Al-Fares et al., "A Scalable, Commodity Data Center Network Architecture", SIGCOMM 2008;
    engineering.md "Network" (k = 128 -> 524,288; k = 64 -> 65,536)."""
    k = _switch_radix(k)
    return k ** 3 // 4


def astral_pod_gpus(rails: int, k: int) -> int:
    """GPUs in one Astral same-rail pod: R * k^2 / 2.

    Per rail and plane, k/2 ToRs (of the Agg's k/2 down ports) each serve k hosts, i.e. k^2/2 hosts
    with one GPU on that rail; the pod spans R rails.  Source: astral-paper.md "Reference topology"
    [inferred] (R = 8, k = 128 -> 65,536)."""
    return _rails(rails) * _switch_radix(k) ** 2 // 2


def astral_pods(rails: int, k: int) -> int:
    """Pods one k-port core layer can join: k / (2R), rounded down (2 planes, R rails).

    Source: astral-paper.md "Reference topology" [inferred] (R = 8, k = 128 -> 8 pods).  When 2R does
    not divide k the remaining core ports are unused, so the result is floored."""
    return _switch_radix(k) // (2 * _rails(rails))


def oversubscription(down_bw: float, up_bw: float) -> float:
    """Oversubscription ratio of a switch tier = downlink bandwidth / uplink bandwidth.

    1.0 is non-blocking; 3.0 means 3:1.  Raises ValueError without uplinks (top tier): the ratio is
    undefined there.  Source: engineering.md "Network" (non-blocking: up = down)."""
    return _non_negative("down_bw", down_bw) / _positive("up_bw", up_bw)
