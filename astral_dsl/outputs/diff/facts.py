"""What `astral diff` compares of one design: plain data (strings and numbers in ordered
dicts), so that two sides compare key by key. api/sides.py gathers a Side from the pipeline's
results with the shaping functions here:

- params and lets: the entry's top-level `param`s and `let`s as written (`4`, `45 kW`);
- values: every field and member of every instance (`Astral.pods[0].secondary.supply`), a
  job's placement as written and each scenario's actions (`hvdc_lost.actions`); params,
  lets and values compare by what they are (`identity`): `700 W` -> `0.7 kW` is no change;
- counts and power/cooling: the scalars of the size summary (outputs.size_report.size_summary,
  whatever keys it has; switches per tier as `switches_by_tier.tor`), split by what they count;
- bom: the purchase lines of outputs.report.bom, by (item, model, where);
- checks: each `check` as written, where, its outcome and its sides (checks.py);
- diagnostics: severity, code, message and where (the file relative to the project, the line;
  diagnostics.py);
- jobs: Seer's forecast of each job (iteration time, tokens/s, MFU), or the codes that stop it."""
from __future__ import annotations

from typing import Any, Dict, FrozenSet, Mapping, Tuple


import attrs

from astral_dsl import records
from astral_dsl.model.design import Instance
from astral_dsl.model.values import Bundle, Group, ListValue, show
from astral_dsl.units import Quantity, format_number

# size-summary scalars that count equipment; every other scalar is power or cooling
COUNT_KEYS = ("gpus", "hosts", "racks", "switches", "cdus", "feeders", "rectifier_modules")
SECTIONS = ("params", "lets", "values", "counts", "power", "bom", "checks", "diagnostics",
            "jobs")
# what a side that does not compile (front-end errors) cannot say: not compared then, rather
# than every value and figure of the other side "added" or "removed"
COMPILED_ONLY = ("values", "counts", "power", "bom", "jobs")
SECTION_TITLES = {"params": "parameters", "lets": "constants (let)",
                  "values": "source-level values", "counts": "counts",
                  "power": "power and cooling", "bom": "bill of materials", "checks": "checks",
                  "diagnostics": "diagnostics", "jobs": "job forecasts"}


@records.frozen
class Side:
    """One design's facts, and how to name it."""
    label: str                                   # `examples/a.astral`, `HEAD~1:examples/a.astral`
    valid: bool
    errors: int
    warnings: int
    facts: Mapping[str, Mapping[str, Any]]       # section -> key -> value
    unreadable: bool = False
    # section -> key -> what the value is, whatever its spelling (`700 W` and `0.7 kW` are the
    # same), for the sections whose facts are written as the source writes them
    same: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    # the checks' anchors: what pairs a check whose text changed (checks.py `pairs`)
    anchors: Mapping[str, Tuple[str, str, str, str]] = attrs.field(factory=dict)
    # the entry file as the side's diagnostics name it (`REV:path` for a revision): what a
    # diagnostic's `file` is in JSON, where the facts name it `""` (so that both sides compare)
    file: str = ""
    compiled: bool = True                        # no front-end errors: COMPILED_ONLY is known
    # the diagnostics' anchors: what pairs one whose message changed (diagnostics.py)
    diagnostic_anchors: Mapping[str, Tuple[str, str, str, str]] = attrs.field(factory=dict)
    # the keys of the diagnostics of the steps that need a compiled design (sizing, the
    # engineering checks, scenarios, jobs: E600 on): not compared with a side that does not
    # compile
    beyond_front_end: FrozenSet[str] = frozenset()


# the summary's mappings compared key by key (`switches_by_tier.tor`); the facility's power by
# component at the average and the peak (`facility.average.fans_kw`), without the entries that
# restate a headline scalar (it_power_*_kw, facility_power_*_kw, conversion_loss_*_kw,
# pump_power_kw, cdu_power_kw); the
# rest of the summary's mappings restate the headline (power_by_level adds up to it) or the
# source (the facility's declared fields are among the source-level values)
_MAPPINGS = ("switches_by_tier", "oversubscription")
_COMPONENTS = ("facility", ("average", "peak"),
               ("it_kw", "total_kw", "losses_kw", "pumps_kw", "cdus_kw"))


