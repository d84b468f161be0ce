"""Power: IT load per level and in total, the feeders (analyses/feeders.py), conversion losses,
rectifier modules and batteries, each result traced to the declaration that caused it.

Parts a feeder supplies come from its `serves` and the racks' `feeds` (analyses/served.py), and
the fabrics' switches from the feeders declared with `network = true`; IT load that no feeder
supplies (racks W626, switches W628), and an average load taken as the peak for want of a
declared `utilization` (W627; analyses/utilization.py), are reported. The level table has one
row per distinct part and one per fabric, so that the site and network rows add up to the IT
load."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple


from astral_dsl import records
from astral_dsl.analyses import formulas
from astral_dsl.analyses.feeders import FeederResult, Requirement, analyse_feeders
from astral_dsl.analyses.field_reading import error, si, warning
from astral_dsl.analyses.served import Served
from astral_dsl.analyses.utilization import Averages
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.rollup import group_of, power_of
from astral_dsl.units import readable

__all__ = ["FeederResult", "LevelLoad", "PowerResult", "Requirement", "analyse_power"]


@records.frozen(slots=False)
class LevelLoad:
    kind: str
    path: str
    replicas: int
    peak_w: float
    average_w: float


@records.frozen(slots=False)
class PowerResult:
    levels: Tuple[LevelLoad, ...]
    feeders: Tuple[FeederResult, ...]
    it_peak_w: float
    it_average_w: float
    conversion_loss_w: float          # over the year: at the average load of each feeder
    rectifier_modules: int
    battery_ah: float
    diagnostics: Tuple[Diagnostic, ...]
    requirements: Tuple[Requirement, ...] = ()
    conversion_loss_peak_w: float = 0.0   # at the peak: what the utility connection supplies
    network_w: float = 0.0            # the fabrics' switches (in it_peak_w and it_average_w)
    network_unfed_w: float = 0.0      # of network_w: on no feeder (W628), without losses
    # each site's own IT load (path, average, peak; its hosts, without the fabrics' switches):
    # what its transformers carry (analyses/site_loads.py it_by_site)
    sites: Tuple[Tuple[str, float, float], ...] = ()


def analyse_power(design: Design, fabrics=(), cache: Optional[Dict] = None,
                  failed: frozenset = frozenset(), served: Optional[Served] = None,
                  averages: Optional[Averages] = None) -> PowerResult:
    """`fabrics`: the network's switch counts (analyses/network.py), whose power counts in the
    IT load at full power and goes through the feeders declared with `network = true`;
    `failed`: paths of feeders a scenario has failed."""
    cache = {} if cache is None else cache
    resolve = Resolver(design)
    mult = served.mult if served is not None else multiplicities(design)
    served = served if served is not None else Served(design, mult, resolve, cache, fabrics)
    averages = averages if averages is not None else Averages(design, mult, cache)
    diags: List[Diagnostic] = []
    levels: List[LevelLoad] = []
    for root, average_w, unstated_w in averages.sites:    # each site that lacks it, by name
        if unstated_w <= 0:
            continue
        some = "" if unstated_w >= average_w - 1e-6 else \
            f" for {readable.power(unstated_w)} of its IT load"
        diags.append(warning("W627", f"site `{root.path}` declares no `utilization`{some} (nor do "
                                     f"the parts inside it): the average IT load (facility power, "
                                     f"PUE) is taken as the peak there",
                             root.span, "declare `utilization = ...`, the average over the peak "
                                        "load (e.g. from the operator's metering), on the site or "
                                        "the racks, rows or pods it differs for"))
    for replicas, inst in mult.values():
        if inst.level is None or inst.kind in ("gpu", "nic", "cpu", "switch"):
            continue
        peak = power_of(inst, cache).si
        levels.append(LevelLoad(inst.kind, inst.path, replicas, peak,
                                averages.per_replica(inst)))
        limit = si(inst.field("power_limit"))
        if limit is not None and peak > limit * (1 + 1e-9):
            said, allowed = readable.powers_apart(peak, limit)
            diags.append(error("E624", f"{inst.kind} `{inst.path}` draws {said}, above its "
                                       f"power limit of {allowed}",
                               inst.span_of("power_limit"),
                               f"affects {replicas:,} {inst.kind}(s)" if replicas > 1 else None))
    network_w = sum(f.power_w for f in fabrics)
    for f in fabrics:
        n = max(f.instances, 1)
        levels.append(LevelLoad("network", f.fabric, n, f.power_w / n, f.power_w / n))
    reqs: List[Requirement] = []
    feeders = analyse_feeders(mult, resolve, served, cache, failed, diags, reqs, averages)
    diags.extend(_unfed(design, mult, served, feeders, cache))
    unfed = _unfed_network(mult, served, diags)
    compute_peak = sum(power_of(r, cache).si for r in design.roots)
    # switches draw near their rating whatever the job runs (their power follows the ports and
    # optics powered, not the GPUs' utilisation): the network counts at full power on average too
    it_peak = compute_peak + network_w
    it_avg = averages.site_average_w + network_w
    # conversion losses over the year: at the average load of what each feeder serves; at the
    # peak, at what it carries then; and its rectifier's modules at no load, all year
    loss = sum(f.replicas * f.running * feeder_loss(f, f.average_w) for f in feeders)
    loss_peak = sum(f.replicas * f.running * feeder_loss(f, f.normal_w) for f in feeders)
    modules = sum(f.replicas * f.count * (f.rectifier_modules or f.rectifier_modules_needed or 0)
                  for f in feeders)
    battery = sum(f.replicas * f.count * (f.battery_required_ah or 0.0) for f in feeders)
    levels.sort(key=lambda l: (-_order(l.kind), l.path))
    feeders.sort(key=lambda f: f.path)
    sites = tuple((root.path, avg, power_of(root, cache).si) for root, avg, _ in averages.sites)
    return PowerResult(tuple(levels), tuple(feeders), it_peak, it_avg, loss, modules, battery,
                       tuple(diags), tuple(reqs), loss_peak, network_w, unfed, sites)


def feeder_loss(f: FeederResult, load_w: float) -> float:
    """What one feeder in service loses carrying `load_w`: its conversion (rectifier and own)
    and its rectifier's no-load draw (formulas.rectifier_losses)."""
    if not f.efficiency:
        return f.no_load_w
    return formulas.rectifier_losses(load_w, f.efficiency, f.no_load_w)


