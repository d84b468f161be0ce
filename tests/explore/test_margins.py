"""Margins against ranges derived by hand: symbolic where the sides are algebraic in the
parameters (and only then called symbolic), a numeric bracket otherwise."""
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
    assert "[numeric bracket]" in phrase(report, r)
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
    assert ("    holds while hosts_per_rack <= 4 [symbolic]\n"
            "       or while derate >= 81.6 % [symbolic]\n") in out
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


@pytest.mark.parametrize("text", ["", "gpu G { power = 700 W }\n",
                                  "scenario s { required = true }\n"])
def test_a_design_without_a_site_has_no_margins_and_compiles(tmp_path, text):
    # `astral check` says it is ok: the margins said 'the design does not compile'
    path = tmp_path / "nosite.astral"
    path.write_text(text)
    report = margins.analyse(str(path))
    assert report.margins == [] and render(report).endswith(
        ": the design declares no site: no margins\n"), render(report)


@pytest.fixture(scope="module")
def reference():
    """The reference design's margins, every parameter: one analysis (about 300 compiles and
    checks) for the tests that read it. A parameter's ranges are the same whether it alone or
    every parameter is analysed (the probes are the design's, whatever asked for them)."""
    return margins.analyse(str(REPO / "examples/astral.astral"))


def test_reference_design(reference):
    report = reference
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
    # a use of the param, in an expression: the same range as on its declaration
    lines = text.splitlines()
    use = next(i for i, l in enumerate(lines) if "derate" in l and "param derate" not in l)
    shown_use, _ = hover(a, a.entry, use + 1, lines[use].index("derate") + 2)
    assert "**feasible range** (symbolic, other params as they are): `derate >= 81.6 %`" \
        in shown_use


FEEDER = """
param n = 3
param cap = 150 kW
param host_power = 10 kW
param eff = 80 %
host H { power = host_power }
rack R { hosts = n x H }
row Row {
  racks = 4 x R
  feeder main { current = ac, voltage = 415 V, phases = 3, capacity = cap, serves = racks,
                efficiency = eff }
  feeder other { current = ac, voltage = 415 V, phases = 3, capacity = 200 kW, serves = racks,
                 efficiency = if n > 2 then 80 % else 90 % }
}
site S { rows = 1 x Row }
"""


