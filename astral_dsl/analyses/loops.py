"""Liquid loops: the cold-plate heat of what a loop cools, its flow from Q = m_dot * cp * dT with
fluid properties from CoolProp at the mean loop temperature, CDUs with N+1 on heat and flow,
pump power, and the coolant limits of the GPUs it cools. Data a check needs and the design leaves
out is reported (W648-W650, W658), never taken as zero."""
from __future__ import annotations

import math
import re
from typing import Dict, List, Optional, Tuple


from astral_dsl import records
from astral_dsl.analyses import formulas
from astral_dsl.analyses.field_reading import error, si, warning
from astral_dsl.analyses.walk import path_within
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Instance
from astral_dsl.model.rollup import group_of, power_of
from astral_dsl.model.values import Symbol, UnknownValue
from astral_dsl.units import Quantity, format_number, readable


@records.frozen(slots=False)
class LoopResult:
    path: str
    replicas: int
    fluid: str
    heat_w: float
    supply_c: float
    rise_k: float
    density: Optional[float]
    cp: Optional[float]
    flow_m3s: Optional[float]
    cdus_needed: Optional[int]
    cdus: Optional[int]
    cdu_capacity_w: Optional[float]
    pump_w: float
    parts: Tuple[Tuple[str, str, int, float, Optional[float]], ...] = ()
    # (kind, path, replicas per loop, liquid heat, flow) for the rows and racks it serves
    cdu_w: float = 0.0         # the running CDUs' own draw (their declared `power`)
    network_heat_w: float = 0.0   # of heat_w: the switches' cold plates (`network = true`)
    fluid_name: str = ""          # the fluid as the design names it (`PG25`)
    average_heat_w: float = 0.0   # heat_w over the year: what it cools at its utilization
    cdu_model: str = ""           # the CDU as the design names it (`CDU`, `RowCDU`), "" if none
    redundancy: str = "n_plus_1"  # of its CDUs: what E641 (and the margins) take away
    # average_heat_w where its owner's replicas sit under different utilizations: (utilization
    # in force there, per replica), for the circuits they draw on (analyses/circuits.py split)
    average_at: Tuple[Tuple[Optional[float], float], ...] = ()
    # whether its CDU states `power` (its own draw besides the pumps): one that does not
    # counts as 0 W in cdu_w, and the outputs say it is not counted (size JSON: null)
    cdu_power_stated: bool = False


def liquid_heat(inst: Instance, cache: Dict) -> float:
    """Heat taken by cold plates: the declared share of this instance's power, else the sum of
    its parts' (a part with no share sends all its heat to air)."""
    key = (id(inst), "liquid")
    hit = cache.get(key)
    if hit is not None:
        return hit[1]
    share = si(inst.field("liquid_share"))
    if share is not None:
        value = power_of(inst, cache).si * share
    else:
        value = sum(c * liquid_heat(child, cache) for c, child in inst.containment())
    cache[key] = (inst, value)
    return value


_BRACKET = re.compile(r"\[([0-9.]+)\]\s*$")


def _fluid(loop: Instance, fluid: Optional[Instance], diags) -> Optional[str]:
    """The CoolProp name, after checking it against the declared concentration (E650)."""
    name = fluid.field("coolprop") if fluid is not None else None
    if not isinstance(name, str):
        return None
    conc = si(fluid.field("concentration"))
    if conc is not None and "&" not in name:       # a mixture of pure fluids names its own
        m = _BRACKET.search(name)
        said = float(m.group(1)) if m else 0.0
        if abs(said - conc) > 1e-9:
            what = f"`{name}` is {format_number(said * 100)} %" if m else \
                f"`{name}` names a pure fluid"
            diags.append(error("E650", f"fluid `{fluid.path}` declares a concentration of "
                                       f"{format_number(round(conc * 100, 6))} % but its CoolProp "
                                       f"name {what}: the properties would be those of the name",
                               fluid.span_of("concentration"),
                               "make the CoolProp mixture fraction, e.g. `INCOMP::MPG[0.25]`, "
                               "match `concentration`"))
    return name


