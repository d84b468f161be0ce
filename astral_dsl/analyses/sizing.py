"""Sizing: choose the design's unknowns (`?`) to optimise the site's objective under every
constraint of the design.

Structural unknowns (replication counts such as `(? in 1..9) x Host`, catalog choices such as
`? in [Switch25T, Switch51T]`) change the design itself: `combinations` lists them, the
workspace compiles each (pipeline_sizing.size) and `choose` checks each (front end, user
checks, engineering checks, required scenarios on their twins). Equipment counts (`cdus = ?`, feeder `count`,
rectifier `modules`, battery `strings`) are integer variables whose least feasible values the
engineering checks derive for each combination. One mixed-integer program then picks the
combination and the counts together: a binary y_s per feasible combination (sum = 1) and, per
combination and count, an integer x_su with max(min_su, low_u) * y_s <= x_su <= high_u * y_s;
the objective is sum_s value_s * y_s plus, for cost, sum price_su * x_su. cvxpy solves it with
HiGHS (sizing_milp.py); without an equipment count the program is the choice of the best
combination, taken directly (no solver to import). Every combination that fails is remembered with the constraints that failed it, so an
infeasible design is reported with those constraints and their source lines."""
from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.cost import objective_value
from astral_dsl.analyses.engineering import Engineering, analyse, run_scenario
from astral_dsl.analyses.sizing_common import common_warnings, invalid_choices, \
    whatever_chosen, without
from astral_dsl.analyses.sizing_milp import milp
from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.model.design import Design, UnknownSite
from astral_dsl.model.values import Choice, Symbol
from astral_dsl.units import Quantity

# Each combination is a whole compile and check of the design (about 45 ms of CPU for the
# reference design, examples/astral.astral, with its required scenario): 256 of them cost about
# 12 s, which keeps `astral check` of a design with a `?` bounded in CI and under the language
# server's time limit. (It was 2,048: one `(? in 1..2000)` in the reference took 86 s.)
MAX_COMBINATIONS = 256
# ... and each combination that holds is compiled again under each required scenario: at most
# this many compiles in all (256 combinations with three required scenarios)
MAX_COMPILES = 1024


@records.frozen
class Combination:
    index: Tuple[int, ...]
    assignments: Dict[str, Any]
    feasible: bool
    value: float = 0.0                          # objective value of the structure (minimised)
    minima: Dict[str, int] = attrs.field(factory=dict)
    prices: Dict[str, float] = attrs.field(factory=dict)   # per unit of each count
    conflicts: Tuple[str, ...] = ()
    # each conflict's constraint: (code, source line), the same in every combination it fails
    binding: Tuple[Tuple[str, str], ...] = ()
    causes: Tuple[Optional[Span], ...] = ()     # the span of each of `binding`
    # the errors of the design itself (not of a required scenario, not a count past its range)
    errors: Tuple[Diagnostic, ...] = ()


@records.frozen
class Sizing:
    chosen: Tuple[Tuple[str, Any], ...]          # unknown key -> value
    objective: str
    sense: str
    value: Optional[float]
    design: Design                               # compiled with the chosen values
    combinations: int
    feasible: int
    diagnostics: Tuple[Diagnostic, ...]
    assigned: Tuple[Tuple[str, Any], ...] = ()   # what the chosen design is compiled with
    # about a choice that stands (W317, W800); when none does (E660), the warnings every
    # combination gives (sizing_common.py)
    warnings: Tuple[Diagnostic, ...] = ()


def _objective(design: Design) -> Tuple[str, str, Any, Optional[Span]]:
    for root in design.roots:
        for a in root.actions:
            if a.verb in ("minimize", "maximize"):
                return a.verb, getattr(a.target, "name", None) or a.field or "expression", \
                    a.target, a.span
    return "minimize", "cost", Symbol("cost"), None


def _structure_value(design: Design, eng: Engineering, target) -> float:
    if isinstance(target, Symbol):
        v = objective_value(design, eng, target.name)
        return v if v is not None else 0.0
    for root in design.roots:
        for a in root.actions:
            if a.verb in ("minimize", "maximize"):
                t = a.target
                if isinstance(t, Quantity):
                    return t.si
                if hasattr(t, "count"):
                    return float(t.count)
    return 0.0


@records.frozen
class Plan:
    """What sizing needs compiled: each combination of the structural unknowns (its index in
    their options, and the assignments to compile it with), or why it refuses (E661)."""
    items: Tuple[Tuple[Tuple[int, ...], Dict[str, Any]], ...] = ()
    refused: Optional[Sizing] = None


