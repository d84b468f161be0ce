"""The power chain above the feeders: the transformers at the utility point, which carry
everything the site draws (the IT feeders' input and the facility's own consumers), and the
feeders with `mechanical = true` that supply those consumers (CDUs, pumps, fans, chillers, heat
rejection, lighting and auxiliaries).

Transformers: each `transformer` declaration is a stage that carries the whole site load (stages
in series: HV/MV, then MV/LV), shared by its `count` units (and by its replicas, when it is
declared in a replicated part). In a design of several sites a stage carries its own site: its
IT load (its hosts at their utilization, its fabrics' switches) with the conversion losses of
the feeders it holds (site_loads.it_by_site: a site whose feeders convert at 80 % carries its
own losses, not a share of every site's by IT load) and its own facility consumers, hour by
hour (analyses/site_loads.py: a site on free cooling carries no other site's chillers;
own_loads). Its rating is apparent power (kVA): the load it carries is
kW / power factor (its own `power_factor`, else the lowest the feeders declare, else 1 with
W631). A unit loses P0 + x^2 Pk at a load x of its rating in apparent power
(formulas.transformer_losses); with `redundancy` the units left after a failure (one fewer for
N+1; for 2N one side, the smaller half of the units: a single unit has no other side) must carry
the peak (E634). A design that declares feeders and no transformer has
its losses taken at [sourced default] 0.47 % of the load (W630; in a design whose other sites
declare some, of each bare site's own load, bare_load): 99.53 %, the minimum efficiency
of a 2,500 kVA three-phase liquid-immersed distribution transformer at 50 % load (US DOE, 10 CFR
431.196, 2016 standard).

Mechanical feeders: the facility's consumers at the peak hour are shared by the feeders with
`mechanical = true` of each side (A/B) as the IT feeders share their racks, with the same checks
(capacity, current, conductors, voltage drop; analyses/feeders.py); in a design of several sites
each site's mechanical feeders carry its own consumers at its peak hour (as its transformers
do), not the design's whole nor a share of it. Consumers on no such feeder, and a site with none while another has some, are reported
(W629) when the design declares feeders at all."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses import feeder_backing, formulas
from astral_dsl.analyses.conductors import power_factor_domain
from astral_dsl.analyses.feeders import FeederResult, one_feeder
from astral_dsl.analyses.field_reading import si
from astral_dsl.analyses.formulas import units_left
from astral_dsl.analyses.sites import sites as site_list
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Instance
from astral_dsl.model.values import Symbol
from astral_dsl.units import format_number, readable

DEFAULT_EFFICIENCY = 0.9953


@records.frozen(slots=False)
class TransformerResult:
    """A transformer declaration as the chain uses it (a stage), and what it carries."""
    path: str
    replicas: int
    count: int
    capacity_w: float
    redundancy: str
    no_load_w: float
    load_loss_w: float
    power_factor: float = 1.0     # of the load it carries: kVA = kW / power factor
    power_factor_from: str = "assumed"   # "declared", "feeders" (their lowest) or "assumed" (1)
    peak_load_w: float = 0.0      # what each replica carries at the peak hour (kW)
    average_loss_w: float = 0.0   # all replicas
    peak_loss_w: float = 0.0
    inst: Optional[Instance] = attrs.field(default=None, eq=False, repr=False)
    # of the design's load at the peak hour, what its site draws: 1 with one site; with
    # several, its site's own peak (its share of the IT load and its own consumers: each site's
    # transformers carry that site, not the others; own_loads)
    share: float = 1.0
    mean_square_w2: float = 0.0   # the mean over the hours of the square of what it carries

    def losses(self, site_load_w: float) -> float:
        """All its replicas' losses at a load of the design (its share of it)."""
        per = site_load_w * self.share / self.replicas / self.power_factor   # apparent, VA
        return self.replicas * formulas.transformer_losses(per, self.count, self.capacity_w,
                                                           self.no_load_w, self.load_loss_w)

    def mean_losses(self) -> float:
        """The average of its losses over hours of the load L it carries, from the mean of
        L^2: units x P0 + Pk x mean(L^2) / (units x (rating x power factor)^2), units =
        replicas x count (the quadratic part of formulas.transformer_losses on the apparent
        power L / PF, summed over the hours)."""
        units = self.replicas * self.count
        return units * self.no_load_w + self.load_loss_w * self.mean_square_w2 / (
            units * (self.capacity_w * self.power_factor) ** 2)