def analyse_loop(inst: Instance, replicas: int, served, resolve, cache, overrides, diags,
                 reqs, network_w: float = 0.0, owner: Optional[Instance] = None,
                 averages=None) -> LoopResult:
    """`network_w`: the switches' cold-plate heat a `network = true` loop also removes (per
    replica); `owner`: the part it is declared in, whose replica its results name; `averages`
    (analyses/utilization.py): the average heat of what it cools."""
    from astral_dsl.analyses.feeders import Requirement

    network_only = inst.field("network") is True and inst.field("serves") is None
    served = [] if network_only else served
    heat = sum(c * liquid_heat(i, cache) for c, i in served) + network_w
    average = (averages.served_heat(owner, served)[1] + network_w
               if averages is not None else heat)
    average_at = tuple((u, averages.served_heat(owner, served, {u: 1.0})[1] + network_w)
                       for u in averages.places(owner)) if averages is not None else ()
    if heat <= 0:
        diags.append(warning("W650", f"loop `{inst.path}` cools nothing: the parts it serves "
                                     f"send no heat to cold plates", inst.span,
                             "set `serves = ...`, a `liquid_share` on what it cools, or remove "
                             "the loop"))
    supply_q = inst.field("supply")
    supply_c = supply_q.value_in("degC") if isinstance(supply_q, Quantity) else 0.0
    rise = si(inst.field("rise")) or 0.0
    fluid = resolve(inst.field("fluid"))
    name = _fluid(inst, fluid, diags)
    density = cp = flow = None
    if name is not None and rise > 0:
        from astral_dsl.analyses import fluids

        try:
            props = fluids.properties(name, supply_c + rise / 2)
            density, cp = props.density, props.cp
            flow = formulas.liquid_flow(heat, density, cp, rise)
        except ValueError as exc:
            diags.append(Diagnostic("E646", Severity.ERROR, f"fluid properties of "
                                    f"`{fluid.path}` at {readable.celsius(supply_c + rise / 2)}: "
                                    f"{exc}", inst.span_of("fluid"),
                                    fluids.unavailable_hint(exc),
                                    notes=fluids.unavailable_notes(exc)))
    cdu = resolve(inst.field("cdu"))
    cap = si(cdu.field("capacity")) if cdu is not None else None
    cdu_flow = si(cdu.field("max_flow")) if cdu is not None else None
    if cdu is None and heat > 0:
        diags.append(warning("W658", f"loop `{inst.path}` declares no `cdu`: its CDUs are not "
                                     f"sized or checked against its "
                                     f"{readable.power(heat)}", inst.span,
                             "declare `cdu = ...` (a CDU model) and `cdus = ...` (or `?`)"))
    scheme = inst.field("redundancy")
    scheme = scheme.name if isinstance(scheme, Symbol) else None
    if scheme is None:
        scheme = "n_plus_1"
        if cdu is not None:
            diags.append(warning("W659", f"loop `{inst.path}` declares no `redundancy`: its CDUs "
                                         f"are sized N+1 (one spare)", inst.span_of("cdus"),
                                 "declare `redundancy = n_plus_1` (or `n`, `two_n`) on the loop"))
    cdus_field = inst.field("cdus")
    declared = si(cdus_field)
    failed = overrides.get((inst.path, "failed_cdus"), 0)
    if declared is not None:        # a scenario failing more CDUs than there are fails them all
        failed = min(failed, max(int(declared), 0))
    declared_n = int(declared) - failed if declared is not None else None
    needed = None
    if cap:
        n = formulas.modules_needed(heat, cap)
        if cdu_flow and flow:
            n = max(n, math.ceil(flow / cdu_flow - 1e-9))
        needed = formulas.with_redundancy(n, scheme)
        if isinstance(cdus_field, UnknownValue):
            reqs.append(Requirement(cdus_field.key, needed + failed, replicas,
                                    si(cdu.field("price")) or 0.0,
                                    f"loop `{inst.path}` needs {_cdus(needed)} for "
                                    f"{readable.power(heat, 3)} ({scheme})",
                                    inst.span_of("cdu")))
        if declared_n is not None:
            _cdu_checks(inst, heat, flow, cap, cdu_flow, declared_n, needed, scheme, diags,
                        failed)
    if flow is not None:
        limit = si(inst.field("max_flow"))
        if limit is not None and flow > limit * (1 + 1e-9):
            diags.append(error("E643", f"loop `{inst.path}` needs "
                                       f"{format_number(round(flow * 60000, 1))} L/min, above its "
                                       f"limit of {format_number(round(limit * 60000, 1))} L/min",
                               inst.span_of("max_flow")))
        if cdu_flow and declared_n and flow > cdu_flow * declared_n * (1 + 1e-9):
            diags.append(error("E643", f"loop `{inst.path}` needs "
                                       f"{format_number(round(flow * 60000, 1))} L/min, above what "
                                       f"its {_cdus(declared_n)} "
                                       f"{'passes' if declared_n == 1 else 'pass'} "
                                       f"({format_number(round(cdu_flow * declared_n * 60000, 1))}"
                                       f" L/min)", inst.span_of("cdus")))
    names: Dict = {}

    def named(part: Instance) -> str:       # in this loop's replica, not the first one
        return path_within(owner, part, names) if owner is not None else part.path

    _gpu_limits(inst, served, supply_c, cache, diags, named)
    pump, cdu_w = _pumping(inst, cdu, flow, heat, declared_n, needed, scheme, diags)
    stated = cdu is not None and si(cdu.field("power")) is not None
    parts = []
    if density and cp:
        for kinds in (("row", "block"), ("rack",)):
            merged: Dict[int, List] = {}          # one line per distinct part
            for c, part in served:
                for n, sub in group_of(part, kinds, cache).flat():
                    slot = merged.setdefault(id(sub), [0, sub])
                    slot[0] += c * n
            for n, sub in merged.values():
                q = liquid_heat(sub, cache)
                parts.append((sub.kind, named(sub), n, q,
                              formulas.liquid_flow(q, density, cp, rise)))
    return LoopResult(inst.path, replicas, name if name is not None else "?", heat,
                      supply_c, rise, density, cp, flow, needed, declared_n, cap, pump,
                      tuple(parts), cdu_w, network_w,
                      (fluid.template or fluid.path) if fluid is not None else "?", average,
                      (cdu.template or cdu.path) if cdu is not None else "", scheme,
                      average_at, stated)