@records.frozen
class Candidate:
    """One combination compiled: the design, its engineering checks (None when the design is
    in error) and the twins of its required scenarios (when it passed)."""
    index: Tuple[int, ...]
    assignments: Dict[str, Any]
    design: Design
    engineering: Optional[Engineering]
    twins: Tuple[Design, ...] = ()


def combinations(design: Design) -> Plan:
    """The combinations of the design's structural unknowns to compile, in order."""
    sense, name, _, span = _objective(design)
    structural = [u for u in design.unknowns if u.role == "structural"]
    sizes = [len(u.options) for u in structural]
    total = 1
    for n in sizes:
        total *= n
    required = sum(1 for s in design.scenarios if s.field("required") is True)
    if total > MAX_COMBINATIONS or total * (1 + required) > MAX_COMPILES:
        why = f"more than the {MAX_COMBINATIONS:,} sizing explores" \
            if total > MAX_COMBINATIONS else \
            f"each compiled with its {required:,} required scenario(s): " \
            f"{total * (1 + required):,} compiles, more than the {MAX_COMPILES:,} sizing runs"
        return Plan(refused=_failed(design, sense, name, total, 0, [Diagnostic(
            "E661", Severity.ERROR, f"the unknowns have {total:,} combinations, {why}",
            _anchor(design, span),
            "narrow the options of `? in ...` (each combination is a full compile and check); "
            "leave an equipment count as a bare `?`")]))
    return Plan(tuple((index, {u.key: Choice(i) for u, i in zip(structural, index)})
                      for index in itertools.product(*[range(n) for n in sizes])))


def baseline(design: Design) -> Tuple[Optional[Engineering], Tuple[Any, ...]]:
    """The engineering checks of one compiled combination (None when it is not a design at
    all) and the required scenarios whose twins it needs (none when it already fails)."""
    if any(x.is_error and x.code != "E500" for x in design.diagnostics):
        return None, ()
    eng = analyse(design)                             # user checks and engineering together
    if any(x.is_error for x in design.diagnostics + eng.diagnostics):
        return eng, ()
    return eng, tuple(s for s in design.scenarios if s.field("required") is True)


def _anchor(design: Design, span):
    return span or (design.unknowns[0].span if design.unknowns else None)


def choose(design: Design, compiled) -> Sizing:
    """The choice among the compiled combinations (Candidates, in the order of `combinations`)
    and of the equipment counts: one MILP. The Sizing's `assigned` are what to compile the
    chosen design with (sized() then completes it)."""
    sense, name, target, span = _objective(design)
    structural = [u for u in design.unknowns if u.role == "structural"]
    counts = [u for u in design.unknowns if u.role == "count"]
    total = len(compiled)
    anchor = _anchor(design, span)
    combos = [_assess(c, counts, target, sense) for c in compiled]
    feasible = [c for c in combos if c.feasible]
    if not feasible:                   # what holds whatever the choice is kept (sizing_common)
        fixed = whatever_chosen(combos)
        rest = [without(c, fixed) for c in combos]
        # E660 besides, for what fails some choice otherwise; not when a choice fails for them
        # alone (mended, it may hold)
        more = [] if fixed and any(not c.conflicts for c in rest) else \
            [_infeasible(rest, structural, anchor)]
        return _failed(design, sense, name, total, 0, fixed + more,
                       common_warnings(compiled, structural))
    pick, xs = milp(feasible, counts, name == "cost")
    if pick is None:
        return _failed(design, sense, name, total, len(feasible), [Diagnostic(
            "E662", Severity.ERROR, "the sizing solver found no solution", anchor,
            "this is unexpected for a feasible design; please report it")])
    assign = dict(pick.assignments)
    for u in counts:
        assign[u.key] = Quantity(float(xs[u.key]))
    chosen = {u.key: u.options[i] for u, i in zip(structural, pick.index)}
    chosen.update({u.key: assign[u.key] for u in counts})
    value = pick.value + (sum(pick.prices.get(u.key, 0.0) * xs[u.key] for u in counts)
                          if name == "cost" else 0.0)
    if sense == "maximize":
        value = -value
    return Sizing(_in_source_order(chosen, design.unknowns), name, sense, value, design, total,
                  len(feasible), (), tuple(assign.items()),
                  tuple(_range_ends(design, chosen)) + _unpriced(design, name, span)
                  + invalid_choices(compiled, structural))


