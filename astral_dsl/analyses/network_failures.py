"""The fabric parts a scenario fails, and every fabric under them.

A failed part is a fabric selection (`S.fabric.plane[B]`, `S.fabric.rail[2].tor`, one group
`S.fabric.pod[2].rail[3].plane[A].agg`, one switch `...tor[0]`), a NIC or a NIC port
(`...hosts[0].nics[4].port[a]`) or a link (`port -- tor[0]`, `tor[0] -- agg`, `tor[0] -- agg[3]`),
named as the rank map names them (fabric_names.py); failed_fabric.py resolves what each does to
the fabric it belongs to (imported only when a scenario fails such a part: for start-up)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from astral_dsl import records
from astral_dsl.analyses.network import fabric_counts
from astral_dsl.analyses.network_records import FabricCount, TierCount
from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.model.design import Design, Route
from astral_dsl.units import format_number


@records.frozen
class Failure:
    """One fabric part a scenario fails (analyses/scenarios.py)."""
    target: Any                      # FabricSelection, NicPort, FabricLink, or a NIC (Ref)
    written: str                     # as the scenario wrote it
    span: Optional[Span] = None
    route: Optional[Route] = None    # the instances it names (a NIC or NIC port)
    fraction: Optional[float] = None  # `fail 25 % of S.fabric.core` (network.fabric_counts)
    action: int = -1                 # its action's index in Applied.notes and .named (-1: none)

    @property
    def display(self) -> str:
        return self.written

    @property
    def named(self) -> str:
        """As the diagnostics name it: `25 % of S.fabric.core` for a share of a tier."""
        if self.fraction is None:
            return self.written
        return f"{format_number(round(self.fraction * 100, 6))} % of {self.written}"


def declared(tier: TierCount) -> Optional[float]:
    """Tier `tier`'s oversubscription as declared (TierCount.oversubscription has a failed
    share of the tier above in it), None when its ports or speeds are not declared."""
    if tier.up_speed is None or tier.down_speed is None or not tier.up_ports:
        return None
    return tier.down_ports * tier.down_speed.si / (tier.up_ports * tier.up_speed.si)


def share_lost(lower: TierCount, into: str, failure: Failure, limit: Optional[float],
               notes: List[str]) -> List[Diagnostic]:
    """E602 (or a note within the limit) for tier `lower`, its oversubscription with the share
    lost, under `fail 25 % of S.fabric.agg` (`failure`): each of its switches loses that share
    of its uplinks into tier `into`."""
    over, base = lower.oversubscription, declared(lower)
    if over is None or base is None:
        return []
    lost = 1 - base / over if over > 0 else 0.0
    ratio, share = format_number(round(over, 4)), format_number(round(lost * 100, 3))
    named = failure.named
    what = f"tier `{lower.name}` runs {ratio}:1 into `{into}` (`{named}` failed)"
    if limit is None or over <= limit * (1 + 1e-9):
        notes.append(what)
        return []
    where = failure.span
    return [Diagnostic(
        "E602", Severity.ERROR, f"{what}, above the declared limit {format_number(limit)}:1",
        lower.span, "the tier needs spare uplinks to keep its limit with a share of the tier "
                    "above down, or a looser `max_oversubscription`",
        notes=(f"the failure: `fail {named}`"
               + (f" ({where.file}:{where.start.line})" if where is not None else ""),
               f"each `{lower.name}` switch loses {share} % of its uplinks into `{into}`, so its "
               f"{format_number(round(base, 4))}:1 / (1 - {share} %) = {ratio}:1"))]


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


def rejected(failures: Sequence[Failure], fabrics: Sequence[FabricCount]) -> frozenset:
    """The actions (Failure.action) of the failures no fabric took (counts): each named no part
    of a fabric (E214, E219) and so fails nothing."""
    took = {a for fc in fabrics for a in fc.took}
    return frozenset(f.action for f in failures if f.action >= 0 and f.action not in took)


__all__ = ["Failure", "counts", "declared", "rejected", "share_lost"]
