"""The links of a fabric, layer by layer: what each layer is built with, the cables and
transceivers it needs, and the power of the optics on each tier's switches.

A layer is the downlinks of one tier (host-tor, tor-agg, agg-core), described on that tier by
`medium` (one, or several in order of preference) and `length` (its longest run). Rules:
- The medium used is the first whose `reach` covers `length` (E608 when none does): a DAC of a
  few metres for in-rack runs, optics beyond. Without `length` the first is assumed to reach
  (W609).
- Copper (`dac`, `acc`, `aec`) needs no transceiver; an `aoc` has its optics built into the
  cable. Both are counted as cable assemblies: one per connector at the end whose connectors
  carry more links, so a breakout cable counts once.
- `optics`: a transceiver at each end, `ports` links per module at the tier's switches and
  `lower_ports` at the other end (a twin-port 2 x 400G OSFP module carries two links; an
  800G module broken out to 4 x 200G counts once for its four links); one fibre per link.
- Modules per switch: the links spread as evenly as possible over the switches of a group
  (formulas.modules_for); the NIC end needs ceil(ports per host / `lower_ports`) per host.
- Power: a tier's switches draw the power of their modules: the upper end of their own layer and
  the lower end of the layer above (or the tier's declared `optics_power` per switch, E612 when
  both are declared). A passive DAC draws nothing. Modules at the NICs draw from the host, whose
  declared power includes them (vendor system figures do). Undeclared power is W607.
- A layer with no declared medium is counted with one single-port transceiver at each end
  (W608).
- Modules per switch must fit its cages (E610); media fit the ports they plug into (E609).
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple


from astral_dsl import records
from astral_dsl.analyses import formulas
from astral_dsl.analyses.field_reading import error, si, symbol_name, warning
from astral_dsl.diagnostics import Diagnostic, Span
from astral_dsl.model.design import Instance, Ref
from astral_dsl.model.values import ListValue
from astral_dsl.units import Quantity, format_number


@records.frozen(slots=False)
class LinkLayer:
    tier: str                        # the tier whose downlinks these are
    below: str                       # "host" or the tier below
    links: int
    speed: Optional[Quantity]
    medium: Optional[str]            # path of the medium used (None: not declared)
    medium_type: Optional[str]       # dac, acc, aec, aoc, optics
    length_m: Optional[float]        # declared longest run
    reach_m: Optional[float]         # the medium's reach
    cables: int                      # cable assemblies (copper, AOC) or fibres (optics)
    upper_modules: int               # modules or connectors at the tier's switches
    lower_modules: int               # at the NICs or the lower tier's switches
    upper_module_w: Optional[float]  # power of one module (None: not declared, 0 W counted)
    lower_module_w: Optional[float]
    span: Optional[Span] = None
    medium_name: Optional[str] = None     # the medium's template name, for reports

    @property
    def transceivers(self) -> int:
        """Pluggable transceivers (optics at both ends; assumed so when no medium is
        declared): copper needs none and an AOC has its own."""
        if self.medium_type in ("optics", None):
            return self.upper_modules + self.lower_modules
        return 0


@records.frozen(slots=False)
class _Medium:
    inst: Instance
    type: str
    reach: Optional[float]
    speed: Optional[Quantity]
    form_factor: Optional[str]
    ports: int
    power: Optional[float]
    lower_form_factor: Optional[str]
    lower_ports: int
    lower_power: Optional[float]


def _medium(inst: Instance) -> _Medium:
    kind = symbol_name(inst.field("type")) or "optics"
    ports = int(si(inst.field("ports")) or 1)
    lower_ports = int(si(inst.field("lower_ports")) or 1)
    ff = symbol_name(inst.field("form_factor"))
    lower_ff = symbol_name(inst.field("lower_form_factor")) or ff
    power = si(inst.field("power"))
    lower_power = si(inst.field("lower_power"))
    if lower_power is None and lower_ports == ports and lower_ff == ff:
        lower_power = power                 # the same module at both ends
    if kind == "dac":                       # passive copper draws nothing
        power = 0.0 if power is None else power
        lower_power = 0.0 if lower_power is None else lower_power
    return _Medium(inst, kind, si(inst.field("reach")), inst.field("speed"), ff, ports, power,
                   lower_ff, lower_ports, lower_power)


def _media(tier: Instance, by_path: Dict[str, Instance]) -> List[_Medium]:
    value = tier.field("medium")
    items = value.items if isinstance(value, ListValue) else ((value,) if value else ())
    out = []
    for item in items:
        inst = by_path.get(item.path) if isinstance(item, Ref) else \
            item if isinstance(item, Instance) else None
        if inst is not None:
            out.append(_medium(inst))
    return out


def _m(x: float) -> str:
    return f"{format_number(round(x, 3))} m"


def link_layers(fabric: Instance, tier_insts, tiers, switches, hosts, mult: int,
                by_path) -> Tuple[List[LinkLayer], List[float], List[Diagnostic]]:
    """The link layers of one fabric, the optics power of each tier (whole tier, W) and the
    diagnostics about media."""
    diags: List[Diagnostic] = []
    layers: List[LinkLayer] = []
    chosen: List[Optional[_Medium]] = []
    unmeasured = []
    for i, (tier, tc) in enumerate(zip(tier_insts, tiers)):
        prev = tiers[i - 1] if i else None
        media = _media(tier, by_path)
        length = si(tier.field("length"))
        medium = None
        if media:
            if length is None:
                medium = media[0]
                unmeasured.append((tier, tc, medium))
            else:
                medium = next((m for m in media if m.reach is not None
                               and m.reach >= length - 1e-9), None)
                if medium is None:
                    best = max(media, key=lambda m: m.reach or 0.0)
                    diags.append(error(
                        "E608", f"tier `{tc.name}`'s links run {_m(length)} but "
                                f"{_names(media)} reach{'es' if len(media) == 1 else ''} at most "
                                f"{_m(best.reach or 0.0)}", tier.span_of("length"),
                        "add a medium that reaches that far to `medium` (optics for runs "
                        "beyond copper's few metres), or shorten the run"))
                    medium = best
            diags.extend(_fit(tier, tc, medium, switches[i], switches[i - 1] if i else None,
                              hosts))
        chosen.append(medium)
        layers.append(_layer(tier, tc, prev, medium, length, hosts, mult))
    optics = _optics(tier_insts, tiers, layers, chosen, diags)
    diags.extend(_cages(tier_insts, tiers, switches, chosen))
    diags.extend(_undeclared(tier_insts, tiers, layers, unmeasured))
    return layers, optics, diags


def _names(media: List[_Medium]) -> str:
    return ", ".join(f"`{m.inst.path}`" for m in media)


def _layer(tier: Instance, tc, prev, medium: Optional[_Medium], length, hosts,
           mult) -> LinkLayer:
    links = tc.down_links
    below = "host" if prev is None else prev.name
    if medium is None:
        return LinkLayer(tc.name, below, links, tc.down_speed, None, None, length, None, links,
                         links, links, None, None, tier.span)
    per_group = links / tc.groups if tc.groups else 0
    upper = _group_modules(tc, medium.ports) if tc.by_group else \
        tc.groups * formulas.modules_for(per_group, tc.per_group, medium.ports) \
        if not tc.sizes else _upper_modules(tc, medium.ports)
    if prev is None:
        lower = sum(n * mult * math.ceil(ports / medium.lower_ports)
                    for n, _, ports, _ in hosts.kinds)
    else:
        lower = prev.switches * math.ceil(prev.up_ports / medium.lower_ports)
    if medium.type == "optics":
        cables = links
    else:
        cables = upper if medium.ports >= medium.lower_ports else lower
    return LinkLayer(tc.name, below, links, tc.down_speed, medium.inst.path, medium.type, length,
                     medium.reach, cables, upper, lower, medium.power, medium.lower_power,
                     tier.span_of("medium"), medium.inst.template)


def _upper_modules(tc, ports: int) -> int:
    """Modules at the upper ends of a tier whose groups differ in size (network_groups): each
    group's links over its switches. tc.groups = scope instances x split x owners."""
    replicas = tc.groups // max(1, sum(r[0] for r in tc.sizes))    # split x owners
    return replicas * sum(r[0] * formulas.modules_for(r[4], r[2], ports)
                          for r in tc.sizes if r[2])


