"""`astral check` as a function: the front end's diagnostics, then the engineering checks of a
valid design, then its scenarios (all of them, or the ones asked for)."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import attrs

from astral_dsl.analyses.engineering import (Engineering, ScenarioOutcome, analyse, run_scenario,
                                             scenario_diagnostics)
from astral_dsl.diagnostics import Diagnostic, Severity, did_you_mean, sort_diagnostics
from astral_dsl.model.design import Design


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
                 all_scenarios: bool = False) -> Checked:
    """`scenarios`: names to run; required scenarios always run; `all_scenarios` runs every one.
    A design with unknowns is sized first (analyses/sizing.py), then checked as sized; each
    scenario compiles the design again under it (design.compilation)."""
    sizing = None
    if design.unknowns and not front_end_errors(design):
        from astral_dsl.analyses.sizing import solve

        sizing = solve(design)
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
        outcome = run_scenario(design, scenario, eng)
        outcomes.append(outcome)
        diags.extend(scenario_diagnostics(outcome, scenario))
    return Checked(design, eng, tuple(outcomes), sort_diagnostics(diags), sizing)


def front_end_errors(design: Design) -> bool:
    """Errors that no choice of the unknowns can mend (user checks may: sizing decides)."""
    return any(d.is_error and d.code not in ("E500",) for d in design.diagnostics)
