"""The compiler in one place: its passes and the steps of `astral check`, in order.

A ten-minute tour. A design is a `.astral` file; `api.py` is the public face, `workspace.py`
holds the modules read and parsed for one entry file and is the only caller of `front_end`
below (sizing, scenarios, sweeps and margins evaluate the same parsed source again through it).
Every pass is a plain function of its own module; this one only calls them in order.

Read and parse (once per workspace, `workspace.Workspace.open`):

 1. read        semantics/source_files.py `read_file`: a regular file of at most 8 MiB (E100, E108)
 2. decode      syntax/source.py: UTF-8 (a BOM allowed), lines and columns for spans (E101)
 3. parse       syntax/parser.py: Lark's LALR parser over grammar/astral.lark, then
                syntax/build.py: the AST with a span on every node (E1xx)
 4. imports     semantics/modules.py `ModuleLoader`: each import read and parsed in turn,
                never leaving the project or the stdlib (E2xx)

Evaluate (every compile, `front_end`):

 5. scopes      semantics/entry.py `module_scope` (scope.py): the names of each module, its
                templates, params, lets and imports bound (E21x)
 6. overrides   semantics/overrides.py: `--set NAME=VALUE` parsed against the params (E310)
 7. instantiate semantics/entry.py `instantiate_roots`: the sites, jobs and scenarios
                instantiated by semantics/instantiate.py, whose `Expressions` (evaluate.py)
                evaluate with units (units/) and types (coerce.py); a scenario's routes are
                isolated as their frames are made (isolate.py); each `?` is recorded;
                then `imported_values`: the params and lets of the project's other modules
 8. evaluate    semantics/complete.py `complete_all`: every field of every frame, lazily
 9. lint        semantics/entry.py `lint_templates`: the bodies of templates nothing used
10. no site     semantics/entry.py `warn_no_site` (W400)
11. paths       semantics/paths.py: canonical paths and multiplicities of the frames
12. limits      semantics/entry.py `size_limits`: at most 10^9 GPUs in a site (E405)
13. checks      semantics/entry.py `user_checks` (checks.py): every user `check` (E500)
14. allows      semantics/allows.py `collect`: the `allow` statements of the project's files (E220)
15. freeze      semantics/entry.py `freeze` (freeze.py): the frozen `model.Design`

Check (`check`, what `astral check` runs on a Design):

16. size        pipeline_sizing.py `size`: analyses/sizing.py's `combinations` of the `?`s, each
                compiled again by the workspace and checked, then `choose` solves one MILP (E66x)
17. jobs        seer/validate.py `validate_job` per job: parallel degrees, batch, placement, memory
18. engineering analyses/engineering.py `analyse`: network, power, cooling (E6xx)
19. scenarios   pipeline_scenarios.py: each scenario's twin compiled by the workspace (its
                parts isolated, its `set`s in place), then analyses/engineering.py
                `run_scenario` on the baseline and the twin (E680, W680; E216, E408)
20. devices     analyses/inventory.py and fleet.py: the devices the design names (its `name`
                patterns) and its `inventory` files bind, their names then beside their paths
                in every diagnostic (analyses/devices.py; W231, E230, E232-E236)
21. accepted    model/allows.py `accept`: the warnings the design's `allow`s and the baseline
                accept, kept apart; an `allow` that accepts nothing (W220)

Seer (seer/) forecasts a job of a checked design, on a scenario's twin with its failures applied;
outputs/ presents results; explore/ varies the design (sweeps, search, margins); cli/ and lsp/
call api.py. `Trace` (semantics/trace.py) records value provenance for hover and margins."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import gcpause, records
from astral_dsl.diagnostics import Diagnostic, Severity, sort_diagnostics
from astral_dsl.model.allows import Accepted, accept, once
from astral_dsl.model.design import Design, Instance
from astral_dsl.model.names import names_anything
from astral_dsl.pipeline_scenarios import run_scenarios, scenario_twin, too_many_scenarios, \
    unknown_scenarios
from astral_dsl.semantics import entry as passes
from astral_dsl.semantics.allows import collect as collect_allows
from astral_dsl.semantics.defaults import report as report_defaults
from astral_dsl.semantics.instantiate import Instantiator
from astral_dsl.semantics.modules import LoadedModule, ModuleLoader
from astral_dsl.semantics.overrides import Option, command_line, parse_overrides
from astral_dsl.semantics.release import release
from astral_dsl.semantics.paths import canonical_paths, multiplicities

if TYPE_CHECKING:
    from astral_dsl.analyses.engineering import Engineering, ScenarioOutcome
    from astral_dsl.analyses.summary import Totals
    from astral_dsl.model.baseline import Baseline
    from astral_dsl.workspace import Workspace


# -- the front end ---------------------------------------------------------------------------------

@gcpause.pausing                # frames, values and the frozen design: long-lived
def front_end(entry: LoadedModule, loader: ModuleLoader, load_diagnostics, overrides,
              assignments, scenario: Optional[Instance], trace=None,
              option: Option = command_line) -> Design:
    """Passes 5-15 over a parsed entry: the Design, with the values of `assignments` for its
    unknowns and compiled under `scenario` (its parts isolated, its `set`s in place, its own
    checks run). `trace` (semantics/trace.py) is told every value as it is made; `option`
    names an override in the caller's words (semantics/overrides.py: `--set NAME`)."""
    diagnostics: List[Diagnostic] = list(load_diagnostics)
    recorded = dict(overrides or {})
    if entry.tree is None:
        return attrs.evolve(passes.empty(entry.key, diagnostics),
                            overrides=tuple(recorded.items()))
    scopes: dict = {}
    scope = passes.module_scope(entry, loader, scopes, diagnostics)               # 5
    given = parse_overrides(recorded, scope, diagnostics, option)                 # 6
    ev = _instantiator(diagnostics, given, scope, assignments, scenario, trace)
    ev.option = option
    if trace is not None:
        trace.attach(ev, scopes)
    try:
        found = passes.instantiate_roots(ev, scope)                               # 7
        passes.imported_values(ev, scopes, scope)
        ev.complete_all()                                                         # 8
        passes.lint_templates(ev, scope, diagnostics)                             # 9
        passes.warn_no_site(entry, scope, found[0], diagnostics)                  # 10
        everything = found[0] + found[1] + found[2]
        paths = canonical_paths(everything, ev.frames)                            # 11
        mult = multiplicities(everything)
        passes.size_limits(ev, found[0], diagnostics)                             # 12
        results, paths = passes.user_checks(ev, everything, paths, mult, scopes,  # 13
                                            loader)
        allows = collect_allows(loader.modules.values(), entry.key, diagnostics)  # 14
        design = passes.freeze(ev, entry, scope, found, paths, results,           # 15
                               diagnostics, allows)
        design = attrs.evolve(design, allows=allows)
    except RecursionError as exc:
        report_defaults(ev)             # the W212s and W215s said before it, at their places
        diagnostics.append(passes.too_deep(exc, entry.key))
        design = passes.empty(entry.key, diagnostics)
    design = attrs.evolve(design, scenario=ev.scenario, overrides=tuple(recorded.items()),
                          root=str(getattr(loader, "root", "") or ""),
                          read=getattr(loader, "read", None))
    if trace is None:           # freed now, not left in cycles to the collector's next pass
        release(ev, scopes)
    return design