def _cdu_checks(inst, heat, flow, cap, cdu_flow, declared_n, needed, scheme, diags,
                failed: int = 0) -> None:
    """E640 when the running CDUs (`declared_n`: those declared less the `failed` of a
    scenario) do not hold the heat; E641 when they would not after the failure the scheme
    covers (heat or flow); not under a scenario that failed CDUs (the scenario's failure is
    the one asked about: no spare is asked for besides, as a degraded feeder is not asked to
    survive one more; E643 checks the flow of the CDUs left)."""
    if declared_n * cap < heat * (1 - 1e-9):
        carried, held = readable.powers_apart(heat, declared_n * cap)
        running = _cdus(declared_n) + (f" left of {declared_n + failed} (the scenario "
                                       f"fails {failed})" if failed else "")
        diags.append(error("E640", f"loop `{inst.path}` carries {carried} of liquid heat but "
                                   f"its {running} {'holds' if declared_n == 1 else 'hold'} "
                                   f"{held}",
                           inst.span_of("cdus"), _needed(needed, scheme)))
        return
    if failed:
        # under a scenario that failed CDUs, the scenario's failure is the one asked about, as
        # for a feeder (analyses/feeders.py: E621 is not checked once a scenario degraded it):
        # the CDUs left must hold the heat (E640 above) and pass the flow (E643), not keep a
        # spare besides
        return
    # what is left after the failure the scheme covers: one CDU (N+1), or one side of 2N, half
    # of them (the smaller half of an odd count), as the sizing (2 x N) and the pumps count it
    left = formulas.units_left(declared_n, scheme)
    if scheme != "n" and (left * cap < heat * (1 - 1e-9) or (
            cdu_flow and flow and left * cdu_flow < flow * (1 - 1e-9))):
        held, carried = readable.powers_apart(left * cap, heat)
        have = f"{held} for {carried}"
        if left * cap >= heat * (1 - 1e-9):
            have = (f"flow for {format_number(round(left * cdu_flow * 6e4))} "
                    f"L/min of the {format_number(round(flow * 6e4))} L/min needed")
        diags.append(error("E641", f"with {failure(scheme, declared_n)}, loop `{inst.path}` has "
                                   f"{have}", inst.span_of("cdus"),
                           _needed(needed, scheme)))


