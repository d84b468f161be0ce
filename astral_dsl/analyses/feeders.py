"""Feeders: the load each carries in normal operation and with one failed, its current,
conductor, rectifier modules and batteries, each traced to the declaration that caused it.

A feeder carries the peak load of what it supplies (analyses/served.py). Feeders declared side
by side in one instance (A and B) supplying the same parts share that load in normal operation;
when one fails the other side carries all of it (2N). A feeder declared with `count = N` is N
identical feeders sharing the load (N-1 when one fails; with a partner side, the N-1 carry
their side's share and the partner's load is unchanged). Data a check needs and the design
leaves out is reported (W620-W625), never taken as zero. Rectifier modules and batteries:
analyses/feeder_equipment.py. Formulas: analyses/formulas/ (IEEE 485, IEC 60364-5-52,
IEC 60028)."""
from __future__ import annotations

import math
from typing import List, Optional, Tuple


from astral_dsl import records
from astral_dsl.analyses import conductors, feeder_backing, feeder_voltage
from astral_dsl.analyses.feeder_equipment import (Requirement, battery, recharge, rectifier,
                                                  sizing_factors)
from astral_dsl.analyses.field_reading import error, si, symbol_name, warning
from astral_dsl.analyses.served import Served
from astral_dsl.model.design import Instance
from astral_dsl.model.rollup import power_of
from astral_dsl.model.values import UnknownValue
from astral_dsl.units import format_number, readable


@records.frozen(slots=False)
class FeederResult:
    path: str
    replicas: int
    count: int                 # identical feeders this declaration stands for (per replica),
    #                            installed: a scenario that fails one leaves the count alone
    current_type: str
    side: Optional[str]
    voltage_v: float
    load_w: float              # peak load of what it serves (all of it), per replica
    normal_w: float            # its share in normal operation
    failover_w: float          # what it carries with one feeder failed (0: nothing backs it)
    capacity_w: Optional[float]   # as real power: a rating in kVA times `rating_pf`
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
    low_voltage_v: float = 0.0     # where the current is computed: the lowest it runs at
    low_voltage_from: str = "nominal"   # battery end of discharge | standard minimum | nominal
    input_ratio: float = 1.0       # 1 / the feeder's own efficiency: its conductors carry more
    network_w: float = 0.0         # of load_w: the fabrics' switches (`network = true`)
    average_w: float = 0.0         # its normal share at the average draw of what it serves
    running: int = 1               # of `count`, the feeders in service (a scenario fails one)
    dark: bool = False             # down with nothing backing it (E628): what it serves is off
    no_load_w: float = 0.0         # its rectifier's installed modules at no load (per feeder)
    rating_pf: Optional[float] = None   # an AC rating stated in VA: the power factor that made
    #                                     it `capacity_w` (the rating is capacity_w / rating_pf)
    recharge_w: float = 0.0        # its batteries' recharge, on top of the load (per feeder)
    mechanical_w: float = 0.0      # of load_w: the facility's own consumers (`mechanical`)
    equipment_v: Optional[float] = None   # at the equipment at the batteries' end of discharge
    degraded: bool = False         # a scenario failed a feeder it shares its load with: normal_w
    #                                is what it carries now, failover_w with one more failed
    battery_w: float = 0.0         # what its batteries are sized to supply (the power through it)
    battery_for: str = ""          # which share that is: normal | failover | scenario (DUTY)
    battery_factors: tuple = ()    # the IEEE 485 factors its need is sized with ((name, value))

    @property
    def rating(self) -> Optional[float]:
        """The capacity as stated: VA for a rating in kVA (`rating_pf`), else W."""
        if self.capacity_w and self.rating_pf:
            return self.capacity_w / self.rating_pf
        return self.capacity_w

    @property
    def worst_w(self) -> float:
        """The largest share it is checked at: normal or failover; under a scenario that
        failed a feeder it shares its load with, what it carries now (one more failure is no
        state it is designed for)."""
        return self.normal_w if self.degraded else max(self.normal_w, self.failover_w)

    @property
    def carried_w(self) -> float:
        """What flows through the feeder where its current is worst: `worst_w` divided by its
        own efficiency."""
        return self.worst_w * self.input_ratio


