"""Facility-water circuits: which loops and air units draw on each (a loop's or air unit's
`facility`, else the one circuit declared nearest above it; a top-level `facility` template
that units name is one circuit of the site), whether each reaches its supply
temperature through its heat exchanger's approach, the circuit's flow and its pumps.

A CDU hands the secondary loop's heat to the facility water through a liquid-to-liquid heat
exchanger, an air unit through its coil: the secondary (air) supply cannot be colder than the
facility water's supply plus the exchanger's approach (E651). The approach is declared on the
CDU or the air unit; without it a default is taken (W641):

- [assumed] 3 K for a CDU's plate heat exchanger (liquid to liquid; data sheets give 2-5 K);
- [assumed] 10 K for an air coil (chilled-water fan coils, CRAHs and in-row coolers are
  selected at 8-12 K between entering water and leaving air).

The circuit's design flow carries its peak heat at its `rise` (V = Q / (rho cp dT), the water at
the mean of supply and return, CoolProp) and its pumps draw V x head / efficiency all year (a
constant-flow circuit)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from astral_dsl import records
from astral_dsl.analyses import formulas
from astral_dsl.analyses.field_reading import si
from astral_dsl.analyses.utilization import own_utilization
from astral_dsl.analyses.walk import owned
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Instance
from astral_dsl.units import Quantity, format_number, readable

LIQUID_APPROACH_K = 3.0
AIR_APPROACH_K = 10.0


@records.frozen(slots=False)
class Draw:
    """What one loop or air unit hands its circuit (all its replicas), W."""
    path: str
    kind: str                 # loop | air
    average_w: float
    peak_w: float
    air_w: float = 0.0        # of peak_w: heat from air (where the rooms' losses go)


@records.frozen(slots=False)
class CircuitResult:
    path: str
    replicas: int
    supply_c: Optional[float]
    rise_k: Optional[float]
    draws: Tuple[Draw, ...]
    average_w: float = 0.0    # heat into the circuit (all replicas), annual average
    peak_w: float = 0.0       # and at the peak
    flow_m3s: Optional[float] = None     # design flow (all replicas)
    pump_w: float = 0.0       # its pumps (all replicas), all year
    fluid: str = "Water"


def _deg(v) -> Optional[float]:
    """A temperature point in degC as written (kelvin and back again are 1e-14 off)."""
    return round(v.value_in("degC"), 9) if isinstance(v, Quantity) else None


def _label(unit: Instance) -> str:
    return "air unit" if unit.kind == "air" else unit.kind


def declared_in(owner: Instance) -> List[Instance]:
    """The facility circuits declared in `owner`, directly or in its `cooling` system."""
    out = []
    for m in owner.members:
        v = m.value
        if isinstance(v, Instance) and v.kind == "facility":
            out.append(v)
        elif isinstance(v, Instance) and v.kind == "cooling":
            out.extend(declared_in(v))
    return out


class Circuits:
    """`of(unit)`: the facility circuit a loop or air unit draws on (or None)."""

    def __init__(self, mult, served, resolve, diags: List[Diagnostic]):
        self.served = served
        self.resolve = resolve
        self.diags = diags
        self.replicas: Dict[int, int] = {}
        self.all: List[Instance] = []
        self.parent: Dict[int, Instance] = {}
        for m, inst in mult.values():
            if inst.kind == "facility":
                self.replicas[id(inst)] = m
                self.all.append(inst)
            for _, child in owned(inst):
                self.parent.setdefault(id(child), inst)
        self._reported = set()
        self._declared: Dict[int, List[Instance]] = {}     # owner -> declared_in(owner)
        # where each instance's replicas sit: {(the circuit declared nearest above, the
        # utilization in force there): replicas}, parents before children (a row template in
        # two halls that declare their own circuits is in both)
        self.where: Dict[int, Dict[Tuple[Optional[int], Optional[float]], float]] = {}
        self._by_id: Dict[int, Instance] = {}
        for root in {id(r): r for _, r in mult.values() if id(r) not in self.parent}.values():
            self.where[id(root)] = {(None, None): 1.0}
        for _, inst in mult.values():
            here = self._declared_at(inst)
            own = own_utilization(inst)
            for (circuit, u), n in list(self.where.get(id(inst), {}).items()):
                key = (id(here[0]) if here else circuit, own if own is not None else u)
                for c, child in owned(inst):
                    slot = self.where.setdefault(id(child), {})
                    slot[key] = slot.get(key, 0.0) + n * c
            self._by_id.update((id(f), f) for f in here)

    def _declared_at(self, owner: Instance) -> List[Instance]:
        here = self._declared.get(id(owner))
        if here is None:           # asked once per owner: a site's units share its members
            here = self._declared[id(owner)] = declared_in(owner)
        return here

    def split(self, unit: Instance, replicas: int
              ) -> List[Tuple[Optional[Instance], Optional[float], float]]:
        """(circuit, utilization in force at the unit, replicas) for each place the unit's
        `replicas` sit: a unit of a template two circuits' owners hold draws on both."""
        first = self.of(unit)           # E655, and a circuit the unit names for all of it
        places = self.where.get(id(unit), {})
        if unit.field("facility") is not None or not places:
            merged: Dict[Optional[float], float] = {}
            for (_, u), n in places.items():
                merged[u] = merged.get(u, 0.0) + n
            return [(first, u, n) for u, n in sorted(merged.items(), key=_order)] or \
                [(first, None, float(replicas))]
        return [(self._by_id.get(c) if c is not None else None, u, n)
                for (c, u), n in sorted(places.items(), key=lambda kv: (
                    self._by_id[kv[0][0]].path if kv[0][0] is not None else "",
                    _order((kv[0][1], 0))))]

    def of(self, unit: Instance) -> Optional[Instance]:
        named = self.resolve(unit.field("facility"))
        if named is not None:
            return self._named(named)
        owner = self.parent.get(id(unit))
        while owner is not None:
            here = self._declared_at(owner)
            if len(here) == 1:
                return here[0]
            if len(here) > 1:
                if id(unit) not in self._reported:
                    self._reported.add(id(unit))
                    names = ", ".join(f"`{f.template}`" for f in here)
                    self.diags.append(Diagnostic(
                        "E655", Severity.ERROR,
                        f"{_label(unit)} `{unit.path}` names no `facility` and `{owner.path}` "
                        f"declares {len(here)} circuits ({names}): which one it draws on is "
                        f"not said", unit.span,
                        f"declare `facility = {here[0].template}` (or another) on the {unit.kind}"))
                return here[0]
            owner = self.parent.get(id(owner))
        return None


    def _named(self, named: Instance) -> Instance:
        """A circuit a unit names: a declared one, or a top-level `facility` template named by
        its units (`facility = Chilled`), which is then one circuit of the site."""
        if not any(f is named for f in self.all):
            self.all.append(named)
            self.replicas[id(named)] = 1
        return named


