"""What the facility draws, component by component, as an annual average (the PUE of ISO/IEC
30134-2 is a ratio of yearly energies, the IT energy measured at the IT equipment's input) and
at the peak (what the utility point supplies at full load in the hour of the year it draws the
most: with cooling towers, the most humid rather than the hottest):

- IT: the hosts at their utilization, the switches at full power (analyses/utilization.py);
- transformer losses: the stages at the utility point (analyses/chain.py), hour by hour;
- conversion losses: each feeder's load over its efficiency, and its rectifier modules at no
  load (analyses/power.py), the mechanical feeders' included;
- CDUs and secondary pumps: the running CDUs' declared draw and the loops' pumps at their design
  flow, all year (constant-flow loops);
- facility-water pumps: each circuit's pumps at its design flow, all year (analyses/circuits.py);
- fans: each air unit's `fan_power_ratio` times the heat it removes (average or peak);
- chillers and heat rejection fans: each circuit hour by hour over its site's climate
  (analyses/heat_rejection.py), or over its declared free-cooling hours;
- lighting and auxiliaries: the site's `auxiliary`, all year.

Heat into each circuit: its loops' heat with their pumps and CDUs, its air units' heat with
their fans, and a share of the conversion losses and the auxiliaries (the electrical rooms and
the building are air-cooled: the share of the circuits' air heat; with no air unit, of their
heat; with several sites, each site's own among its own circuits, analyses/site_loads.py), and
the circuit's own pumps' draw, which ends up as heat in its water (analyses/circuits.py size:
its chillers and heat rejection reject it). The transformers stand outdoors. Data the design
leaves out counts as 0 W with a warning, never silently."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses import chain, circuits, heat_rejection, rejection_checks, site_loads
from astral_dsl.analyses.circuits import CircuitResult, Draw
from astral_dsl.analyses.feeders import FeederResult
from astral_dsl.analyses.field_reading import si, symbol_name, warning
from astral_dsl.analyses.power import feeder_loss
from astral_dsl.analyses.sites import sites as site_list
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Instance
from astral_dsl.units import Quantity, format_number, readable

COMPONENTS = (("it_w", "IT"), ("transformers_w", "transformer losses"),
              ("losses_w", "conversion losses"), ("cdus_w", "CDUs"),
              ("pumps_w", "secondary pumps"), ("facility_pumps_w", "facility-water pumps"),
              ("fans_w", "fans (air units)"), ("chillers_w", "chillers"),
              ("rejection_w", "heat rejection fans"), ("auxiliary_w", "lighting and auxiliaries"))

# default approaches of the heat rejection when a circuit declares none (W641): a cooling
# tower's rating point, 85 degF water at 75 degF wet bulb, 10 degF (ASHRAE 90.1-2019, Table
# 6.8.1-7: open-circuit cooling towers); [assumed] 8 K for a dry cooler (selected at 5-10 K)
REJECTION_APPROACH_K = {"cooling_tower": 50.0 / 9.0, "dry_cooler": 8.0}


@records.frozen(slots=False)
class Demand:
    """The facility's draw by component (W), on one basis (average or peak)."""
    it_w: float
    losses_w: float = 0.0
    cdus_w: float = 0.0
    pumps_w: float = 0.0
    fans_w: float = 0.0
    chillers_w: float = 0.0
    rejection_w: float = 0.0
    transformers_w: float = 0.0
    facility_pumps_w: float = 0.0
    auxiliary_w: float = 0.0

    @property
    def total_w(self) -> float:
        return sum(getattr(self, name) for name, _ in COMPONENTS)


@records.frozen(slots=False)
class CircuitYear:
    """A facility-water circuit: its heat, flow and pumps, and its heat rejection over the year."""
    circuit: CircuitResult
    water_class: Optional[str]
    rejection: str
    approach_k: Optional[float]   # None without a climate: no outdoor air to be above
    economiser: str
    chiller: str                  # how its COP is known, for the report
    free_h: float
    partial_h: float
    mechanical_h: float
    chillers_w: float             # average
    fans_w: float                 # the heat rejection's, average
    chillers_peak_w: float = 0.0  # at the facility's peak hour
    fans_peak_w: float = 0.0
    fan_ratio: Optional[float] = None   # of the heat rejected; None: not declared (0 W, W656)
    cop: Optional[float] = None   # declared (fixed, or at the chiller's rating point)