def _instantiator(diagnostics, given, scope, assignments, scenario: Optional[Instance],
                  trace) -> Instantiator:
    from astral_dsl.semantics.isolate import plan

    return Instantiator(diagnostics, given, scope, dict(assignments or {}),
                        scenario.template if scenario is not None else None,
                        plan(scenario.actions) if scenario is not None else None, trace)


# -- the check -------------------------------------------------------------------------------------

@records.frozen(slots=False)
class Checked:
    design: Design
    engineering: Optional["Engineering"]
    scenarios: Tuple["ScenarioOutcome", ...]
    diagnostics: Tuple[Diagnostic, ...]          # reported: the accepted warnings are apart
    sizing: Optional[object] = None
    accepted: Tuple[Accepted, ...] = ()          # warnings an `allow` or the baseline accepts
    baseline: Optional[Baseline] = None
    devices: Optional[object] = None             # analyses.devices.Devices: the named parts
    # (job, diagnostics, JobSpec, Cluster) per job of `design` as seer.validate_job found them
    # (step 17), for who reads them again (margins' memory limits)
    jobs: tuple = ()

    @property
    def valid(self) -> bool:
        """`astral check`'s verdict: no error (exit status 0)."""
        return not any(d.is_error for d in self.diagnostics)

    @property
    def valid_strict(self) -> bool:
        """`astral check --strict`'s verdict: no error and no warning reported (those an
        `allow` or the baseline accepts are apart, in `accepted`)."""
        return not any(d.is_error or d.severity is Severity.WARNING for d in self.diagnostics)

    def accepts(self, d: Diagnostic) -> bool:
        """Whether the design's allows or the baseline accept `d` (a warning another step
        found, e.g. on a scenario's twin or in a forecast)."""
        return bool(accept((d,), self.design.allows, self.baseline).accepted)

    def present(self, diagnostics) -> Tuple[Tuple[Diagnostic, ...], Tuple[Accepted, ...]]:
        """Other diagnostics of the same design (a forecast's, a picture's under a scenario):
        each warning once, what the allows and the baseline accept apart (no W220: this
        check already said which allows are stale)."""
        split = accept(once(diagnostics), self.design.allows, self.baseline)
        return (tuple(d for d in split.reported if d.code != "W220"), split.accepted)

    def under(self, outcome: "ScenarioOutcome"
              ) -> Tuple[Tuple[Diagnostic, ...], Tuple[Accepted, ...]]:
        """The diagnostics and accepted warnings of a report of the design under `outcome`'s
        scenario (`astral size --scenario`): the engineering checks' warnings are those of the
        design under it, whose figures the report shows (a `utilization` the scenario sets ends
        W627), not the declared design's; the rest as checked (its errors, the scenario's own
        E680/W680 verdict)."""
        from astral_dsl.analyses.devices import annotated

        own = {(d.code, d.span) for d in (self.engineering.diagnostics if self.engineering
                                          else ()) if not d.is_error}

        def kept(d: Diagnostic) -> bool:
            return d.is_error or (d.code, d.span) not in own

        warnings = annotated(once(d for d in outcome.result.diagnostics if not d.is_error),
                             self.devices)
        split = accept(warnings, self.design.allows, self.baseline, complete=False)
        return (sort_diagnostics([d for d in self.diagnostics if kept(d)] + list(split.reported)),
                tuple(a for a in self.accepted if kept(a.diagnostic)) + tuple(split.accepted))

    @property
    def totals(self) -> Optional["Totals"]:
        """GPUs, hosts, racks, switches and IT power (a Quantity) of the checked design, the
        figures of `astral check`'s summary line; None when the design declares no site or
        does not compile."""
        if not self.design.roots or front_end_errors(self.design):
            return None
        from astral_dsl.analyses.summary import totals

        return totals(self.design, self.engineering)


