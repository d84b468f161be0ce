"""Power: IT load per level, feeders in normal operation and with one failed, conductors,
rectifier modules and batteries, each result traced to the declaration that caused it.

A feeder carries the peak load of what it `serves`. Feeders declared side by side in one instance
(A and B) serving the same parts share that load in normal operation; when one fails the other
side carries all of it (2N). A feeder declared with `count = N` is N identical feeders sharing
the load (N-1 when one fails). Formulas: analyses/formulas/ (engineering.md, IEEE 485)."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses import formulas
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import power_of
from astral_dsl.model.values import ListValue, Symbol, UnknownValue
from astral_dsl.units import Quantity, format_number

# Conductor temperature used for voltage drop when a feeder declares none: 90 degC, the maximum
# continuous operating temperature of XLPE/EPR insulation (IEC 60502-1, Table 3), so the drop is
# never underestimated.
DEFAULT_CONDUCTOR_C = 90.0


@attrs.frozen
class Requirement:
    """The least value an unknown equipment count (`?`) may take, and why; `units` is how many
    of the counted things one unit of the count stands for in the whole design (for its cost)."""
    key: str
    minimum: int
    units: int
    price: float                # of one counted thing (0 when undeclared)
    label: str
    span: Optional[object]


@attrs.frozen
class FeederResult:
    path: str
    replicas: int
    count: int                 # identical feeders this declaration stands for (per replica)
    current_type: str
    side: Optional[str]
    voltage_v: float
    load_w: float              # peak load of what it serves (all of it)
    normal_w: float            # its share in normal operation
    failover_w: float          # what it carries with one feeder failed (0: nothing backs it)
    capacity_w: Optional[float]
    current_a: float           # at the failover load (or normal when it has no backup)
    conductor_current_a: Optional[float]
    ampacity_a: Optional[float]
    voltage_drop_v: Optional[float]
    drop_ratio: Optional[float]
    rectifier_modules_needed: Optional[int]
    rectifier_modules: Optional[int]
    battery_current_a: Optional[float]
    battery_required_ah: Optional[float]
    battery_available_ah: Optional[float]
    efficiency: Optional[float]


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


def _sym(v) -> Optional[str]:
    return v.name if isinstance(v, Symbol) else None


def _err(code, msg, span, hint=None, severity=Severity.ERROR) -> Diagnostic:
    return Diagnostic(code, severity, msg, span, hint)


def analyse_power(design: Design, network_w: float = 0.0, cache: Optional[Dict] = None,
                  failed: frozenset = frozenset()) -> PowerResult:
    """`failed`: paths of feeders a scenario has failed."""
    cache = {} if cache is None else cache
    resolve = Resolver(design)
    mult = multiplicities(design)
    diags: List[Diagnostic] = []
    levels: List[LevelLoad] = []
    utilization = 1.0
    for root in design.roots:
        u = _si(root.field("utilization"))
        utilization = u if u is not None else utilization
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
    feeders = _feeders(design, mult, resolve, cache, failed, diags, reqs)
    compute_peak = sum(power_of(r, cache).si for r in design.roots)
    compute_avg = sum(l.average_w * l.replicas for l in levels if l.kind == "site")
    # switches draw near their rating whatever the job runs (their power follows the ports and
    # optics powered, not the GPUs' utilisation): the network counts at full power on average too
    it_peak = compute_peak + network_w
    it_avg = compute_avg + network_w
    # conversion losses over the year: at the average load of what the feeders serve (the
    # racks), not the peak
    average_ratio = compute_avg / compute_peak if compute_peak else 1.0
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


def _feeders(design, mult, resolve, cache, failed, diags, reqs) -> List[FeederResult]:
    out: List[FeederResult] = []
    for replicas, owner in mult.values():
        feeders = [m.value for m in owner.members
                   if isinstance(m.value, Instance) and m.value.kind == "feeder"]
        if not feeders:
            continue
        served = {id(f): resolve.group(f.field("serves")) for f in feeders}
        for f in feeders:
            key = _served_key(served[id(f)])
            partners = [g for g in feeders if g is not f and _served_key(served[id(g)]) == key
                        and _sym(g.field("side")) != _sym(f.field("side"))]
            out.append(_one_feeder(f, replicas, served[id(f)], partners, resolve, cache,
                                   failed, diags, reqs))
    return out


def _served_key(items) -> Tuple:
    return tuple(sorted((c, i.path) for c, i in items))


def _one_feeder(f: Instance, replicas, served, partners, resolve, cache, failed,
                diags, reqs) -> FeederResult:
    load = sum(c * power_of(i, cache).si for c, i in served)
    sides = 1 + len(partners)
    alive_partners = [p for p in partners if p.path not in failed]
    capacity = _si(f.field("capacity"))
    count_field = f.field("count")
    if isinstance(count_field, UnknownValue):
        count = _feeders_needed(load, capacity, sides, bool(alive_partners))
        if f.path in failed:       # one of them is down: the others carry the normal share
            alive = sides - len(partners) + len(alive_partners)
            count = max(count, math.ceil(load / (capacity * alive) - 1e-9) + 1) \
                if capacity else count + 1
        reqs.append(Requirement(count_field.key, count, replicas, _si(f.field("price")) or 0.0,
                                f"feeder `{f.path}` must carry its load normally and with one "
                                f"feeder failed", f.span_of("capacity")))
    else:
        count = int(_si(count_field) or 1)
    unknown = isinstance(count_field, UnknownValue)
    # under a failure already (this feeder or its partner), only normal operation must hold
    degraded = f.path in failed or len(alive_partners) < len(partners)
    if f.path in failed and count > 1:
        count -= 1                       # one of the N identical feeders is down
        failed = failed - {f.path}
    if f.path in failed:
        normal = 0.0
        if not alive_partners:
            diags.append(_err("E628", f"feeder `{f.path}` is down and nothing backs it: "
                                      f"{format_number(round(load / 1e3, 1))} kW lose power",
                              f.span, "declare a partner feeder on the other side (A/B) or "
                                      "`count = N` feeders sharing the load"))
    elif partners and not alive_partners:
        normal = load / count           # the other side is down: this one carries all
    else:
        normal = load / (count * sides)
    if degraded:
        failover = 0.0
    elif alive_partners:
        failover = load / count
    elif count > 1:
        failover = load / (count - 1)
    else:
        failover = 0.0
    voltage = _si(f.field("voltage")) or 0.0
    kind = _sym(f.field("current")) or "dc"
    carried = max(normal, failover)
    current = _current(kind, carried, voltage, f)
    if capacity is not None and not unknown:     # an unknown count is sized to fit instead
        if normal > capacity * (1 + 1e-9):
            diags.append(_err("E620", f"feeder `{f.path}` carries "
                                      f"{format_number(normal / 1e3)} kW in normal operation, "
                                      f"above its capacity of {format_number(capacity / 1e3)} kW",
                              f.span_of("capacity"), _replicas(replicas, "feeder")))
        elif failover > capacity * (1 + 1e-9):
            other = "the other side" if partners else "the remaining feeders"
            diags.append(_err("E621", f"with one feeder failed, {other} of `{f.path}` must "
                                      f"carry {format_number(failover / 1e3)} kW, above its "
                                      f"capacity of {format_number(capacity / 1e3)} kW",
                              f.span_of("capacity"),
                              "each side of a 2N pair must carry the whole load"))
    _voltage_range(f, voltage, resolve, diags)
    cond_current, ampacity, drop, ratio = _conductor(f, current, voltage, kind, resolve, diags)
    needed, declared = _rectifier(f, carried, resolve, diags, reqs, replicas * count)
    b_current, b_required, b_available = _battery(f, load / count, resolve, diags, reqs,
                                                  replicas * count)
    eff = _si(f.field("efficiency"))
    rect = resolve(f.field("rectifier"))
    if eff is None and rect is not None:
        eff = _si(rect.field("efficiency"))
    return FeederResult(f.path, replicas, count, kind, _sym(f.field("side")), voltage, load, normal,
                        failover, capacity, current, cond_current, ampacity, drop, ratio, needed,
                        declared, b_current, b_required, b_available, eff)


def _replicas(n: int, what: str) -> Optional[str]:
    return f"the same holds for all {n:,} such {what}s" if n > 1 else None


def _current(kind: str, power_w: float, voltage: float, f: Instance) -> float:
    if not voltage:
        return 0.0
    if kind == "dc":
        return formulas.dc_current(power_w, voltage)
    pf = _si(f.field("power_factor")) or 1.0
    phases = int(_si(f.field("phases")) or 3)
    if phases == 3:
        return formulas.ac3_current(power_w, voltage, pf)
    return power_w / (voltage * pf)


def _voltage_range(f: Instance, voltage: float, resolve, diags) -> None:
    std = resolve(f.field("standard"))
    if std is None or not voltage:
        return
    lo, hi = _si(std.field("min")), _si(std.field("max"))
    if (lo is not None and voltage < lo) or (hi is not None and voltage > hi):
        diags.append(_err("E626", f"feeder `{f.path}` runs at {format_number(voltage)} V, "
                                  f"outside the normal range of `{std.path}` "
                                  f"({format_number(lo)}-{format_number(hi)} V)",
                          f.span_of("voltage"), "choose a voltage within the standard's range"))


def _conductor(f: Instance, current, voltage, kind, resolve, diags):
    area = _si(f.field("conductor_area"))
    if area is None:
        return None, None, None, None
    sets = int(_si(f.field("conductors")) or 1)
    per = current / sets
    ampacity = _si(f.field("ampacity"))
    table = resolve(f.field("cable"))
    if ampacity is None and table is not None:
        areas = [a.si for a in table.field("areas", ListValue(())).items]
        amps = [a.si for a in table.field("ampacities", ListValue(())).items]
        try:
            ampacity = formulas.ampacity(list(zip(areas, amps)), area)
        except ValueError as exc:
            diags.append(_err("E625", f"feeder `{f.path}`: {exc}", f.span_of("conductor_area")))
    if ampacity is not None and per > ampacity * (1 + 1e-9):
        diags.append(_err("E625", f"each of the {sets} conductor set(s) of `{f.path}` carries "
                                  f"{format_number(round(per, 1))} A, above its ampacity of "
                                  f"{format_number(round(ampacity, 1))} A",
                          f.span_of("conductor_area"),
                          "add parallel conductors (`conductors = N`) or a larger cross-section"))
    length = _si(f.field("length"))
    drop = ratio = None
    if length is not None:
        t = f.field("conductor_temperature")
        temp_c = t.value_in("degC") if isinstance(t, Quantity) else DEFAULT_CONDUCTOR_C
        if kind == "dc":
            drop = formulas.dc_voltage_drop(per, length, area, temp_c)
        else:
            r = formulas.copper_resistivity(temp_c) / area
            pf = _si(f.field("power_factor")) or 1.0
            x = _si(f.field("reactance")) or 0.0     # declared per conductor; 0 when not given
            drop = formulas.ac3_voltage_drop(per, length, r, x, pf)
        ratio = drop / voltage if voltage else None
        limit = _si(f.field("max_voltage_drop"))
        if limit is not None and ratio is not None and ratio > limit * (1 + 1e-9):
            diags.append(_err("E622", f"voltage drop on `{f.path}` is "
                                      f"{format_number(round(drop, 2))} V "
                                      f"({format_number(round(ratio * 100, 2))} %), above the "
                                      f"declared {format_number(limit * 100)} %",
                              f.span_of("max_voltage_drop"),
                              "shorten the run or use a larger cross-section"))
    return per, ampacity, drop, ratio


def _feeders_needed(load: float, capacity: Optional[float], sides: int, backed: bool) -> int:
    """Least number of identical feeders sharing `load`: normal share load/(n*sides) and, with
    one failed, load/n (a live partner side) or load/(n-1) (no partner) within capacity."""
    if not capacity:
        return 1
    normal = load / (capacity * sides)
    failover = load / capacity if backed else load / capacity + 1
    return max(1, math.ceil(max(normal, failover) - 1e-9))


def _rectifier(f: Instance, load, resolve, diags, reqs, units: int):
    rect = resolve(f.field("rectifier"))
    if rect is None:
        return None, None
    module = _si(rect.field("module"))
    if not module:
        return None, None
    derate = _si(rect.field("derate")) or 1.0
    scheme = _sym(rect.field("redundancy")) or "n_plus_1"
    needed = formulas.with_redundancy(formulas.modules_needed(load, module, derate), scheme)
    modules = rect.field("modules")
    if isinstance(modules, UnknownValue):
        reqs.append(Requirement(modules.key, needed, units, _si(rect.field("price")) or 0.0,
                                f"`{f.path}` needs {needed} modules of "
                                f"{format_number(module / 1e3)} kW ({scheme})",
                                rect.span_of("module")))
        return needed, None
    declared_q = _si(modules)
    declared = int(declared_q) if declared_q is not None else None
    if declared is not None and declared < needed:
        diags.append(_err("E627", f"`{f.path}` needs {needed} rectifier modules of "
                                  f"{format_number(module / 1e3)} kW ({scheme}) but "
                                  f"`{rect.path}` has {declared}", rect.span_of("modules")))
    return needed, declared


def _battery(f: Instance, load, resolve, diags, reqs, units: int):
    bat = resolve(f.field("battery"))
    if bat is None:
        return None, None, None
    autonomy = _si(bat.field("autonomy"))
    cells = _si(bat.field("cells"))
    end_v = _si(bat.field("end_voltage"))
    if not (autonomy and cells and end_v):
        return None, None, None
    current, _, sized = formulas.battery_capacity_ah(
        load, autonomy, _si(bat.field("efficiency")) or 1.0, int(cells), end_v,
        aging=_si(bat.field("aging_factor")) or 1.25, design=_si(bat.field("design_factor")) or 1.1,
        temperature=_si(bat.field("temperature_factor")) or 1.0)
    per_string = _si(bat.field("string_capacity"))
    available = None
    strings = bat.field("strings")
    if isinstance(strings, UnknownValue):
        if per_string:
            need = max(1, math.ceil(sized / (per_string / 3600.0) - 1e-9))
            reqs.append(Requirement(strings.key, need, units, _si(bat.field("price")) or 0.0,
                                    f"batteries of `{f.path}` must hold "
                                    f"{format_number(round(sized))} Ah",
                                    bat.span_of("string_capacity")))
            available = need * per_string / 3600.0
        return current, sized, available
    if per_string is not None:
        available = per_string / 3600.0 * (int(_si(bat.field("strings")) or 1))
        if available < sized * (1 - 1e-9):
            strings = math.ceil(sized / (per_string / 3600.0) - 1e-9)
            diags.append(_err("E623", f"batteries of `{f.path}` hold "
                                      f"{format_number(round(available, 1))} Ah but "
                                      f"{format_number(autonomy / 60)} min at "
                                      f"{format_number(round(load / 1e3, 1))} kW needs "
                                      f"{format_number(round(sized, 1))} Ah",
                              bat.span_of("strings"), f"use at least {strings} strings"))
    return current, sized, available