def _order(item) -> Tuple[int, float]:
    """A utilization key in order, none first."""
    u = item[0]
    return (0, 0.0) if u is None else (1, u)


@records.frozen
class Approach:
    """What E651 compares: a loop's or air unit's supply (degC) against its facility-water
    circuit's supply plus its heat exchanger's approach (K; `declared` False: the default)."""
    unit: str                 # the loop's or air unit's path
    kind: str                 # loop | air
    circuit: str
    supply_c: float
    water_c: float
    approach_k: float
    declared: bool

    @property
    def reachable_c(self) -> float:
        """The coldest supply the exchanger delivers."""
        return self.water_c + self.approach_k


def approach(unit: Instance, exchanger: Optional[Instance], circuit: Instance,
             diags: List[Diagnostic]) -> Optional[Approach]:
    """E651 when the unit's supply is colder than its circuit's plus the approach; W641 when
    the approach is a default. Returns what was compared (None: a supply not declared)."""
    supply, water = _deg(unit.field("supply")), _deg(circuit.field("supply"))
    if supply is None or water is None:
        return None
    holder = exchanger if unit.kind == "loop" else unit
    declared = si(holder.field("approach")) if holder is not None else None
    default = LIQUID_APPROACH_K if unit.kind == "loop" else AIR_APPROACH_K
    what = "CDU" if unit.kind == "loop" else "coil"
    if declared is None:
        where = f"CDU `{holder.path}`" if unit.kind == "loop" and holder is not None else \
            f"air unit `{unit.path}`" if unit.kind == "air" else f"loop `{unit.path}` (no `cdu`)"
        diags.append(Diagnostic(
            "W641", Severity.WARNING,
            f"{where} declares no `approach`: its {what} is taken to need "
            f"{format_number(default)} K between the facility water and the "
            f"{'secondary' if unit.kind == 'loop' else 'air'} supply",
            holder.span if holder is not None else unit.span,
            "declare `approach = ...` from the heat exchanger's data sheet"))
    gap = declared if declared is not None else default
    if supply < water + gap - 1e-9:
        need = water + gap
        diags.append(Diagnostic(
            "E651", Severity.ERROR,
            f"{_label(unit)} `{unit.path}` supplies {format_number(supply)} degC, but its "
            f"{what} on facility water `{circuit.path}` at {format_number(water)} degC with a "
            f"{format_number(gap)} K approach reaches {format_number(round(need, 6))} degC at "
            f"best", unit.span_of("supply", "approach"),
            f"supply at least {format_number(round(need, 6))} degC, or draw on colder facility "
            f"water (`facility = ...`: e.g. a chilled-water circuit)"))
    return Approach(unit.path, unit.kind, circuit.path, supply, water, gap, declared is not None)


