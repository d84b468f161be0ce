"""`astral check` as a function: the front end's diagnostics, then the engineering checks of a
valid design, then its scenarios (all of them, or the ones asked for)."""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

import attrs

from astral_dsl.analyses.engineering import (Engineering, ScenarioOutcome, analyse, run_scenario,
                                             scenario_diagnostics)
from astral_dsl.diagnostics import Diagnostic, Severity, did_you_mean, sort_diagnostics
from astral_dsl.model.design import Design
from astral_dsl.model.values import Symbol
from astral_dsl.units import Quantity


@attrs.frozen
class Checked:
    design: Design
    engineering: Optional[Engineering]
    scenarios: Tuple[ScenarioOutcome, ...]
    diagnostics: Tuple[Diagnostic, ...]
    sizing: Optional[object] = None

    @property
    def valid(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def check_design(design: Design, scenarios: Optional[Sequence[str]] = None,
                 all_scenarios: bool = False,
                 compile_with: Optional[Callable[[dict], Design]] = None) -> Checked:
    """`scenarios`: names to run; required scenarios always run; `all_scenarios` runs every one.
    `compile_with(assignments)` recompiles the design with values for its unknowns: a design
    with unknowns is sized first (analyses/sizing.py), then checked as sized."""
    sizing = None
    if design.unknowns and compile_with is not None and not front_end_errors(design):
        from astral_dsl.analyses.sizing import solve

        sizing = solve(compile_with, design)
        if sizing.diagnostics:
            return Checked(design, None, (), sort_diagnostics(
                [d for d in design.diagnostics if not d.is_error and d.code != "E500"]
                + list(sizing.diagnostics)), sizing)
        design = sizing.design
    diags: List[Diagnostic] = list(design.diagnostics)
    if front_end_errors(design):
        return Checked(design, None, (), sort_diagnostics(diags), sizing)
    from astral_dsl.seer.validate import validate_jobs

    # jobs are validated whether or not the entry file declares a site (it may import it)
    diags.extend(validate_jobs(design))     # parallel degrees, batch, placement, memory
    if not design.roots:
        return Checked(design, None, (), sort_diagnostics(diags), sizing)
    # a failed user `check` does not stop the engineering checks: they are independent
    eng = analyse(design)
    diags.extend(eng.diagnostics)
    outcomes = []
    wanted = set(scenarios or ())
    known = {s.template: s for s in design.scenarios}
    for name in sorted(wanted - set(known)):
        diags.append(Diagnostic("E216", Severity.ERROR, f"--scenario {name}: no such scenario",
                                None, did_you_mean(name, known) or (
                                    "scenarios: " + ", ".join(sorted(known)) if known
                                    else "the design declares no scenario"),
                                file=design.file))
    for scenario in design.scenarios:
        run = all_scenarios or scenario.template in wanted or scenario.field("required") is True
        if not run:
            continue
        outcome = run_scenario(design, scenario, eng, _recompiled(design, scenario, compile_with))
        outcomes.append(outcome)
        diags.extend(scenario_diagnostics(outcome, scenario))
    return Checked(design, eng, tuple(outcomes), sort_diagnostics(diags), sizing)


def front_end_errors(design: Design) -> bool:
    """Errors that no choice of the unknowns can mend (user checks may: sizing decides)."""
    return any(d.is_error and d.code not in ("E500",) for d in design.diagnostics)


def _recompiled(design: Design, scenario, compile_with) -> Optional[Design]:
    """The design compiled again under the scenario: its `set`s in place and its own checks run
    (None when it cannot be: no recompiler, a sized design, or a `set` of something other than
    a plain value)."""
    if compile_with is None or design.unknowns:
        return None
    sets = {}
    for action in scenario.actions:
        if action.verb != "set":
            continue
        if not action.frames or not isinstance(action.value, (Quantity, bool, str, Symbol)):
            return None
        for index, signature in action.frames:
            sets.setdefault(index, (signature, {}))[1][action.field] = action.value
    try:
        twin = compile_with(dict(design.assignments), sets, scenario.template)
    except TypeError:              # a recompiler that takes no scenarios
        return None
    return None if twin.sets_mismatch else twin
