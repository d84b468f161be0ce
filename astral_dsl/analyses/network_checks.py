"""The checks of a derived fabric (E600-E607, E611, W606, W610, W611): ports and bandwidth of
each switch, link speeds, oversubscription, paths to the core (and a top tier that joins what
the fabric serves), the radix, dual-homing, how the tiers' groups nest, protocols, undeclared
switch power, rails or planes no NIC port reaches, and a fabric that counts no switch.

Pure functions of the counts network.py derives; they only report."""
from __future__ import annotations

import functools
from typing import List, Optional, Tuple

from astral_dsl.analyses.field_reading import error, warning
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.model.design import Instance
from astral_dsl.model.values import Symbol
from astral_dsl.units import Quantity, format_number

_LEVEL = {"rack": 2, "row": 3, "block": 3, "pod": 4, "hall": 5, "site": 6}


def tier_checks(owner: Instance, tier: Instance, tc, switch: Optional[Instance], prev,
                nic_speeds, limit, index, n_tiers, prev_groups, groups,
                scopes_found: Optional[int], merged: Optional[int] = None,
                lower_joined: bool = True) -> List[Diagnostic]:
    """`nic_speeds`: (NIC model, port speed) per distinct speed of the hosts' NICs;
    `scopes_found`: instances of the tier's declared scope inside the owner (None when the
    scope is the owner itself or undeclared); `merged`: the most groups of the tier below
    that one of its groups holds (None: the average); `lower_joined`: the switches of one group
    of the tier below have a path between them below it (network.py)."""
    out = []
    down_span = tier.span_of("down")
    if switch is not None:
        out.extend(_switch_limits(tier, tc, switch))
    if prev is None:
        belows = [("the hosts' NIC ports" if len(nic_speeds) == 1 else
                   f"the ports of NIC `{name}`", speed) for name, speed in nic_speeds]
    else:
        belows = [(f"tier `{prev.name}`'s uplinks", prev.up_speed)]
    for what, below in belows:
        if below is not None and tc.down_speed is not None and below.si != tc.down_speed.si:
            out.append(error("E601", f"tier `{tc.name}` takes {tc.down_speed} downlinks but "
                                     f"{what} run at {below}", down_span,
                             "both ends of a link must run at the same speed"))
    if tc.oversubscription is not None and isinstance(limit, Quantity) \
            and tc.oversubscription > limit.si * (1 + 1e-9):
        # the ratio is the ports' (a full switch, the worst); a switch its group does not fill
        # runs below it as loaded, which the note says
        used = tc.down_used / tc.down_ports if tc.down_ports else 1.0
        out.append(error("E602", f"tier `{tc.name}` is oversubscribed "
                                 f"{format_number(round(tc.oversubscription, 4))}:1, above the "
                                 f"declared limit {format_number(limit.si)}:1",
                         tier.span_of("up"), "add uplinks or reduce downlinks",
                         [f"the ratio of its ports, {tc.down_ports} down to {tc.up_ports} up: "
                          f"its switches use {format_number(round(tc.down_used, 2))} down ports "
                          f"on average, "
                          f"{format_number(round(tc.oversubscription * used, 4))}:1 as loaded"]
                         if used < 1 - 1e-9 else ()))
    if index < n_tiers - 1 and not tc.up_ports:
        out.append(error("E603", f"tier `{tc.name}` has no uplinks, so the tiers above it are "
                                 f"unreachable", tier.span, "declare `up = N x SPEED`"))
    if index == n_tiers - 1:
        out.extend(_top(owner, tier, tc, prev, index, scopes_found))
    out.extend(_scope(owner, tier, tc, scopes_found))
    if prev is not None:
        out.extend(_nesting(tier, tc, prev))
    if prev is not None and tc.down_ports and prev_groups % max(groups, 1) == 0:
        if merged is None:
            merged = prev_groups // groups if groups else 0
        lower_per_group = prev.per_group
        if merged <= 1 and lower_per_group > tc.down_ports:
            out.append(error("E604", f"each `{tc.name}` switch must reach all {lower_per_group} "
                                     f"`{prev.name}` switches of its group but has "
                                     f"{tc.down_ports} downlinks: the radix cannot reach this "
                                     f"size", down_span,
                             f"at most {tc.down_ports} `{prev.name}` switches per group: "
                             f"make the groups smaller or use a larger switch"))
        elif merged > tc.down_ports:
            out.append(error("E604", f"each `{tc.name}` switch must reach {merged} groups of "
                                     f"`{prev.name}` switches but has {tc.down_ports} downlinks: "
                                     f"the radix cannot reach this size", down_span,
                             f"at most {tc.down_ports} groups below each `{tc.name}`"))
        elif not tc.mesh and not lower_joined:
            out.append(_planes_apart(tc, prev, merged, down_span))
    return out