def _write(tmp_path, text, name="d.astral"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_feeder_margin_includes_its_own_efficiency(tmp_path):
    report = margins.analyse(str(_write(tmp_path, FEEDER)))
    m = _by_label(report)
    main = m["feeder S.rows[0].main (normal operation)"]
    # 4 racks x 3 hosts x 10 kW = 120 kW of load through 80 %: 150 kW on the conductors, as
    # E620 counts it (analyses/feeders.py)
    assert main.limit.lhs == pytest.approx(150e3) and main.symbolic
    rs = _ranges(main)
    # 40 n host_power / eff <= cap: n <= 3; cap >= 150 kW; host_power <= 10 kW; eff >= 80 %
    assert rs["n"].high == 3 and rs["cap"].low == pytest.approx(150e3)
    assert rs["host_power"].high == pytest.approx(10e3) and rs["host_power"].low is None
    assert rs["eff"].low == pytest.approx(0.8) and rs["eff"].method == "symbolic"
    assert "80 % efficiency" in main.notes[0]
    # a choice of efficiency is not algebraic: numeric, not called symbolic
    other = m["feeder S.rows[0].other (normal operation)"]
    assert other.limit.lhs == pytest.approx(150e3) and not other.symbolic
    # 40 kW x n / 80 % <= 200 kW up to n = 4 (200 kW); n = 5 gives 250 kW
    assert _ranges(other)["n"].method == "numeric" and _ranges(other)["n"].high == 4


def test_a_feeder_rated_in_kva_is_held_to_kva_times_its_power_factor(tmp_path):
    # `cap` in kVA at power factor 0.9: the 150 kW through the conductors need 166.7 kVA, so the
    # parameter's range starts there, and the margin says how the rating was read
    text = FEEDER.replace("param cap = 150 kW", "param cap = 170 kVA").replace(
        "capacity = cap, serves", "capacity = cap, power_factor = 90 %, serves")
    main = _by_label(margins.analyse(str(_write(tmp_path, text))))[
        "feeder S.rows[0].main (normal operation)"]
    assert main.limit.lhs == pytest.approx(150e3) and main.symbolic
    assert main.limit.rhs == pytest.approx(170e3 * 0.9)             # 153 kW of real power
    assert _ranges(main)["cap"].low == pytest.approx(150e3 / 0.9)   # 166.67 kVA
    assert main.notes[-1].endswith("its rating of 170 kVA holds kVA x power factor 0.9 of kW")


def test_the_reference_utility_feeder_counts_its_efficiency(reference):
    failover = _by_label(reference)["feeder Astral.pods[0].rows[0].utility (one feeder failed)"]
    # 16 racks x 4 x 10.2 kW = 652.8 kW through 97 %: 672.99 kW of the 800 kW capacity
    assert failover.limit.lhs == pytest.approx(652.8e3 / 0.97)
    assert failover.limit.margin == pytest.approx(800e3 - 652.8e3 / 0.97)
    # 163.2 h / 0.97 <= 800  <=>  h <= 4.75
    assert failover.symbolic and _ranges(failover)["hosts_per_rack"].high == 4


MECHANICAL = """
param n = 3
param aux = 2 kW
host H { power = 10 kW }
rack R { hosts = n x H }
row Row {
  racks = 4 x R
  feeder main { current = ac, voltage = 415 V, phases = 3, capacity = 200 kW, serves = racks }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 5 % }
}
site S {
  rows = 1 x Row
  auxiliary = aux
  feeder mech_a { current = ac, voltage = 415 V, phases = 3, capacity = 10 kW, side = A,
                  mechanical = true }
  feeder mech_b { current = ac, voltage = 415 V, phases = 3, capacity = 10 kW, side = B,
                  mechanical = true }
}
"""


def test_the_facility_feeders_have_margins_too(tmp_path):
    """The feeders with `mechanical = true` carry the facility's own consumers and are checked
    as the IT feeders are (E620, E621): their margins are listed beside those."""
    report = margins.analyse(str(_write(tmp_path, MECHANICAL)))
    m = _by_label(report)
    # the facility's load at the peak: the air unit's fans, 5 % of 4 racks x 3 hosts x 10 kW
    # = 6 kW, and the auxiliaries' 2 kW: 8 kW, 4 kW on each side, 8 kW with the other failed
    for side in ("a", "b"):
        normal = m[f"feeder S.mech_{side} (normal operation)"]
        failover = m[f"feeder S.mech_{side} (one feeder failed)"]
        assert normal.limit.lhs == pytest.approx(4e3) and normal.limit.rhs == pytest.approx(10e3)
        assert failover.limit.lhs == pytest.approx(8e3)
        assert failover.limit.margin == pytest.approx(2e3)
        rs = _ranges(failover)
        # 5 % x 40 kW x n + aux <= 10 kW: n <= 4 (n = 5: 12 kW); aux <= 10 - 6 = 4 kW
        assert rs["n"].high == 4 and rs["aux"].high == pytest.approx(4e3)
        # normal: (2 kW x n + aux) / 2 <= 10 kW: n <= 9; aux <= 20 - 6 = 14 kW
        assert _ranges(normal)["n"].high == 9
        assert _ranges(normal)["aux"].high == pytest.approx(14e3)


EDGES = """
import stdlib.cooling { Water, CDU }
param n = 1
param share = 80 %
param k = 1.5
param m = 1
host H { power = 10 kW, liquid_share = share }
rack R { hosts = n x H }
site S {
  racks = m * 2 x R
  check power <= k * 20 kW else error "k x 20 kW"
  loop plates {
    fluid = Water, supply = 35 degC, rise = 10 K, cdu = CDU(capacity = 200 kW), cdus = 1
    pump_head = 150 kPa, pump_efficiency = 60 %
  }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 % }
}
"""


def test_a_value_that_does_not_compile_is_not_the_limit_breaking(tmp_path):
    report = margins.analyse(str(_write(tmp_path, EDGES)))
    cdu = _by_label(report)["CDU capacity of loop S.plates"]
    r = _ranges(cdu)["share"]
    # 2 racks x 10 kW x share <= 200 kW for every share a liquid_share may take: above 100 %
    # the design does not compile (E309), which is the edge of `share`, not of the CDU
    assert r.method == "numeric" and r.high is None and r.low is None
    assert r.compiles_high == pytest.approx(1.0, rel=1e-3) and r.edge_codes == ("E309",)
    text = phrase(report, r)
    assert ("the design compiles only while share <= 100 % (E309: `liquid_share` must be at "
            "most 100 % at ") in text
    assert "for every share searched" in text


def test_only_counts_are_whole_numbers(tmp_path):
    report = margins.analyse(str(_write(tmp_path, EDGES)))
    check = _by_label(report)['check "k x 20 kW" in S']
    rs = _ranges(check)
    # 2 m racks x n hosts x 10 kW <= k x 20 kW, i.e. m n <= k: k is a plain number (not a
    # count): k >= 1, any fraction; n is a replication count: n <= 1.5, so n <= 1; m only
    # appears in a product (2 m racks must be whole, m need not be): m <= 1.5
    assert rs["k"].low == pytest.approx(1.0) and not rs["k"].integer
    assert rs["n"].high == 1 and rs["n"].integer
    assert rs["m"].high == pytest.approx(1.5) and not rs["m"].integer


COMPOUND = """
param n = 4
param big = true
gpu G { power = 500 W }
host H { gpus = 4 x G, power = 10 kW }
rack R {
  hosts = n x H
  check power <= 45 kW and power >= 20 kW else error "window"
  check big else warning "big"
  check not (power > 45 kW) else error "negated"
  check power <= 15 kW or power >= 35 kW else error "either"
}
site S { racks = 1 x R }
"""


def test_compound_and_negated_checks_have_margins(tmp_path):
    report = margins.analyse(str(_write(tmp_path, COMPOUND)))
    m = _by_label(report)
    # 10 kW per host: power = 10 n kW
    upper = m['check "window" (part 1 of 2: `power <= 45 kW`) in S.racks[0]']
    lower = m['check "window" (part 2 of 2: `power >= 20 kW`) in S.racks[0]']
    assert _ranges(upper)["n"].high == 4 and upper.symbolic          # 10 n <= 45
    assert _ranges(lower)["n"].low == 2 and lower.symbolic            # 10 n >= 20
    negated = m['check "negated" (negated: not `power > 45 kW`) in S.racks[0]']
    assert _ranges(negated)["n"].high == 4 and negated.limit.margin == pytest.approx(5e3)
    # `a or b` is not a conjunction: its truth is bracketed. At n = 4 (40 kW) it holds, at 3
    # (30 kW) and 2 (20 kW) it does not, at 1 (10 kW) again: the nearest boundary is n >= 4
    either = m['check "either" in S.racks[0]']
    assert either.limit.truth and either.limit.holds and not either.symbolic
    r = _ranges(either)["n"]
    assert (r.method, r.low, r.high) == ("numeric", 4, None)
    big = m['check "big" in S.racks[0]']
    assert big.limit.truth and big.ranges == () and big.depends_on == ()
    text = render(report)
    assert "check \"big\" in S.racks[0]: holds" in text
    assert "a truth value: no numeric parameter moves it" in text
    # broken: with 5 hosts the window's upper part and the negated check fail
    broken = _by_label(margins.analyse(str(_write(tmp_path, COMPOUND)), {"n": "5"}))
    assert not broken['check "window" (part 1 of 2: `power <= 45 kW`) in S.racks[0]'].limit.holds
    assert broken['check "window" (part 2 of 2: `power >= 20 kW`) in S.racks[0]'].limit.holds


def test_the_coolant_limit_of_the_reference(reference):
    coolant = _by_label(reference)[
        "coolant supply of loop Astral.pods[0].secondary (the GPUs' cold plates accept at "
        "most 45 degC)"]
    # the loop supplies `supply` = 40 degC; the H800's cold plate accepts 45 degC (stdlib):
    # E642 beyond it
    assert coolant.limit.margin == pytest.approx(5.0)
    r = _ranges(coolant)["supply"]
    assert r.method == "numeric" and r.high == pytest.approx(273.15 + 45, abs=0.01)


def test_job_memory_moves_with_the_parallel_layout():
    """explore.astral's tp and pp do not compile at tp +- 1 (the batch no longer divides):
    their admissible values are searched instead, and only the limits they move are named."""
    from astral_dsl import seer
    from astral_dsl.cli.common import checked

    report = margins.analyse(str(REPO / "examples/explore.astral"), params=["tp", "pp"])
    m = _by_label(report)
    memory = m["memory per GPU of job llama70b"]
    rs = _ranges(memory)
    assert set(memory.depends_on) == {"tp", "pp"}
    assert "errs (E757) only beyond its uncertainty" in memory.notes[0]
    assert rs["tp"].low == 4 and rs["pp"].low is None
    # by hand, from Seer's estimate: tp 4 (pp 4) fits in the H100's 80 GiB (85.9 GB), tp 2 does
    # not; pp 1 (tp 8) fits too (80.05 GB), so pp has no lower limit down to 1

    def estimate(**sets):
        design = checked(str(REPO / "examples/explore.astral"), sets).design
        _, spec, cluster = seer.validate_job(design, design.jobs[0])
        from astral_dsl.explore.margins.memory import _memory_estimate
        return _memory_estimate(spec, cluster)[0]

    assert estimate(tp="4") <= 80 * 2**30 < estimate(tp="2")
    assert 80e9 < estimate(pp="1") <= 80 * 2**30
    # tp moves nothing else: not the busway, not the feeders
    busway = m['check "rack exceeds its busway rating" in Lab.pods[0].rows[0].racks[0]']
    assert "tp" not in busway.depends_on and "pp" not in busway.depends_on


def test_hover_names_only_what_a_parameter_moves():
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.hover import hover

    path = (REPO / "examples/explore.astral").resolve()
    text = path.read_text()
    a = analyse(path.as_uri(), path, text, 1)
    line = text.splitlines().index("param tp = 8") + 1
    shown, _ = hover(a, a.entry, line, 8)
    assert "also moves 1 limit(s) that only a numeric bracket can follow (memory per GPU of " \
           "job llama70b)" in shown
    assert "busway" not in shown and "no check or engineering limit" not in shown


def test_no_spurious_lower_bound_at_zero(tmp_path):
    report = margins.analyse(str(_write(tmp_path, FEEDER)), params=["host_power"])
    for m in report.margins:
        for r in m.ranges:
            assert r.low is None or r.low > 0, (m.limit.label, r)


def test_oversubscription_edge_is_where_it_breaks_not_where_it_stops_compiling(tmp_path):
    """examples/explore.astral with the ToR's uplinks and the fabric's limit as parameters."""
    text = (REPO / "examples/explore.astral").read_text()
    text = text.replace("param pp = 4\n", "param pp = 4\nparam up_ports = 32\nparam max_os = 1\n")
    text = text.replace("max_oversubscription = 1", "max_oversubscription = max_os")
    text = text.replace("down = 64 x 200 Gb/s, up = 32 x 400 Gb/s",
                        "down = 64 x 200 Gb/s, up = up_ports x 400 Gb/s")
    report = margins.analyse(str(_write(tmp_path, text)), params=["up_ports", "max_os"])
    tor = _by_label(report)["oversubscription of tier tor of Lab.pods[0].fabric"]
    rs = _ranges(tor)
    # ToR: 64 x 200 Gb/s down over up_ports x 400 Gb/s up = 32 / up_ports <= max_os:
    # up_ports >= 32 (a count), max_os >= 1 (any fraction: 0.5 gives E602). Above the
    # plausible range of max_os the design stops compiling (E316): that is the parameter's
    # edge, not a bound of the limit
    assert tor.limit.lhs == pytest.approx(1.0) and tor.limit.margin == pytest.approx(0.0)
    assert rs["up_ports"].low == 32 and rs["up_ports"].high is None
    assert rs["max_os"].low == pytest.approx(1.0, abs=1e-3) and rs["max_os"].high is None
    assert not rs["max_os"].integer


@pytest.mark.parametrize("text", [
    "param p = 100 kW\nsite S { power_limit = p }\n",
    "site S { power_limit = 100 kW }\n",
    "param p = 100 kW\nparam n = 2\nhost H { power = 10 kW }\n"
    "rack R { hosts = n x H, power_limit = p }\nsite S { racks = 3 x R, power_limit = p * 3 }\n",
])
def test_a_site_power_limit_has_a_margin(tmp_path, capsys, text):
    """The site's (or a rack's) power_limit, a param or a number: the roll-up of a frame is
    taken through the evaluator's view of the frames (it raised AttributeError on a site
    whose power no check had rolled up yet: E000)."""
    p = tmp_path / "limit.astral"
    p.write_text(text)
    report = margins.analyse(str(p))
    limits = {m.limit.label: m for m in report.margins}
    site = limits["site power of S"]
    assert site.limit.lhs == (60e3 if "rack" in text else 0.0)
    assert site.limit.rhs == (300e3 if "rack" in text else 100e3)
    assert main(["check", "--margins", str(p)]) == 0
    out = capsys.readouterr().out
    assert "site power of S" in out and "E000" not in out


def test_the_evaluation_budget_bounds_the_work_and_says_what_it_left(monkeypatch, capsys):
    # every value a parameter is tried at is a whole compile and check: one analysis tries at
    # most MAX_PROBES of them; what is left unbracketed is named, limit by limit
    monkeypatch.setattr(margins, "MAX_PROBES", 12)
    calls = []
    from astral_dsl.workspace import Workspace
    compile_ = Workspace.compile

    def counted(self, *args, **kwargs):
        calls.append(kwargs.get("overrides"))
        return compile_(self, *args, **kwargs)

    monkeypatch.setattr(Workspace, "compile", counted)
    report = margins.analyse(str(REPO / "examples/astral.astral"))
    assert len([c for c in calls if c]) <= 12          # the probes (the first compile has none)
    notes = [n for m in report.margins for n in m.notes] + list(report.notes)
    assert any("the budget of 12 evaluations of the design ran out first" in n for n in notes)
    assert render(report)                              # and it still prints


BOUNDS = """
param x = 10 W
param lim = 20 kW
param k = 1.5
rack R {
  power_limit = 45 kW
  check max(x, 1 W) * 3 <= 35.15625 W else error "numeric"
  check x * 3 <= 35.15625 W else error "symbolic"
  check x * 3 >= 28.15625 W else error "from below"
  check 20.4 kW * k < lim * 3 else error "strict"
}
site S { racks = 1 x R }
"""


def test_a_printed_bound_is_a_value_where_the_limit_holds(tmp_path, capsys):
    """Each bound is rounded toward the side where the limit holds, and a strict limit's
    bound is strict: the value printed, set, keeps the limit."""
    path = _write(tmp_path, BOUNDS)
    report = margins.analyse(str(path))
    m = _by_label(report)
    # 3 x <= 35.15625 W  <=>  x <= 11.71875 W: 11.7188 W (to the nearest) breaks it
    for label, tag in (('check "numeric" in S.racks[0]', "numeric bracket"),
                       ('check "symbolic" in S.racks[0]', "symbolic")):
        assert phrase(report, _ranges(m[label])["x"]) == f"while x <= 11.7187 W [{tag}]"
    # 3 x >= 28.15625 W  <=>  x >= 9.3854166... W: up to 9.3855 W, not down to 9.3854
    below = _ranges(m['check "from below" in S.racks[0]'])["x"]
    assert phrase(report, below) == "while x >= 9.3855 W [symbolic]"
    # 20.4 kW x 1.5 < 3 lim  <=>  lim > 10.2 kW (at 10.2 kW, 30.6 < 30.6 is false);
    # 30.6 k < 60  <=>  k < 50/17 = 2.94117647...
    strict = _ranges(m['check "strict" in S.racks[0]'])
    assert (strict["lim"].low, strict["lim"].low_open) == (pytest.approx(10200), True)
    assert phrase(report, strict["lim"]) == "while lim > 10.2 kW [symbolic]"
    assert phrase(report, strict["k"]) == "while k < 2.941176 [symbolic]"
    # the values printed hold; the next one up (down) at the printed precision does not
    for sets, ok in ((["--set", "x=11.7187W"], True), (["--set", "x=11.7188W"], False),
                     (["--set", "x=9.3855W"], True), (["--set", "x=9.3854W"], False),
                     (["--set", "lim=10.2kW"], False), (["--set", "lim=10.2001kW"], True)):
        assert (main(["check", str(path), *sets]) == 0) is ok, sets
    capsys.readouterr()
    assert main(["check", str(path), "--margins", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    lim = next(r for m in doc["margins"] for r in m["ranges"] if r["param"] == "lim")
    assert (lim["low"], lim["low_open"], lim["high_open"]) == (pytest.approx(10.2), True, False)


def _steps(most: int) -> str:
    """A limit in steps of a utilization u (at 50 %): ceil(u x 10) <= most."""
    return f"""
        param u = 50 %
        host H {{ power = 1 kW }}
        rack R {{ hosts = 2 x H }}
        site S {{ racks = 1 x R, utilization = u
          check ceil(u * 10) <= {most} else error "step" }}
        """


def test_the_json_says_where_the_design_stops_compiling(tmp_path, capsys):
    """README: per range `compiles_low`/`compiles_high`, `compile_errors` and `skipped`. A
    utilization above 100 % does not compile (E309): that is u's edge, not the limit's."""
    path = _write(tmp_path, _steps(20))
    assert main(["check", str(path), "--margins", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    r = next(r for m in doc["margins"] for r in m["ranges"] if r["param"] == "u")
    assert (r["low"], r["high"], r["compiles_low"], r["compiles_high"]) == (None, None, None,
                                                                            100.0)
    assert r["compile_errors"] == ["E309"] and r["skipped"] == []
    assert r["text"].endswith("the design compiles only while u <= 100 % (E309: `utilization` "
                              f"must be at most 100 % at {path}:5)")


def test_a_step_limit_that_one_nearby_value_does_not_move_still_depends(tmp_path):
    """ceil(u x 10) <= 5 at u = 50 % is 5 <= 5: 42 % (the nearest value tried, below) keeps
    ceil(4.2) = 5, but 51 % makes it 6 and breaks it. It depends on u, up to 50 %."""
    path = _write(tmp_path, _steps(5))
    assert main(["check", str(path), "--set", "u=51%"]) == 1
    report = margins.analyse(str(path))
    step = _by_label(report)['check "step" in S']
    assert step.depends_on == ("u",)
    r = _ranges(step)["u"]
    assert r.method == "numeric" and r.high == pytest.approx(0.5)
    assert phrase(report, r) == "while u <= 50 % [numeric bracket]"


def test_hover_shows_a_strict_bound_strictly(tmp_path):
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.hover import hover

    path = _write(tmp_path, BOUNDS)
    text = path.read_text()
    a = analyse(path.resolve().as_uri(), path.resolve(), text, 1)
    line = text.splitlines().index("param lim = 20 kW") + 1
    shown, _ = hover(a, a.entry, line, 8)
    # 20.4 kW x 1.5 < 3 lim: lim > 10.2 kW
    assert "**feasible range** (symbolic, other params as they are): `lim > 10.2 kW`" in shown
    line = text.splitlines().index("param x = 10 W") + 1
    shown, _ = hover(a, a.entry, line, 7)
    # 28.15625 W <= 3 x <= 35.15625 W, each bound rounded inward
    assert "`9.3855 W <= x <= 11.7187 W`" in shown


TRANSFORMER = """
param n = 3
param aux = 6 kW
host H { power = 10 kW }
rack R { hosts = n x H }
site S {
  racks = 2 x R
  utilization = 100 %
  auxiliary = aux
  transformer mv {
    capacity = 100 kVA, count = 2, redundancy = n_plus_1, no_load_loss = 1 kW, load_loss = 2 kW
    power_factor = 90 %
  }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 0 %, dew_point = 12 degC }
}
"""


def test_a_transformer_stage_has_its_loading_margin(tmp_path):
    """A transformer stage's limit is E634's: the site's peak in apparent power against the
    units its redundancy leaves in service times their rating."""
    report = margins.analyse(str(_write(tmp_path, TRANSFORMER)))
    m = _by_label(report)["transformers S.mv (1 of 2 unit(s) in service, n_plus_1)"]
    # 2 racks x 3 hosts x 10 kW = 60 kW of IT + 6 kW of auxiliaries = 66 kW at the peak, over
    # the power factor 0.9: 73.333 kVA; n_plus_1 of 2 units leaves 1 x 100 kVA
    assert m.limit.kind == "transformer" and m.limit.unit == "kVA"
    assert m.limit.lhs == pytest.approx(66e3 / 0.9) and m.limit.rhs == pytest.approx(100e3)
    assert m.limit.margin == pytest.approx(100e3 - 66e3 / 0.9)
    # at its `count`'s value, as E634: line 11 (the text opens with a newline), after the 32
    # characters of `    capacity = 100 kVA, count = `
    assert (m.limit.line, m.limit.column) == (11, 33)
    rs = _ranges(m)
    # (20 kW x n + aux) / 0.9 <= 100 kVA: n <= 4.2, so 4 (n = 5: 106 kW); aux <= 90 - 60 = 30 kW
    assert rs["n"].high == 4
    assert rs["aux"].high == pytest.approx(30e3, rel=1e-4)



def test_a_transformer_stages_note_gives_its_load_as_e634_does(tmp_path):
    """The note said the peak in kW to 4 decimals (`66.1235 kW`); E634 and the rest of the
    margins say it in readable units: 60 + 6.12345 = 66.12345 kW, `66.123 kW`."""
    text = TRANSFORMER.replace("aux = 6 kW", "aux = 6.12345 kW")
    report = margins.analyse(str(_write(tmp_path, text)))
    m = _by_label(report)["transformers S.mv (1 of 2 unit(s) in service, n_plus_1)"]
    assert m.limit.note == "66.123 kW at power factor 0.9 (declared)"

CDUS = """
fluid Water {{ coolprop = "Water" }}
cdu C {{ capacity = 35 kW }}
host H {{ power = 10 kW, liquid_share = 80 % }}
rack R {{ hosts = 4 x H }}
site S {{
  racks = 2 x R
  loop plates {{ fluid = Water, supply = 30 degC, rise = 10 K, cdu = C, cdus = 5
                 redundancy = {scheme} }}
}}
"""


def test_the_cdus_margin_after_a_failure_is_the_one_their_redundancy_covers(tmp_path):
    """As E641: one side of 2N CDUs (the smaller half), none for `n`."""
    report = margins.analyse(str(_write(tmp_path, CDUS.format(scheme="two_n"))))
    by = _by_label(report)
    m = by["CDU capacity of loop S.plates with one side of its 2N CDUs failed (2 of 5 left)"]
    # 2 racks x 4 hosts x 10 kW x 80 % = 64 kW against 2 x 35 = 70 kW (not 4 x 35 = 140 kW)
    assert m.limit.kind == "cdu_n1"
    assert m.limit.lhs == pytest.approx(64e3) and m.limit.rhs == pytest.approx(70e3)
    report = margins.analyse(str(_write(tmp_path, CDUS.format(scheme="n"))))
    assert [m.limit.kind for m in report.margins if m.limit.kind.startswith("cdu")] == ["cdu"]


def test_the_memory_limit_reads_the_jobs_the_check_validated(monkeypatch):
    """Each probe's memory limit comes from the check's own validation of the job (step 17,
    Checked.jobs) instead of a second seer.validate_job; the validation of another design's
    job (another compile: other objects) is never read for this one's."""
    import attrs

    from astral_dsl import seer
    from astral_dsl.cli.common import checked
    from astral_dsl.explore.margins.memory import job_memory as _memory

    path = str(REPO / "examples/explore.astral")
    c = checked(path, {})
    assert [job for job, *_ in c.jobs] == list(c.design.jobs)
    real, calls = seer.validate_job, []

    def counted(design, job, *args, **kwargs):
        calls.append(job.template)
        return real(design, job, *args, **kwargs)

    monkeypatch.setattr(seer, "validate_job", counted)
    fresh = _memory(attrs.evolve(c, jobs=()))
    assert calls == ["llama70b"] and [m.key for m in fresh] == ["memory:llama70b"]
    del calls[:]
    assert _memory(c) == fresh and calls == []
    # tp = 4 (by hand, test above: its estimate differs from tp 8's); its validation is not
    # taken for the tp 8 design's job, which is validated again
    other = checked(path, {"tp": "4"})
    stale = _memory(attrs.evolve(c, jobs=other.jobs))
    assert stale == fresh and calls == ["llama70b"]
    assert _memory(other)[0].lhs != fresh[0].lhs
    # Seer's estimate is made once per job and cluster (equal records): another compile of the
    # same design (a probe of a parameter the job does not read) asks for it again, tp = 4 not
    from astral_dsl.explore.margins.memory import _memory_estimate
    from astral_dsl.seer import memory

    again = checked(path, {})
    _memory_estimate.cache_clear()
    made, estimate = [], memory.estimate
    monkeypatch.setattr(memory, "estimate", lambda *a: made.append(a) or estimate(*a))
    assert _memory(c) == _memory(again) == fresh and len(made) == 1
    assert _memory(other)[0].lhs != fresh[0].lhs and len(made) == 2


def test_a_probe_records_the_sides_of_checks_and_nothing_per_value(design):
    """A numeric probe (NumericRecorder) has no symbols, so it keeps no shadow of any value or
    expression, and its limits are the symbolic trace's numbers with OPAQUE sides."""
    from astral_dsl.explore.margins.limits import collect
    from astral_dsl.explore.margins.shadow import OPAQUE, NumericRecorder, Shadows
    from astral_dsl.pipeline import check
    from astral_dsl.workspace import Workspace

    ws = Workspace.open(str(design), {})
    traced, numbers = Shadows(), NumericRecorder()
    exact = collect(ws, traced, check(ws, ws.compile(trace=traced)))
    probed = collect(ws, numbers, check(ws, ws.compile(trace=numbers), required=False))
    assert traced._last and not numbers._last and not numbers.shadows
    # nor is it told of them: its compile's evaluator runs unwrapped (semantics/trace.py)
    assert "field" in vars(traced.evaluator) and "field" not in vars(numbers.evaluator)
    assert not numbers._last_value and not numbers._by_expr
    assert [(p.key, p.lhs, p.rhs, p.holds) for p in probed] == \
        [(e.key, e.lhs, e.rhs, e.holds) for e in exact]
    derated = next(p for p in probed if p.label.startswith('check "derated busway"'))
    # 4 hosts x 10.2 kW = 40.8 kW <= 90 % x 50 kW = 45 kW
    assert (derated.lhs, derated.rhs) == (pytest.approx(40800.0), pytest.approx(45000.0))
    assert derated.lhs_shadow is OPAQUE and derated.rhs_shadow is OPAQUE
    assert next(e for e in exact if e.key == derated.key).symbolic


def test_the_memory_margin_of_a_job_that_leaves_recompute_to_the_rule_is_the_checks(tmp_path):
    """`recompute = auto`: `astral check` estimates the memory with whole layers recomputed
    (validate_memory.memory_probe); the margin took it with nothing recomputed, a figure of
    neither the check nor the forecast (a 4,096-GPU design: 39.6 GB beside the check's 18.7 GB
    and the forecast's 41.2 GB). Llama 3 8B on tp 8, pp 2, dp 8 of H100s, micro-batch 1, 4K
    sequences, as small.astral."""
    import astral_dsl

    text = (REPO / "tests/fixtures/diagnose/small.astral").read_text(encoding="utf-8")
    path = tmp_path / "small.astral"
    path.write_text(text.replace("recompute = full", "recompute = auto"), encoding="utf-8")
    memory = _by_label(margins.analyse(str(path), params=[]))["memory per GPU of job small"]
    full = astral_dsl.forecast(str(path), recompute="full").detail.memory.total
    none = astral_dsl.forecast(str(path), recompute="none").detail.memory.total
    assert none > full * 1.05                              # the two differ: it is not moot
    assert memory.limit.lhs == pytest.approx(full * 8)     # bits, as every information limit


def test_the_memory_margin_says_what_it_takes_in_place_of_the_rules_choice(tmp_path):
    """The margin is the check's estimate (memory_probe): what the job leaves to Seer's rule at
    its least memory, not the forecast's choice. Its note said nothing of it, so a job with an
    interleaved schedule and no `virtual_stages` read 39.98 GB in the margins beside the
    forecast's 43.4 GB (a 2,048-GPU B200 design, Llama 3 70B on tp 8, pp 4): the note now
    names what was taken, and a job that leaves nothing to the rule gets no such words."""
    text = (REPO / "tests/fixtures/diagnose/small.astral").read_text(encoding="utf-8")

    def note(old, new):
        path = tmp_path / "small.astral"
        path.write_text(text.replace(old, new), encoding="utf-8")
        return _by_label(margins.analyse(str(path), params=[]))[
            "memory per GPU of job small"].notes[0]

    declared = note("recompute = full", "recompute = full")
    assert "least memory" not in declared
    interleaved = note("dp = 8 }", "dp = 8, schedule = interleaved }")
    assert "; at 1 virtual stage, the least memory of what the job leaves to Seer's rule" \
        in interleaved, interleaved
    auto = note("recompute = full", "recompute = auto")
    assert "; at recompute = full, no layer offloaded, the least memory" in auto, auto


HEAT_PATHS = """
param limit = 45 kW
param water_c = 20 degC
param approach_k = 5 K
host H { power = 10 kW }
rack R { hosts = 4 x H }
site S {
  racks = 4 x R
  air room {
    supply = 27 degC, rise = 12 K, max_rack_heat = limit, approach = approach_k
    fan_power_ratio = 2 %, dew_point = 12 degC
  }
  facility water { supply = water_c, rise = 6 K }
}
"""


def test_the_heat_to_air_per_rack_has_its_margin(tmp_path):
    """E644's limit: a rack's heat to air within its air unit's `max_rack_heat`. `check
    --margins` listed no limit for it, so a margin report said nothing of a checked limit."""
    report = margins.analyse(str(_write(tmp_path, HEAT_PATHS)))
    m = _by_label(report)["heat to air of a rack under air unit S.room (its `max_rack_heat`)"]
    # 4 hosts x 10 kW, all of it to air, against 45 kW: line 10 (the text opens with a newline),
    # at the value of `max_rack_heat`, where E644 points
    assert m.limit.kind == "air_rack" and m.limit.unit == "kW"
    assert (m.limit.lhs, m.limit.rhs, m.limit.margin) == (40e3, 45e3, 5e3)
    assert (m.limit.line, m.limit.column) == (10, 52)
    assert _ranges(m)["limit"].low == pytest.approx(40e3, rel=1e-4)
    broken = _by_label(margins.analyse(str(_write(tmp_path, HEAT_PATHS)), {"limit": "35 kW"}))
    assert not broken["heat to air of a rack under air unit S.room (its `max_rack_heat`)"] \
        .limit.holds
    from astral_dsl.pipeline import check
    from astral_dsl.workspace import Workspace

    at = check(Workspace.open(str(tmp_path / "d.astral"), {"limit": "35 kW"}))
    (e,) = [d for d in at.diagnostics if d.code == "E644"]
    assert (e.span.start.line, e.span.start.column) == (10, 52)


def test_the_supply_reachable_from_the_facility_water_has_its_margin(tmp_path):
    """E651's limit: the facility water's supply plus the coil's approach at or below the air
    unit's supply (a temperature: the margin in K). `check --margins` listed none."""
    report = margins.analyse(str(_write(tmp_path, HEAT_PATHS)))
    label = "facility water S.water plus the coil's approach, within the supply of air unit S.room"
    m = _by_label(report)[label]
    # 20 degC + 5 K = 25 degC against the 27 degC supply: 2 K; at the unit's `supply` (line 10)
    assert m.limit.kind == "approach" and m.limit.point
    assert m.limit.lhs == pytest.approx(273.15 + 25) and m.limit.rhs == pytest.approx(273.15 + 27)
    assert m.limit.margin == pytest.approx(2.0)
    assert m.limit.line == 10
    assert "plus a 5 K approach (declared)" in m.limit.note
    rs = _ranges(m)
    assert rs["water_c"].method == "numeric" and rs["water_c"].high == pytest.approx(273.15 + 22,
                                                                                  abs=0.01)
    assert rs["approach_k"].high == pytest.approx(7.0, abs=0.01)
    # as E651 fires: past 22 degC the limit is broken
    checked = _by_label(margins.analyse(str(_write(tmp_path, HEAT_PATHS)), {"water_c": "23 degC"}))
    assert not checked[label].limit.holds
    from astral_dsl.pipeline import check
    from astral_dsl.workspace import Workspace

    at = check(Workspace.open(str(tmp_path / "d.astral"), {"water_c": "23 degC"}))
    assert "E651" in {d.code for d in at.diagnostics}


def test_the_cli_margins_name_the_heat_path_limits(tmp_path, capsys):
    assert main(["check", "--margins", str(_write(tmp_path, HEAT_PATHS))]) == 0
    out = capsys.readouterr().out
    assert "heat to air of a rack under air unit S.room (its `max_rack_heat`): 40 kW <= 45 kW" \
        in out
    assert "within the supply of air unit S.room: 25 degC <= 27 degC (margin 2 K; holds)" in out


def test_a_limit_that_holds_on_pieces_is_bounded_by_the_piece_of_the_value_now(tmp_path):
    # b / (b - 2 kW) <= 10^6 holds for b < 2 kW and for b >= 2,000,000/999,999 kW, and fails
    # between (and is undefined at 2 kW): the union's hull, [0, oo), read 'holds for every b'
    text = textwrap.dedent("""\
        param b = 3 kW
        gpu G { power = 700 W }
        host H { gpus = 8 x G }
        rack R {
          hosts = 2 x H
          check b / (b - 2 kW) <= 1000000 else error "pieces"
        }
        site S { racks = 2 x R }
        """)
    report = margins.analyse(str(_write(tmp_path, text)))
    (r,) = _ranges(_by_label(report)['check "pieces" in S.racks[0]']).values()
    assert r.method == "symbolic" and r.high is None
    assert r.low == pytest.approx(2e9 / 999_999) and "not one interval" in r.note
    # with b below the gap now, the piece below it
    report = margins.analyse(str(_write(tmp_path, text.replace("b = 3 kW", "b = 1 kW"))))
    (r,) = _ranges(_by_label(report)['check "pieces" in S.racks[0]']).values()
    assert (r.low, r.high) == (None, pytest.approx(2000.0)) and r.high_open
