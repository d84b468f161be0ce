"""All engineering checks of a design in one pass: network, then power (which counts the
network's switches in the IT load), then cooling (which takes the heat and the losses); and the
same under each scenario."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple


from astral_dsl import gcpause, records
from astral_dsl.analyses import declarations, network_failures
from astral_dsl.analyses import scenarios as scen
from astral_dsl.analyses.cooling import CoolingResult, analyse_cooling
from astral_dsl.analyses.network import fabric_counts
from astral_dsl.analyses.network_records import FabricCount
from astral_dsl.analyses.power import PowerResult, analyse_power
from astral_dsl.analyses.served import Served
from astral_dsl.analyses.utilization import Averages
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.diagnostics import Diagnostic, Related, Severity, sort_diagnostics
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.uses import noted


@records.frozen(slots=False)
class Engineering:
    fabrics: Tuple[FabricCount, ...]
    power: PowerResult
    cooling: CoolingResult
    diagnostics: Tuple[Diagnostic, ...]
    notes: Tuple[str, ...] = ()

    @property
    def network_w(self) -> float:
        return sum(f.power_w for f in self.fabrics)

    @property
    def requirements(self):
        return self.power.requirements + self.cooling.requirements


@gcpause.pausing    # the analyses allocate as they walk the model: no pass rescans it meanwhile
def analyse(design: Design, applied: Optional[scen.Applied] = None) -> Engineering:
    cache: Dict = {}
    d = applied.design if applied is not None else design
    fabrics = tuple(network_failures.counts(d, cache, applied.tier_failures, applied.fabric)
                    if applied is not None else fabric_counts(d, cache))
    mult = multiplicities(d)
    served = Served(d, mult, Resolver(d), cache, fabrics)
    averages = Averages(d, mult, cache)
    power = analyse_power(d, fabrics, cache, applied.failed if applied else frozenset(),
                          served, averages)
    overrides = {(path, "failed_cdus"): n for path, n in (applied.failed_cdus if applied else ())}
    cooling = analyse_cooling(d, power, cache, overrides, fabrics, served, averages,
                              applied.failed if applied else frozenset())
    diags: List[Diagnostic] = []
    for f in fabrics:
        diags.extend(f.diagnostics)
    diags.extend(power.diagnostics)
    diags.extend(cooling.diagnostics)
    diags.extend(served.diagnostics)
    diags.extend(declarations.undeclared_power(d))
    diags.extend(declarations.unused_fields(d, mult))
    # a fabric part the analysis rejected (E214, E219) is not said failed
    notes = (scen.settled(applied, fabrics).notes + tuple(n for f in fabrics for n in f.notes)) \
        if applied else ()
    # at a stdlib template's argument, the note of the template's line that reads it
    return Engineering(fabrics, power, cooling, sort_diagnostics(noted(diags, d.instances)),
                       notes)


@records.frozen(slots=False)
class ScenarioOutcome:
    name: str
    required: bool
    notes: Tuple[str, ...]
    broken: Tuple[Diagnostic, ...]      # diagnostics that appear only under the scenario
    result: Engineering
    applied: Optional[scen.Applied] = None   # the design under the scenario and what it failed


def _key(d: Diagnostic):
    return (d.code, d.span, d.message)


def known(baseline: Engineering, design: Design) -> frozenset:
    """What the baseline already reports, for telling what a scenario changes: a diagnostic of
    the same code at the same source is the same problem under a scenario, even when its
    message names another replica (the twin isolates the parts the scenario names, so the
    rest may be renumbered). `is_new` asks it; the scenario check and the review's scenario
    matrix share both."""
    return frozenset((d.code, d.span) for d in baseline.diagnostics + design.diagnostics)


def is_new(d: Diagnostic, before: frozenset) -> bool:
    return (d.code, d.span) not in before


def run_scenario(design: Design, scenario: Instance, baseline: Engineering,
                 twin: Design) -> ScenarioOutcome:
    """A scenario checked: `twin` is `design` compiled under it (Workspace.under: the parts it
    names isolated, its `set`s in place, its own checks run); its `fail`s are applied and the
    result checked against the `baseline`. A pure function of the four."""
    before = known(baseline, design)
    found = tuple(d for d in twin.diagnostics if d.code not in ("E680", "W680"))
    twin_scenario = next((s for s in twin.scenarios if s.template == scenario.template), None)
    if twin_scenario is None or any(d.is_error and d.code != "E500" for d in found):
        # the scenario itself does not compile: report what it breaks, analyse nothing more
        applied = scen.Applied(twin, frozenset(), (), (), ())
        broken = tuple(d for d in found if d.is_error and is_new(d, before))
        return ScenarioOutcome(scenario.template, scenario.field("required") is True, (),
                               sort_diagnostics(broken), baseline, applied)
    applied = scen.apply(twin, twin_scenario)
    result = analyse(twin, applied)
    applied = scen.settled(applied, result.fabrics)
    broken = tuple(d for d in found + result.diagnostics if d.is_error and is_new(d, before))
    return ScenarioOutcome(scenario.template, scenario.field("required") is True, result.notes,
                           sort_diagnostics(broken), result, applied)


# a scenario that names a part wrongly is itself in error, whether or not it is required
NAMING = ("E214", "E219")


def scenario_diagnostics(outcome: ScenarioOutcome, scenario: Instance) -> List[Diagnostic]:
    named = [d for d in outcome.broken if d.code in NAMING]
    broken = [d for d in outcome.broken if d.code not in NAMING]
    if not broken:
        return named
    code, severity = ("E680", Severity.ERROR) if outcome.required else ("W680", Severity.WARNING)
    what = "required scenario" if outcome.required else "scenario"
    # each broken constraint, then its own notes (what it counts, its arithmetic) under it
    notes = tuple(note for d in broken for note in
                  (f"breaks: [{d.code}] {d.message}", *(f"[{d.code}] {n}" for n in d.notes)))
    # where each broken constraint stands: a related span each (a snippet in the terminal,
    # a range in JSON and editors), labelled with its code as its note is
    related = tuple(dict.fromkeys(Related(d.span, f"[{d.code}] breaks here")
                                  for d in broken if d.span is not None))
    return named + [Diagnostic(code, severity, f"{what} `{outcome.name}` breaks {len(broken)} "
                                               f"constraint(s)", scenario.span, None,
                               notes=notes, related=related)]
