"""`astral report`: the page's content, its numbers, escaping of design text, determinism and the
parts it is built of (the browser tests are in test_report_browser.py)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import astral_dsl

from astral_dsl.api.review import collect
from astral_dsl.outputs.report import build
from astral_dsl.outputs.report import matrix as mx
from astral_dsl.outputs.report import timeline as tl
from astral_dsl.outputs.report.html import esc
from astral_dsl.outputs.report.svg import embed
from astral_dsl.outputs.report.tables import label, summary_tables
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "examples" / "astral.astral"

# A rack with its own feeder and loop, and scenarios that break power, cooling and a user check,
# and one that changes nothing; the rack's failing warning carries markup and terminal controls
# (design text is untrusted).
SMALL = """\
import stdlib.cooling { Water, CDU }
import stdlib.power { AC415 }
gpu G { power = 700 W, memory = 80 GB, flops_bf16 = 989 TFLOP/s, max_supply = 45 degC }
nic N { ports = 1, port_speed = 400 Gb/s, power = 25 W }
host Server { gpus = 8 x G, nics = 8 x N, power = 10.2 kW, liquid_share = 75 % }
param servers = 4
rack Rack {
  hosts = servers x Server
  check power <= 40 kW else warning "<script>alert(1)</script>\x1b]52;c;AAAA\x07 \u202eevil"
}
site S {
  racks = 1 x Rack
  utilization = 75 %
  feeder busway {
    current = ac, voltage = 415 V, phases = 3, power_factor = 95 %, standard = AC415
    capacity = 45 kW, efficiency = 97 %, serves = racks
    conductor_area = 25 mm^2, material = copper, length = 20 m, ampacity = 100 A
  }
  loop plates {
    fluid = Water, supply = 35 degC, rise = 10 K, cdu = CDU(capacity = 20 kW), cdus = 3
    pump_head = 150 kPa, pump_efficiency = 60 %
  }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 % }
  facility water { water_class = W32, supply = 15 degC, free_cooling = 6000 h, chiller_cop = 6 }
  check room.supply <= 25 degC else error "the room must stay at 25 degC"
}
scenario derated { set S.racks[0].power_limit = 38 kW }
scenario cdu_lost { fail S.plates
  fail S.plates }
