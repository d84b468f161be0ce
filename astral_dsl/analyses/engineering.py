"""All engineering checks of a design in one pass: network, then power (which counts the
network's switches in the IT load), then cooling (which takes the heat and the losses); and the
same under each scenario."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.analyses import declarations
from astral_dsl.analyses import scenarios as scen
from astral_dsl.analyses.cooling import CoolingResult, analyse_cooling
from astral_dsl.analyses.network import FabricCount, fabric_counts
from astral_dsl.analyses.power import PowerResult, analyse_power
from astral_dsl.analyses.served import Served
from astral_dsl.analyses.walk import Resolver, multiplicities
from astral_dsl.diagnostics import Diagnostic, Severity, sort_diagnostics
from astral_dsl.model.design import Design, Instance


@attrs.frozen
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


def analyse(design: Design, applied: Optional[scen.Applied] = None) -> Engineering:
    cache: Dict = {}
    d = applied.design if applied is not None else design
    fabrics = tuple(fabric_counts(d, cache, applied.tier_failures if applied else ()))
    network_w = sum(f.power_w for f in fabrics)
    mult = multiplicities(d)
    served = Served(d, mult, Resolver(d), cache)
    power = analyse_power(d, network_w, cache, applied.failed if applied else frozenset(),
                          served)
    overrides = {(path, "failed_cdus"): n for path, n in (applied.failed_cdus if applied else ())}
    cooling = analyse_cooling(d, power.it_average_w, power.conversion_loss_w, network_w, cache,
                              overrides, fabrics, served)
    diags: List[Diagnostic] = []
    for f in fabrics:
        diags.extend(f.diagnostics)
    diags.extend(power.diagnostics)
    diags.extend(cooling.diagnostics)
    diags.extend(served.diagnostics)
    diags.extend(declarations.undeclared_power(d))
    diags.extend(declarations.undeclared_switch_power(d, fabrics))
    diags.extend(declarations.unused_fields(d, mult))
    return Engineering(fabrics, power, cooling, sort_diagnostics(diags),
                       applied.notes if applied else ())


@attrs.frozen
class ScenarioOutcome:
    name: str
    required: bool
    notes: Tuple[str, ...]
    broken: Tuple[Diagnostic, ...]      # diagnostics that appear only under the scenario
    result: Engineering


def _key(d: Diagnostic):
    return (d.code, d.span, d.message)


def run_scenario(design: Design, scenario: Instance, baseline: Engineering,
                 recompiled: Optional[Design] = None) -> ScenarioOutcome:
    """`recompiled`: the design compiled again with the scenario's `set`s in place, so that
    everything computed from a changed value, user `check`s included, follows it."""
    before = {(d.code, d.span) for d in baseline.diagnostics + design.diagnostics}
    found: Tuple[Diagnostic, ...] = ()
    if recompiled is not None:
        twin = next((s for s in recompiled.scenarios if s.template == scenario.template),
                    scenario)
        design, scenario = recompiled, twin
        found = tuple(d for d in recompiled.diagnostics if d.code not in ("E680", "W680"))
    applied = scen.apply(design, scenario)
    result = analyse(design, applied)
    broken = tuple(d for d in found + result.diagnostics
                   if d.is_error and (d.code, d.span) not in before)
    return ScenarioOutcome(scenario.template, scenario.field("required") is True, applied.notes,
                           sort_diagnostics(broken), result)


def scenario_diagnostics(outcome: ScenarioOutcome, scenario: Instance) -> List[Diagnostic]:
    if not outcome.broken:
        return []
    code, severity = ("E680", Severity.ERROR) if outcome.required else ("W680", Severity.WARNING)
    what = "required scenario" if outcome.required else "scenario"
    notes = tuple(f"breaks: [{d.code}] {d.message}" +
                  (f" ({d.span.file}:{d.span.start.line})" if d.span else "")
                  for d in outcome.broken)
    return [Diagnostic(code, severity, f"{what} `{outcome.name}` breaks {len(outcome.broken)} "
                                       f"constraint(s)", scenario.span, None,
                       notes=notes)]