def _cdus(n: int) -> str:
    """"1 CDU", "2 CDUs"."""
    return f"{n} CDU" if n == 1 else f"{n} CDUs"


def _needed(n: int, scheme: str) -> str:
    return f"{_cdus(n)} {'is' if n == 1 else 'are'} needed ({scheme})"


def failure(scheme: str, cdus: int) -> str:
    """The failure a loop's CDU redundancy covers, as E641 and the margins name it."""
    if scheme == "two_n":
        return f"one side of its 2N CDUs failed ({formulas.units_left(cdus, scheme)} of " \
               f"{cdus} left)"
    return "one CDU failed"


def _gpu_limits(inst, served, supply_c, cache, diags, named=lambda i: i.path) -> None:
    """E642 when the supply is hotter than a GPU's cold plate accepts; W649 for GPUs that
    declare no limit (the supply is then not checked against them)."""
    unchecked: Dict[str, Tuple[Instance, int]] = {}
    reported = set()
    for c, part in served:
        hosts = group_of(part, ("host",), cache).flat() or [(1, part)]
        for nh, host in hosts:
            if liquid_heat(host, cache) <= 0:          # air-cooled: no cold plate on the loop
                continue
            for n, gpu in group_of(host, ("gpu",), cache).flat():
                limit_t = gpu.field("max_supply")
                if not isinstance(limit_t, Quantity):
                    name = gpu.template or gpu.path
                    seen = unchecked.get(name)
                    unchecked[name] = (gpu, (seen[1] if seen else 0) + c * nh * n)
                elif supply_c > limit_t.value_in("degC") + 1e-9 and id(gpu) not in reported:
                    reported.add(id(gpu))
                    diags.append(error("E642", f"loop `{inst.path}` supplies "
                                               f"{format_number(supply_c)} degC but "
                                               f"`{named(gpu)}` "
                                               f"accepts at most {limit_t}",
                                       inst.span_of("supply")))
    for name, (gpu, n) in sorted(unchecked.items()):
        diags.append(warning("W649", f"GPU `{name}` declares no coolant limit (`max_supply`): "
                                     f"the {format_number(supply_c)} degC supply of loop "
                                     f"`{inst.path}` is not checked against its "
                                     f"{readable.grouped(n)} cold plates per loop",
                             inst.span_of("supply"),
                             f"declare `max_supply` on `{name}` from the cold plate's data sheet "
                             f"(or pass it, e.g. `{name}(max_supply = 45 degC)`)"))


def _pumping(inst, cdu, flow, heat, declared_n, needed, scheme, diags) -> Tuple[float, float]:
    """(pump power from the loop's flow, head and efficiency; the running CDUs' declared draw).
    The running CDUs are the installed ones less the spare of N+1 (half of 2N)."""
    head = si(inst.field("pump_head"))
    eff = si(inst.field("pump_efficiency"))
    pump = formulas.pump_power(flow, head, eff) if flow and head and eff else 0.0
    per_cdu = si(cdu.field("power")) if cdu is not None else None
    installed = declared_n if declared_n is not None else needed
    cdu_w = 0.0
    if per_cdu and installed:
        running = {"n": installed, "n_plus_1": max(installed - 1, 1),
                   "two_n": max(installed // 2, 1)}.get(scheme, installed)
        cdu_w = running * per_cdu
    # a CDU's `power` is its own draw besides the loop's pumps (cdu_w, added to them: stdlib/
    # cooling.astral), so it does not stand in for them: pumps without a head and an efficiency
    # are unknown whatever the CDU declares (a RowCDU's 1 % had silenced this, pumps at 0 W)
    if heat > 0 and not (head and eff):
        missing = " and ".join(f"`{n}`" for n, v in (("pump_head", head),
                                                     ("pump_efficiency", eff)) if not v)
        own = f" (its CDU's `power`, {format_number(per_cdu / 1000)} kW each, is the CDU's " \
              f"own draw besides them)" if per_cdu else ""
        diags.append(warning("W648", f"loop `{inst.path}` declares no {missing}: its pumps count "
                                     f"as 0 W in the facility power and the PUE{own}", inst.span,
                             "declare `pump_head` and `pump_efficiency` on the loop (from the "
                             "CDU's pump curve: the head at the loop's flow)"))
    return pump, cdu_w