def _planes_apart(tc, prev, merged: int, span) -> Diagnostic:
    """E604: an upper tier wired in planes (switch p of every lower group to plane p, as the
    core of a fat tree) over lower switches that nothing below joins (a first tier): two lower
    switches of one group reach different planes, so their hosts have no path between them.
    The fat-tree planes (Al-Fares et al., SIGCOMM 2008) hold only because the aggregation
    switches of a pod are joined by the edge switches under them."""
    lower = prev.per_group
    return error("E604", f"each `{tc.name}` switch must reach all {lower * merged:,} `{prev.name}` "
                         f"switches of the {merged} groups it joins ({lower} per group) but has "
                         f"{tc.down_ports} downlinks: the radix cannot reach this size (in planes, "
                         f"`{prev.name}` switches of one group would reach different `{tc.name}` "
                         f"switches, with no path between them)", span,
                 f"at most {tc.down_ports // merged} `{prev.name}` switches per group: add a tier "
                 f"between them with the scope and `per` of `{prev.name}` (its switches join a "
                 f"group's), make the groups smaller or use a larger switch")


def _top(owner: Instance, tier: Instance, tc, prev, index: int,
         scopes_found: Optional[int]) -> List[Diagnostic]:
    """E603: the top tier joins what its fabric serves. Its groups split by a scope narrower
    than the fabric's owner never meet (the pods of a site fabric whose top tier is per pod);
    a single tier of several switches per group leaves the hosts of one switch no path to
    those of another (a higher tier joins the switches of a lower one, none joins the top's)."""
    nests = prev is None or _LEVEL.get(tc.scope, 9) >= _LEVEL.get(prev.scope, 9)   # else E607
    if scopes_found is not None and scopes_found > 1 and nests:
        return [error("E603", f"the top tier `{tc.name}` serves each {tc.scope} of "
                              f"`{owner.path}` on its own ({scopes_found:,} of them): GPUs of "
                              f"different {tc.scope}s have no path between them",
                      tier.span_of("scope"),
                      f"declare a tier above it with `scope = {owner.kind}`, or attach the "
                      f"fabric to each {tc.scope}")]
    if index == 0 and tc.per_group > 1:
        return [error("E603", f"`{tc.name}` is the only tier but needs {tc.per_group:,} "
                              f"switches per group: GPUs under different `{tc.name}` switches "
                              f"have no path between them", tier.span_of("down"),
                      "declare a tier above it (a spine), or serve each group with one switch "
                      "of enough downlinks")]
    return []