@records.frozen(slots=False)
class FacilityResult:
    average: Demand
    peak: Demand
    circuits: Tuple[CircuitYear, ...] = ()
    transformers: Tuple[chain.TransformerResult, ...] = ()
    feeders: Tuple[FeederResult, ...] = ()        # `mechanical = true`
    climate: Optional[str] = None
    climate_place: str = ""
    climate_hours: int = 0
    peak_hour: Optional[str] = None               # the hour of the most draw (MM-DD HH:00)
    pressure_pa: Optional[float] = None
    pressure_from: str = ""
    default_transformer: bool = False             # losses at the sourced default (W630)


def draws(loops, air, by_path, split, diags) -> Tuple[Dict[int, List[Draw]], float]:
    """The loops' and air units' heat per circuit (by id of the facility instance), and the
    peak heat that reaches no circuit. `split(unit, replicas)` (analyses/circuits.py): where
    the unit's replicas sit, the circuit above them and the utilization in force there."""
    out: Dict[int, List[Draw]] = {}
    lost = 0.0
    for lp in loops:
        extra = lp.pump_w + lp.cdu_w
        lost += _assign(by_path.get(lp.path), lp, "loop", lambda avg, peak: (
            avg + extra, peak + extra, 0.0), split, out)
    for a in air:
        ratio = 1 + (a.fan_power_ratio or 0.0)
        lost += _assign(by_path.get(a.path), a, "air", lambda avg, peak: (
            avg * ratio, peak * ratio, peak * ratio), split, out)
    return out, lost


def _assign(inst, unit, kind: str, heat, split, out) -> float:
    """The unit's draws on its circuits (`heat(average, peak)` per replica -> (average, peak,
    air) per replica), each place's replicas at the average of the utilization in force there;
    what reaches no circuit (its peak) is returned."""
    places = split(inst, unit.replicas) if inst is not None else [(None, None, unit.replicas)]
    at = dict(unit.average_at)
    lost = 0.0
    merged: Dict[int, List] = {}
    for circuit, u, n in places:
        q = heat(at.get(u, unit.average_heat_w), unit.heat_w)
        if circuit is None:
            lost += n * q[1]
            continue
        slot = merged.setdefault(id(circuit), [0.0, 0.0, 0.0])
        for i in range(3):
            slot[i] += n * q[i]
    for key, q in merged.items():
        out.setdefault(key, []).append(Draw(unit.path, kind, *q))
    return lost


def plan(circuit: Instance, climate, resolve, diags, first_site: Optional[str] = None
         ) -> Tuple[heat_rejection.Plan, str, str]:
    """The circuit's heat rejection as declared, defaults with their warnings: (plan, what
    rejects, how the chillers' COP is known). `first_site`: the path of the first site, whose
    climate is `climate`, where the circuit is in another site (the facility is computed on the
    first site's climate: W645); None in the first site."""
    supply_q = circuit.field("supply")
    # a point in degC, as written (kelvin and back again are 1e-14 off: 20 degC is 19.99999...)
    supply = round(supply_q.value_in("degC"), 9) if isinstance(supply_q, Quantity) else None
    rise = si(circuit.field("rise"))
    rejection = symbol_name(circuit.field("rejection"))
    if rejection is None:
        rejection = "dry_cooler"
        if climate is not None:
            diags.append(warning("W656", f"facility water `{circuit.path}` declares no "
                                         f"`rejection`: dry coolers are assumed (the outdoor dry "
                                         f"bulb decides its free-cooling hours)", circuit.span,
                                 "declare `rejection = dry_cooler` or `cooling_tower`"))
    approach = si(circuit.field("rejection_approach"))
    if approach is None:
        approach = REJECTION_APPROACH_K[rejection]
        if climate is not None:
            diags.append(warning("W641", f"facility water `{circuit.path}` declares no "
                                         f"`rejection_approach`: its "
                                         f"{rejection.replace('_', ' ')}s are taken to leave the "
                                         f"water {format_number(round(approach, 2))} K above the "
                                         f"outdoor "
                                         f"{'wet' if rejection == 'cooling_tower' else 'dry'}"
                                         f" bulb", circuit.span,
                                 "declare `rejection_approach = ...` from their data sheet"))
    economiser = symbol_name(circuit.field("economiser")) or "integrated"
    free = si(circuit.field("free_cooling"))
    if climate is not None and free is not None:
        whose = "the site's" if first_site is None else f"the first site `{first_site}`'s"
        diags.append(Diagnostic("E654", Severity.ERROR,
                                f"facility water `{circuit.path}` declares "
                                f"{readable.grouped(free / 3600)} h of free cooling, but "
                                f"{whose} climate `{climate.name}` gives its hours" +
                                ("" if first_site is None else
                                 " (the facility of every site is computed on it)"),
                                circuit.span_of("free_cooling"),
                                "remove `free_cooling` (or " + ("the site's `climate`)"
                                 if first_site is None else f"the `climate` of `{first_site}`, "
                                 f"or check this site in a design of its own)")))
    chiller, how = _chiller(circuit, resolve)
    ratio = si(circuit.field("rejection_fan_ratio"))
    return (heat_rejection.Plan(supply if supply is not None else 0.0,
                                supply + rise if supply is not None and rise else None,
                                rejection, approach if climate is not None else 0.0, economiser,
                                chiller, ratio or 0.0,
                                free / 3600 if free is not None else None),
            rejection, how)


