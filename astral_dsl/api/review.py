"""`astral report`'s numbers, gathered once from the pipeline: the design checked with every
scenario (pipeline.check), its size summary baseline and under each scenario, Seer's forecast
of each job baseline and under each scenario, and the pictures (outputs/report/review.py draws
them). The page (outputs/report/page.py) only formats the Review."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design
from astral_dsl.outputs.report.review import VIEWS, JobResult, Review, ReviewError, draw
from astral_dsl.pipeline import check, front_end_errors
from astral_dsl.pipeline_scenarios import unknown_scenarios
from astral_dsl.semantics.overrides import Option
from astral_dsl.workspace import Workspace


def forecast_jobs(ws: Workspace, design: Design, names: Optional[Sequence[str]],
                  scenarios: Sequence[str], step=None, calibration=None
                  ) -> Tuple[JobResult, ...]:
    """Seer's forecast of each named job (default: every job), and under each scenario;
    `step(what)` is told each one (a progress line); `calibration`: the fit (default: the
    shipped one)."""
    from astral_dsl import seer
    from astral_dsl.pipeline import forecast

    def one(name, scenario=None):
        try:
            return forecast(ws, design, name, scenario, calibration=calibration), ()
        except seer.ForecastError as exc:
            return None, tuple(exc.diagnostics) or (Diagnostic(
                "E758", Severity.ERROR, str(exc), None, None, file=design.file),)

    out = []
    for name in names if names is not None else [j.template for j in design.jobs]:
        if step is not None:
            step(f"forecasting job {name}")
        fc, diags = one(name)
        under = tuple((s,) + one(name, s) for s in scenarios)
        out.append(JobResult(name, fc, diags, under))
    return tuple(out)


def as_check_says(checked, scenario: Optional[str]):
    """`checked` (every scenario run, for the matrix) with the diagnostics `astral check` gives
    with the same `--scenario`: the verdict of a scenario that is not required (W680) only for
    the one asked for. A what-if that breaks the design is the matrix's row (what it breaks,
    family by family), not a warning of the design: counted, it made the page's cards and the
    closing line disagree with `astral check --strict`, which runs required scenarios only."""
    import attrs

    asked = {s.span for s in checked.design.scenarios if s.template == scenario}

    def kept(d: Diagnostic) -> bool:
        return d.code != "W680" or d.span in asked

    return attrs.evolve(checked, diagnostics=tuple(d for d in checked.diagnostics if kept(d)),
                        accepted=tuple(a for a in checked.accepted if kept(a.diagnostic)))


def collect(ws: Workspace, jobs: Optional[Sequence[str]] = None,
            scenario: Optional[str] = None, views: Sequence[str] = VIEWS, step=None,
            calibration=None, option: Optional[Option] = None) -> Review:
    """The review of a workspace's design. `jobs`: the jobs to forecast (None: all), with
    `calibration` (default: the shipped fit);
    `scenario`: a scenario whose views are drawn beside the baseline's; `step(what)`: told what
    is being done (a progress line). Raises ReviewError for a job or a scenario the design does
    not declare (its `diagnostics`: E221 or E216), named by `option` (default: the
    workspace's, `--job NAME`; the API's `report` names an item of its `jobs`)."""
    step = step or (lambda what: None)
    option = option or ws.option
    from astral_dsl.outputs.size_report import size_summary

    design = ws.design
    known_jobs = [j.template for j in design.jobs]
    for name in jobs or ():
        if name not in known_jobs:
            from astral_dsl.seer import unknown_job

            missing = unknown_job(design, name, option)
            raise ReviewError(f"{missing.message} ({missing.hint})", [missing])
    unknown = unknown_scenarios(design, {scenario}, option) if scenario is not None else []
    if unknown:
        raise ReviewError(f"{unknown[0].message} ({unknown[0].hint})", unknown)
    step("checking the design and every scenario")
    checked = as_check_says(check(ws, design, all_scenarios=True), scenario)
    d, eng = checked.design, checked.engineering
    summary = size_summary(d, eng) if eng is not None else None
    under = tuple((o.name, size_summary(o.applied.design, o.result)
                   if o.applied is not None and o.result is not None else None)
                  for o in checked.scenarios)
    ok = eng is not None and not front_end_errors(d)
    results = forecast_jobs(ws, d, jobs, [o.name for o in checked.scenarios], step,
                            calibration) if ok else ()
    step("drawing the pictures")
    wanted = [(view, s) for view in views for s in ((None,) if scenario is None else
                                                     (None, scenario))]
    drawn = draw(checked, wanted) if ok else ()
    return Review(checked, summary, under, results, drawn, ws.sources(), scenario)


__all__ = ["Review", "ReviewError", "collect", "forecast_jobs"]
