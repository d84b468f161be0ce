"""Feeder figures every output gives alike. A feeder's loading, one definition for every output
(the power picture, the report's feeder table and scenario matrix): the power through its conductors, its share of the load divided by
its own efficiency (`FeederResult.input_ratio`), over its capacity. The checks E620/E621 and its
current (analyses/feeders.py) use the same power, so a picture that reads 93.5 % agrees with
the report's 93.5 % and with the check that fires above 100 %. The battery capacity installed
(what is bought: `strings` x `string_capacity`, or the strings sizing chose), beside the
capacity needed (`PowerResult.battery_ah`). What a feeder's batteries are sized for and by which
IEEE 485 factors, one wording for the size text, the review's feeder table and the power
picture (`battery_basis`)."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.analyses.feeder_equipment import factors_text
from astral_dsl.analyses.feeders import DUTY


def all_feeders(eng):
    """The IT feeders and those of the facility's own consumers (`mechanical = true`), as the
    size report and the review's feeder table list them."""
    facility = eng.cooling.facility
    return tuple(eng.power.feeders) + (tuple(facility.feeders) if facility is not None else ())


def through_w(f, share_w: float) -> float:
    """The power through feeder `f`'s conductors when it carries `share_w` of load."""
    return share_w * f.input_ratio


def failover_share_w(f) -> Optional[float]:
    """The load feeder `f` carries with one more feeder failed; None when no feeder is left to
    carry it (a lone feeder, or one already down): the load is lost, it is not 0 W."""
    return None if f.load_w > 0 and not f.failover_w else f.failover_w


def failover_through_w(f) -> Optional[float]:
    """The power through feeder `f` with one more feeder failed (`failover_share_w` over its
    efficiency: what E621 compares with its capacity); None when no feeder is left."""
    share = failover_share_w(f)
    return None if share is None else through_w(f, share)


def loading(f, share_w: float) -> Optional[float]:
    """`through_w` over the capacity (a ratio; None: no capacity declared)."""
    return through_w(f, share_w) / f.capacity_w if f.capacity_w else None


def battery_installed_ah(feeders) -> float:
    """The capacity the feeders' batteries install, all replicas (0 for those that declare none)."""
    return sum(f.replicas * f.count * (f.battery_available_ah or 0.0) for f in feeders)


def battery_not_declared_ah(feeders) -> float:
    """The capacity needed by the batteries that declare no installed capacity."""
    return sum(f.replicas * f.count * (f.battery_required_ah or 0.0) for f in feeders
               if f.battery_available_ah is None)


def battery_basis(f) -> Tuple[str, str]:
    """Which share of feeder `f`'s load its batteries are sized to ride through (`DUTY`) and
    the IEEE 485 factors their need is multiplied by: ("its share with one feeder failed",
    "IEEE 485: aging 1.25 x design margin 1.1"); ("", "") without a battery sized."""
    if not f.battery_for:
        return "", ""
    return DUTY[f.battery_for], factors_text(f.battery_factors)


def battery_sized_for(f) -> str:
    """`battery_basis` in one phrase: "its share with one feeder failed (IEEE 485: aging 1.25 x
    design margin 1.1)"; "" without a battery sized."""
    duty, factors = battery_basis(f)
    return f"{duty} ({factors})" if duty else ""