def _group_modules(tc, ports: int) -> int:
    """Modules at the upper ends of a tier whose groups differ within a scope instance (by rail
    or plane: network_groups.by_group): each group's links over its own switches, in each of
    the owner's replicas (its switches over those of one)."""
    one = sum(n * sum(size for _, size, _, _ in g) for _, n, g in tc.by_group)
    replicas = tc.switches // one if one else 0
    return replicas * sum(n * sum(formulas.modules_for(links, size, ports)
                                  for _, size, _, links in g if size)
                          for _, n, g in tc.by_group)


def _fit(tier: Instance, tc, medium: _Medium, switch, lower_switch, hosts) -> List[Diagnostic]:
    """E609: the medium's link speed and form factors fit the link and the cages at both
    ends."""
    out = []
    span = tier.span_of("medium")
    name = medium.inst.path
    if isinstance(medium.speed, Quantity) and tc.down_speed is not None \
            and abs(medium.speed.si - tc.down_speed.si) > 1e-6 * tc.down_speed.si:
        out.append(error("E609", f"`{name}` carries {medium.speed} links but tier `{tc.name}`'s "
                                 f"downlinks run at {tc.down_speed}", span,
                         "choose a medium of the links' speed (a breakout medium for split "
                         "ports)"))
    ends = [("the upper", medium.form_factor, [switch])]
    lower = [lower_switch] if lower_switch is not None else list(hosts.nics)
    ends.append(("the lower", medium.lower_form_factor, lower))
    for end, ff, parts in ends:
        for part in parts:
            cage = symbol_name(part.field("form_factor")) if part is not None else None
            if ff and cage and ff != cage:
                out.append(error("E609", f"`{name}` has {ff} modules at {end} end but "
                                         f"`{part.path}` has {cage} cages", span,
                                 f"choose a medium with {cage} modules at {end} end"))
    return out