def stages(mult, diags: List[Diagnostic]) -> List[TransformerResult]:
    """The declared transformer stages. The power factor of the load a stage carries is its
    own `power_factor`, else the lowest the feeders of its site declare (every feeder's load
    there passes through it, and the kVA of a mix of loads is at most its kW over the lowest of
    their power factors; another site's feeders are on other transformers), else 1 with W631."""
    site_pf, shares = lowest_power_factor_per_site(mult)
    out = []
    # in the order declared (HV/MV before MV/LV as the design writes them; the sites in their
    # order), not the walk's, which visits the members of a part last to first
    for replicas, inst in sorted((ri for ri in mult.values() if ri[1].kind == "transformer"),
                                 key=lambda ri: _declared_at(ri[1])):
        cap = si(inst.field("capacity")) or 0.0
        p0, pk = si(inst.field("no_load_loss")), si(inst.field("load_loss"))
        if p0 is None or pk is None:
            missing = " and ".join(f"`{n}`" for n, v in (("no_load_loss", p0),
                                                         ("load_loss", pk)) if v is None)
            diags.append(Diagnostic("W630", Severity.WARNING,
                                    f"transformer `{inst.path}` declares no {missing}: that "
                                    f"part of its losses counts as 0 W in the facility power "
                                    f"and the PUE", inst.span,
                                    "declare both from the transformer's test report (IEC "
                                    "60076-1), or use `stdlib.power.Transformer`"))
        power_factor_domain(inst, diags)
        pf = si(inst.field("power_factor"))
        feeder_pf = site_pf.get(id(inst))
        if pf is None and feeder_pf is None:
            diags.append(Diagnostic("W631", Severity.WARNING,
                                    f"transformer `{inst.path}` declares no `power_factor` and "
                                    f"no feeder of its site does: its kVA rating is taken to hold as many "
                                    f"kW (power factor 1), which overstates what it can carry "
                                    f"and understates its load losses", inst.span,
                                    "declare `power_factor` on the AC feeders (their load's), "
                                    "or on the transformer (the load's at its terminals)"))
        scheme = inst.field("redundancy")
        out.append(TransformerResult(inst.path, replicas, int(si(inst.field("count")) or 1), cap,
                         scheme.name if isinstance(scheme, Symbol) else "n", p0 or 0.0,
                         pk or 0.0, pf or feeder_pf or 1.0,
                         "declared" if pf else "feeders" if feeder_pf else "assumed", inst=inst,
                         share=shares.get(id(inst), 1.0)))
    return out


def _declared_at(inst: Instance) -> Tuple[str, int, int]:
    span = inst.span
    return (span.file or "", span.start.line, span.start.column) if span is not None else \
        ("", 0, 0)


def lowest_power_factor_per_site(mult, cache: Optional[Dict] = None
                                 ) -> Tuple[Dict[int, Optional[float]], Dict[int, float]]:
    """id(transformer) -> the lowest `power_factor` the feeders of its site declare (None when
    none does): the feeders in the same site's tree, not another site's; and id(transformer) ->
    its site's share of the sites' IT load (rollup `power`), with several sites. A part shared
    by two sites (one template) is in both."""
    pf_of: Dict[int, Optional[float]] = {}
    shares: Dict[int, float] = {}
    parts = [inst for _, inst in mult.values()]
    for site in site_list(mult, {} if cache is None else cache):
        held = [inst for inst in parts if site.holds(inst)]
        lowest = min((pf for pf in (si(i.field("power_factor")) for i in held
                                    if i.kind == "feeder") if pf is not None), default=None)
        for t in held:
            if t.kind != "transformer":
                continue
            have = pf_of.get(id(t))
            pf_of[id(t)] = lowest if have is None else have if lowest is None else min(have, lowest)
            shares[id(t)] = shares.get(id(t), 0.0) + site.share
    return pf_of, shares