def _switch_limits(tier: Instance, tc, switch: Instance) -> List[Diagnostic]:
    """E600: ports, port speed and switching capacity of one switch."""
    out = []
    down_span = tier.span_of("down")
    max_ports = switch.field("max_ports") or switch.field("ports")
    used = tc.down_ports + tc.up_ports
    if isinstance(max_ports, Quantity) and used > max_ports.si:
        out.append(error("E600", f"tier `{tc.name}` uses {used} ports per switch but "
                                 f"`{switch.path}` has {format_number(max_ports.si)}",
                         down_span, "reduce `down` or `up`, or choose a larger switch"))
    port_speed = switch.field("port_speed")
    if isinstance(port_speed, Quantity):
        for side, speed in (("down", tc.down_speed), ("up", tc.up_speed)):
            if speed is not None and speed.si > port_speed.si * (1 + 1e-9):
                out.append(error("E600", f"tier `{tc.name}` runs {speed} {side}links but the "
                                         f"ports of `{switch.path}` run at {port_speed}",
                                 tier.span_of(side), "use a faster switch or slower links"))
    capacity = switch.field("capacity")
    ports = switch.field("ports")
    if not isinstance(capacity, Quantity) and isinstance(ports, Quantity) \
            and isinstance(port_speed, Quantity):
        capacity = Quantity(ports.si * port_speed.si, port_speed.dims, "Tb/s")
    bw = (tc.down_ports * (tc.down_speed.si if tc.down_speed else 0) +
          tc.up_ports * (tc.up_speed.si if tc.up_speed else 0))
    if isinstance(capacity, Quantity) and bw > capacity.si * (1 + 1e-9):
        out.append(error("E600", f"tier `{tc.name}` needs {format_number(bw / 1e12)} Tb/s "
                                 f"per switch but `{switch.path}` switches "
                                 f"{format_number(capacity.si / 1e12)} Tb/s", down_span,
                         "reduce `down` or `up`, or slower links, or choose a switch of "
                         "more capacity"))
    return out


def _scope(owner: Instance, tier: Instance, tc, scopes_found) -> List[Diagnostic]:
    """E606: a tier's scope lies within the instance its fabric is attached to."""
    scope = tier.field("scope")
    if not isinstance(scope, Symbol):
        return []
    name = scope.name
    span = tier.span_of("scope")
    if _LEVEL.get(name, 9) > _LEVEL.get(owner.kind, 9):
        return [error("E606", f"tier `{tc.name}` has `scope = {name}` but its fabric is attached "
                              f"to `{owner.path}`, a {owner.kind}: a tier cannot reach beyond the "
                              f"instance its fabric is attached to", span,
                      f"attach the fabric to the {name}, or write `scope = {owner.kind}`")]
    if scopes_found == 0:
        return [error("E606", f"tier `{tc.name}` has `scope = {name}` but `{owner.path}` holds "
                              f"no {name}", span,
                      f"use the level of a grouping `{owner.path}` holds, or `scope = "
                      f"{owner.kind}`")]
    return []


def _nesting(tier: Instance, tc, prev) -> List[Diagnostic]:
    """E607: each group of a tier holds whole groups of the tier below."""
    if _LEVEL.get(tc.scope, 9) < _LEVEL.get(prev.scope, 9):
        return [error("E607", f"tier `{tc.name}` serves a {tc.scope} but the tier below, "
                              f"`{prev.name}`, serves a whole {prev.scope}: a tier's groups must "
                              f"hold whole groups of the tier below", tier.span_of("scope"),
                      f"give `{tc.name}` a scope of {prev.scope} or wider")]
    finer = [p for p in tc.per if p not in prev.per]
    if finer:
        return [error("E607", f"tier `{tc.name}` is per {' and '.join(finer)} but the tier below, "
                              f"`{prev.name}`, is not: its switches would serve parts of "
                              f"`{prev.name}`'s groups", tier.span_of("per"),
                      f"remove {', '.join(f'`{p}`' for p in finer)} from `per`, or add it to "
                      f"`{prev.name}`")]
    return []


