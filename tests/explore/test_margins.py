"""Margins against ranges derived by hand: symbolic where the sides are algebraic in the
parameters (and only then called symbolic), a numeric bracket by bisection otherwise."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from astral_dsl.cli import main
from astral_dsl.explore import margins
from astral_dsl.outputs.margins import phrase, render

REPO = Path(__file__).resolve().parents[2]


def _by_label(report):
    return {m.limit.label: m for m in report.margins}


def _ranges(m):
    return {r.param: r for r in m.ranges}


def test_tutorial_rack_by_hand():
    report = margins.analyse(str(REPO / "examples/tutorial_rack.astral"))
    m = _by_label(report)
    busway = m['check "the rack\'s busway is rated 45 kW" in Tutorial.racks[0]']
    # 10.2 kW x servers <= 45 kW  <=>  servers <= 4.41: at most 4 servers
    assert busway.symbolic and busway.limit.margin == pytest.approx(4200.0)
    r = _ranges(busway)["servers"]
    assert (r.method, r.low, r.high, r.integer) == ("symbolic", None, 4, True)
    assert busway.condition == "10.2*servers <= 45 (in kW)"
    headroom = m['check "less than 5 % headroom on the busway" in Tutorial.racks[0]']
    # 10.2 kW x servers <= 95 % x 45 kW = 42.75 kW  <=>  servers <= 4.19
    assert _ranges(headroom)["servers"].high == 4
    gpus = m["check `gpus == 32` in Tutorial"]
    # 8 GPUs per server: exactly 4 servers
    r = _ranges(gpus)["servers"]
    assert (r.low, r.high) == (4, 4) and phrase(report, r) == \
        "only while servers = 4 [symbolic]"
    btu = m["check `power to BTU/h > 100000 BTU/h` in Tutorial"]
    # 10.2 kW = 34,803.8 BTU/h per server > 100,000 BTU/h  <=>  servers > 2.87: at least 3
    r = _ranges(btu)["servers"]
    assert (r.low, r.high) == (3, None) and btu.limit.strict


DESIGN = """
param hosts_per_rack = 4
param derate = 90 %
param supply = 38 degC
gpu G { power = 1 kW }
host H { gpus = 8 x G, power = 10.2 kW }
rack R {
  hosts = hosts_per_rack x H
  check power <= derate * 50 kW else error "derated busway"
  check ceil(power / 10 kW) <= 5 else error "five 10 kW PDUs"
  check supply + 10 K <= 50 degC else error "return water too hot"
}
row Row {
  racks = 4 x R
  feeder main { current = ac, voltage = 415 V, phases = 3, capacity = 200 kW, serves = racks }
}
site S { rows = 2 x Row }
"""


@pytest.fixture
def design(tmp_path):
    path = tmp_path / "d.astral"
    path.write_text(textwrap.dedent(DESIGN))
    return path


def test_symbolic_ranges_of_quantities_and_counts(design):
    report = margins.analyse(str(design))
    m = _by_label(report)
    derated = m['check "derated busway" in S.rows[0].racks[0]']
    # 10.2 kW x h <= derate x 50 kW: h <= 4.41 at 90 %; derate >= 40.8 / 50 = 81.6 %
    rs = _ranges(derated)
    assert derated.symbolic and rs["hosts_per_rack"].high == 4
    assert rs["derate"].method == "symbolic"
    assert rs["derate"].low == pytest.approx(0.816) and rs["derate"].high is None
    assert phrase(report, rs["derate"]) == "while derate >= 81.6 % [symbolic]"
    feeder = m["feeder S.rows[0].main (normal operation)"]
    # one feeder, no partner: it carries 4 racks x 10.2 kW x h <= 200 kW  <=>  h <= 4.9
    assert feeder.symbolic and _ranges(feeder)["hosts_per_rack"].high == 4
    assert feeder.condition == "40.8*hosts_per_rack <= 200 (in kW)"


def test_rounding_and_temperatures_are_bracketed_numerically(design):
    report = margins.analyse(str(design))
    m = _by_label(report)
    pdus = m['check "five 10 kW PDUs" in S.rows[0].racks[0]']
    # ceil(10.2 h / 10) <= 5: h = 4 gives 5, h = 5 gives 6
    assert not pdus.symbolic and pdus.condition is None
    r = _ranges(pdus)["hosts_per_rack"]
    assert (r.method, r.high) == ("numeric", 4)
    assert "numeric bracket, bisection" in phrase(report, r)
    hot = m['check "return water too hot" in S.rows[0].racks[0]']
    # a temperature point is not proportional to its SI value: bracketed, supply <= 40 degC
    r = _ranges(hot)["supply"]
    assert r.method == "numeric" and not hot.symbolic
    assert r.high == pytest.approx(273.15 + 40, abs=0.05)


def test_a_broken_limit_says_where_it_holds_again(design):
    report = margins.analyse(str(design), {"hosts_per_rack": "5"})
    derated = _by_label(report)['check "derated busway" in S.rows[0].racks[0]']
    assert not derated.limit.holds and derated.limit.margin == pytest.approx(45000 - 51000)
    assert _ranges(derated)["hosts_per_rack"].high == 4
    pdus = _by_label(report)['check "five 10 kW PDUs" in S.rows[0].racks[0]']
    assert _ranges(pdus)["hosts_per_rack"].again_below == 4


def test_check_margins_cli(design, capsys):
    assert main(["check", str(design), "--margins"]) == 0
    out = capsys.readouterr().out
    assert "holds while hosts_per_rack <= 4 [symbolic]; or while derate >= 81.6 % [symbolic]" in out
    assert main(["check", str(design), "--margins", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["margins"][0]
    assert first["kind"] == "check" and first["symbolic"] is True
    assert first["lhs"] == {"value": 40.8, "unit": "kW"} and first["rhs"] == {"value": 45.0,
                                                                                 "unit": "kW"}
    assert {r["param"]: (r["low"], r["high"]) for r in first["ranges"]} == {
        "hosts_per_rack": (None, 4), "derate": (pytest.approx(81.6), None)}


def test_a_design_that_does_not_compile_has_no_margins(tmp_path):
    bad = tmp_path / "bad.astral"
    bad.write_text("site S { power = = 1 kW }\n")
    report = margins.analyse(str(bad))
    assert report.margins == [] and "does not compile" in render(report)


def test_reference_design():
    report = margins.analyse(str(REPO / "examples/astral.astral"))
    m = _by_label(report)
    rack = m['check "rack exceeds its busway rating" in Astral.pods[0].rows[0].racks[0]']
    rs = _ranges(rack)
    assert rs["hosts_per_rack"].high == 4 and rs["rack_limit"].low == pytest.approx(40800)
    failover = m["feeder Astral.pods[0].rows[0].hvdc (one feeder failed)"]
    # 16 racks x 10.2 kW x h <= 800 kW with the other side down: h <= 4.9
    assert failover.symbolic and _ranges(failover)["hosts_per_rack"].high == 4
    normal = m["feeder Astral.pods[0].rows[0].hvdc (normal operation)"]
    assert _ranges(normal)["hosts_per_rack"].high == 9          # half of it: h <= 9.8
    cdu = m["CDU capacity of loop Astral.pods[0].secondary with one CDU failed"]
    assert not cdu.symbolic and _ranges(cdu)["hosts_per_rack"].method == "numeric"


def test_hover_on_a_param_shows_its_feasible_range(design):
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.hover import hover

    text = design.read_text()
    a = analyse(design.resolve().as_uri(), design.resolve(), text, 1)
    line = text.splitlines().index("param derate = 90 %") + 1
    shown, _ = hover(a, a.entry, line, 8)
    # derate >= 40.8 kW / 50 kW, from the derated-busway check alone
    assert "**feasible range** (symbolic, other params as they are): `derate >= 81.6 %`" in shown
    assert 'limited by: check "derated busway"' in shown
    line = text.splitlines().index("param hosts_per_rack = 4") + 1
    shown, _ = hover(a, a.entry, line, 8)
    assert "`hosts_per_rack <= 4`" in shown
    assert "only a numeric bracket can follow" in shown           # the ceil() check