def _chiller(circuit: Instance, resolve) -> Tuple[Optional[heat_rejection.Chiller], str]:
    model = resolve(circuit.field("chiller"))
    fixed = si(circuit.field("chiller_cop"))
    if isinstance(model, Instance):
        cop = si(model.field("cop"))
        s, c = model.field("rated_supply"), model.field("rated_condenser")
        if cop and isinstance(s, Quantity) and isinstance(c, Quantity):
            top = si(model.field("max_cop"))
            return (heat_rejection.Chiller(cop, s.value_in("degC"), c.value_in("degC"), top),
                    f"`{model.template or model.path}`: COP {format_number(cop)} at "
                    f"{format_number(s.value_in('degC'))}/{format_number(c.value_in('degC'))} "
                    f"degC, with the lift" + (f", at most {format_number(top)}" if top else ""))
        if cop:
            return heat_rejection.Chiller(cop), f"`{model.template or model.path}`: COP " \
                                                f"{format_number(cop)}"
    if fixed:
        return heat_rejection.Chiller(fixed), f"COP {format_number(fixed)}"
    return None, "no chiller"


def ambient(climate, rejection: str) -> Tuple[Optional[Sequence[float]], str]:
    """The hours' outdoor temperature the heat rejection follows: dry bulb for dry coolers, wet
    bulb (analyses/climate.py, from CoolProp) for cooling towers; and what names them (the
    file's digest and the column, and for wet bulbs the table they come from) for the per-user
    cache."""
    if climate is None:
        return None, ""
    column = "wet_bulb" if rejection == "cooling_tower" else "dry_bulb"
    if not climate.digest:
        return getattr(climate, column), ""
    key = f"{climate.digest} {column}"
    if column == "wet_bulb":     # a new wet-bulb table changes the hours (analyses/wetbulb_table.py)
        from astral_dsl.analyses import wetbulb_table

        key += f" {wetbulb_table.source()}"
    return getattr(climate, column), key


def allocate(per: Dict[int, List[Draw]], extra: Tuple[float, float]) -> Dict[int, Tuple]:
    """The conversion losses and auxiliaries (average, peak) shared by the circuits in
    proportion to their air heat (else their heat)."""
    air = {k: sum(d.air_w for d in v) for k, v in per.items()}
    weights = air if sum(air.values()) > 0 else \
        {k: sum(d.peak_w for d in v) for k, v in per.items()}
    total = sum(weights.values())
    return {k: ((extra[0] * w / total, extra[1] * w / total) if total else (0.0, 0.0))
            for k, w in weights.items()}


