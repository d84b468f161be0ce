"""The fabric parts a scenario fails, and every fabric under them.

A failed part is a fabric selection (`S.fabric.plane[B]`, `S.fabric.rail[2].tor`, one group
`S.fabric.pod[2].rail[3].plane[A].agg`, one switch `...tor[0]`), a NIC or a NIC port
(`...hosts[0].nics[4].port[a]`) or a link (`port -- tor[0]`, `tor[0] -- agg`, `tor[0] -- agg[3]`),
named as the rank map names them (fabric_names.py); failed_fabric.py resolves what each does to
the fabric it belongs to (imported only when a scenario fails such a part: for start-up)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from astral_dsl import records
from astral_dsl.analyses.network import FabricCount, fabric_counts
from astral_dsl.diagnostics import Span
from astral_dsl.model.design import Design, Route


@records.frozen
class Failure:
    """One fabric part a scenario fails (analyses/scenarios.py)."""
    target: Any                      # FabricSelection, NicPort, FabricLink, or a NIC (Ref)
    written: str                     # as the scenario wrote it
    span: Optional[Span] = None
    route: Optional[Route] = None    # the instances it names (a NIC or NIC port)
    fraction: Optional[float] = None  # `fail 25 % of S.fabric.core` (network.fabric_counts)

    @property
    def display(self) -> str:
        return self.written


def counts(design: Design, cache: Optional[Dict] = None, tier_failures=(),
           failures: Sequence[Failure] = ()) -> List[FabricCount]:
    """Every fabric (network.fabric_counts) under a scenario's failed fractions of tiers and
    failed fabric parts: each FabricCount gets its Damage, the switches off leave its power and
    what the failures break is in its diagnostics (notes: what they slow)."""
    cache = {} if cache is None else cache
    fabrics = fabric_counts(design, cache, tier_failures)
    if not failures:
        return fabrics
    # imported here, for start-up: the damage's modules (failed_fabric, failed_links,
    # network_damage and fabric_names) serve only a scenario that fails a part of a fabric
    from astral_dsl.analyses.failed_fabric import damaged

    return damaged(design, fabrics, failures, cache)


__all__ = ["Failure", "counts"]