def flat(summary: Mapping[str, Any]) -> Dict[str, Any]:
    """The summary's scalars, its mappings of scalars as `key.subkey`, and the facility's
    power components as `facility.average.fans_kw`."""
    out: Dict[str, Any] = {}
    for k, v in summary.items():
        if isinstance(v, Mapping):
            if k in _MAPPINGS:
                out.update((f"{k}.{sub}", x) for sub, x in v.items()
                           if not isinstance(x, (Mapping, list, tuple)))
        elif not isinstance(v, (list, tuple)):
            out[k] = v
    name, bases, restated = _COMPONENTS
    for basis in bases:
        for sub, x in ((summary.get(name) or {}).get(basis) or {}).items():
            if sub not in restated and not isinstance(x, (Mapping, list, tuple)):
                out[f"{name}.{basis}.{sub}"] = x
    return out


def is_count(key: str) -> bool:
    return key in COUNT_KEYS or key.startswith("switches_by_tier.") or key.startswith("battery_ah")


def shown(v) -> str:
    """A value as the source states it: a replication by its templates (`4 x Node`), an
    instance by its template, a quantity to the digits the diff's figures have (`rounded`),
    everything else as the model shows it."""
    if isinstance(v, Quantity) and v.unit:
        return f"{rounded(v.magnitude)} {v.unit}"
    if isinstance(v, Quantity):
        return rounded(v.si)
    if isinstance(v, Group):
        return " + ".join(f"{r.count:,} x " + (f"[{shown(r.item)}]" if isinstance(r.item, Group)
                                               else _template(r.item)) for r in v.runs)
    if isinstance(v, Instance):
        return _template(v)
    return show(v)


def rounded(x: float) -> str:
    """A number as the diff prints its figures: 6 significant digits below 1,000, one decimal
    from there (a computed `9.848256457 kW`, a transformer's losses from its rating, is
    `9.84826 kW`); a whole number or one written with fewer digits as it is."""
    if x != x or abs(x) >= 1e15 or x == int(x):
        return format_number(x)
    return format_number(float(f"{x:.6g}") if abs(x) < 1000 else round(x, 1))


def _template(inst) -> str:
    return getattr(inst, "template", None) or show(inst)


def identity(v) -> Any:
    """What a value is, apart from the unit it is written in: a quantity by its dimension and
    its SI value to 12 significant digits (`0.7 kW` is 0.7 x 1000 W, which may differ from
    700 W in the last bit of the float), lists and bundles item by item, the rest as shown."""
    if isinstance(v, Quantity):
        return ("quantity", repr(v.dims), v.point, float(f"{v.si:.12g}"))
    if isinstance(v, ListValue):
        return ("list", tuple(identity(i) for i in v.items))
    if isinstance(v, Bundle):
        return ("bundle", v.count, identity(v.item))
    return shown(v)


def values(design, of=shown) -> Dict[str, Any]:
    """Every field and member of every instance, as the source states it (`of=identity`:
    what each is, for comparing); a field that names replicas (a job's `placement`) by its
    path as written, and each scenario's `fail`s and `set`s as `NAME.actions`."""
    out: Dict[str, Any] = {}
    for inst in design.instances + design.scenarios:
        routes = {k: r for k, r in inst.routes if r is not None}
        for name, v in inst.fields:
            # `Lab.pods[0].rows[0..7]` and `rows[8..15]` are both the instance the rows share
            out[f"{inst.path}.{name}"] = routes[name].display if name in routes else of(v)
        for m in inst.members:
            out.setdefault(f"{inst.path}.{m.name}", of(m.value))
    for scenario in design.scenarios:
        if scenario.actions:
            out[f"{scenario.path}.actions"] = _actions(scenario.actions, of)
    return dict(sorted(out.items()))


def _actions(actions, of) -> Any:
    """A scenario's actions as written (`fail Lab.pods[0].fabric.rail[3].plane[A].tor; set
    Lab.pods[0].secondary.supply = 45 degC`); with `of=identity`, what each does."""
    from astral_dsl.analyses.scenarios import as_written as written

    if of is identity:
        return tuple((a.verb, written(a), a.field, None if a.value is None else identity(a.value))
                     for a in actions)
    out = []
    for a in actions:
        if a.verb == "set":
            out.append(f"set {written(a)}.{a.field} = {show(a.value)}")
        elif a.value is not None:
            out.append(f"fail {show(a.value)} of {written(a)}")
        else:
            out.append(f"fail {written(a)}")
    return "; ".join(out)
