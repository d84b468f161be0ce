"""Power: IT load per level and in total, the feeders (analyses/feeders.py), conversion losses,
rectifier modules and batteries, each result traced to the declaration that caused it.

Parts a feeder supplies come from its `serves` and the racks' `feeds` (analyses/served.py); IT
load that no feeder supplies, and an average load taken as the peak for want of a declared
`utilization`, are reported (W626, W627)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses.feeders import FeederResult, Requirement, analyse_feeders
from astral_dsl.analyses.served import Served
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design
from astral_dsl.model.rollup import group_of, power_of
from astral_dsl.units import Quantity, format_number, readable

__all__ = ["FeederResult", "LevelLoad", "PowerResult", "Requirement", "analyse_power"]


@attrs.frozen
class LevelLoad:
    kind: str
    path: str
    replicas: int
    peak_w: float
    average_w: float


@attrs.frozen
class PowerResult:
    levels: Tuple[LevelLoad, ...]
    feeders: Tuple[FeederResult, ...]
    it_peak_w: float
    it_average_w: float
    conversion_loss_w: float
    rectifier_modules: int
    battery_ah: float
    diagnostics: Tuple[Diagnostic, ...]
    requirements: Tuple[Requirement, ...] = ()


def _si(v) -> Optional[float]:
    return v.si if isinstance(v, Quantity) else None


def _err(code, msg, span, hint=None, severity=Severity.ERROR) -> Diagnostic:
    return Diagnostic(code, severity, msg, span, hint)


def analyse_power(design: Design, network_w: float = 0.0, cache: Optional[Dict] = None,
                  failed: frozenset = frozenset(), served: Optional[Served] = None) -> PowerResult:
    """`failed`: paths of feeders a scenario has failed."""
    cache = {} if cache is None else cache
    resolve = Resolver(design)
    mult = multiplicities(design)
    served = served if served is not None else Served(design, mult, resolve, cache)
    diags: List[Diagnostic] = []
    levels: List[LevelLoad] = []
    utilization = None
    for root in design.roots:
        u = _si(root.field("utilization"))
        utilization = u if u is not None else utilization
    if utilization is None and design.roots:
        root = design.roots[0]
        diags.append(_err("W627", f"site `{root.path}` declares no `utilization`: the average IT "
                                  f"load (facility power, PUE) is taken as the peak",
                          root.span, "declare `utilization = ...`, the average over the peak "
                                     "load (e.g. from the operator's metering)",
                          Severity.WARNING))
    utilization = 1.0 if utilization is None else utilization
    for replicas, inst in mult.values():
        if inst.level is None or inst.kind in ("gpu", "nic", "cpu", "switch"):
            continue
        peak = power_of(inst, cache).si
        u = _si(inst.field("utilization"))
        levels.append(LevelLoad(inst.kind, inst.path, replicas, peak,
                                peak * (u if u is not None else utilization)))
        limit = _si(inst.field("power_limit"))
        if limit is not None and peak > limit * (1 + 1e-9):
            diags.append(_err("E624", f"{inst.kind} `{inst.path}` draws "
                                      f"{format_number(peak / 1000)} kW, above its power limit of "
                                      f"{format_number(limit / 1000)} kW",
                              inst.span_of("power_limit"),
                              f"affects {replicas:,} {inst.kind}(s)" if replicas > 1 else None))
    reqs: List[Requirement] = []
    feeders = analyse_feeders(mult, resolve, served, cache, failed, diags, reqs)
    diags.extend(_unfed(design, mult, served, feeders, cache))
    it_peak = sum(power_of(r, cache).si for r in design.roots) + network_w
    it_avg = sum(l.average_w * l.replicas for l in levels if l.kind == "site") + \
        network_w * utilization
    # conversion losses over the year: at the average load, not the peak
    average_ratio = it_avg / it_peak if it_peak else 1.0
    loss = sum(f.replicas * f.count * f.normal_w * average_ratio * (1 / f.efficiency - 1)
               for f in feeders if f.efficiency)
    modules = sum(f.replicas * f.count * (f.rectifier_modules or f.rectifier_modules_needed or 0)
                  for f in feeders)
    battery = sum(f.replicas * f.count * (f.battery_required_ah or 0.0) for f in feeders)
    levels.sort(key=lambda l: (-_order(l.kind), l.path))
    return PowerResult(tuple(levels), tuple(feeders), it_peak, it_avg, loss, modules, battery,
                       tuple(diags), tuple(reqs))


def _order(kind: str) -> int:
    return {"site": 6, "hall": 5, "pod": 4, "row": 3, "block": 3, "rack": 2, "host": 1}.get(kind, 0)


def _unfed(design: Design, mult, served: Served, feeders, cache) -> List[Diagnostic]:
    """IT load no feeder supplies: racks (or, in a design without racks, the sites) with fewer
    feeder replicas on any side than replicas of their own."""
    fed: Dict[int, Dict[Optional[str], float]] = {}
    by_path = {i.path: i for _, i in mult.values()}
    for f in feeders:
        inst = by_path.get(f.path)
        if inst is None:
            continue
        for c, part in served.of(inst):
            for n, rack in group_of(part, ("rack",), cache).flat():
                side = fed.setdefault(id(rack), {})
                side[f.side] = side.get(f.side, 0.0) + f.replicas * c * n
    missing, watts, example = 0, 0.0, None
    for replicas, rack in mult.values():
        if rack.kind != "rack":
            continue
        covered = max(fed.get(id(rack), {}).values(), default=0.0)
        if covered < replicas - 1e-9:
            lost = replicas - covered
            missing += lost
            watts += lost * power_of(rack, cache).si
            example = example or rack
    if missing:
        return [_err("W626", f"{readable.grouped(missing)} rack(s) "
                             f"({readable.power(watts)}) have no feeder: their "
                             f"power path is not checked and their conversion losses count as "
                             f"0 W", example.span,
                     "declare a feeder that serves them (`serves`) or name it in the racks' "
                     "`feeds`",
                     Severity.WARNING)]
    if not any(r.kind == "rack" for _, r in mult.values()) and not feeders:
        it = sum(power_of(r, cache).si for r in design.roots)
        if it > 0:
            root = design.roots[0]
            return [_err("W626", f"no feeder supplies the {readable.power(it)} "
                                 f"of `{root.path}`: its power path is not checked and its "
                                 f"conversion losses count as 0 W", root.span,
                         "declare the feeders that supply it", Severity.WARNING)]
    return []
