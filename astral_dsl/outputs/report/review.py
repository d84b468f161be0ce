"""What the review page shows, as data (api/review.py gathers it: the design checked with every
scenario, its size summary baseline and under each scenario, Seer's forecast of each job
baseline and under each scenario), and its pictures drawn (outputs.render, laid out by
Graphviz's `dot`). The page builder (page.py) only formats what is here."""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple


from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.model.design import Design

VIEWS = ("cluster", "power", "cooling", "pod", "rack")
VIEW_TITLES = {"cluster": "Cluster: pods, rails and switch tiers",
               "power": "Power: one-line diagram", "cooling": "Cooling: water, loops and air",
               "pod": "A pod: ToR and Agg per rail and plane", "rack": "A rack: hosts, GPUs and "
               "NIC ports"}


@records.frozen
class JobResult:
    name: str
    forecast: Optional[object]                    # seer.Forecast, None when it cannot be made
    diagnostics: Tuple[Diagnostic, ...]           # why it could not be
    # per scenario: (name, forecast or None, diagnostics)
    under: Tuple[Tuple[str, Optional[object], Tuple[Diagnostic, ...]], ...] = ()

    def under_scenario(self, name: str):
        return next(((f, d) for n, f, d in self.under if n == name), (None, ()))


@records.frozen
class View:
    view: str
    scenario: Optional[str]
    svg: Optional[bytes]                          # Graphviz's SVG
    error: Optional[Diagnostic] = None            # why it could not be drawn
    parts: int = 0


@records.frozen
class Review:
    checked: object                               # pipeline.Checked, every scenario run
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

    def shown(self) -> Tuple[Diagnostic, ...]:
        """Every baseline diagnostic the page shows: the design's, then each job's own that the
        design's do not hold (its forecast's W750, W753, or why it could not be forecast). The
        summary's cards and `astral report`'s closing line count these, so they agree with
        the page."""
        out = list(self.checked.diagnostics)
        seen = set(out)
        for job in self.jobs:
            own = job.diagnostics if job.forecast is None else \
                tuple(getattr(job.forecast, "diagnostics", ()) or ())
            for d in own:
                if d not in seen:
                    seen.add(d)
                    out.append(d)
        return tuple(out)

    def counts(self) -> Tuple[int, int]:
        """(errors, warnings) among shown()."""
        diags = self.shown()
        return (sum(d.is_error for d in diags),
                sum(d.severity.value == "warning" for d in diags))


class ReviewError(ValueError):
    """A choice the design does not offer (`--job`, `--scenario`), with the names it has; an
    unknown job's E221 or scenario's E216 is its `diagnostics` (exit 1, as every command says
    it)."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


def draw(checked, wanted: Sequence[Tuple[str, Optional[str]]]) -> Tuple[View, ...]:
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