def fabric_checks(fabric: Instance, tiers, tier_insts, switches, rails, planes, hosts,
                  rails_used, planes_used) -> List[Diagnostic]:
    out = []
    if not tiers or not hosts.ports:        # W611: nothing counted, said
        what = (f"declares no tier: the {hosts.ports:,} NIC ports of its hosts reach no switch"
                if not tiers else
                f"serves no NIC port: the {hosts.count:,} hosts it is attached to declare no "
                f"NICs")
        out.append(warning("W611", f"fabric `{fabric.template}` {what}, so no switch is counted",
                           fabric.span, "declare its tiers, lowest first: `tier leaf { switch = "
                                        "..., down = N x SPEED }`" if not tiers else
                           "give the hosts their NICs: `nics = 8 x N`"))
    if rails > 1 and tiers and all("rail" in t.per for t in tiers):
        out.append(error("E603", f"every tier of `{fabric.template}` is per rail: rails never "
                                 f"meet, so a rail has no path to the core for cross-rail "
                                 f"traffic", tier_insts[-1].span,
                         "declare a top tier without `rail` in `per`"))
    dual = fabric.field("dual_homing")
    if dual is True:
        first = tiers[0] if tiers else None
        if hosts.fewest_ports < 2 or planes < 2 or (first is not None
                                                    and "plane" not in first.per):
            single = [n.template or n.path for n in hosts.nics if _ports(n) < 2]
            why = ("each NIC has one port" if hosts.ports_per_nic < 2 else
                   f"NIC `{single[0]}` has one port" if single else
                   "the fabric has one plane" if planes < 2 else
                   f"tier `{first.name}` is not per plane")
            out.append(error("E605", f"dual-homing is declared but a NIC's two ports land on one "
                                     f"ToR ({why})", fabric.span_of("dual_homing"),
                             "use dual-port NICs, `planes = 2` and `per = [rail, plane]` on the "
                             "first tier"))
    out.extend(_protocols(tiers, tier_insts, switches, hosts))
    out.extend(_switch_power(tiers, tier_insts, switches))
    out.extend(_unreached(fabric, rails, planes, hosts, rails_used, planes_used))
    return out


def _ports(nic: Instance) -> int:
    p = nic.field("ports")
    return int(p.si) if isinstance(p, Quantity) else 1


_FAMILY = {"infiniband": "InfiniBand", "ethernet": "Ethernet", "roce": "Ethernet"}


def _a(name: str) -> str:
    """`name` after its indefinite article, as it is said: "an" before a vowel sound (an
    Ethernet, an NVLink: an initialism's F, H, L, M, N, R, S or X is said with one), else "a"
    (a RoCE, a Fibre Channel)."""
    spelt = name[:2].isupper() and name[0] in "FHLMNRSX"
    return f"{'an' if name[:1] in 'AEIOUaeiou' or spelt else 'a'} {name}"


def _protocol(inst: Optional[Instance]) -> Optional[str]:
    p = inst.field("protocol") if inst is not None else None
    return p.name if isinstance(p, Symbol) else None


def _protocols(tiers, tier_insts, switches, hosts) -> List[Diagnostic]:
    """E611: both ends of every link speak the same protocol family (RoCE runs on Ethernet)."""
    out = []
    for i, (tc, tier, switch) in enumerate(zip(tiers, tier_insts, switches)):
        mine = _protocol(switch)
        if mine is None:
            continue
        if i == 0:
            below = [(n.path, _protocol(n)) for n in hosts.nics]
            what = "the hosts' NICs"
        else:
            below = [(switches[i - 1].path if switches[i - 1] is not None else "?",
                      _protocol(switches[i - 1]))]
            what = f"tier `{tiers[i - 1].name}`"
        for path, theirs in below:
            if theirs is not None and _FAMILY[theirs] != _FAMILY[mine]:
                out.append(error("E611", f"tier `{tc.name}`'s switches `{switch.path}` speak "
                                         f"{_FAMILY[mine]} but {what} (`{path}`) speak "
                                         f"{_FAMILY[theirs]}", tier.span_of("switch"),
                                 "both ends of a link must run the same protocol: choose "
                                 "switches and NICs of one family (or set a VPI part's "
                                 "`protocol`)"))
    return out


def _switch_power(tiers, tier_insts, switches) -> List[Diagnostic]:
    """W606: switches whose power is not declared are counted as 0 W."""
    missing = [(t, ti, sw) for t, ti, sw in zip(tiers, tier_insts, switches)
               if t.switch_w is None and t.switches]
    if not missing:
        return []
    total = sum(t.switches for t in tiers)
    count = sum(t.switches for t, _, _ in missing)
    if len(missing) == len([t for t in tiers if t.switches]):
        what = f"the network's {count:,} switches are counted as 0 W"
    else:
        names = ", ".join(f"`{t.name}`" for t, _, _ in missing)
        what = (f"{count:,} of the network's {total:,} switches (tier {names}) are counted "
                f"as 0 W")
    _, inst, switch = missing[0]
    model = switch.template if switch is not None else missing[0][0].switch
    return [warning("W606", f"switch power not declared: {what}", inst.span_of("switch"),
                    f"declare `power` from the data sheet of `{model}`, e.g. "
                    f"`switch = {model}(power = ...)`{_stated_instead(model, _protocol(switch))}",
                    [f"tier `{t.name}`: {t.switches:,} x `{t.switch}`" for t, _, _ in missing])]