def rebuilt(design: Design, assigned: Dict[str, Any], objective: str, sense: str,
            value: Optional[float], combinations: int, feasible: int,
            diagnostics: Tuple[Diagnostic, ...], warnings: Tuple[Diagnostic, ...]) -> Sizing:
    """A choice sizing made before (analyses/sizing_cache.py), for the provisional `design`:
    the chosen values taken from its options again, as `choose` takes them."""
    if diagnostics:
        return _failed(design, sense, objective, combinations, feasible, diagnostics, warnings)
    chosen = {}
    for u in design.unknowns:
        v = assigned[u.key]
        chosen[u.key] = u.options[v.index] if u.role == "structural" else v
    if set(chosen) != set(assigned):
        raise ValueError("the entry is not of this design")
    return Sizing(_in_source_order(chosen, design.unknowns), objective, sense, value, design,
                  combinations, feasible, (), tuple(assigned.items()), warnings)


def _range_ends(design: Design, chosen: Dict[str, Any]):
    """W317 for each `? in a..b` sized to its end b: the value `..` did not include before it
    became inclusive (astral_dsl 0.2), so a design written then is sized differently now."""
    for u in design.unknowns:
        value = chosen.get(u.key)
        if not u.inclusive_end or value is None:
            continue
        if u.role == "structural":
            end = u.options[-1] if len(u.options) > 1 else None
            hit = end is not None and value == end
            low = u.options[0] if u.options else None
        else:
            end, low = Quantity(float(u.high)), Quantity(float(u.low))
            hit = u.high > u.low and isinstance(value, Quantity) and value.si == u.high
        if not hit:
            continue
        what = f"{u.owner}.{u.field}" if u.owner else "this `?`"
        yield Diagnostic(
            "W317", Severity.WARNING,
            f"sizing chose {_show(end)} for {what}, the end of its range `{_show(low)}.."
            f"{_show(end)}`, which `..` includes",
            u.span, f"if the range was written for the old `..` (which stopped before its end), "
                    f"write `{_show(low)}..<{_show(end)}`; to keep this choice, state the end "
                    f"as intended or accept it with `allow W317`",
            notes=("`a..b` includes b; `a..<b` stops before it",))


def _unpriced(design: Design, name: str, span) -> Tuple[Diagnostic, ...]:
    """W800 (as a sweep's cost): `minimize cost` where nothing declares a price counts every
    combination as 0 USD, and the choice falls to the fewest units."""
    if name != "cost" or any(isinstance(i.field("price"), Quantity) for i in design.instances):
        return ()
    stated = span is not None
    return (Diagnostic(
        "W800", Severity.WARNING,
        "the cost counts only the equipment with a declared price, and nothing declares one"
        + ("" if stated else " (a design without an objective is sized for the least cost)"),
        span if stated else _anchor(design, span),
        "declare a `price` on the equipment (prices are data, never built in), or state "
        "another objective (`maximize gpus`, `minimize power`)",
        notes=("every combination costs 0 USD: of those that hold, the one needing the fewest "
               "units of equipment is chosen, not the cheapest",)),)


def sized(choice: Sizing, final: Design) -> Sizing:
    """The choice with its design: `final`, compiled with `choice.assigned`, the chosen count
    fields marked."""
    counts = [u for u in choice.design.unknowns if u.role == "count"]
    final = attrs.evolve(final, chosen=choice.chosen, instances=_mark(final, counts),
                         assignments=choice.assigned, unknowns=choice.design.unknowns)
    return attrs.evolve(choice, design=final)


def _in_source_order(chosen: Dict[str, Any], unknowns) -> Tuple[Tuple[str, Any], ...]:
    return tuple((u.key, chosen[u.key]) for u in unknowns if u.key in chosen)