scenario warm { set S.room.supply = 26 degC }
scenario same { set S.room.rise = 12 K }
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("small") / "small.astral"
    path.write_text(SMALL, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def small_review(small):
    return collect(astral_dsl.compile(small))


@pytest.fixture(scope="module")
def reference_review():
    return collect(astral_dsl.compile(REFERENCE))


@pytest.fixture(scope="module")
def reference_page(reference_review):
    return build(reference_review)


def _by_id(page: str, ident: str) -> str:
    m = re.search(rf'id="{re.escape(ident)}"', page)
    assert m, f"no element with id {ident}"
    return page[m.start():]


def _card(page: str, ident: str) -> str:
    m = re.search(rf'id="{re.escape(ident)}"><div class="v">([^<]*)</div>', page)
    assert m, f"no card {ident}"
    return m.group(1)


def test_reference_headline_numbers(reference_page):
    # 8 pods x 128 rows x 16 racks x 4 hosts x 8 GPUs
    assert _card(reference_page, "k-gpus") == "524,288"
    assert _card(reference_page, "k-hosts") == "65,536"
    assert _card(reference_page, "k-racks") == "16,384"
    # ToR and Agg: 64 per (pod, rail, plane) = 8 x 8 x 2 x 64 = 8,192 each; core 4,096
    assert _card(reference_page, "k-switches") == "20,480"
    # IT peak: 65,536 hosts x 10.2 kW + network (20,480 switches x 1 kW + 1,310,720 switch-side
    # modules x 15 W = 40,140.8 kW) = 668,467.2 + 40,140.8
    assert _card(reference_page, "k-it-power") == "708,608.0 kW"
    # average: hosts at 75 % utilisation (501,350.4 kW) + the network at full power
    assert _card(reference_page, "k-it-power-avg") == "541,491.2 kW"
    # PUE and the forecast as the analyses compute them (hand-checked in test_engineering.py and
    # tests/accuracy): the page shows those numbers, formatted as `astral size` and `forecast` do
    assert _card(reference_page, "k-pue") == f"{_reference_pue():.4f}"
    assert _card(reference_page, "k-job-llama405b") == f"{_reference_seconds():.3f} s"


def test_the_jobs_times_say_how_far_to_trust_them(reference_review, reference_page):
    """The summary card and the scenario matrix give a job's iteration time with its band (they
    had shown it bare): llama405b runs on H800s, which no calibration run had, so its band is
    the shipped fit's every-run band (-0.1034/+0.1277, fit-exact.json) twice as wide, -21/+26 %; on
    16,384 GPUs, beyond the 1,024 of the largest calibration run (W759)."""
    assert ('<div class="k">llama405b: iteration time, -21/+26 % (outside the calibrated '
            'envelope) (extrapolated: gpus 16,384 (checked 8-1,024))</div>') in reference_page
    rows = {r.name: r for r in mx.matrix(reference_review)}
    [fig] = [f for f in rows["plane_b_down"].cell("jobs").figures if "iteration" in f.label]
    assert fig.label == ("llama405b iteration time, band -21/+26 % (outside the calibrated "
                         "envelope) (extrapolated: gpus 16,384 (checked 8-1,024))")


def test_the_warnings_card_counts_the_jobs_warnings(reference_review, reference_page):
    """The summary's cards count what the page shows: the design has no diagnostic, llama405b's
    forecast has its W753 (H800s: no calibration run had them) and W759 (16,384 GPUs: beyond the
    1,024 of the largest calibration run), so 0 errors and 2 warnings (the card had said 0 while
    the job showed W753), and the diagnostics section points to them."""
    assert not reference_review.checked.diagnostics
    assert [d.code for d in reference_review.jobs[0].forecast.diagnostics] == ["W753", "W759"]
    assert reference_review.counts() == (0, 2)
    assert (_card(reference_page, "k-errors"), _card(reference_page, "k-warnings")) == ("0", "2")
    own = _by_id(reference_page, "jobs-own").split("</p>")[0]
    assert "add 0 error(s), 2 warning(s) (W753, W759)" in own and 'href="#jobs"' in own


def test_a_jobs_warning_the_design_has_too_is_counted_once():
    """A job's warning that `check` reports too (W751 of a field with no effect) is one warning;
    a job that cannot be forecast counts its error."""
    import attrs
    from astral_dsl.diagnostics import Diagnostic, Severity
    from astral_dsl.outputs.report.review import JobResult, Review

    twice = Diagnostic("W751", Severity.WARNING, "job `j`: pp_overlap has no effect")
    own = Diagnostic("W753", Severity.WARNING, "job `j`: outside the calibrated envelope")
    failed = Diagnostic("E758", Severity.ERROR, "job `k` cannot be forecast")

    @attrs.frozen
    class Checked:
        diagnostics: tuple

    @attrs.frozen
    class Forecast:
        diagnostics: tuple

    review = Review(Checked((twice,)), None, (), (
        JobResult("j", Forecast((twice, own)), ()), JobResult("k", None, (failed,))), (), ())
    assert review.shown() == (twice, own, failed)
    assert review.counts() == (1, 2)     # E758; W751 once and W753


def _reference_pue() -> float:
    from astral_dsl.outputs.size_report import size_summary

    checked = astral_dsl.check(astral_dsl.compile(REFERENCE))
    return size_summary(checked.design, checked.engineering)["pue"]


def _reference_forecast():
    from astral_dsl import seer

    return seer.forecast(astral_dsl.load(REFERENCE), job="llama405b")


def _reference_seconds() -> float:
    return _reference_forecast().iteration_time


def test_every_section_is_there(reference_page):
    for sid in ("summary", "diagnostics", "scenarios", "views", "sizing", "pue", "bom", "jobs"):
        assert f'<section id="{sid}">' in reference_page
    for view in ("cluster", "power", "cooling", "pod", "rack"):
        fig = _by_id(reference_page, f"view-{view}")
        assert fig.split("</figure>")[0].count("<svg") == 1
    assert 'id="tl-llama405b"' in reference_page
    assert 'id="breakdown-llama405b"' in reference_page


def test_views_keep_their_tooltips(reference_page):
    cluster = _by_id(reference_page, "view-cluster").split("</figure>")[0]
    # the core tier's node: Graphviz's tooltip became an SVG <title>
    assert ("<title>tier core of Astral.fabric: 4,096 x Switch51T per group (site), 4,096 in "
            "all</title>") in cluster
    assert "xlink" not in reference_page


def test_pue_components_add_up(reference_review, reference_page):
    from astral_dsl.outputs.report.sizing import pue_components

    parts, facility, peak, pue = pue_components(reference_review.checked.engineering)
    assert sum(w for _, w, _ in parts) == pytest.approx(facility, rel=1e-12)
    assert sum(pk for _, _, pk in parts) == pytest.approx(peak, rel=1e-12)
    assert [name for name, _, _ in parts] == [
        "IT", "transformer losses", "conversion losses", "CDUs", "secondary pumps",
        "facility-water pumps", "fans (air units)", "chillers", "heat rejection fans",
        "lighting and auxiliaries"]
    assert facility / parts[0][1] == pytest.approx(pue)
    assert facility / parts[0][1] == pytest.approx(_reference_pue(), abs=5e-5)   # 4 decimals
    assert f"= {_reference_pue():.4f}" in _by_id(reference_page, "pue-formula").split("</p>")[0]


def test_size_summary_rendered_from_its_keys(reference_review, reference_page):
    s = reference_review.summary
    headline = _by_id(reference_page, "size-headline").split("</table>")[0]
    for key, value in s.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert f'data-v="{value!r}"' in headline, key
    # a key the summary gains appears without a change to the report
    extra = dict(s, per_feeder_current_a=[{"feeder": "A", "current_a": 1234.5}],
                 pue_parts={"fans_kw": 12.0})
    html = summary_tables(extra)
    assert 'id="size-per-feeder-current-a"' in html and "Per feeder current (A)" in html
    # the keys of a nested mapping are data (a design's tier names), shown as they are
    assert 'id="size-pue-parts"' in html and "<td>fans_kw</td>" in html
    assert label("it_power_avg_kw") == "IT power average (kW)"
    assert label("liquid_flow_l_per_min") == "Liquid flow (L/min)"


def test_bill_of_materials(reference_page):
    bom = _by_id(reference_page, "bom-lines").split("</table>")[0]
    # ToR-to-host: 1,048,576 NIC ports on SR2 200G fibres; 262,144 800G modules broken out 4 x
    # 200G at the ToR plus 1,048,576 at the NICs
    assert 'data-v="1048576"' in bom and 'data-v="1310720"' in bom
    assert "SR2_200G" in bom and "Switch51T" in bom
    assert 'data-v="272"' in bom             # CDUs: 8 pods x 34


BATTERIES = """
gpu G { power = 1000 W }
host H { gpus = 8 x G, power = 10 kW }
rack R { hosts = 10 x H }
standard DC420 { nominal = 480 V, min = 400 V, max = 500 V, current = dc }
rectifier Rect { module = 50 kW, modules = 40, redundancy = n_plus_1, efficiency = 96 % }
battery Bat { autonomy = 5 min, chemistry = lead_acid, cells = 240, end_voltage = 1.75 V,
  aging_factor = 1.25, design_factor = 1.1, temperature_factor = 1.0, efficiency = 95 %,
  string_capacity = 100 Ah, strings = 10, recharge_rate = 0.1 }
row Row {
  racks = 10 x R
  feeder bus {
    current = dc, voltage = 480 V, standard = DC420, capacity = 1200 kW
    rectifier = Rect, battery = Bat, serves = racks
    conductor_area = 500 mm^2, conductors = 4, material = copper, length = 50 m, ampacity = 1000 A
    conductor_temperature = 70 degC
  }
}
site S { rows = 1 x Row, utilization = 100 % }
"""


def _purchases(tmp_path, text: str):
    path = tmp_path / "bat.astral"
    path.write_text(text, encoding="utf-8")
    bom = _by_id(build(collect(astral_dsl.compile(path))), "bom-lines").split("</table>")[0]
    return {re.sub("<[^>]+>", "", row.split("</td>")[0]).strip(" >"): row
            for row in bom.split("<tr")[1:] if "</td>" in row}


def test_purchase_lines_buy_the_installed_battery_capacity(tmp_path):
    # 10 strings x 100 Ah = 1,000 Ah installed (beside the 40 rectifier modules installed); the
    # need, 1,000 kW / (0.95 x 240 x 1.75 V) x 5/60 h x 1.25 x 1.1 = 287.18 Ah, is no purchase
    lines = _purchases(tmp_path, BATTERIES)
    assert 'data-v="1000.0"' in lines["battery capacity"], lines["battery capacity"]
    assert 'data-v="40"' in lines["rectifier module"]
    assert "battery capacity, needed (not declared)" not in lines
    # a battery that declares no strings installs nothing known: its need is listed apart
    lines = _purchases(tmp_path, BATTERIES.replace("string_capacity = 100 Ah, strings = 10, ", ""))
    assert "battery capacity" not in lines
    assert 'data-v="287.2"' in lines["battery capacity, needed (not declared)"]


def test_purchase_lines_buy_the_mechanical_feeders_too():
    # the tutorial installs two feeders: `busway` (the rack) and `mechanical` (the facility's own
    # consumers, `mechanical = true`); both are bought, on lines of their own
    from astral_dsl.outputs.report.bom import bom_lines

    review = collect(astral_dsl.compile(REPO / "examples" / "tutorial_rack.astral"))
    feeders = {line["where"]: line["quantity"] for line in bom_lines(review.summary)
               if line["item"] == "feeder"}
    assert feeders == {"power distribution": 1, "facility consumers (mechanical)": 1}
    # replicas x count: a summary of 3 replicas of a mechanical pair buys 6
    summary = {"feeders": 4, "mechanical_feeders": [{"replicas": 3, "count": 2}]}
    assert [(x["where"], x["quantity"]) for x in bom_lines(summary)] == [
        ("power distribution", 4), ("facility consumers (mechanical)", 6)]


CDU_MODELS = """
import stdlib.cooling { Water, CDU, RowCDU }
gpu G { power = 1000 W }
host H { gpus = 8 x G, power = 10 kW, liquid_share = 80 % }
rack R { hosts = 4 x H }
row Small {
  racks = 5 x R
  loop l { fluid = Water, supply = 35 degC, rise = 10 K, cdu = CDU(capacity = 100 kW), cdus = 3 }
}
row Big {
  racks = 5 x R
  loop l { fluid = Water, supply = 35 degC, rise = 10 K, cdu = RowCDU(capacity = 400 kW), cdus = 2 }
}
row Other {
  racks = 5 x R
  loop l { fluid = Water, supply = 35 degC, rise = 10 K, cdu = CDU(capacity = 200 kW), cdus = 2 }
}
site S { small = 2 x Small, big = 1 x Big, other = 1 x Other, utilization = 100 % }
"""


def test_purchase_lines_buy_each_cdu_model_apart(tmp_path):
    # each row's loop carries 5 racks x 4 hosts x 10 kW x 80 % = 160 kW. CDU at 100 kW: 2 rows x
    # 3 = 6 units; RowCDU: 1 x 2 = 2; CDU at 200 kW: 1 x 2 = 2. The two ratings of `CDU` are two
    # purchases (named with their rating); RowCDU, the only one of its name, by its name alone
    from astral_dsl.outputs.report.bom import bom_lines

    path = tmp_path / "cdus.astral"
    path.write_text(CDU_MODELS, encoding="utf-8")
    review = collect(astral_dsl.compile(path))
    bom = _by_id(build(review), "bom-lines").split("</table>")[0]
    assert '<td>CDU</td><td>CDU, 100 kW</td><td>cooling loops</td><td class="n" data-v="6">' \
        in bom
    summary = review.summary
    assert summary["cdus"] == 10                      # the total, as before
    assert [(x["model"], x["quantity"]) for x in bom_lines(summary) if x["item"] == "CDU"] == [
        ("CDU, 100 kW", 6), ("CDU, 200 kW", 2), ("RowCDU", 2)]
    # the loops by path: S.big, S.other, S.small
    assert [lp["cdu_model"] for lp in summary["loops"]] == ["RowCDU", "CDU", "CDU"]


def test_scenario_matrix_covers_every_scenario_and_says_how_much(small_review):
    assert [d.code for d in small_review.checked.diagnostics if d.is_error] == []
    rows = {r.name: r for r in mx.matrix(small_review)}
    assert set(rows) == {"derated", "cdu_lost", "warm", "same"}
    power = rows["derated"].cell("power")
    assert power.state == "breaks" and {d.code for d in power.broken} == {"E624"}
    # liquid heat 4 x 10.2 kW x 75 % = 30.6 kW: with two of three 20 kW CDUs failed, 20 kW run
    # (E640), and the 44.3 L/min the loop needs is more than the one CDU left passes (E643; one
    # failed would leave 40 kW: the loop holds, as a feeder's partner does)
    cooling = rows["cdu_lost"].cell("cooling")
    assert cooling.state == "breaks" and {d.code for d in cooling.broken} == {"E640", "E643"}
    checks = rows["warm"].cell("checks")
    assert checks.state == "breaks" and [d.message for d in checks.broken] == [
        "the room must stay at 25 degC"]
    figure = checks.figures[0]
    assert (figure.baseline, figure.scenario) == (1, 2)   # the rack's warning, then the room
    assert all(c.state == "holds" for c in rows["same"].cells)
    feeder = next(f for f in power.figures if f.label == "most loaded feeder")
    # the feeder carries 40.8 kW / 0.97 efficiency = 42.06 kW of its 45 kW: 93.47 %
    assert feeder.baseline == pytest.approx(40.8 / 0.97 / 45 * 100, abs=0.01)
    assert feeder.scenario == feeder.baseline
    # the busway is the only feeder: one more failed, its 40.8 kW are lost (it read 0.0 %)
    lone = next(f for f in power.figures if f.label == "most loaded, one more failed")
    assert (lone.baseline, lone.scenario) == (None, None)
    assert "one more failed: a feeder has no spare: its load is lost" in build(small_review)


def test_feeder_table_shows_the_power_through_the_feeder(small_review):
    """Its "normal % of capacity" is of the power through the feeder, so the row shows that
    power: 40.8 kW / 0.97 = 42.062 kW, 93.47 % of 45 kW; with one failed nothing is left ("-")."""
    page = build(small_review)
    head, row = _by_id(page, "size-feeders").split("</table>")[0].split("</tr>")[:2]
    cols = [re.sub("<[^>]+>", "", c).strip() for c in head.split("</th>")[:-1]]
    cells = [c.split(">")[-1] for c in row.split("</td>")[:-1]]
    got = dict(zip(cols, cells))
    assert (got["normal kW"], got["through kW"], got["through, one failed kW"]) == \
        ("40.8", "42.062", "-")
    assert got["normal % of capacity"] == "93.47"



def test_feeder_table_lists_the_facility_consumers_feeders_as_astral_size_does():
    """`astral size` lists the feeders of the facility's own consumers (`mechanical = true`)
    beside the IT feeders; the review's feeder table left them out, so the gb200 hall's 2N pair
    of 400 V feeds (326.4 kW each with the other failed, of 400 kW) was in the text only."""
    from astral_dsl.outputs.report.sizing import engineering_tables

    eng = astral_dsl.check(REPO / "examples" / "gb200_nvl72.astral").engineering
    page = engineering_tables(eng).split('id="size-feeders"')[1].split("</table>")[0]
    rows = [[re.sub("<[^>]+>", "", c).strip() for c in r.split("</td>")[:-1]]
            for r in page.split("</tr>")[1:-1]]
    got = {r[0]: r for r in rows}
    assert list(got) == ["Hall.net", "Hall.sus[0].hvdc", "Hall.mech_a", "Hall.mech_b"]
    # feeder, feeders, type, side, V, load, normal, through, through with one failed, capacity
    assert got["Hall.mech_a"][:10] == ["Hall.mech_a", "1", "ac mech", "A", "400", "326.403",
                                       "163.202", "163.202", "326.403", "400"]
    assert got["Hall.net"][2] == "dc net"

def test_scenario_matrix_on_the_page(small_review):
    page = build(small_review)
    table = _by_id(page, "scenario-matrix").split("</table>")[0]
    for name in ("derated", "cdu_lost", "warm", "same"):
        assert f'data-scenario="{name}"' in table
    row = table.split('data-scenario="derated"')[1].split("</tr>")[0]
    assert 'data-family="power" ' in row or 'data-family="power"' in row
    assert 'data-state="breaks" data-family="power"' in row
    assert "E624" in row


def test_design_text_is_escaped(small_review):
    page = build(small_review)
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in page
    assert "\\x1b]52;c;AAAA\\x07" in page and "\\u202eevil" in page
    # the page's own scripts: the error hook in the head and the main script at the end
    assert page.count("<script>") == 2


def test_esc():
    assert esc('<a href="x">&</a>') == "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
    assert esc("a\x1b[2Jb\u2028") == "a\\x1b[2Jb\\u2028"
    assert esc("it's") == "it&#x27;s"


def test_svg_is_sanitised():
    hostile = (b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/'
               b'xlink" width="10pt" height="10pt" viewBox="0 0 10 10" onload="alert(1)">'
               b'<script>alert(2)</script><g id="node1" class="node"><title>n1</title>'
               b'<a xlink:href="javascript:alert(3)" xlink:title="&lt;b&gt;tip&lt;/b&gt;">'
               b'<polygon points="0,0 1,1" fill="url(http://evil/x)" onclick="x()"/>'
               b'<text x="1" y="2">A &amp; B</text></a></g>'
               b'<foreignObject><div>hi</div></foreignObject></svg>')
    out = embed(hostile, "test")
    assert "script" not in out and "onload" not in out and "onclick" not in out
    assert "javascript" not in out and "url(" not in out and "foreignObject" not in out
    assert "<title>&lt;b&gt;tip&lt;/b&gt;</title>" in out and "<title>n1</title>" not in out
    assert "A &amp; B" in out and 'style="max-width:10pt"' in out


def test_same_input_same_bytes(small, tmp_path):
    outs = []
    for k in range(2):
        out = tmp_path / f"r{k}.html"
        proc = subprocess.run([sys.executable, "-m", "astral_dsl.cli", "report", str(small),
                               "-o", str(out)], capture_output=True, text=True, cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert b"<footer>astral report" in outs[0]


def test_page_loads_nothing(reference_page):
    assert not re.search(r'(src|href)="(https?:)?//', reference_page)
    assert "@import" not in reference_page and "url(http" not in reference_page
    assert "default-src 'none'" in reference_page


def test_scenario_views_beside_the_baseline(tmp_path):
    review = collect(astral_dsl.compile(REFERENCE), scenario="hvdc_lost")
    page = build(review)
    pair = page.split('<div class="views pair">')
    assert len(pair) == 1 + 5                 # every view, baseline and scenario side by side
    power = _by_id(page, "view-power-hvdc-lost").split("</figure>")[0]
    assert "under scenario `hvdc_lost`" in power


def test_jobs_option_and_unknown_names(tmp_path):
    out = tmp_path / "r.html"

    def run(*extra):
        return _astral_cli("report", str(REPO / "examples" / "single_pod.astral"), "-o",
                           str(out), *extra)

    proc = run("--job", "nope")             # E221 as every command says it, and no page
    assert proc.returncode == 1 and proc.stderr.startswith("error[E221]: --job nope: no such")
    assert "= hint: jobs: llama70b" in proc.stderr and not out.exists()
    proc = run("--scenario", "nope")       # E216 as every command says it, and no page
    assert proc.returncode == 1 and proc.stderr.startswith("error[E216]: --scenario nope")
    assert not out.exists()
    proc = run("--job", "llama70b")
    assert proc.returncode == 0, proc.stderr
    assert 'id="job-llama70b"' in out.read_text(encoding="utf-8")
    # the counts are the page's, as its cards give them: the forecast's W753 is a warning (the
    # line had said "0 warning(s)" while the page showed W753)
    assert ("1 job forecast(s) (1 outside the calibrated envelope, W753); 0 error(s), 1 "
            "warning(s)") in proc.stdout


def test_report_of_a_design_with_errors(tmp_path):
    bad = tmp_path / "bad.astral"
    bad.write_text(REFERENCE.read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "r.html"
    proc = _astral_cli("report", str(bad), "-o", str(out), "--set", "hosts_per_rack=5")
    assert proc.returncode == 1, proc.stderr
    page = out.read_text(encoding="utf-8")
    diag = _by_id(page, "diagnostics").split("</section>")[0]
    # the failed rack check, with its source line and the span marked
    assert 'data-code="E500"' in diag
    assert "<mark>power &lt;= rack_limit</mark>" in diag
    assert "left side: 51 kW; right side: 45 kW" in diag


def test_unreadable_input(tmp_path):
    proc = _astral_cli("report", str(tmp_path / "missing.astral"), "-o",
                       str(tmp_path / "r.html"))
    assert proc.returncode == 2 and "E100" in proc.stderr
    assert not (tmp_path / "r.html").exists()


def test_timeline_aggregates_long_iterations():
    from astral_dsl import seer

    fc = seer.forecast(astral_dsl.load(REFERENCE))
    # 100,720 operator events and 43,232 layer events: above the limit; 7,296 blocks below it
    assert tl.choose_level(fc) == "block"
    svg, note = tl.svg(fc, "t")
    assert svg.count("<rect class=\"s-") <= tl.LIMIT
    assert note.startswith("one bar per pipeline block")
    # a tighter limit merges neighbouring bars, and the note says so
    svg, note = tl.svg(fc, "t", limit=2000)
    assert svg.count("<rect class=\"s-") <= 2000 and "merged" in note


def test_merge_and_ticks():
    bars = [tl.Bar(0.0, 1.0, "a", "forward"), tl.Bar(1.05, 2.0, "b", "forward"),
            tl.Bar(2.5, 3.0, "c", "forward"), tl.Bar(3.0, 3.5, "d", "backward")]
    merged = tl.merge(bars, 0.1)
    assert [(b.start, b.end, b.merged) for b in merged] == [(0.0, 2.0, 2), (2.5, 3.0, 1),
                                                             (3.0, 3.5, 1)]
    # at most about 8 ticks, 1, 2 or 5 x 10^n apart: 9.153 s / 8 = 1.14 s -> every 2 s
    assert tl.ticks(9.153) == [0, 2, 4, 6, 8]
    # 0.1 s / 8 = 12.5 ms -> every 20 ms
    assert tl.ticks(1.0, 0.2, 0.3) == pytest.approx([0.2, 0.22, 0.24, 0.26, 0.28, 0.3])


def test_alternating_blocks_are_bounded_too():
    """A 1F1B pipeline's compute lane alternates forward and backward blocks: merging only bars
    of one category never got under the limit (gb200_nvl72's llama405b drew 94,345 bars, a
    16.7 MB page, its note saying bars "closer than 106.373 s" of a 64.9 s iteration were
    merged). 100 blocks of 10 ms back to back, alternating, limit 10: no gap of one category
    joins two, so categories merge at the first gap tried, 1 s / 20,000 = 50 us, into one bar
    of the 100 from 0 to 1 s."""
    bars = [tl.Bar(i / 100, (i + 1) / 100, f"b{i}", ("forward", "backward")[i % 2])
            for i in range(100)]
    lanes, gap, mixed = tl.aggregate({(0, "compute"): bars}, 1.0, limit=10)
    [one] = lanes[(0, "compute")]
    assert (one.start, one.end, one.merged, one.cat) == (0.0, 1.0, 100, tl.MIXED)
    assert one.name == "forward and backward" and mixed and gap == pytest.approx(5e-5)
    # bars of one category still merge among themselves first (no category mixed)
    same = [tl.Bar(i / 100, (i + 1) / 100, f"b{i}", "forward") for i in range(100)]
    lanes, gap, mixed = tl.aggregate({(0, "compute"): same}, 1.0, limit=10)
    assert [b.merged for b in lanes[(0, "compute")]] == [100] and not mixed


def test_stamp_only_when_asked(small, tmp_path):
    out = tmp_path / "r.html"
    proc = _astral_cli("report", str(small), "-o", str(out), "--stamp", "2026-12-01 <abc>",
                       "--title", "Review <1>")
    assert proc.returncode == 0, proc.stderr
    page = out.read_text(encoding="utf-8")
    assert "· 2026-12-01 &lt;abc&gt;</footer>" in page
    assert "<title>Review &lt;1&gt;</title>" in page


def test_without_graphviz_the_page_says_so(small, tmp_path):
    """No `dot` on PATH: the pictures are replaced by the reason (E700) and the rest stands."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = dict(__import__("os").environ, PATH=str(bin_dir))
    out = tmp_path / "r.html"
    # in this process (tests/clirun.py), its environment the call's: `dot` is looked for on
    # PATH at each picture (render.dot_available)
    proc = _astral_cli("report", str(small), "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("error[E700]") == 1
    page = out.read_text(encoding="utf-8")
    assert page.count("not drawn: [E700]") == 5 and 'id="size-levels"' in page


def test_the_pue_says_it_is_a_lower_bound_as_astral_size_does(small_review):
    """`astral size` says the PUE is a lower bound where components leave parts out (headline,
    JSON facility.uncounted); the review's PUE said it bare beside a CDUs line of 0 kW (the
    CDU states no `power`)."""
    from astral_dsl.outputs.size_facility import uncounted

    eng = small_review.checked.engineering
    assert [label for _, label in uncounted(eng)] == ["CDUs", "facility-water pumps",
                                                       "heat rejection fans"]
    note = _by_id(build(small_review), "pue-formula").split("</p>")[0]
    assert "; a lower bound: CDUs, facility-water pumps, heat rejection fans not all counted, " \
        "their data not declared (`astral size`" \
        in note.replace("&#x60;", "`").replace("&#96;", "`"), note
