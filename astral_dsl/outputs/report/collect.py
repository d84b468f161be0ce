"""Everything the review page shows, gathered once from the existing analyses: the design
checked with every scenario (analyses.checking.check_design), its size summary
(outputs.size_report.size_summary) baseline and under each scenario, Seer's forecast of each job
baseline and under each scenario, and the pictures (outputs.render, laid out by Graphviz's
`dot`). The page builder (page.py) only formats what is here."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import attrs

from astral_dsl.analyses.checking import Checked, check_design
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.model.design import Design

VIEWS = ("cluster", "power", "cooling", "pod", "rack")
VIEW_TITLES = {"cluster": "Cluster: pods, rails and switch tiers",
               "power": "Power: one-line diagram", "cooling": "Cooling: water, loops and air",
               "pod": "A pod: ToR and Agg per rail and plane", "rack": "A rack: hosts, GPUs and "
               "NIC ports"}


@attrs.frozen
class JobResult:
    name: str
    forecast: Optional[object]                    # seer.Forecast, None when it cannot be made
    diagnostics: Tuple[Diagnostic, ...]           # why it could not be
    # per scenario: (name, forecast or None, diagnostics)
    under: Tuple[Tuple[str, Optional[object], Tuple[Diagnostic, ...]], ...] = ()

    def under_scenario(self, name: str):
        return next(((f, d) for n, f, d in self.under if n == name), (None, ()))


@attrs.frozen
class View:
    view: str
    scenario: Optional[str]
    svg: Optional[bytes]                          # Graphviz's SVG
    error: Optional[Diagnostic] = None            # why it could not be drawn
    parts: int = 0


@attrs.frozen
class Review:
    checked: Checked
    summary: Optional[Dict]                       # size_summary of the baseline
    scenario_summaries: Tuple[Tuple[str, Optional[Dict]], ...]
    jobs: Tuple[JobResult, ...]
    views: Tuple[View, ...]
    sources: Tuple[Tuple[str, str], ...]          # file name -> text, for source snippets
    scenario: Optional[str] = None                # the one whose views sit beside the baseline
    overrides: Tuple[Tuple[str, str], ...] = ()
    diagnosis: Optional[Dict] = None              # a running job's diagnosis document

    @property
    def design(self) -> Design:
        return self.checked.design

    def source(self, name: str) -> Optional[str]:
        return dict(self.sources).get(name)

    def summary_under(self, name: str) -> Optional[Dict]:
        return dict(self.scenario_summaries).get(name)


class ReviewError(ValueError):
    """A choice the design does not offer (`--job`, `--scenario`), with the names it has."""


def _sources(design: Design) -> Tuple[Tuple[str, str], ...]:
    comp = design.compilation
    if comp is None:
        return ()
    out = {}
    for module in comp.modules.values():
        if module.source is not None:
            out[module.source.name] = module.source.text
    return tuple(sorted(out.items()))


def forecast_jobs(design: Design, names: Optional[Sequence[str]],
                  scenarios: Sequence[str]) -> Tuple[JobResult, ...]:
    """Seer's forecast of each named job (default: every job), and under each scenario."""
    from astral_dsl import seer

    def one(name, scenario=None):
        try:
            return seer.forecast(design, job=name, scenario=scenario), ()
        except seer.ForecastError as exc:
            return None, tuple(exc.diagnostics) or (_plain(design, str(exc)),)

    out = []
    for name in names if names is not None else [j.template for j in design.jobs]:
        fc, diags = one(name)
        under = tuple((s,) + one(name, s) for s in scenarios)
        out.append(JobResult(name, fc, diags, under))
    return tuple(out)


def _plain(design: Design, message: str) -> Diagnostic:
    from astral_dsl.diagnostics import Severity

    return Diagnostic("E758", Severity.ERROR, message, None, None, file=design.file)


def draw(checked: Checked, wanted: Sequence[Tuple[str, Optional[str]]]) -> Tuple[View, ...]:
    """The pictures (view, scenario) in that order; Graphviz lays them out in parallel (each
    `dot` is a process of its own)."""
    from concurrent.futures import ThreadPoolExecutor

    from astral_dsl.outputs.render import RenderError, canvas, layout

    drawings = []
    for view, scenario in wanted:
        try:
            drawings.append(canvas(checked.design, view, None, scenario, checked))
        except RenderError as exc:
            drawings.append(exc.diagnostic)

    def lay(drawing):
        if isinstance(drawing, Diagnostic):
            return None, drawing
        try:
            return layout(drawing.g, "svg"), None
        except RenderError as exc:
            return None, exc.diagnostic

    with ThreadPoolExecutor(max_workers=4) as pool:
        laid = list(pool.map(lay, drawings))
    return tuple(View(view, scenario, svg, error,
                      0 if isinstance(d, Diagnostic) else d.node_count)
                 for (view, scenario), d, (svg, error) in zip(wanted, drawings, laid))


def collect(design: Design, jobs: Optional[Sequence[str]] = None,
            scenario: Optional[str] = None, views: Sequence[str] = VIEWS) -> Review:
    """The review of a compiled design. `jobs`: the jobs to forecast (None: all); `scenario`:
    a scenario whose views are drawn beside the baseline's. Raises ReviewError for a job or a
    scenario the design does not declare."""
    from astral_dsl.analyses.checking import front_end_errors
    from astral_dsl.outputs.size_report import size_summary

    known_jobs = [j.template for j in design.jobs]
    for name in jobs or ():
        if name not in known_jobs:
            raise ReviewError(f"--job {name}: no such job (jobs: "
                              + (", ".join(known_jobs) or "none") + ")")
    known = [s.template for s in design.scenarios]
    if scenario is not None and scenario not in known:
        raise ReviewError(f"--scenario {scenario}: no such scenario (scenarios: "
                          + (", ".join(known) or "none") + ")")
    checked = check_design(design, all_scenarios=True)
    d, eng = checked.design, checked.engineering
    summary = size_summary(d, eng) if eng is not None else None
    under = tuple((o.name, size_summary(o.applied.design, o.result)
                   if o.applied is not None and o.result is not None else None)
                  for o in checked.scenarios)
    ok = eng is not None and not front_end_errors(d)
    results = forecast_jobs(d, jobs, [o.name for o in checked.scenarios]) if ok else ()
    wanted = [(view, s) for view in views for s in ((None,) if scenario is None else
                                                     (None, scenario))]
    drawn = draw(checked, wanted) if ok else ()
    return Review(checked, summary, under, results, drawn, _sources(d), scenario)
