"""What a facility-water circuit's heat rejection leaves unknown, said (W656): no chiller for the
hours without free cooling, no fans for the free-cooling hours, free-cooling hours that cannot be
found, and chillers run with no lift at an unbounded COP; and a chiller COP above the Carnot
limit (W646), which no machine reaches. Each counts as 0 W (or the chillers
carry all the heat) in the facility power and the PUE (analyses/facility.py), never silently."""
from __future__ import annotations

from astral_dsl.analyses import heat_rejection
from astral_dsl.analyses.field_reading import si, warning
from astral_dsl.analyses.formulas import HOURS_PER_YEAR
from astral_dsl.model.design import Instance
from astral_dsl.units import format_number, readable


def missing_chiller(circuit: Instance, year: heat_rejection.Year, p: heat_rejection.Plan,
                    diags) -> None:
    # the partial hours are both: the heat rejection carries part of the heat (free cooling)
    # and the chillers the rest; the two warnings say so, or their hours add up past the year
    split = f" ({readable.grouped(year.partial_h)} h sharing the heat with the heat " \
            f"rejection, {readable.grouped(year.mechanical_h)} h carrying all of it)" \
        if year.partial_h else ""
    if p.chiller is None and year.free_h < HOURS_PER_YEAR - 1e-6:
        diags.append(warning("W656", f"facility water `{circuit.path}` declares no `chiller` (or "
                                     f"`chiller_cop`): its chillers count as 0 W for the "
                                     f"{readable.grouped(HOURS_PER_YEAR - year.free_h)} h a year "
                                     f"without {'full ' if split else ''}free cooling{split}",
                             circuit.span,
                             "declare `chiller = ...` (a chiller model) or `chiller_cop`, or "
                             "make the water warm enough that no chiller runs"))
    if p.fan_ratio == 0 and si(circuit.field("rejection_fan_ratio")) is None and \
            year.free_h + year.partial_h == 0 and p.chiller is not None:
        # chillers all year: they reject their heat through towers or dry coolers whose fans
        # a water-cooled chiller's rated COP leaves out (ASHRAE 90.1 rates water-cooled
        # chillers without them, Table 6.8.1-3, and the heat-rejection fans apart, Table
        # 6.8.1-7; the stdlib's chiller is such a one): their 0 W said as the other hours' is
        diags.append(warning("W656", f"facility water `{circuit.path}` declares no "
                                     f"`rejection_fan_ratio`: the fans of the cooling towers (or "
                                     f"dry coolers) that reject its chillers' heat count as 0 W in "
                                     f"the facility power and the PUE", circuit.span,
                             "declare `rejection_fan_ratio` (fan power per watt of heat "
                             "rejected, from the towers' data sheet), or `rejection_fan_ratio = "
                             "0 %` where the chillers' COP includes their condenser fans "
                             "(air-cooled chillers)"))
    if p.fan_ratio == 0 and si(circuit.field("rejection_fan_ratio")) is None and \
            year.free_h + year.partial_h > 0:
        said = "declares" if si(circuit.field("free_cooling")) is not None else "has"
        part = f" ({readable.grouped(year.free_h)} h with the chillers off, " \
               f"{readable.grouped(year.partial_h)} h sharing the heat with them)" \
            if year.partial_h else ""
        diags.append(warning("W656", f"facility water `{circuit.path}` {said} "
                                     f"{readable.grouped(year.free_h + year.partial_h)} h of free "
                                     f"cooling{part} but no `rejection_fan_ratio`: the fans of "
                                     f"its dry coolers (or cooling towers) count as 0 W in the "
                                     f"facility power and the PUE", circuit.span_of("free_cooling"),
                             "declare `rejection_fan_ratio` (fan power per watt of heat "
                             "rejected, from the dry coolers' data sheet)"))


def unbounded_cop(circuit: Instance, p: heat_rejection.Plan, outdoor, resolve, diags) -> None:
    """W656: chillers that run in hours whose condenser water (the outdoor air plus the
    approach) is no warmer than the chilled water (no economiser) have no lift there: a chiller
    model without `max_cop` has an unbounded COP in them, and they count as 0 W."""
    ch = p.chiller
    if outdoor is None or p.economiser != "none" or ch is None or ch.max_cop or \
            ch.rated_supply_c is None:
        return
    hours = sum(1 for t in outdoor if t + p.approach_k <= p.supply_c) * HOURS_PER_YEAR / \
        len(outdoor)
    if hours:
        model = resolve(circuit.field("chiller"))
        diags.append(warning("W656", f"facility water `{circuit.path}` runs its chillers without "
                                     f"an economiser, {readable.grouped(round(hours))} h a year "
                                     f"with no lift (condenser water at or below its "
                                     f"{format_number(p.supply_c)} degC supply): chiller "
                                     f"`{model.template or model.path}` declares no `max_cop`, so "
                                     f"its COP is unbounded there and those hours count as 0 W",
                             model.span_of("cop") or circuit.span_of("chiller"),
                             "declare `max_cop` on the chiller (the COP its data sheet gives at "
                             "the smallest lift), or an economiser"))