def _unfed_network(mult, served: Served, diags) -> float:
    """W628: the fabrics' power that no feeder with `network = true` supplies."""
    feeders = [(m, i) for m, i in mult.values() if i.kind == "feeder"]
    missing = [(f, share) for f, share in served.uncovered(feeders) if f.power_w > 0]
    if not missing:
        return 0.0
    watts = sum(share * f.power_w for f, share in missing)
    switches = sum(round(share * f.switches) for f, share in missing)
    first = missing[0][0]
    fabric = served.resolve.by_path.get(first.fabric)
    diags.append(warning("W628", f"the network's {readable.power(watts)} "
                                 f"({readable.grouped(switches)} switches of "
                                 f"{_fabrics_named([f for f, _ in missing])}) are on no declared "
                                 f"feeder: their power path is not checked and they count without "
                                 f"conversion losses",
                         fabric.span if fabric is not None else None,
                         "declare a feeder with `network = true` in the fabric's owner (or above): "
                         "it supplies the switches of the fabrics attached there"))
    return watts


def _fabrics_named(counts) -> str:
    """The first fabric, with the parts it is attached to when it is on several (one fabric
    on pods of two sizes is one fabric, not two), and how many other fabrics."""
    first = counts[0]
    owners = [f.owner for f in counts if f.fabric == first.fabric]
    others = len({f.fabric for f in counts}) - 1
    shown = [f"`{o}`" for o in owners[:3]] + ([f"{len(owners) - 3:,} more"] if owners[3:] else [])
    named = f"`{first.fabric}`{first.on}" if len(owners) == 1 else \
        f"`{first.fabric}` on " + ", ".join(shown[:-1]) + f" and {shown[-1]}"
    return named + (f" and {others} other fabric(s)" if others else "")