def _optics(tier_insts, tiers, layers, chosen, diags) -> List[float]:
    """Optics power per tier (whole tier, W); E612 when a tier declares `optics_power` and its
    media declare module power too; W607 when modules at switches have no power."""
    out = []
    zero = []
    for i, (tier, tc) in enumerate(zip(tier_insts, tiers)):
        own = layers[i] if chosen[i] is not None else None
        above = layers[i + 1] if i + 1 < len(layers) and chosen[i + 1] is not None else None
        declared = tier.field("optics_power")
        sides = []
        if own is not None:
            sides.append((own.upper_modules, own.upper_module_w, chosen[i], "power", i))
        if above is not None:
            # the lower end's modules take `power` only where they are the upper end's
            m = chosen[i + 1]
            same = m.lower_ports == m.ports and m.lower_form_factor == m.form_factor
            sides.append((above.lower_modules, above.lower_module_w, m,
                          "power" if same else "lower_power", i + 1))
        if isinstance(declared, Quantity):
            twice = [m for _, w, m, _, _ in sides if w and m.type != "dac"]
            if twice:
                diags.append(error("E612", f"tier `{tc.name}` declares `optics_power` and its "
                                           f"media {_names(twice)} declare the power of their "
                                           f"modules: the optics would be counted twice",
                                   tier.span_of("optics_power"),
                                   "remove `optics_power`: the optics are counted from the "
                                   "media"))
            out.append(declared.si * tc.switches)
            continue
        total = 0.0
        for modules, w, m, field, j in sides:
            if w is None:
                if modules:
                    zero.append((j, tc, modules, m, field))
            else:
                total += modules * w
        out.append(total)
    if zero:
        count = sum(n for _, _, n, _, _ in zero)
        first = tier_insts[zero[0][0]]       # the tier whose medium it is
        media = sorted({(m.inst.path, field) for _, _, _, m, field in zero})
        said = ", ".join(f"`{f}` of `{m}`" + (" (its lower end's modules, not its upper end's)"
                                               if f == "lower_power" else "")
                         for m, f in media)
        diags.append(warning(
            "W607", f"optics power not declared: {count:,} modules on the network's switches "
                    f"are counted as 0 W", first.span_of("medium"),
            f"declare the module {said} from the transceiver's data sheet (or the tier's "
            f"`optics_power`)",
            [f"tier `{tc.name}`: {n:,} x `{m.inst.path}`" + (
                "" if tiers[j] is tc else f", the lower ends of tier `{tiers[j].name}`'s links")
             for j, tc, n, m, _ in zero]))
    return out


