"""The scenarios of a check (pipeline.py, step 19): which ones run (named, required, or all of
them, at most MAX_SCENARIOS), each on its twin compiled by the workspace; E216 for a name that
is no scenario of the design, E408 past the limit; and a scenario's twin with its failures
applied, which forecasts and pictures under a scenario use."""
from __future__ import annotations

from typing import TYPE_CHECKING, List

from astral_dsl.diagnostics import Diagnostic, Severity, did_you_mean
from astral_dsl.model.design import Design
from astral_dsl.semantics.overrides import Option, command_line

if TYPE_CHECKING:
    from astral_dsl.analyses.engineering import Engineering
    from astral_dsl.workspace import Workspace


def unknown_scenarios(design: Design, wanted, option: Option = command_line
                      ) -> List[Diagnostic]:
    """E216 for each name of `wanted` that is no scenario of the design, with the scenarios it
    could be: what every command says of an unknown `--scenario` (exit 1), naming it by
    `option` (semantics/overrides.py: the command's `--scenario NAME`, the API's
    `scenario='NAME'`)."""
    known = {s.template: s for s in design.scenarios}
    return [Diagnostic("E216", Severity.ERROR,
                       f"{option(name, flag='--scenario')}: no such scenario", None,
                       did_you_mean(name, known) or (
                           "scenarios: " + ", ".join(sorted(known)) if known
                           else "the design declares no scenario"), file=design.file)
            for name in sorted(wanted - set(known))]


# Each scenario checked is a whole compile of the design under it: one check runs at most this
# many (E408 names the rest), so that its work is the design's size times at most 65, not the
# number of scenarios a file can hold (an 8 MiB file holds 100,000 of them).
MAX_SCENARIOS = 64


def _chosen(design: Design, wanted, every: bool, required: bool = True) -> list:
    return [s for s in design.scenarios
            if every or s.template in wanted or (required and s.field("required") is True)]


def too_many_scenarios(design: Design, wanted, every: bool, required: bool = True
                        ) -> List[Diagnostic]:
    chosen = _chosen(design, wanted, every, required)
    if len(chosen) <= MAX_SCENARIOS:
        return []
    first, rest = chosen[MAX_SCENARIOS], len(chosen) - MAX_SCENARIOS - 1
    which = f"`{first.template}` and the {rest:,} after it are" if rest else \
        f"`{first.template}` is"
    return [Diagnostic(
        "E408", Severity.ERROR, f"{len(chosen):,} scenarios to check, more than the "
        f"{MAX_SCENARIOS} one check runs: {which} not checked", first.span,
        "each scenario is a whole compile of the design: mark fewer `required = true`, or "
        "check the others by name (`--scenario NAME`)", file=design.file)]


def run_scenarios(workspace: "Workspace", design: Design, eng: "Engineering", wanted,
                  every: bool = False, required: bool = True):
    """(outcome, scenario) of each scenario to run: named in `wanted`, required, or all of
    them (`every`), each on its twin compiled by the workspace; the first MAX_SCENARIOS."""
    from astral_dsl.analyses.engineering import run_scenario

    for scenario in _chosen(design, wanted, every, required)[:MAX_SCENARIOS]:
        twin = workspace.recompile(design, scenario=scenario)
        yield run_scenario(design, scenario, eng, twin), scenario


def scenario_twin(workspace: "Workspace", design: Design, name: str):
    """The design compiled under scenario `name` with its failures applied
    (analyses.scenarios.Applied), or None when the design declares no such scenario."""
    from astral_dsl.analyses import scenarios as scen

    found = [s for s in design.scenarios if s.template == name]
    if not found:
        return None
    twin = workspace.recompile(design, scenario=found[0])
    twin_scenario = next(s for s in twin.scenarios if s.template == name)
    applied = scen.apply(twin, twin_scenario)
    if not applied.fabric:
        return applied
    # the fabric parts the failure analysis rejects (E214, E219) are not said failed
    from astral_dsl.analyses import network_failures

    return scen.settled(applied, network_failures.counts(twin, {}, applied.tier_failures,
                                                         applied.fabric))


__all__ = ["MAX_SCENARIOS", "run_scenarios", "scenario_twin", "too_many_scenarios",
           "unknown_scenarios"]