def own_loads(stages: List[TransformerResult], every, hours, it_sites: List[Tuple[float, float]],
              peak_w: float) -> List[TransformerResult]:
    """In a design of several sites (`every`, analyses/sites.py), each stage with the load of
    the site(s) that hold it: their IT feeders' input (`it_sites`, per site: average, peak;
    site_loads.it_by_site: their own IT load and the losses of their own feeders) and their own
    consumers hour by hour (`hours`, analyses/site_loads.py: average, peak), as its share of the
    design's peak (`peak_w`, at the peak hour) and its mean square load."""
    out = []
    for s in stages:
        held = [(it, h) for site, it, h in zip(every, it_sites, hours) if site.holds(s.inst)]
        peak = [sum(it[1] + p[i] for it, (_, p) in held)
                for i in range(len(held[0][1][1]))] if held else [0.0]
        avg = [sum(it[0] + a[i] for it, (a, _) in held)
               for i in range(len(held[0][1][0]))] if held else [0.0]
        out.append(attrs.evolve(s, share=max(peak) / peak_w if peak_w else 0.0,
                                mean_square_w2=sum(x * x for x in avg) / len(avg)))
    return out


def default_losses(load_w: float) -> float:
    """The losses of a load that passes through no declared transformer, at the sourced default
    efficiency (DEFAULT_EFFICIENCY)."""
    return load_w * (1 / DEFAULT_EFFICIENCY - 1)


def bare_sites(mult, cache, diags) -> list:
    """In a design whose sites declare transformers, the sites that hold none: their load's
    losses are the sourced default's (bare_load), with W630 naming each, not 0 W."""
    out = []
    for site in site_list(mult, cache):
        if any(inst.kind == "transformer" for _, inst in mult.values() if site.holds(inst)):
            continue
        out.append(site)
        diags.append(Diagnostic(
            "W630", Severity.WARNING,
            f"site `{site.inst.path}` declares no `transformer` (other sites do): the losses "
            f"between the utility and its feeders are taken as 0.47 % of its load (99.53 %, the "
            f"US DOE minimum for a 2,500 kVA liquid-immersed distribution transformer at 50 % "
            f"load)", site.inst.span,
            "declare the site's own `transformer`s (their count, rating and losses), e.g. "
            "`stdlib.power.Transformer`"))
    return out


def bare_load(every, bare, it_sites: List[Tuple[float, float]], hours,
              hot: int) -> Tuple[float, float]:
    """The load of the `bare` sites (bare_sites), which passes through no declared
    transformer: each one's IT feeders' input (`it_sites`) and its own consumers (`hours`), on
    average over the hours and at the design's peak hour `hot`."""
    avg = peak = 0.0
    for site, it, (a, p) in zip(every, it_sites, hours):
        if any(site.inst is b.inst for b in bare):
            avg += it[0] + sum(a) / len(a)
            peak += it[1] + p[hot if hot < len(p) else -1]
    return avg, peak


def check(chain: List[TransformerResult], peak_w: float, average_w: Dict[int, float],
          diags) -> List[TransformerResult]:
    """E634 for a stage whose units, less the ones its redundancy spares, cannot carry the
    peak (the site's load at the peak hour, `peak_w`); the results for the report, with each
    stage's average losses (`average_w`, by id of the stage)."""
    out = []
    for s in chain:
        per = peak_w * s.share / s.replicas
        apparent = per / s.power_factor
        left = units_left(s.count, s.redundancy)
        if left * s.capacity_w < apparent * (1 - 1e-9):
            needed = math.ceil(apparent / s.capacity_w - 1e-9)
            total = needed + (1 if s.redundancy == "n_plus_1" else
                              needed if s.redundancy == "two_n" else 0)
            said, rating = map(readable.apparent,
                               readable.powers_apart(apparent, left * s.capacity_w))
            whose = ", the feeders' lowest" if s.power_factor_from == "feeders" else ""
            of = f" ({readable.power(per, 3)} at power factor " \
                f"{format_number(s.power_factor)}{whose})" if s.power_factor < 1 else ""
            diags.append(Diagnostic(
                "E634", Severity.ERROR,
                f"transformers `{s.inst.path}` carry {said}{of} at the peak, but their "
                f"{left} unit(s) left in service ({s.redundancy}) hold {rating}",
                s.inst.span_of("count"), f"{total} transformers of "
                f"{readable.apparent(readable.power(s.capacity_w))} are needed ({s.redundancy}"
                f"{': half on each side' if s.redundancy == 'two_n' else ''})"))
        out.append(attrs.evolve(s, peak_load_w=per, average_loss_w=average_w.get(id(s), 0.0),
                                peak_loss_w=s.losses(peak_w)))
    return out