def analyse_feeders(mult, resolve, served: Served, cache, failed, diags, reqs,
                    averages=None) -> List[FeederResult]:
    """Every feeder the sites hold. `failed`: paths of feeders a scenario has failed;
    `averages` (analyses/utilization.py): the average draw of what they serve, for losses."""
    out: List[FeederResult] = []
    example = feeder_backing.evidence((i for _, i in mult.values() if i.kind == "feeder"),
                                      resolve)
    for replicas, owner in mult.values():
        feeders = [m.value for m in owner.members
                   if isinstance(m.value, Instance) and m.value.kind == "feeder"
                   and m.value.field("mechanical") is not True]
        if not feeders:
            continue
        parts = {id(f): served.of(f) for f in feeders}
        diags.extend(_doubled(feeders, parts))
        for f in feeders:
            key = _served_key(f, parts[id(f)])
            partners = [g for g in feeders if g is not f and _served_key(g, parts[id(g)]) == key
                        and symbol_name(g.field("side")) != symbol_name(f.field("side"))]
            out.append(one_feeder(f, replicas, parts[id(f)], served.network(f)[0], partners,
                                   resolve, cache, failed, diags, reqs, averages, owner=owner))
            diags.extend(feeder_backing.unbacked(f, partners, out[-1].count, out[-1].load_w,
                                                 example, replicas, resolve))
    return out


def _doubled(feeders, parts) -> List:
    """W634: two feeders of one instance on the same side (or both on none) serving the same
    parts. Each is taken to carry all of their load (only feeders of other sides share it), so
    the load and its conversion losses are counted once per feeder."""
    out, seen = [], []
    for f in feeders:
        key = (_served_key(f, parts[id(f)]), symbol_name(f.field("side")))
        first = next((g for g, k in seen if k == key), None)
        seen.append((f, key))
        if first is None or not parts[id(f)]:
            continue
        side = f"side {key[1]}" if key[1] else "no `side`"
        out.append(warning("W634", f"feeders `{first.path}` and `{f.path}` serve the same parts on "
                                   f"{side}: each is taken to carry all of their load, which is "
                                   f"counted twice (their losses too)", f.span,
                           "give them sides A and B (a 2N pair sharing the load), or declare one "
                           "feeder with `count = 2` (two sharing it)"))
    return out


def _served_key(f: Instance, items) -> Tuple:
    return tuple(sorted((c, i.path) for c, i in items)) + ((f.field("network") is True),)


def _shares(load: float, count: int, sides: int, partners: int, alive_partners: int,
            down: bool) -> Tuple[float, float]:
    """(share it carries now, share with one more feeder failed) of one of `count` identical
    feeders on one of `sides` sides, `partners` of the other sides (`alive_partners` in
    service); `down`: one of its own `count` has failed already (a scenario). Without a
    scenario the first is its normal share; under one, what it carries with the scenario's
    failures, and the second what it would carry if one more failed (0: none would be left)."""
    running = count - 1 if down else count
    if running <= 0:
        return 0.0, 0.0
    # the sides in service share the load, each over the feeders it has running
    now = load / (running * (1 + alive_partners))
    if alive_partners:           # one more failure: another side lost, this one carries all
        return now, load / running
    return now, load / (running - 1) if running > 1 else 0.0


