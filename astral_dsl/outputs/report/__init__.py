"""`astral report`: the design review as one self-contained HTML page.

    from astral_dsl.outputs.report import collect, build
    html = build(collect(design, jobs=None, scenario="hvdc_lost"))

collect.py gathers the numbers from the existing analyses (check_design with every scenario,
size_summary, Seer, the render views); page.py and its sections format them: sections.py
(summary, diagnostics with their source, scenario matrix, pictures), sizing.py (size tables,
PUE, bill of materials), jobs.py (forecasts and timelines), tables.py (sortable tables),
svg.py (Graphviz's SVG made safe to inline), timeline.py (the iteration's SVG), assets.py
(style sheet and script), html.py (escaping: design text is untrusted)."""
from astral_dsl.outputs.report.collect import Review, ReviewError, collect
from astral_dsl.outputs.report.page import build

__all__ = ["Review", "ReviewError", "build", "collect"]