def _stated_instead(model: str, protocol: Optional[str]) -> str:
    """The stdlib's fabric switches that state their `power`, as W606's hint offers them: those
    of the switch's protocol family (`, or use a stdlib switch that states it: ...`), else all
    of them with their family, said not to be the switch's; never the switch itself; '' when the
    stdlib has none."""
    others = [(n, p) for n, p in stated_switches() if n != model]
    same = [n for n, p in others if protocol is None or _FAMILY.get(p) == _FAMILY.get(protocol)]
    if same:
        return ", or use a stdlib switch that states it: " + ", ".join(f"`{n}`" for n in same)
    if not others:
        return ""
    families = " and ".join(sorted({_FAMILY.get(p, p) for n, p in others if p}))
    listed = ", ".join(f"`{n}`" for n, _ in others)
    return (f"; the stdlib states the power of its {families} switches only ({listed}), not "
            f"of {_a(_FAMILY[protocol])} one like `{model}`")


@functools.lru_cache(maxsize=1)
def stated_switches() -> Tuple[Tuple[str, Optional[str]], ...]:
    """(name, protocol) of each stdlib switch that a tier can use (it has `ports`) and that
    states its `power`, read from the stdlib's files, in their order."""
    from astral_dsl import resources
    from astral_dsl.syntax import ast
    from astral_dsl.syntax.parser import parse
    from astral_dsl.syntax.source import Source

    out = []
    for path in sorted(resources.stdlib_dir().glob("*.astral")):
        tree = parse(Source(f"stdlib/{path.name}", path.read_text(encoding="utf-8")))
        for item in tree.items:
            if not isinstance(item, ast.Decl) or item.kind.name != "switch":
                continue
            fields = {f.name.name: f.value for f in item.body or ()
                      if isinstance(f, ast.Field)}
            if "ports" in fields and "power" in fields:
                p = fields.get("protocol")
                out.append((item.name.name, p.name if isinstance(p, ast.Name) else None))
    return tuple(out)


def _unreached(fabric: Instance, rails, planes, hosts, rails_used,
               planes_used) -> List[Diagnostic]:
    """W610: rails or planes that no NIC port reaches, or NICs that split unevenly over the
    rails."""
    out = []
    if not hosts.kinds:
        return out
    if planes_used < planes:
        letters = ", ".join(chr(ord("A") + p) if p < 26 else str(p)
                            for p in range(planes_used, planes))
        out.append(warning("W610", f"`planes = {planes}` but the NICs have {hosts.ports_per_nic} "
                                   f"port{'s' if hosts.ports_per_nic > 1 else ''} each: no port "
                                   f"lands on plane {letters}, so no switches are counted there",
                           fabric.span_of("planes"),
                           f"use NICs with {planes} ports, or write `planes = {planes_used}`"))
    nics = sorted({k[1] for k in hosts.kinds if k[0]})
    for n in nics:
        if n and n < rails:
            out.append(warning("W610", f"`rails = {rails}` but hosts have {n} NICs: rails "
                                       f"{n}..{rails - 1} have no ports, so no switches are "
                                       f"counted there", fabric.span_of("rails"),
                               f"write `rails = {n}`, or give the hosts {rails} NICs"))
        elif n % rails:
            out.append(warning("W610", f"`rails = {rails}` but hosts have {n} NICs: the rails get "
                                       f"{n // rails + 1} or {n // rails} NICs per host, and each "
                                       f"rail's switches are counted for its own ports (rail 0's "
                                       f"the most)",
                               fabric.span_of("rails"),
                               "make the NICs per host a multiple of `rails`"))
    return out