def _assess(candidate: Candidate, counts, target, sense) -> Combination:
    index, assign, d, eng = (candidate.index, candidate.assignments, candidate.design,
                             candidate.engineering)
    errors = [x for x in d.diagnostics if x.is_error]
    if eng is None:                                   # not a design at all: report as is
        return Combination(index, assign, False, conflicts=tuple(_describe(x) for x in errors),
                           binding=_binding(errors), causes=tuple(x.span for x in errors),
                           errors=tuple(errors))
    errors += [x for x in eng.diagnostics if x.is_error]
    requirements = list(eng.requirements)
    twins = dict(zip((s.template for s in d.scenarios if s.field("required") is True),
                     candidate.twins))
    for scenario in d.scenarios if not errors else ():   # required scenarios (N-1) too
        if scenario.field("required") is not True:
            continue
        outcome = run_scenario(d, scenario, eng, twins[scenario.template])
        if outcome.broken:
            return Combination(index, assign, False, conflicts=tuple(
                f"under required scenario `{outcome.name}`: {_describe(x)}"
                for x in outcome.broken), binding=_binding(outcome.broken, outcome.name),
                causes=tuple(x.span for x in outcome.broken))
        requirements.extend(r for r in outcome.result.requirements)
    minima: Dict[str, int] = {}
    prices: Dict[str, float] = {}
    labels: Dict[str, Any] = {}
    for r in eng.requirements:
        prices[r.key] = prices.get(r.key, 0.0) + r.price * r.units
    for r in requirements:
        if r.minimum > minima.get(r.key, -1):
            minima[r.key] = r.minimum
            labels[r.key] = r
    conflicts = [_describe(x) for x in errors]
    binding = list(_binding(errors))
    causes = [x.span for x in errors]
    for u in counts:
        need = max(minima.get(u.key, 0), u.low)
        if need > u.high:
            r = labels.get(u.key)
            why = f"{r.label} ({_where(r.span)})" if r is not None else "its requirement"
            conflicts.append(f"{u.owner}.{u.field} needs at least {need} for {why}, but "
                             f"`? in ...` at {_where(u.span)} allows at most {u.high}")
            binding.append((f"`{u.owner}.{u.field}` capped", _where(u.span)))
            causes.append(u.span)
    if conflicts:
        return Combination(index, assign, False, conflicts=tuple(conflicts),
                           binding=tuple(binding), causes=tuple(causes),
                           errors=tuple(errors))
    value = _structure_value(d, eng, target)
    if sense == "maximize":
        value = -value
    return Combination(index, assign, True, value, minima, prices)


def _mark(design: Design, counts: List[UnknownSite]):
    by_owner: Dict[str, List[str]] = {}
    for u in counts:
        by_owner.setdefault(u.owner, []).append(u.field)
    return tuple(attrs.evolve(i, chosen=tuple(by_owner[i.path])) if i.path in by_owner else i
                 for i in design.instances)


def _describe(d: Diagnostic) -> str:
    return f"[{d.code}] {d.message}" + (f" ({_where(d.span)})" if d.span else "")


def _binding(diags, scenario: Optional[str] = None) -> Tuple[Tuple[str, str], ...]:
    """The constraints `diags` break, as (code, source line): what stays the same from one
    combination to the next while their messages' numbers change."""
    under = f" under required scenario `{scenario}`" if scenario else ""
    return tuple((f"[{d.code}]{under}", _where(d.span)) for d in diags)


def _where(span) -> str:
    return f"{span.file}:{span.start.line}" if span is not None else "?"


def _infeasible(combos: List[Combination], structural, anchor) -> Diagnostic:
    """Every distinct reason the combinations fail, with the choices it applies to."""
    groups: Dict[Tuple[str, ...], List[Combination]] = {}
    for c in combos:
        groups.setdefault(c.conflicts, []).append(c)
    notes = []
    hint = "relax one of the conflicting constraints or widen the options"
    # the constraints every combination breaks: relaxing one of them is the way out, and the
    # first is where the diagnostic points (the objective causes nothing)
    common = set(combos[0].binding) if combos else set()
    for c in combos[1:]:
        common &= set(c.binding)
    if len(combos) > 1:
        for what, where in sorted(common, key=lambda b: combos[0].binding.index(b)):
            notes.append(f"every combination breaks {what} ({where})")
    if common:
        first = min(common, key=combos[0].binding.index)
        cause = dict(zip(combos[0].binding, combos[0].causes)).get(first)
        if cause is not None:
            anchor = cause
            hint = (f"every combination breaks this constraint ({first[0]}): relax it, or "
                    f"widen the options of the unknowns")
    for conflicts, members in sorted(groups.items(), key=lambda kv: kv[1][0].index)[:6]:
        if structural:
            choices = "; ".join(
                f"{_where(u.span)}:{u.span.start.column} = "
                + ", ".join(dict.fromkeys(_show(u.options[m.index[k]]) for m in members))
                for k, u in enumerate(structural))
            notes.append(f"with {choices}:")
        notes.extend(f"  {c}" for c in conflicts)
    if len(groups) > 6:
        notes.append(f"... and {len(groups) - 6} more kinds of failure")
    if len(combos) > 1:
        notes.append(f"all {len(combos):,} combinations of the unknowns fail")
    return Diagnostic("E660", Severity.ERROR,
                      "no choice of the unknowns satisfies every constraint", anchor, hint,
                      notes=tuple(notes))


def _show(v) -> str:
    if isinstance(v, Quantity):
        return str(v)
    return getattr(v, "path", None) or str(v)


def _failed(design, sense, name, total, feasible, diags, warnings=()) -> Sizing:
    return Sizing((), name, sense, None, design, total, feasible, tuple(diags),
                  warnings=tuple(warnings))