def one_feeder(f: Instance, replicas, served, network_w, partners, resolve, cache, failed,
               diags, reqs, averages=None, mechanical: Tuple[float, float] = (0.0, 0.0),
               owner: Optional[Instance] = None) -> FeederResult:
    """One feeder declaration (of `owner`); `mechanical`: the facility's consumers it supplies
    (peak, average), per replica, for a feeder with `mechanical = true` (analyses/chain.py)."""
    load = sum(c * power_of(i, cache).si for c, i in served) + network_w + mechanical[0]
    average = (averages.served_per_replica(owner, served) if averages is not None
               else load - network_w - mechanical[0]) + network_w + mechanical[1]
    if not served and not network_w and not mechanical[0]:
        what = " and no fabric's switches under it draw power" \
            if f.field("network") is True else ""
        diags.append(warning("W620", f"feeder `{f.path}` serves nothing{what}: it carries 0 kW",
                             f.span, "set `serves = ...`, or name it in the `feeds` of the racks "
                                     "it supplies (`network = true` for the switches)"))
    sides = 1 + len(partners)
    alive_partners = [p for p in partners if _still_up(p, failed)]
    kind = symbol_name(f.field("current")) or "dc"
    capacity, rating_pf = rated_capacity(f, kind)
    count_field = f.field("count")
    if isinstance(count_field, UnknownValue):
        own = si(f.field("efficiency"))
        needs = load / own if own else load      # what the feeders' conductors carry
        count = _feeders_needed(needs, capacity, sides, bool(alive_partners))
        if f.path in failed:       # one of them is down: the others carry the normal share
            alive = sides - len(partners) + len(alive_partners)
            count = max(count, math.ceil(needs / (capacity * alive) - 1e-9) + 1) \
                if capacity else count + 1
        reqs.append(Requirement(count_field.key, count, replicas, si(f.field("price")) or 0.0,
                                f"feeder `{f.path}` must carry its load normally and with one "
                                f"feeder failed", f.span_of("capacity")))
    else:
        count = int(si(count_field) or 1)
    unknown = isinstance(count_field, UnknownValue)
    down = f.path in failed
    running = count - 1 if down else count
    normal, failover = _shares(load, count, sides, len(partners), len(alive_partners), down)
    # a scenario has failed a feeder this one shares its load with: `normal` is what it
    # carries now and `failover` what one more failure would leave it, a double failure that
    # no check holds it to (E621 is the design's N-1)
    degraded = down or len(alive_partners) < len(partners)
    # what the installed equipment is sized for: the design load, whatever a scenario failed
    # (a failure changes what flows, never how many modules or strings are installed)
    healthy = _shares(load, count, sides, len(partners), len(partners), False)
    design = max(healthy)
    dark = down and running == 0 and not alive_partners
    if dark:
        diags.append(error("E628", f"feeder `{f.path}` is down and nothing backs it: "
                                   f"{readable.power(load)} lose power",
                           f.span, "declare a partner feeder on the other side (A/B) or "
                                   "`count = N` feeders sharing the load"))
    voltage = si(f.field("voltage")) or 0.0
    # the feeder's own conversion (a utility-direct path's transformer and PSUs): its conductors
    # carry the load divided by its efficiency; a rectifier's efficiency is upstream of a DC feeder
    own = si(f.field("efficiency"))
    through = 1 / own if own else 1.0
    carried = normal if degraded else max(normal, failover)
    low, low_from = feeder_voltage.lowest(f, kind, voltage, resolve, diags, load > 0)
    current = conductors.current(kind, carried * through, low, f)
    if capacity is None and load > 0:
        diags.append(warning("W623", f"feeder `{f.path}` declares no `capacity`: the "
                                     f"{readable.power(carried * through)} it carries are "
                                     f"not checked against a rating", f.span,
                             "declare `capacity = ...` (the feeder's rated power)"))
    if capacity is not None and not unknown:     # an unknown count is sized to fit instead
        if normal * through > capacity * (1 + 1e-9):
            said, rating, tail = _against_rating(normal * through, capacity, rating_pf,
                                                 _of_load(normal, own))
            when = "in normal operation" if not degraded else \
                f"with one of its {count} failed" if down else "with the other side failed"
            diags.append(error("E620", f"feeder `{f.path}` carries {said} {when}{tail}, "
                                       f"above its capacity of {rating}",
                               f.span_of("capacity"), _replicas(replicas, "feeder")))
        elif not degraded and failover * through > capacity * (1 + 1e-9):
            other = "the other side" if partners else "the remaining feeders"
            said, rating, tail = _against_rating(failover * through, capacity, rating_pf,
                                                 _of_load(failover, own))
            diags.append(error("E621", f"with one feeder failed, {other} of `{f.path}` must "
                                       f"carry {said}{tail}, above its capacity of {rating}",
                               f.span_of("capacity"), _failover_hint(count, bool(partners))))
    feeder_voltage.in_range(f, voltage, resolve, diags)
    cond_current, ampacity, drop, ratio = conductors.conductor(f, current, low, kind, resolve,
                                                               diags, load > 0)
    at_equipment = feeder_voltage.end_of_discharge(f, resolve, low, low_from, current, drop,
                                                   carried * through, diags)
    # the batteries and the rectifier modules hold the same duty: the largest share the feeder
    # is designed to carry, its share with one feeder failed where a peer backs it (more if a
    # scenario loads it beyond that), through its own conversion (they sit on its bus, upstream
    # of it, as its conductors do). IEEE Std 485 (clause 4, defining loads) sizes a battery for
    # its duty cycle, the load it must supply for its autonomy in any state the system is
    # designed to run in; a `count = N` group is designed to run N-1 until the failed feeder is
    # repaired (E621 holds it to that), as a 2N side runs alone, and a utility outage in that
    # time is ridden through on the batteries of the feeders left (a 2N UPS's batteries are
    # rated for the whole load its side may carry alone). Sizing them for the normal share left
    # an N-1 group's batteries short by 1/(N-1) of the load: 10 min at 183.6 kW on 134 Ah.
    duty = max(design, carried)
    duty_for = _duty_for(degraded and carried > design * (1 + 1e-9),
                         healthy[1] > healthy[0] * (1 + 1e-9))
    b_current, b_required, b_available = battery(f, duty * through, resolve, diags, reqs,
                                                  replicas * count,
                                                  _of_load(duty, own, "" if duty_for == "normal"
                                                           else DUTY[duty_for]))
    refill = recharge(f, b_available or b_required, voltage, resolve, diags)
    needed, declared, no_load = rectifier(f, duty * through + refill, resolve,
                                          diags, reqs, replicas * count, refill)
    eff = si(f.field("efficiency"))
    rect = resolve(f.field("rectifier"))
    rect_eff = si(rect.field("efficiency")) if rect is not None else None
    if rect_eff is not None:        # the rectifier upstream of the feeder's own conversion
        eff = rect_eff * eff if eff is not None else rect_eff
    if rect is not None and rect_eff is None and eff is not None and load > 0:
        diags.append(warning("W624", f"rectifier `{rect.path}` of feeder `{f.path}` declares no "
                                     f"`efficiency`: its AC-DC conversion losses count as 0 W in "
                                     f"the facility power and the PUE, only the feeder's own "
                                     f"{format_number(round(eff * 100, 4))} % counts",
                             f.span_of("rectifier"),
                             "declare `efficiency = ...` on the rectifier, from its data sheet "
                             "(stdlib.power's `Rectifier` states one)"))
    if eff is None and load > 0:
        diags.append(warning("W624", f"feeder `{f.path}` declares no conversion `efficiency` "
                                     f"(nor does a rectifier on it): its conversion losses count "
                                     f"as 0 W in the facility power and the PUE", f.span,
                             "declare `efficiency = ...` on the feeder or its rectifier, from the "
                             "equipment's data sheet"))
    return FeederResult(f.path, replicas, count, kind, symbol_name(f.field("side")), voltage,
                        load, normal, failover, capacity, current, cond_current, ampacity, drop,
                        ratio, needed, declared, b_current, b_required, b_available, eff, low,
                        low_from, through, network_w,
                        normal * average / load if load else 0.0, running,
                        dark=dark, no_load_w=no_load, recharge_w=refill,
                        mechanical_w=mechanical[0], equipment_v=at_equipment,
                        rating_pf=rating_pf, degraded=degraded,
                        battery_w=duty * through if b_required is not None else 0.0,
                        battery_for=duty_for if b_required is not None else "",
                        battery_factors=sizing_factors(resolve(f.field("battery")))
                        if b_required is not None else ())


