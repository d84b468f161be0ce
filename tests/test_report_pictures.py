"""Pictures that never mislead (#25): the review page's timeline has communication lanes at
every level of detail; a figure shown twice is computed once (the scenario matrix's worst
oversubscription and the E602 note under the same scenario); a scenario's effects are only
what it changed (not the baseline's warnings, renamed on its twin); no raw dict in a table;
"chosen by sizing" names the field. The Gantt chart and the render views: test_pictures.py."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.api.review import collect
from astral_dsl.outputs.report import build
from astral_dsl.outputs.report import matrix as mx
from astral_dsl.outputs.report import timeline as tl
from astral_dsl.seer.timeline import occupancy, timeline

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.fixture(scope="module")
def pod_forecast():
    return astral_dsl.forecast(EXAMPLES / "single_pod.astral").detail


# -- communication lanes -------------------------------------------------------------------------

@pytest.mark.parametrize("stream", ["tp", "pp", "dp"])
def test_occupancy_is_the_operator_timeline(pod_forecast, stream):
    """The busy time the lanes are drawn from is, stage by stage, the time of the stream's own
    events in the operator timeline (nothing lost to the slicing)."""
    fc = pod_forecast
    occ = occupancy(fc, stream, 0.0, fc.iteration_time, 997)
    busy = occ.sum(axis=1) * fc.iteration_time / 997
    events = timeline(fc, level="op")
    expected = [0.0] * len(fc.runs)
    for stage, kind, start, end in zip(events.stage.tolist(), events.kind.tolist(),
                                       events.start.tolist(), events.end.tolist()):
        if events.kinds[kind].stream == stream:
            expected[stage] += end - start
    assert busy.tolist() == pytest.approx(expected, rel=1e-9)
    assert sum(expected) > 0


def test_occupancy_of_a_window_counts_its_micro_batches_only(pod_forecast):
    fc = pod_forecast
    whole = occupancy(fc, "tp", 0.0, fc.iteration_time, 500).sum()
    first = occupancy(fc, "tp", 0.0, fc.iteration_time, 500, window=(0, 1)).sum()
    m = fc.job.microbatches
    assert first == pytest.approx(whole / m, rel=1e-6)


def test_block_level_timeline_has_tp_lanes(pod_forecast):
    """The page's timeline of a long iteration is drawn a block at a time; its TP
    communication, inside the blocks, was not drawn at all (18 % of an iteration unseen)."""
    fc = pod_forecast
    svg, note = tl.svg(fc, "t1", limit=200)       # forces the block level
    assert note.startswith(tl.LEVEL_TEXT["block"])
    labels = re.findall(r'<text class="lane"[^>]*>([^<]*)</text>', svg)
    for stage in range(fc.job.parallel.pp):
        assert f"stage {stage} TP comm" in labels
    assert "TP, CP and EP communication inside the blocks" in note
    assert any(label.endswith("PP p2p") for label in labels)     # its sends: events
    # each bar as dark as the share of its slice busy: never a solid lane for a stream busy
    # a fraction of the time
    shades = {float(x) for x in re.findall(r'class="s-tp"[^>]*fill-opacity="([\d.]+)"', svg)}
    assert shades and min(shades) < 1.0


# -- one computation of a figure shown twice ---------------------------------------------------

SPINE = (EXAMPLES / "dgx_superpod.astral").read_text(encoding="utf-8") + \
    "\nscenario spine_down { fail SuperPOD.fabric.spine[0] }\n"


def test_worst_oversubscription_is_the_e602_figure(tmp_path):
    """Under a spine failure the leaves run 1.0667:1 (E602's note); the matrix said "worst
    oversubscription 1.000:1" two lines below, from the design's tiers."""
    path = tmp_path / "d.astral"
    path.write_text(SPINE, encoding="utf-8")
    review = collect(astral_dsl.compile(path))
    row = next(r for r in mx.matrix(review) if r.name == "spine_down")
    cell = row.cell("network")
    (e602,) = [d for d in cell.broken if d.code == "E602"]
    shown = re.search(r"runs ([\d.]+):1", e602.message).group(1)
    fig = next(f for f in cell.figures if f.label == "worst oversubscription")
    assert fig.text(fig.scenario) == shown == "1.0667"
    assert fig.baseline == pytest.approx(1.0)
    page = _text(build(review))
    assert "worst oversubscription: 1.0000 → 1.0667" in page


# -- a scenario's effects ----------------------------------------------------------------------

def test_scenario_effects_leave_out_baseline_warnings(tmp_path):
    """A feeder without conductor data warns (W621) at baseline; under a scenario that fails
    row 0's feeder, the twin renames the others `rows[1]`: the matrix listed that as a warning
    the scenario brought."""
    text = (EXAMPLES / "astral.astral").read_text(encoding="utf-8")
    text = text.replace("conductors = 4, conductor_area = 630 mm^2, material = copper, "
                        "length = 30 m", "conductors = 4, material = copper, length = 30 m", 1)
    path = tmp_path / "astral.astral"
    path.write_text(text, encoding="utf-8")
    review = collect(astral_dsl.compile(path))
    assert any(d.code == "W621" for d in review.checked.diagnostics)
    for row in mx.matrix(review):
        for cell in row.cells:
            assert not [d for d in cell.warned + cell.broken if d.code == "W621"], \
                (row.name, cell.family)
    hvdc = next(r for r in mx.matrix(review) if r.name == "hvdc_lost")
    assert hvdc.cell("power").state == "changes"       # its own effect is still there


# -- names, not raw data ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference_page():
    return build(collect(astral_dsl.compile(EXAMPLES / "astral.astral")))


def test_no_raw_dict_or_list_in_any_table(reference_page):
    """The Facility table printed its circuits as `{'path': 'Warm', ...}`."""
    text = _text(reference_page)
    assert not re.search(r"\{'\w+': ", text) and not re.search(r"\['", text)
    captions = re.findall(r"<caption>([^<]*)</caption>", reference_page)
    assert "Facility: Circuits" in captions
    circuits = reference_page[reference_page.index("<caption>Facility: Circuits"):]
    head = circuits[:circuits.index("</thead>")]
    assert "Path" in head and "Flow (L/min)" in head


def test_chosen_by_sizing_names_the_field():
    """The summary showed `sizing.astral:43:45 = 2`, a source position, not the field."""
    page = build(collect(astral_dsl.compile(EXAMPLES / "sizing.astral")))
    row = re.search(r"<td>chosen by sizing</td><td>([^<]*)</td>", page)
    assert row, "no chosen-by-sizing row"
    chosen = html.unescape(row.group(1))
    assert "Cluster.rows[0].secondary.cdus = 2 (in all 4 loops)" in chosen
    assert not re.search(r"\.astral:\d+:\d+", chosen), chosen
