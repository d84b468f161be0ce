"""A feeder's loading, one definition for every output (the power picture, the report's feeder
table and scenario matrix): the power through its conductors, its share of the load divided by
its own efficiency (`FeederResult.input_ratio`), over its capacity. The checks E620/E621 and its
current (analyses/feeders.py) use the same power, so a picture that reads 93.5 % agrees with
the report's 93.5 % and with the check that fires above 100 %."""
from __future__ import annotations

from typing import Optional


def through_w(f, share_w: float) -> float:
    """The power through feeder `f`'s conductors when it carries `share_w` of load."""
    return share_w * f.input_ratio


def loading(f, share_w: float) -> Optional[float]:
    """`through_w` over the capacity (a ratio; None: no capacity declared)."""
    return through_w(f, share_w) / f.capacity_w if f.capacity_w else None
