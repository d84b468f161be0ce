"""`astral report`: the design review as one self-contained HTML page.

    from astral_dsl.api.review import collect
    from astral_dsl.outputs.report import build
    html = build(collect(workspace, jobs=None, scenario="hvdc_lost"))

api/review.py gathers the numbers from the pipeline (the check with every scenario,
size_summary, Seer) into a Review (review.py, which also draws the render views); page.py and
its sections format them: sections.py
(summary, diagnostics with their source, scenario matrix, pictures), sizing.py (size tables,
PUE, bill of materials), jobs.py (forecasts and timelines), tables.py (sortable tables),
svg.py (Graphviz's SVG made safe to inline), timeline.py (the iteration's SVG), assets.py
(style sheet and script), html.py (escaping: design text is untrusted); written.py writes the
page whole or not at all."""
from astral_dsl.outputs.report.page import build
from astral_dsl.outputs.report.review import Review, ReviewError

__all__ = ["Review", "ReviewError", "build"]