def model(circuit_list: List[Tuple[Instance, int]], per: Dict[int, List[Draw]], power,
          loops, air, climate, aux_w: float, mult, resolve, served, cache, failed, reqs,
          diags, cooled: bool, pressure: Tuple[Optional[float], str],
          climate_site: Optional[Instance] = None) -> FacilityResult:
    """The facility's draw (average and peak) from the cooling analysis' loops and air units,
    the circuits they draw on (`per`), the power analysis and the climate of the first site
    (`climate_site`, the design's first root: cooling.cooling)."""
    extra = (power.conversion_loss_w + aux_w, power.conversion_loss_peak_w + aux_w)
    every = site_list(mult, cache)
    by_path = {i.path: i for _, i in mult.values()}
    if len(every) > 1:          # each site's losses and auxiliaries into its own circuits
        shares = site_loads.allocate_by_site(
            every, per, [i for i, _ in circuit_list],
            site_loads.extra_by_site(every, by_path, power.feeders, feeder_loss, extra), allocate)
    else:
        shares = allocate(per, extra)
    years: List[Tuple[CircuitYear, heat_rejection.Profile]] = []
    for inst, replicas in circuit_list:
        result = circuits.size(inst, replicas, per.get(id(inst), []),
                               shares.get(id(inst), (0.0, 0.0)), resolve, diags)
        other = climate_site is not None and len(every) > 1 and any(
            site.holds(inst) and site.inst is not climate_site for site in every)
        p, rejection, how = plan(inst, climate, resolve, diags,
                                 climate_site.path if other else None)
        outdoor, hours = ambient(climate, rejection) \
            if isinstance(inst.field("supply"), Quantity) else (None, "")
        prof = heat_rejection.profile(p, outdoor, hours)
        y = heat_rejection.year(p, outdoor, result.average_w)
        rejection_checks.missing_chiller(inst, y, p, diags)
        rejection_checks.unbounded_cop(inst, p, outdoor, resolve, diags)
        rejection_checks.beyond_carnot(inst, p, outdoor, resolve, diags)
        if outdoor is None and p.free_cooling_h is None and p.chiller is not None and \
                p.economiser != "none" and result.peak_w > 0:
            rejection_checks.unknown_free_hours(
                inst, climate, diags, climate is None and climate_site is not None
                and isinstance(climate_site.field("climate"), str))
        years.append((CircuitYear(result, symbol_name(inst.field("water_class")), rejection,
                                  p.approach_k if outdoor is not None else None,
                                  p.economiser if p.return_c is not None or
                                  p.economiser == "none" else "switchover", how, y.free_h,
                                  y.partial_h, y.mechanical_h, y.chillers_w, y.fans_w,
                                  fan_ratio=si(inst.field("rejection_fan_ratio")),
                                  cop=p.chiller.cop if p.chiller is not None else None),
                      prof))
    cdus = sum(lp.replicas * lp.cdu_w for lp in loops)
    pumps = sum(lp.replicas * lp.pump_w for lp in loops)
    fpumps = sum(cy.circuit.pump_w for cy, _ in years)
    fans = (sum(a.replicas * a.average_heat_w * (a.fan_power_ratio or 0.0) for a in air),
            sum(a.replicas * a.heat_w * (a.fan_power_ratio or 0.0) for a in air))
    base = (cdus + pumps + fpumps + fans[0] + aux_w, cdus + pumps + fpumps + fans[1] + aux_w)
    # hour by hour, the circuits' chillers and fans: heat x k (1 + ratio) + ratio x heat
    avg_hours = site_loads.hourly(base[0], [(cy.circuit.average_w, pr.average, pr.ratio)
                                            for cy, pr in years])
    peak_hours = site_loads.hourly(base[1], [(cy.circuit.peak_w, pr.peak, pr.ratio)
                                             for cy, pr in years])
    hot = peak_hours.index(max(peak_hours))        # the first of equals
    n = len(avg_hours)
    mech_avg = sum(avg_hours) / n
    any_feeders = bool(power.feeders)
    # each site's own consumers, hour by hour (average, peak): what its feeders and its
    # transformers carry
    hours = site_loads.by_site(every, by_path, loops, air, years, base, (avg_hours, peak_hours))
    mech = chain.mechanical(mult, resolve, served, cache, failed, diags, reqs,
                            (peak_hours[hot], mech_avg), any_feeders,
                            [(peak_hours[hot], mech_avg) if a is avg_hours else
                             (max(p), sum(a) / len(a)) for a, p in hours])
    mech_loss = (sum(f.replicas * f.running * feeder_loss(f, f.average_w) for f in mech),
                 sum(f.replicas * f.running * feeder_loss(f, f.normal_w) for f in mech))
    stages = chain.stages(mult, diags)
    # the sites whose load passes through no declared transformer: all, or the bare ones
    bare = (chain.bare_sites(mult, cache, diags) if stages else list(every)) if any_feeders \
        else []
    default = sum(site.share for site in bare) if stages else 1.0 if bare else 0.0
    if default and not stages:
        root = next(iter(mult.values()))[1]
        diags.append(warning("W630", "no `transformer` is declared: the losses between the "
                                     "utility and the feeders are taken as 0.47 % of the load "
                                     "(99.53 %, the US DOE minimum for a 2,500 kVA "
                                     "liquid-immersed distribution transformer at 50 % load)",
                             root.span, "declare the site's `transformer`s (their count, rating "
                                        "and losses), e.g. `stdlib.power.Transformer`"))
    it_in = (power.it_average_w + power.conversion_loss_w + mech_loss[0],
             power.it_peak_w + power.conversion_loss_peak_w + mech_loss[1])
    # the losses' average over the hours: no-load plus load losses at the mean square load
    mean = it_in[0] + mech_avg
    site_peak = it_in[1] + peak_hours[hot]
    bare_load = (mean * default, site_peak * default)
    if len(every) > 1:          # each stage the load of its own site(s)
        it_sites = site_loads.it_by_site(
            every, by_path, {id(by_path.get(p)): (a, k) for p, a, k in power.sites},
            served.fabrics, list(power.feeders) + mech, feeder_loss, it_in)
        stages = chain.own_loads(stages, every, hours, it_sites, site_peak)
        if stages:              # the bare sites' own loads: their IT input and consumers
            bare_load = chain.bare_load(every, bare, it_sites, hours, hot)
    else:
        a = it_in[0]
        square = site_loads.mean_square(a, avg_hours)
        stages = [attrs.evolve(s, mean_square_w2=square * s.share ** 2) for s in stages]
    per_stage: Dict[int, float] = {id(s): s.mean_losses() for s in stages}
    transformer_avg = sum(per_stage.values()) + chain.default_losses(bare_load[0])
    transformers = chain.check(stages, site_peak, per_stage, diags)
    for root in _sites_without_aux(mult) if cooled else ():
        diags.append(warning("W644", f"site `{root.path}` declares no `auxiliary` power: "
                                     f"lighting, offices, security and building services count "
                                     f"as 0 W in the facility power and the PUE", root.span,
                             "declare `auxiliary = ...` on the site (from the building's "
                             "electrical design)"))
    chill_avg = sum(cy.chillers_w for cy, _ in years)
    reject_avg = sum(cy.fans_w for cy, _ in years)
    done = tuple(attrs.evolve(cy, chillers_peak_w=cy.circuit.peak_w * _at(pr.peak, hot),
                              fans_peak_w=pr.ratio * cy.circuit.peak_w
                              * (1 + _at(pr.peak, hot))) for cy, pr in years)
    average = Demand(power.it_average_w, power.conversion_loss_w + mech_loss[0], cdus, pumps,
                     fans[0], chill_avg, reject_avg, transformer_avg, fpumps, aux_w)
    peak = Demand(power.it_peak_w, power.conversion_loss_peak_w + mech_loss[1], cdus, pumps,
                  fans[1], sum(cy.chillers_peak_w for cy in done),
                  sum(cy.fans_peak_w for cy in done),
                  sum(s.losses(site_peak) for s in stages) + chain.default_losses(bare_load[1]),
                  fpumps, aux_w)
    # no hour is the peak where every hour draws alike (nothing counted follows the weather):
    # the first hour of the file would be named as if it were
    flat = max(peak_hours) - min(peak_hours) <= 1e-9 * max(abs(peak_hours[hot]), 1.0)
    stamp = climate.stamps[hot] if climate is not None and not flat else None
    return FacilityResult(average, peak, done, tuple(transformers), tuple(mech),
                          climate.name if climate is not None else None,
                          climate.place if climate is not None else "",
                          climate.hours if climate is not None else 0, stamp,
                          pressure[0], pressure[1], default > 0)


def _at(values: Sequence[float], i: int) -> float:
    return values[i] if i < len(values) else values[-1]


def _sites_without_aux(mult) -> List[Instance]:
    """Every site that declares no `auxiliary` (each site's own lighting and services), by
    path."""
    return sorted((i for _, i in mult.values() if i.kind == "site" and
                   i.field("auxiliary") is None), key=lambda i: i.path)