def _fed_racks(by_owner: Dict[int, Dict[Tuple, Dict[Optional[str], float]]],
               owners: Dict[int, Optional[Instance]], served: Served) -> float:
    """How many replicas of one rack template the feeders feed, per path: those of one owner
    serving the same parts feed the same racks (_covered), other parts of that owner other
    racks; owners apart (two rows) feed other racks, so a template fed by side A in one row
    and by side B in another is fed in both (the larger side alone had been counted, W626);
    an owner's feeders and those of the parts inside it may feed the same racks, so the larger
    of the two counts (a site's feeder serving one row's racks does not feed another row's)."""
    own = {o: sum(_covered(sides) for sides in keys.values()) for o, keys in by_owner.items()}
    inner: Dict[Optional[int], List[int]] = {}
    for o in own:                          # each owner under the nearest one of them above it
        up = served.owner_of(owners[o]) if owners[o] is not None else None
        while up is not None and id(up) not in own:
            up = served.owner_of(up)
        inner.setdefault(id(up) if up is not None else None, []).append(o)

    def total(o: int) -> float:
        return max(own[o], sum(total(i) for i in inner.get(o, ())))

    return sum(total(o) for o in inner.get(None, ()))


def _covered(sides: Dict[Optional[str], float]) -> float:
    """The racks one path's feeders feed: those of each side share them, and a feeder of no
    side feeds its racks whatever the side (with the feeders of each side)."""
    either = sides.get(None, 0.0)
    return max([n + either for side, n in sides.items() if side is not None] or [either])


def _order(kind: str) -> int:
    return {"site": 6, "hall": 5, "pod": 4, "row": 3, "block": 3, "rack": 2, "host": 1}.get(kind, 0)


def _unfed(design: Design, mult, served: Served, feeders, cache) -> List[Diagnostic]:
    """IT load no feeder supplies: racks (or, in a design without racks, the sites) with fewer
    feeder replicas than replicas of their own, counted per path (_fed_racks)."""
    # rack -> the feeders' owner -> the parts they serve -> side -> racks fed
    fed: Dict[int, Dict[int, Dict[Tuple, Dict[Optional[str], float]]]] = {}
    owners: Dict[int, Optional[Instance]] = {}
    by_path = {i.path: i for _, i in mult.values()}
    for f in feeders:
        inst = by_path.get(f.path)
        if inst is None:
            continue
        parts = served.of(inst)
        owner = served.physical_owner(inst)
        owners[id(owner)] = owner
        key = tuple(sorted((c, part.path) for c, part in parts))
        for c, part in parts:
            for n, rack in group_of(part, ("rack",), cache).flat():
                side = fed.setdefault(id(rack), {}).setdefault(id(owner), {}) \
                    .setdefault(key, {})
                side[f.side] = side.get(f.side, 0.0) + f.replicas * c * n
    missing, watts, example = 0, 0.0, None
    for replicas, rack in mult.values():
        if rack.kind != "rack":
            continue
        covered = _fed_racks(fed.get(id(rack), {}), owners, served)
        if covered < replicas - 1e-9:
            lost = replicas - covered
            missing += lost
            watts += lost * power_of(rack, cache).si
            example = example or rack
    if missing:
        return [warning("W626", f"{readable.grouped(missing)} rack(s) "
                                f"({readable.power(watts)}) have no feeder: their "
                                f"power path is not checked and their conversion losses count as "
                                f"0 W", example.span,
                        "declare a feeder that serves them (`serves`) or name it in the racks' "
                        "`feeds`")]
    if not any(r.kind == "rack" for _, r in mult.values()) and not feeders:
        it = sum(power_of(r, cache).si for r in design.roots)
        if it > 0:
            root = design.roots[0]
            return [warning("W626", f"no feeder supplies the {readable.power(it)} "
                                    f"of `{root.path}`: its power path is not checked and its "
                                    f"conversion losses count as 0 W", root.span,
                            "declare the feeders that supply it")]
    return []