def _cages(tier_insts, tiers, switches, chosen) -> List[Diagnostic]:
    """E610: the modules (or cable connectors) on one switch fit its cages."""
    out = []
    for i, (tier, tc, switch) in enumerate(zip(tier_insts, tiers, switches)):
        cages = si(switch.field("cages")) if switch is not None else None
        if cages is None or chosen[i] is None:
            continue
        down = math.ceil(tc.down_ports / chosen[i].ports)
        parts = [f"{down} for {tc.down_ports} downlinks at {chosen[i].ports} per module"]
        up = 0
        if tc.up_ports and i + 1 < len(tiers) and chosen[i + 1] is not None:
            up = math.ceil(tc.up_ports / chosen[i + 1].lower_ports)
            parts.append(f"{up} for {tc.up_ports} uplinks at {chosen[i + 1].lower_ports} "
                         f"per module")
        at_least = ""
        if tc.up_ports and not up:      # the uplinks' medium is not declared (W608)
            at_least = "at least "
            parts.append(f"before those of its {tc.up_ports} uplinks, whose medium is not "
                         f"declared")
        if down + up > cages:
            out.append(error("E610", f"tier `{tc.name}` needs {at_least}{down + up} modules per "
                                     f"switch "
                                     f"({'; '.join(parts)}) but `{switch.path}` has "
                                     f"{format_number(cages)} cages", tier.span_of("medium"),
                             "use modules with more ports each (twin-port or breakout), or "
                             "fewer links per switch"))
    return out


def _undeclared(tier_insts, tiers, layers, unmeasured) -> List[Diagnostic]:
    """W608 (no medium) and W609 (no length), one each per fabric."""
    out = []
    bare = [(ti, tc, l) for ti, tc, l in zip(tier_insts, tiers, layers)
            if l.medium is None and l.links]
    if bare:
        links = sum(l.links for _, _, l in bare)
        out.append(warning(
            "W608", f"link medium not declared: {links:,} links are counted with one "
                      f"single-port transceiver at each end ({2 * links:,}), whose power counts "
                      f"only through a tier's `optics_power`", bare[0][0].span,
            "declare each tier's `medium` (e.g. a DAC for in-rack runs, optics beyond) and "
            "`length`",
            [f"tier `{tc.name}`: {l.links:,} {l.below}-{tc.name} links" for _, tc, l in bare]))
    if unmeasured:
        tier, tc, medium = unmeasured[0]
        what = (f"tier `{tc.name}`'s links are assumed to be within the "
                f"{_m(medium.reach or 0.0)} reach of `{medium.inst.path}`"
                if len(unmeasured) == 1 else
                "the links of tiers " + ", ".join(f"`{t.name}`" for _, t, _ in unmeasured)
                + " are assumed to be within their media's reach")
        out.append(warning(
            "W609", f"link length not declared: {what}",
            tier.span_of("medium"), "declare the longest run: `length = 3 m`",
            [f"tier `{t.name}`: `{m.inst.path}` assumed to reach ({_m(m.reach or 0.0)})"
             for _, t, m in unmeasured]))
    return out