def size(circuit: Instance, replicas: int, draws: List[Draw], extra: Tuple[float, float],
         resolve, diags: List[Diagnostic]) -> CircuitResult:
    """A circuit's heat (its draws plus `extra`, its share of the losses and auxiliaries,
    average and peak), design flow and pumps."""
    average = sum(d.average_w for d in draws) + extra[0]
    peak = sum(d.peak_w for d in draws) + extra[1]
    supply, rise = _deg(circuit.field("supply")), si(circuit.field("rise"))
    fluid = resolve(circuit.field("fluid"))
    name = fluid.field("coolprop") if fluid is not None else "Water"
    name = name if isinstance(name, str) else "Water"
    flow = pump = None
    head, eff = si(circuit.field("pump_head")), si(circuit.field("pump_efficiency"))
    if supply is not None and rise:
        from astral_dsl.analyses import fluids

        try:
            props = fluids.properties(name, supply + rise / 2)
            flow = formulas.liquid_flow(peak, props.density, props.cp, rise)
        except ValueError as exc:
            diags.append(Diagnostic("E646", Severity.ERROR,
                                    f"fluid properties of facility water `{circuit.path}` at "
                                    f"{readable.celsius(supply + rise / 2)}: {exc}",
                                    circuit.span_of("fluid") or circuit.span_of("supply"),
                                    fluids.unavailable_hint(exc),
                                    notes=fluids.unavailable_notes(exc)))
    missing: List[str] = []
    if flow is not None and head and eff:
        pump = formulas.pump_power(flow, head, eff)
    elif peak > 0:
        # what it does not declare (a 0 degC supply is declared); none when its fluid has no
        # properties at its temperatures, which E646 says
        missing = [n for n, v in (("supply", supply), ("rise", rise), ("pump_head", head),
                                  ("pump_efficiency", eff)) if v is None or (not v and
                                                                            n != "supply")]
    if missing:
        named = [f"`{m}`" for m in missing]
        said = " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
        diags.append(Diagnostic(
            "W648", Severity.WARNING,
            f"facility water `{circuit.path}` declares no {said}: its pumps, which move "
            f"{readable.power(peak)} of heat, count as 0 W in the facility power and the PUE",
            circuit.span, f"declare {said} (what it lacks of `supply`, `rise`, `pump_head` "
                          f"and `pump_efficiency`)"))
    # the pumps' work ends up as heat in the water they move (friction in the pipes and coils,
    # the pump's own hydraulic losses), which the heat rejection and the chillers reject with
    # the load: ASHRAE Handbook, HVAC Systems and Equipment (2020), ch. 44, "Centrifugal Pumps"
    # (pump heat is a load on the chilled-water system); EnergyPlus Engineering Reference, Pumps
    # (the shaft power goes to the fluid as heat). All of the draw is counted (the motor's losses,
    # a few % of it, heat the plant room: an upper bound); the design flow stays that of the load
    # (the pumps' heat adds Δp / (η ρ cp) to the rise: 0.08 K of 10 K at 250 kPa and 75 %)
    heat = pump or 0.0
    return CircuitResult(circuit.path, replicas, supply, rise, tuple(draws), average + heat,
                         peak + heat, flow, heat, name)