def front_end_errors(design: Design) -> bool:
    """Errors that no choice of the unknowns can mend (user checks may: sizing decides)."""
    return any(d.is_error and d.code not in ("E500",) for d in design.diagnostics)


def unsized(design: Design) -> List[Diagnostic]:
    """The diagnostics of `design` where it was not sized (an error no choice can mend stopped
    it, or no choice satisfies it): without its user checks' (E500) where it has `?`s, which
    read each `?` at its first option (`need 1,024 GPUs` failed at one host a rack), not at
    what sizing would choose."""
    if not design.needs_sizing:
        return list(design.diagnostics)
    return [d for d in design.diagnostics if d.code != "E500"]


def check(workspace: "Workspace", design: Optional[Design] = None,
          scenarios: Optional[Sequence[str]] = None, all_scenarios: bool = False,
          baseline: Optional[Baseline] = None, required: bool = True,
          option: Optional[Option] = None) -> Checked:
    """Steps 16-20 on `design` (default: the workspace's own): `scenarios` are names to run;
    required scenarios run too unless `required` is False (a margins probe, whose limits come
    from the design itself); `all_scenarios` runs every one. A design with unknowns is
    sized first, then checked as sized. The warnings its `allow`s and `baseline` accept are
    kept apart (step 20). `option` names a scenario of `scenarios` the design does not
    declare (E216; default: the workspace's, `--scenario NAME`, `scenario='NAME'`)."""
    from astral_dsl.analyses.devices import annotated

    checked = _check(workspace, design, scenarios, all_scenarios, required,
                     option or workspace.option)
    complete = checked.engineering is not None or not (
        checked.design.roots or front_end_errors(checked.design) or checked.design.needs_sizing)
    diags = checked.diagnostics
    found = None
    if complete and checked.design.roots:
        found, named = devices(workspace, checked.design)                   # 20
        diags = sort_diagnostics(annotated(tuple(diags) + tuple(named), found))
    ran = [o.name for o in checked.scenarios]
    # a scenario that did not run gives no verdict (W680): an allow of it is not stale here
    unsaid = ("W680",) if any(s.template not in ran for s in checked.design.scenarios) else ()
    split = accept(diags, checked.design.allows, baseline, ran, complete,   # 21
                   unsaid)
    return attrs.evolve(checked, diagnostics=split.reported, accepted=split.accepted,
                        baseline=baseline, devices=found)