def unknown_free_hours(circuit: Instance, climate, diags, unread: bool = False) -> None:
    """W656: a circuit whose free-cooling hours are unknown (no `free_cooling` and no site
    climate, or a climate but no `supply` to hold the outdoor air to) has none: its chillers
    carry all its heat all year. `unread`: the site names a climate file that could not be
    read (E652, E653), which the warning then says rather than that it names none."""
    site = "the site's `climate` file could not be read" if unread else "the site no `climate`"
    why = ("declares no `supply`, so its free-cooling hours over the site's climate cannot be "
           "found" if climate is not None else f"declares no `free_cooling` hours (and {site})")
    diags.append(warning("W656", f"facility water `{circuit.path}` {why}: its chillers are taken "
                                 f"to carry all its heat, "
                                 f"{readable.grouped(HOURS_PER_YEAR)} h a year", circuit.span,
                         "declare `supply` (and `rise`)" if climate is not None else
                         "declare `free_cooling = ... h` (the hours its heat rejection alone "
                         "carries the heat) or the site's `climate`"))


def _carnot(supply_c: float, condenser_c: float) -> float:
    """The Carnot COP of cooling between water at `supply_c` and condenser water at
    `condenser_c` (degC, condenser warmer): T_cold / (T_hot - T_cold), kelvin. A chiller's
    refrigerant evaporates below the one and condenses above the other, so no chiller between
    them reaches it (second law; ASHRAE Handbook, Fundamentals, ch. 2, "Thermodynamics and
    Refrigeration Cycles": the ideal cycle's COP)."""
    return (supply_c + 273.15) / (condenser_c - supply_c)


def beyond_carnot(circuit: Instance, p: heat_rejection.Plan, outdoor, resolve, diags) -> None:
    """W646: chillers whose COP exceeds the Carnot limit, so their draw is understated. A model
    rated at a supply and a condenser temperature keeps its rated share of Carnot at every lift
    (formulas.chiller_cop): over it at its rating point, over it everywhere. A constant COP is
    over it in the hours whose lift (the outdoor air plus the approach, over the supply) is too
    large: with a site climate, the hours its chillers run."""
    ch = p.chiller
    if ch is None:
        return
    model = resolve(circuit.field("chiller"))
    where = (model.span_of("cop") if model is not None else None) or \
        circuit.span_of("chiller_cop") or circuit.span_of("chiller") or circuit.span
    name = f"chiller `{model.template or model.path}`" if model is not None else \
        f"the chillers of facility water `{circuit.path}`"
    hint = ("declare the COP the chillers' data sheet gives at their supply and condenser "
            "temperatures (a water-cooled centrifugal chiller: about 6-7 at 6.7 and 29.4 degC)")
    if ch.rated_supply_c is not None and ch.rated_condenser_c is not None:
        if ch.rated_condenser_c > ch.rated_supply_c and \
                ch.cop > _carnot(ch.rated_supply_c, ch.rated_condenser_c) * (1 + 1e-9):
            limit = _carnot(ch.rated_supply_c, ch.rated_condenser_c)
            diags.append(warning("W646", f"{name} declares a COP of {format_number(ch.cop)} at "
                                         f"{format_number(ch.rated_supply_c)} degC chilled and "
                                         f"{format_number(ch.rated_condenser_c)} degC condenser "
                                         f"water, above the Carnot limit of "
                                         f"{format_number(round(limit, 2))} there: no chiller "
                                         f"does, and its draw is understated at every lift",
                                 where, hint))
        return
    if outdoor is None or p.supply_c is None:
        return
    hot = max(outdoor) + p.approach_k
    if hot <= p.supply_c or ch.cop <= _carnot(p.supply_c, hot) * (1 + 1e-9):
        return
    over = sum(1 for t in outdoor if t + p.approach_k > p.supply_c and
               ch.cop > _carnot(p.supply_c, t + p.approach_k) * (1 + 1e-9))
    hours = over * HOURS_PER_YEAR / len(outdoor)
    diags.append(warning("W646", f"{name}: a constant COP of {format_number(ch.cop)} is above the "
                                 f"Carnot limit between its {format_number(p.supply_c)} degC "
                                 f"water and the condenser water (the outdoor air plus the "
                                 f"{format_number(round(p.approach_k, 2))} K approach) "
                                 f"{readable.grouped(round(hours))} h a year, down to "
                                 f"{format_number(round(_carnot(p.supply_c, hot), 2))} at the "
                                 f"hottest hour ({format_number(round(hot, 2))} degC): no chiller "
                                 f"does, and their draw is understated", where, hint))