# what a feeder's batteries (and rectifier modules) are sized for, as the outputs say it
DUTY = {"normal": "its load, which no other feeder backs",
        "failover": "its share with one feeder failed",
        "scenario": "what it carries under the scenario, above its share with one failed"}


def _duty_for(scenario: bool, backed: bool) -> str:
    return "scenario" if scenario else "failover" if backed else "normal"


def rated_capacity(f: Instance, kind: str) -> Tuple[Optional[float], Optional[float]]:
    """A feeder's `capacity` as the real power it carries (W) and, for an AC rating stated in
    volt-amperes (`800 kVA`), the power factor that converted it: an apparent-power rating
    holds a load of kW = kVA x power factor (the feeder's `power_factor`; 1 when it declares
    none, which W621 says), as a transformer's does (analyses/chain.py). On a DC feeder a VA
    and a W are one."""
    cap = si(f.field("capacity"))
    if cap is None or kind == "dc" or not conductors.rated_in_va(f):
        return cap, None
    pf = si(f.field("power_factor")) or 1.0
    return cap * pf, pf


def _against_rating(carried: float, capacity: float, pf: Optional[float],
                    of_load: str) -> Tuple[str, str, str]:
    """What a feeder carries, its rating and what follows the first (`of_load`: the load
    behind its own efficiency), as a check says them: in kW, or against a rating stated in
    kVA in kVA with the kW inside (`832 kVA (790 kW at power factor 0.95, ...)`)."""
    if pf is None:
        said, rating = readable.powers_apart(carried, capacity)
        return said, rating, of_load
    said, rating = readable.powers_apart(carried / pf, capacity / pf)
    inner = f"{readable.power(carried, 3)} at power factor {format_number(round(pf, 4))}"
    if of_load:
        inner += ", " + of_load.strip()[1:-1]
    return f"{readable.apparent(said)} ({inner})", readable.apparent(rating), ""