def devices(workspace: "Workspace", design: Design):
    """Step 20: the parts the design names (a `name` pattern on a host, a rack, a tier...) and
    the rows of its `inventory` files bound to them (analyses.devices.Devices), with the
    diagnostics of the binding. Nothing is walked for a design that names nothing."""
    from astral_dsl.analyses.devices import Devices

    inventories = [i for i in design.instances if i.kind == "inventory"]
    if not inventories and not names_anything(design):
        return Devices(), ()
    # imported here, for start-up: a design that names nothing binds no name
    from astral_dsl.analyses import fleet, inventory

    found = inventory.named_parts(design)
    diags: List[Diagnostic] = list(found.diagnostics)
    by_path = {p: fleet.Device(p, kind, name) for p, (kind, name) in found.named.items()
               if name != p}
    for inv in inventories:
        relative = inv.field("file")
        where = dict(inv.field_spans).get("file", inv.span)
        name, data, why = workspace.read_beside(relative)
        rows, bad, lines = fleet.rows_of(data, name) if data is not None else ([], why, True)
        if bad is not None:
            diags.append(Diagnostic("E230", Severity.ERROR, f"the inventory `{relative}` cannot "
                                                            f"be read: {bad}", where,
                                    "a CSV with a header row, or the JSON of NetBox's "
                                    "/api/dcim/devices/, beside the design"))
            continue
        columns = inventory.columns_of(inv)
        required = [str(k) for k in getattr(inv.field("required"), "items", ())]
        binding = fleet.bind(rows, name, lines, columns, found.named, found.by_name, required,
                             where)
        diags.extend(binding.diagnostics)
        by_path.update((d.path, d) for d in binding.devices)
    return Devices(by_path), tuple(diags)


def _check(workspace: "Workspace", design: Optional[Design], scenarios, all_scenarios,
           required: bool, option: Option) -> Checked:
    from astral_dsl.analyses.engineering import analyse, scenario_diagnostics

    design = workspace.design if design is None else design
    sizing = None
    if design.needs_sizing and not front_end_errors(design):
        sizing = workspace.sizing(design)                                         # 16
        if sizing.diagnostics:                    # with the warnings every choice gives
            return Checked(design, None, (), sort_diagnostics(
                unsized(design) + list(sizing.diagnostics) + list(sizing.warnings)), sizing)
        design = sizing.design
    diags: List[Diagnostic] = list(design.diagnostics) + list(getattr(sizing, "warnings", ()))
    if front_end_errors(design):
        return Checked(design, None, (), sort_diagnostics(unsized(design)), sizing)
    # jobs are validated whether or not the entry file declares a site (it may import it);
    # a design without one does not import Seer (~30 ms of CPU)
    jobs: tuple = ()
    if design.jobs:
        from astral_dsl.seer.validate import validate_job

        jobs = tuple((job,) + validate_job(design, job) for job in design.jobs)  # 17
        diags.extend(d for _, found, _, _ in jobs for d in found)
    if not design.roots:
        return Checked(design, None, (), sort_diagnostics(diags), sizing, jobs=jobs)
    # a failed user `check` does not stop the engineering checks: they are independent
    eng = analyse(design)                                                         # 18
    diags.extend(eng.diagnostics)
    wanted = set(scenarios or ())
    diags.extend(unknown_scenarios(design, wanted, option))
    diags.extend(too_many_scenarios(design, wanted, all_scenarios, required))
    outcomes = tuple(run_scenarios(workspace, design, eng, wanted, all_scenarios,    # 19
                                   required))
    for outcome, scenario in outcomes:
        diags.extend(scenario_diagnostics(outcome, scenario))
    return Checked(design, eng, tuple(o for o, _ in outcomes), sort_diagnostics(diags), sizing,
                   jobs=jobs)


def forecast(workspace: "Workspace", design: Design, job: Optional[str] = None,
             scenario: Optional[str] = None, **options):
    """Seer's forecast of `job` of `design`; under `scenario`, of the design compiled under it
    with its failures applied (seer.forecast compiles nothing itself)."""
    from astral_dsl import seer

    # a missing job is named before the scenario, both in the caller's words (workspace.option)
    inst = seer.find_job(design, job, workspace.option)
    if scenario is None:
        return seer.forecast(design, job, **options)
    applied = scenario_twin(workspace, design, scenario)
    if applied is None:        # E216 (with the scenarios it could be), as `astral check` says
        raise seer.ForecastError("the design cannot be forecast under the scenario",
                                 unknown_scenarios(design, {scenario}, workspace.option))
    return seer.forecast(applied.design, inst.template, applied, **options)


__all__ = ["Checked", "check", "forecast", "front_end", "front_end_errors"]