def mechanical(mult, resolve, served, cache, failed, diags, reqs, load: Tuple[float, float],
               any_feeders: bool, by_site: List[Tuple[float, float]]) -> List[FeederResult]:
    """The feeders with `mechanical = true`, carrying the facility's consumers (`load`: at the
    peak hour, on average), each site's feeders its own (`by_site`: at its peak hour, on
    average, for each site of analyses/sites.py; _site_loads); W629 when there is a load,
    feeders elsewhere and none of these."""
    decls: List[Tuple[int, Instance, Instance]] = []
    for replicas, owner in mult.values():
        for m in owner.members:
            f = m.value
            if isinstance(f, Instance) and f.kind == "feeder" and \
                    f.field("mechanical") is True:
                decls.append((replicas, owner, f))
    decls.sort(key=lambda d: _declared_at(d[2]))     # the sites in their order, as declared
    if not decls:
        if load[0] > 0 and any_feeders and mult:
            root = next(iter(mult.values()))[1]
            diags.append(Diagnostic(
                "W629", Severity.WARNING,
                f"the facility's own consumers ({readable.power(load[0])} at the peak: CDUs, "
                f"pumps, fans, chillers, heat rejection, lighting) are on no declared feeder: "
                f"their power path is not checked and they count without conversion losses",
                root.span, "declare feeders with `mechanical = true` (the mechanical "
                           "switchboards' supply)"))
        return []
    out = [one_feeder(f, replicas, [], 0.0, _partners(decls, owner, f), resolve, cache, failed,
                      diags, reqs, None, carried)
           for (replicas, owner, f), carried in zip(decls, _site_loads(mult, cache, decls,
                                                                       by_site, diags))]
    example = feeder_backing.evidence((i for _, i in mult.values() if i.kind == "feeder"),
                                      resolve)
    for (replicas, owner, f), r in zip(decls, out):      # W635, as for the IT feeders
        diags.extend(feeder_backing.unbacked(f, _partners(decls, owner, f), r.count, r.load_w,
                                             example, replicas, resolve,
                                             "with `mechanical = true` beside it"))
    return out


def _side(f: Instance) -> Optional[str]:
    return getattr(f.field("side"), "name", None)


def _partners(decls, owner: Instance, f: Instance) -> List[Instance]:
    return [g for _, o, g in decls if o is owner and g is not f and _side(g) != _side(f)]


def _site_loads(mult, cache, decls, by_site: List[Tuple[float, float]],
                diags) -> List[Tuple[float, float]]:
    """For each mechanical feeder declaration, what each of its replicas carries (at the peak,
    on average): in each site that holds it, the site's own consumers (`by_site`) over the
    units of its side there (replicas x `count`), times its `count`, averaged over its
    replicas. One site: count / the units of its side of them. W629 names a site with
    consumers that holds none of them while another does: they are on no feeder."""
    def count(f: Instance) -> int:
        return int(si(f.field("count")) or 1)

    every = site_list(mult, cache)
    units: Dict[Tuple[int, Optional[str]], float] = {}
    for i, site in enumerate(every):
        for _, _, f in decls:
            n = site.replicas.get(id(f), 0) * count(f)
            if n:
                units[(i, _side(f))] = units.get((i, _side(f)), 0.0) + n
    total = sum(peak for peak, _ in by_site)
    for i, site in enumerate(every):
        if by_site[i][0] > 0 and not any(k[0] == i for k in units):
            diags.append(Diagnostic(
                "W629", Severity.WARNING,
                f"site `{site.inst.path}` holds no feeder with `mechanical = true`: its "
                f"facility's own consumers ({readable.power(by_site[i][0])} of "
                f"{readable.power(total)} at the sites' peaks) are on no declared feeder, "
                f"unchecked and without conversion losses", site.inst.span,
                "declare the site's own feeders with `mechanical = true` (its mechanical "
                "switchboards' supply)"))
    return [tuple(sum(site.replicas.get(id(f), 0) * count(f) * by_site[i][k] /
                      units[(i, _side(f))]
                      for i, site in enumerate(every) if units.get((i, _side(f))))
                  / max(replicas, 1) for k in (0, 1))
            for replicas, _, f in decls]
