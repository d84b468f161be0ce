"""The limits of the heat's way out, as their checks measure them: the most heat one rack sends to
air against what its air unit removes per rack (`max_rack_heat`, E644), and a loop's or air
unit's supply against the coldest its heat exchanger delivers from its facility-water circuit,
the circuit's supply plus the CDU's or coil's approach (E651; a default approach with W641).
One limit per unit declaration (per circuit it draws on for E651), numeric sides in the check's
units: the margins bracket them by evaluating the design again."""
from __future__ import annotations

from typing import List

from astral_dsl.explore.margins.limits import Limit, where_of
from astral_dsl.units import format_number, readable


def air_per_rack(eng, design) -> List[Limit]:
    """E644: a rack's heat to air (its power less its liquid share) within `max_rack_heat`,
    placed where E644 is (where the user's files set the limit: Instance.span_of)."""
    from astral_dsl.analyses.walk import Resolver

    resolve = Resolver(design)
    out: List[Limit] = []
    for a in eng.cooling.air:
        if a.rack_limit_w is None:
            continue
        inst = resolve.by_path.get(a.path)
        file, line, col = where_of(inst.span_of("max_rack_heat") if inst is not None else None)
        out.append(Limit(f"air_rack:{a.path}", "air_rack",
                         f"heat to air of a rack under air unit {a.path} (its "
                         f"`max_rack_heat`)", a.max_rack_heat_w, a.rack_limit_w, "<=", "kW",
                         file, line, col))
    return out


def approaches(eng, design) -> List[Limit]:
    """E651: the facility water's supply plus the exchanger's approach at or below the unit's
    supply (temperatures: the margin is in K)."""
    from astral_dsl.analyses.walk import Resolver

    resolve = Resolver(design)
    out: List[Limit] = []
    for ap in eng.cooling.approaches:
        inst = resolve.by_path.get(ap.unit)
        file, line, col = where_of(inst.span_of("supply", "approach") if inst is not None
                                   else None)
        exchanger = "CDU" if ap.kind == "loop" else "coil"
        how = "declared" if ap.declared else "the default, W641"
        out.append(Limit(f"approach:{ap.unit}:{ap.circuit}", "approach",
                         f"facility water {ap.circuit} plus the {exchanger}'s approach, "
                         f"within the supply of {'loop' if ap.kind == 'loop' else 'air unit'} "
                         f"{ap.unit}",
                         ap.reachable_c + 273.15, ap.supply_c + 273.15, "<=", "degC",
                         file, line, col, point=True,
                         note=f"the water at {readable.celsius(ap.water_c)} plus "
                              f"a {format_number(round(ap.approach_k, 6))} K approach "
                              f"({how}) is the coldest supply it delivers"))
    return out
