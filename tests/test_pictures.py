"""Pictures that never mislead (#25), outside the review page: the Gantt chart of `astral
forecast --plot` (communication lanes at every level of detail; `--window` crops the axis and
the title's figures to the window) and the render views (indexed labels of the replicas a
scenario splits apart; a warned part keeps the colour the legend gives it). The review page's
pictures: test_report_pictures.py."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.outputs.render import render
from astral_dsl.outputs.render.style import AMBER, AMBER_FILL, THEMES
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is in the [test] extra")


@pytest.fixture(scope="module")
def pod_forecast():
    return astral_dsl.forecast(EXAMPLES / "single_pod.astral").detail


def _lanes(fig):
    """(legend labels, colours of the bars drawn) of a Gantt figure."""
    from matplotlib.colors import to_hex

    ax = fig.axes[0]
    colours = {to_hex(c.get_facecolor()[0]) for c in ax.collections if len(c.get_paths())}
    return [t.get_text() for t in fig.legends[0].get_texts()], colours


def test_gantt_has_tp_lanes_at_the_block_level(pod_forecast, monkeypatch):
    """A long iteration is drawn a block at a time; the TP communication inside the blocks had
    no lane then."""
    from astral_dsl.outputs.forecast import plot

    monkeypatch.setattr(plot, "MAX_EVENTS", 10)        # every level but the blocks too many
    fig = plot.figure(pod_forecast)
    try:
        labels, colours = _lanes(fig)
        assert "(block-level bars; --window A:B for operators)" in labels
        assert any(label.startswith("TP") for label in labels)
        assert plot.STREAM["tp"][1].lower() in colours
    finally:
        matplotlib.pyplot.close(fig)


def test_gantt_window_crops_axis_and_title(pod_forecast):
    """`--window` kept the whole iteration's axis and titled the chart with the iteration's
    MFU and "97 % compute idle": the other micro-batches' work counted as idle."""
    from astral_dsl.outputs.forecast import plot
    from astral_dsl.seer.timeline import events

    fc = pod_forecast
    m = fc.job.microbatches
    window = (m - 2, m)
    mine = [e for e in events(fc, window, "op")     # the micro-batches' work (no optimizer)
            if e.stream == "compute" and dict(e.args).get("micro_batch") is not None]
    lo, hi = min(e.start for e in mine), max(e.end for e in mine)
    assert lo > 0.05 * fc.iteration_time
    fig = plot.figure(fc, window)
    try:
        ax = fig.axes[0]
        left, right = ax.get_xlim()
        assert left == pytest.approx(lo) and right == pytest.approx(lo + (hi - lo) * 1.001)
        title = ax.get_title()
        assert f"micro-batches {m - 2}-{m - 1}, {lo:.3f} to {hi:.3f} s of the " \
               f"{fc.iteration_time:.2f} s iteration" in title
        assert "MFU" not in title and "bubble" not in title
        idle = int(re.search(r"compute idle, (\d+) % of this span", title).group(1))
        assert idle < 50, title           # the other micro-batches' blocks are not idle
        labels, _ = _lanes(fig)
        assert "other micro-batches" in labels
    finally:
        matplotlib.pyplot.close(fig)


def test_a_window_of_the_first_micro_batches_ends_with_their_work(pod_forecast):
    """The optimizer step (and the DP reduction) belong to no micro-batch, but the timeline
    gives them with every window: the axis of `--window 0:2` ran to the optimizer's end, the
    whole iteration, its title "0.000 to 9.78 s", with the window's work in its first tenth."""
    from astral_dsl.outputs.forecast import plot
    from astral_dsl.seer.timeline import events

    fc = pod_forecast
    mine = [e for e in events(fc, (0, 2), "op")
            if e.stream == "compute" and dict(e.args).get("micro_batch") is not None]
    hi = max(e.end for e in mine)
    assert hi < 0.5 * fc.iteration_time
    fig = plot.figure(fc, (0, 2))
    try:
        ax = fig.axes[0]
        assert ax.get_xlim()[1] == pytest.approx(hi * 1.001, rel=1e-6)
        assert f"micro-batches 0-1, 0.000 to {hi:.3f} s of the " in ax.get_title()
        # the idle time is the span's: the optimizer step far after it is no end of a gap in it
        # (once the span ended before it, its gap ran to it: "1066% of this span" idle)
        idle = int(re.search(r"compute idle, (\d+) % of this span", ax.get_title()).group(1))
        assert idle < 50, ax.get_title()
    finally:
        matplotlib.pyplot.close(fig)


def test_forecast_plot_window_from_the_command_line(tmp_path):
    out = tmp_path / "w.png"
    proc = _astral_cli("forecast", str(EXAMPLES / "single_pod.astral"), "--plot", str(out),
                       "--window", "2:4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.stat().st_size > 10_000


# -- render: indexed labels and a readable legend ---------------------------------------------

def _checked(path, scenario=None, sets=None):
    ws = astral_dsl.compile(path, sets or {})
    return astral_dsl.check(ws, [scenario] if scenario else None)


def test_split_replicas_are_labelled_with_their_index():
    """Under a scenario that fails one of two scalable units, both power-view boxes read
    "1 x block ScalableUnit"."""
    checked = _checked(EXAMPLES / "dgx_superpod.astral", "feed_a_lost",
                       {"scalable_units": "2"})
    for view in ("power", "cooling", "cluster"):
        source = render(checked.design, view, scenario="feed_a_lost", checked=checked).source
        titles = re.findall(r"<B>([^<]*block ScalableUnit[^<]*)</B>", source)
        assert titles, view
        assert len(titles) == len(set(titles)), (view, titles)
        assert any(t.endswith("sus[0]") for t in titles) and \
            any(t.endswith("sus[1]") for t in titles), (view, titles)


def test_baseline_labels_stay_unindexed():
    checked = _checked(EXAMPLES / "dgx_superpod.astral")
    source = render(checked.design, "power", checked=checked).source
    assert "<B>4 x block ScalableUnit</B>" in source


def test_a_warned_feeder_keeps_its_colour_and_the_legend_says_so(tmp_path):
    """The warning amber filled a warned DC feeder, hiding the colour the legend gives DC
    feeders (and the legend's warning swatch was the same pale amber as DC)."""
    text = (EXAMPLES / "astral.astral").read_text(encoding="utf-8").replace(
        "conductors = 4, conductor_area = 630 mm^2, material = copper, length = 30 m",
        "conductors = 4, material = copper, length = 30 m", 1)
    path = tmp_path / "astral.astral"
    path.write_text(text, encoding="utf-8")
    checked = _checked(path)
    assert any(d.code == "W621" for d in checked.diagnostics)
    source = render(checked.design, "power", checked=checked).source
    node = re.search(r'\n\s*(\w+) \[label=<[^\n]*feeder hvdc · side A[^\n]*', source).group(0)
    assert "class=\"dc warning\"" in node and f'color="{AMBER}"' in node
    assert f'fillcolor="{THEMES["dc"][0]}"' in node and AMBER_FILL not in node
    assert "▲ W621" in node
    legend = re.search(r'<B>legend</B>.*?</TABLE>', source, re.S).group(0)
    swatch = re.search(r'<TD BGCOLOR="([^"]+)" BORDER="2" COLOR="%s"[^>]*> </TD><TD[^>]*>'
                       r'<FONT[^>]*>warning' % AMBER, legend)
    assert swatch and swatch.group(1) not in {fill for fill, _, _ in THEMES.values()
                                              if fill != "#ffffff"}