def _still_up(partner: Instance, failed) -> bool:
    """A partner declaration still carries its side's share: not failed, or failed but one of
    several (a scenario fails one feeder of a `count = N` group; the others of that side carry
    its share, so the other side's load is unchanged). An unknown count (`?`) is sized so that
    one failed leaves the rest in service."""
    if partner.path not in failed:
        return True
    count = partner.field("count")
    return isinstance(count, UnknownValue) or int(si(count) or 1) > 1


def _failover_hint(count: int, paired: bool) -> str:
    if paired:
        return "each side of a 2N pair must carry the whole load alone"
    return f"the {count - 1} feeder(s) left of the {count} must carry the whole load " \
           f"(N-1): declare more of them or a larger `capacity`"


def _replicas(n: int, what: str) -> Optional[str]:
    return f"the same holds for all {n:,} such {what}s" if n > 1 else None


def _of_load(load: float, own: Optional[float], what: str = "") -> str:
    """How a power through the feeder comes from `load` (and `what` that load is)."""
    bits = [what] if what else []
    if own and own < 1:
        bits.append(f"{readable.power(load, 3)} of load at "
                    f"{format_number(round(own * 100, 4))} % efficiency")
    return f" ({'; '.join(bits)})" if bits else ""


def _feeders_needed(load: float, capacity: Optional[float], sides: int, backed: bool) -> int:
    """Least number of identical feeders sharing `load`: normal share load/(n*sides) and, with
    one failed, load/n (a live partner side) or load/(n-1) (no partner) within capacity."""
    if not capacity:
        return 1
    normal = load / (capacity * sides)
    failover = load / capacity if backed else load / capacity + 1
    return max(1, math.ceil(max(normal, failover) - 1e-9))
