"""Scenario effects beyond the examples: a fraction of a switch tier, feeder failures with and
without a partner, a failed CDU, a hotter supply."""
from __future__ import annotations

import pytest

import astral_dsl
from test_network_groups import _parts

FABRIC = """\
gpu G { power = 700 W }
nic N { ports = 2, port_speed = 200 Gb/s }
switch S { ports = 128, port_speed = 400 Gb/s, max_ports = 256, power = 1 kW }
host A { gpus = 8 x G, nics = 8 x N, power = 10 kW }
rack R { hosts = 4 x A }
fabric F {
  rails = 8, planes = 2, max_oversubscription = 1
  tier tor { switch = S, scope = site, per = [rail, plane], down = 128 x 200 Gb/s, up = 64 x 400 Gb/s }
  tier core { switch = S, scope = site, down = 128 x 400 Gb/s }
}
site X { racks = 32 x R, fabric = F }
scenario quarter_core { fail 25 % of X.fabric.core }
scenario plane_b { fail X.fabric.plane[B] }
"""


def outcomes(text, **kw):
    ws = astral_dsl.compiles(text, name="s.astral")
    design = ws.design
    assert design.valid, design.diagnostics
    checked = astral_dsl.check(ws, all_scenarios=True, **kw)
    return checked, {o.name: o for o in checked.scenarios}


def test_a_quarter_of_the_core_down_oversubscribes_the_tor_tier():
    checked, out = outcomes(FABRIC)
    assert checked.valid                       # optional scenarios only warn
    q = out["quarter_core"]
    assert [d.code for d in q.broken] == ["E602"]
    tor = q.result.fabrics[0].tiers[0]
    # 128 x 200G down over 64 x 400G up with 75 % of the uplinks alive: 25.6 / 19.2 = 1.333
    assert tor.oversubscription == pytest.approx(25.6 / 19.2)
    assert "25 % of" in q.notes[0]
    w680 = [d for d in checked.diagnostics if d.code == "W680"]
    assert len(w680) == 1 and "quarter_core" in w680[0].message
    # the E602 names the failure, at the tier it oversubscribes (`tier tor`, line 8), with the
    # failure statement (line 12) and the arithmetic (25.6 / 25.6 = 1:1 declared) in its notes
    (e602,) = q.broken
    assert e602.message == ("tier `tor` runs 1.3333:1 into `core` (`25 % of X.fabric.core` "
                            "failed), above the declared limit 1:1")
    assert e602.span.start.line == 8
    assert e602.notes == ("the failure: `fail 25 % of X.fabric.core` (s.astral:12)",
                          "each `tor` switch loses 25 % of its uplinks into `core`, so its "
                          "1:1 / (1 - 25 %) = 1.3333:1")


def test_a_share_of_a_tier_within_the_limit_is_a_note():
    # a limit of 1.5:1: the ToRs' 1.3333:1 holds, said in the scenario's notes, no E602
    _, out = outcomes(FABRIC.replace("max_oversubscription = 1", "max_oversubscription = 1.5"))
    q = out["quarter_core"]
    assert not q.broken
    assert "tier `tor` runs 1.3333:1 into `core` (`25 % of X.fabric.core` failed)" in q.notes


def test_all_of_a_tier_is_the_tier_itself_not_an_infinite_oversubscription():
    # 100 % of the core: every ToR loses every uplink, so its GPUs reach only the hosts under
    # their own ToR (E617, as `fail X.fabric.core`), not "oversubscribed inf:1" (E602), and
    # without `max_oversubscription` not "holds". 32 racks x 4 hosts x 8 GPUs = 1,024 GPUs.
    for text in (FABRIC, FABRIC.replace(", max_oversubscription = 1", "")):
        text = text.replace("fail 25 % of X.fabric.core", "fail 100 % of X.fabric.core")
        _, out = outcomes(text)
        q = out["quarter_core"]
        assert [d.code for d in q.broken] == ["E617"], q.broken
        assert "1,024 GPUs lose every path into tier `core`" in q.broken[0].message
        assert q.result.fabrics[0].tiers[0].oversubscription == pytest.approx(1.0)
        # 16 ToRs (8 rails x 2 planes, 128 host ports each) x 64 uplinks = 1,024 links / 128:
        # 8 cores of 1 kW, all off
        assert "8 `core` switches off: 8.0 kW less network power" in q.notes


def test_a_plane_down_is_reported_and_breaks_no_capacity_check():
    _, out = outcomes(FABRIC)
    p = out["plane_b"]
    assert not p.broken
    # 32 racks x 4 hosts x 8 NICs = 1,024 dual-port NICs keep port a; plane B's ToRs (one per
    # rail and plane: 128 host ports / 128 downlinks) are off: 8 x 1 kW
    assert p.notes == ("X.fabric.plane[B] failed",
                       "1,024 NICs run on 1 of 2 ports (`X.fabric.plane[B]` failed)",
                       "8 `tor` switches off: 8.0 kW less network power")
    assert p.result.network_w == 24_000 - 8_000      # 24 switches of 1 kW, 8 of them off


POWER = """\
host H { power = 10 kW }
rack R { hosts = 4 x H }
row W {
  racks = 5 x R                      // 200 kW
  feeder a { current = dc, voltage = 240 V, side = A, capacity = 250 kW, serves = racks }
  feeder b { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, side = B,
             capacity = 150 kW, serves = racks }
}
site S { rows = 1 x W }
scenario lose_a { required = true, fail S.rows[0].a }
scenario lose_b { fail S.rows[0].b }
"""


def test_2n_failover_names_the_side_that_cannot_carry_the_load():
    checked, out = outcomes(POWER)
    # normal: 100 kW each side; with B already 150 kW short of a 200 kW failover -> E621 on b
    assert [d.code for d in checked.engineering.diagnostics if d.is_error] == ["E621"]
    lose_a = out["lose_a"]
    # with A down, B carries 200 kW in normal operation: above 150 kW -> E620 under the scenario
    assert [d.code for d in lose_a.broken] == ["E620"]
    assert any(d.code == "E680" for d in checked.diagnostics)     # required: an error
    lose_b = out["lose_b"]
    assert not lose_b.broken                  # A carries 200 kW of its 250 kW


def test_a_feeder_with_no_partner_down_loses_its_load():
    text = POWER.replace('  feeder b { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, side = B,\n'
                         '             capacity = 150 kW, serves = racks }\n', '')
    text = text.replace("scenario lose_b { fail S.rows[0].b }\n", "")
    checked, out = outcomes(text)
    assert [d.code for d in out["lose_a"].broken] == ["E628"]


GROUPS = """\
host H { power = 10 kW }
rack R { hosts = 10 x H }
site S {
  racks = 4 x R                      // 400 kW
  utilization = 100 %
  feeder a { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, side = A,
             count = 2, capacity = 450 kW, efficiency = 90 %, serves = racks }
  feeder b { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, side = B,
             count = 2, capacity = 450 kW, efficiency = 90 %, serves = racks }
}
scenario one_a { fail S.a }
"""


def test_one_feeder_of_a_counted_side_failed_moves_its_share_to_its_own_side_only():
    checked, out = outcomes(GROUPS)
    base = {f.path: f for f in checked.engineering.power.feeders}
    # normal: 400 kW over 2 sides x 2 feeders = 100 kW each; losses 400 / 0.9 - 400 = 44.44 kW
    assert base["S.a"].normal_w == base["S.b"].normal_w == pytest.approx(100e3)
    assert checked.engineering.power.conversion_loss_w == pytest.approx(400e3 / 0.9 - 400e3)
    one = out["one_a"].result.power
    under = {f.path: f for f in one.feeders}
    # one of A's two down: the one left carries side A's 200 kW, B's two keep 100 kW each;
    # 1 x 200 + 2 x 100 = 400 kW carried for 400 kW of load (not 1 x 200 + 2 x 200 = 600)
    assert under["S.a"].running == 1 and under["S.a"].normal_w == pytest.approx(200e3)
    assert under["S.b"].running == 2 and under["S.b"].normal_w == pytest.approx(100e3)
    carried = sum(f.running * f.normal_w for f in one.feeders)
    assert carried == pytest.approx(400e3)
    # the losses are those of 400 kW at 90 %, as in normal operation
    assert one.conversion_loss_w == pytest.approx(400e3 / 0.9 - 400e3)
    assert one.conversion_loss_peak_w == pytest.approx(400e3 / 0.9 - 400e3)
    assert not out["one_a"].broken


def test_one_feeder_of_a_single_count_side_failed_moves_its_load_to_the_other_side():
    text = GROUPS.replace("count = 2, capacity = 450 kW", "count = 1, capacity = 450 kW")
    _, out = outcomes(text)
    under = {f.path: f for f in out["one_a"].result.power.feeders}
    assert under["S.a"].running == 0
    assert under["S.b"].normal_w == pytest.approx(400e3)       # B alone carries all of it


def test_the_e621_hint_of_a_group_without_a_partner_names_its_n_minus_1():
    # count = 3 sharing 600 kW: each of the 2 left must carry 600 / 2 / 0.97 = 309.3 kW > 250 kW
    text = GROUPS[:GROUPS.index("  feeder a")].replace("racks = 4 x R", "racks = 6 x R") + \
        "  feeder a { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, count = 3,\n" \
        "             capacity = 250 kW, efficiency = 97 %, serves = racks }\n}\n"
    checked, _ = outcomes(text)
    (e,) = [d for d in checked.engineering.diagnostics if d.code == "E621"]
    assert "the remaining feeders of `S.a` must carry 309.278 kW" in e.message
    assert e.hint == "the 2 feeder(s) left of the 3 must carry the whole load (N-1): declare " \
                     "more of them or a larger `capacity`"
    assert "2N" not in e.hint


COOLING = """\
host H { power = 10 kW, liquid_share = 80 % }
rack R { hosts = 4 x H }
fluid F { coolprop = "Water" }
cdu C { capacity = 100 kW }
gpu Hot { power = 700 W, max_supply = 40 degC }
host G { gpus = 1 x Hot, power = 1 kW, liquid_share = 50 % }
row W {
  racks = 7 x R                                  // 280 kW, 224 kW liquid
  hosts_g = 1 x G
  loop l { fluid = F, supply = 35 degC, rise = 10 K, cdu = C, cdus = 4, redundancy = n_plus_1,
           serves = [racks, hosts_g] }
}
site S { rows = 1 x W }
scenario one_cdu { fail S.rows[0].l }
scenario hot { set S.rows[0].l.supply = 45 degC }
"""


def test_cdu_failure_and_hotter_supply():
    checked, out = outcomes(COOLING)
    assert checked.valid, checked.diagnostics       # 224.5 kW on 4 x 100 kW: N+1 holds
    # the scenario's failure is the one asked about, as for a feeder: the 3 CDUs left hold
    # 300 kW of the 7 x 4 x 10 kW x 80 % + 1 kW x 50 % = 224.5 kW (no further spare asked for)
    assert not out["one_cdu"].broken
    # a second CDU failed leaves 2 x 100 kW for 224.5 kW: E640, the CDUs left of the 4
    two = COOLING.replace("scenario one_cdu { fail S.rows[0].l }",
                          "scenario one_cdu { fail S.rows[0].l\n fail S.rows[0].l }")
    _, out2 = outcomes(two)
    assert [d.code for d in out2["one_cdu"].broken] == ["E640"]
    assert "its 2 CDUs left of 4 (the scenario fails 2) hold 200 kW" in \
        out2["one_cdu"].broken[0].message
    assert [d.code for d in out["hot"].broken] == ["E642"]       # 45 degC > 40 degC GPU limit
    loop = out["hot"].result.cooling.loops[0]
    assert loop.supply_c == pytest.approx(45)


WARM_WATER = """\
host H { power = 10 kW, liquid_share = 0 % }
rack R { hosts = 4 x H }
site S {
  racks = 4 x R
  air room { supply = 25 degC, rise = 12 K, approach = 5 K }
  facility water { supply = 14 degC, rise = 6 K, free_cooling = 3000 h, chiller_cop = 5 }
}
scenario warmer { set S.water.supply = 18 degC }
scenario warmer_air { set S.room.supply = 27 degC }
"""


def test_a_warmer_circuit_with_declared_free_cooling_hours_says_they_stay():
    # a what-if raising the facility water's supply moved the PUE by nothing, unsaid: its
    # 3,000 free-cooling hours are declared, and no temperature moves them
    _, out = outcomes(WARM_WATER)
    assert out["warmer"].notes == (
        "S.water.supply = 18 degC",
        "S.water's 3,000 h of free cooling are declared: they stay as they are at its new "
        "`supply` (set `free_cooling` too, or give the site a `climate` to derive them)")
    assert out["warmer"].result.cooling.facility.circuits[0].free_h == 3000
    assert out["warmer_air"].notes == ("S.room.supply = 27 degC",)   # not a circuit's supply


def test_one_cdu_left_is_said_in_the_singular():
    """E643 under a scenario said "its 1 CDUs pass", E640 "its 1 CDUs left of 4 ... hold"."""
    text = COOLING.replace("cdu C { capacity = 100 kW }",
                           "cdu C { capacity = 100 kW, max_flow = 200 L/min }")
    text = text.replace("scenario one_cdu { fail S.rows[0].l }",
                        "scenario three {" + "\n".join(["fail S.rows[0].l"] * 3) + "}")
    _, out = outcomes(text)
    e640, e643 = out["three"].broken
    # 224.5 kW on the 1 x 100 kW left; its 200 L/min for the loop's 324.8 L/min (10 K rise)
    assert e640.message == ("loop `S.rows[0].l` carries 224.5 kW of liquid heat but its 1 CDU "
                            "left of 4 (the scenario fails 3) holds 100 kW")
    assert e643.message == ("loop `S.rows[0].l` needs 324.8 L/min, above what its 1 CDU "
                            "passes (200 L/min)")
    # 2 x 200 L/min pass 400 L/min: no E643 with two left; E640 in the plural
    _, out = outcomes(text.replace("scenario three {fail S.rows[0].l\n",
                                   "scenario three {"))
    assert [d.message for d in out["three"].broken] == [
        "loop `S.rows[0].l` carries 224.5 kW of liquid heat but its 2 CDUs left of 4 (the "
        "scenario fails 2) hold 200 kW"]


def test_a_cdu_by_index_is_a_failed_loop():
    """`cdus` is a count: `fail S.rows[0].l.cdus[0]` was E303 "cannot index a number" with the
    hint of any index; failing the loop fails one of its CDUs (analyses/scenarios.py), as the
    hint now says."""
    design = astral_dsl.loads(COOLING + "scenario bad { fail S.rows[0].l.cdus[0] }\n",
                              name="t.astral")
    (error,) = [d for d in design.diagnostics if d.is_error]
    assert (error.code, error.message) == ("E303", "cannot index a number")
    assert error.hint == ("`cdus` is the loop's count of CDUs, not its parts: "
                          "`fail S.rows[0].l` fails one of its CDUs (each `fail` of the loop "
                          "one more), and the others must hold its heat (E640)")
    # each `fail` of the loop fails one more: two leave 2 of 4 x 100 kW for 224.5 kW, E640
    _, out = outcomes(COOLING + "scenario two { fail S.rows[0].l\n fail S.rows[0].l }\n")
    assert [d.code for d in out["two"].broken] == ["E640"]
    # the message says how many are left of how many: 4 - 2 = 2 x 100 kW for 224.5 kW
    assert out["two"].broken[0].message == (
        "loop `S.rows[0].l` carries 224.5 kW of liquid heat but its 2 CDUs left of 4 (the "
        "scenario fails 2) hold 200 kW")
    # failing the loop more often than it has CDUs fails them all: it said "its -2 CDUs hold
    # -200 kW" for six fails of four
    _, out = outcomes(COOLING + "scenario six {" + "\n".join(["fail S.rows[0].l"] * 6) + "}\n")
    assert [d.message for d in out["six"].broken] == [
        "loop `S.rows[0].l` carries 224.5 kW of liquid heat but its 0 CDUs left of 4 (the "
        "scenario fails 4) hold 0 W"]
    # another number indexed keeps the hint of any index
    design = astral_dsl.loads(COOLING + "scenario bad { fail S.rows[0].l.rise[0] }\n",
                              name="t.astral")
    (error,) = [d for d in design.diagnostics if d.is_error]
    assert error.code == "E303" and "CDU" not in error.hint


DERIVED = """\
host H { power = 10 kW }
rack R {
  hosts = 4 x H
  power_limit = 45 kW
  let headroom = power_limit - power
  check headroom >= 2 kW else error "less than 2 kW of headroom"
}
site S { racks = 2 x R }
scenario derated { set S.racks[0].power_limit = 41 kW }
"""


def test_a_set_is_followed_by_what_depends_on_it_user_checks_included(tmp_path):
    path = tmp_path / "derated.astral"
    path.write_text(DERIVED)
    ws = astral_dsl.compile(path)
    design = ws.design
    assert design.valid, design.diagnostics
    checked = astral_dsl.check(ws, all_scenarios=True)
    (outcome,) = checked.scenarios
    # headroom = 41 kW - 40 kW = 1 kW: the user's check breaks, computed from the new limit
    assert [d.code for d in outcome.broken] == ["E500"]
    assert outcome.broken[0].span.start.line == 6
    w680 = [d for d in checked.diagnostics if d.code == "W680"]
    assert len(w680) == 1 and "less than 2 kW of headroom" in w680[0].notes[0]


def test_the_python_api_applies_a_set_as_the_command_line_does():
    # no recompiler to pass: the design knows how to compile itself again under a scenario
    ws = astral_dsl.compiles(DERIVED.replace("41 kW", "39 kW"), name="d.astral")
    design = ws.design
    checked = astral_dsl.check(ws, all_scenarios=True)
    (outcome,) = checked.scenarios
    # 40 kW on a 39 kW limit, and the user's headroom check (-1 kW) follows the new limit
    assert sorted(d.code for d in outcome.broken) == ["E500", "E624"]


def test_a_field_set_twice_in_a_scenario_is_e202_and_a_set_changes_only_what_it_names():
    """The second `set` silently won (20 kW); it is E202, as a field set twice in a block is.
    Set once, the scenario changes that field of that rack and nothing else."""
    twice = ("rack R { power_limit = 45 kW }\nsite S { racks = 2 x R }\n"
             "scenario lower {\n  set S.racks[0].power_limit = 10 kW\n"
             "  set S.racks[0].power_limit = 20 kW\n}\n")
    design = astral_dsl.loads(twice, name="s.astral")
    e202 = [d for d in design.diagnostics if d.code == "E202"]
    assert len(e202) == 1 and e202[0].span.start.line == 5
    assert e202[0].message == "`S.racks[0].power_limit` is already set in this scenario (at 4:3)"
    # different racks, or different fields of one rack: each set once
    ws = astral_dsl.compiles(twice.replace("set S.racks[0].power_limit = 20 kW",
                                           "set S.racks[1].power_limit = 20 kW"), name="s.astral")
    assert ws.design.valid
    under = ws.under("lower")
    limits = [str(under.instance(f"S.racks[{i}]").field("power_limit")) for i in (0, 1)]
    assert limits == ["10 kW", "20 kW"]
    assert [str(ws.design.instance(f"S.racks[{i}]").field("power_limit"))
            for i in (0, 1)] == ["45 kW", "45 kW"]


def test_two_shares_of_a_tier_in_a_scenario_are_e202():
    """`fail 25 %` then `fail 50 %` of the core: the last silently won (50 %, 4 of the 8 cores
    off) while the first was still reported; whether they overlap is unsaid: E202 on the second.
    The same share twice fails once: 25 % of 8 cores, 2 off."""
    shares = FABRIC.replace("fail 25 % of X.fabric.core }",
                            "fail 25 % of X.fabric.core\n  fail 50 % of X.fabric.core }")
    design = astral_dsl.loads(shares, name="s.astral")
    e202 = [d for d in design.diagnostics if d.code == "E202"]
    assert len(e202) == 1 and e202[0].span.start.line == 13, e202
    assert e202[0].message == ("`X.fabric.core` already has a share failed in this scenario "
                               "(25 % at 12:25)")
    _, out = outcomes(shares.replace("fail 50 %", "fail 25 %"))
    assert "2 `core` switches off: 2.0 kW less network power" in out["quarter_core"].notes


def test_the_scenario_matrix_lists_a_share_of_a_tier_once():
    """The report's matrix said `out of service: X.fabric.core` (the whole tier) beside `25% of
    X.fabric.core`; a share of the first tier, rejected (E219), was out of service too. A
    share is written as the language writes it, `25 %`, and in full: 12.5 % was `12%`."""
    from astral_dsl.api.review import collect
    from astral_dsl.outputs.report import matrix as mx

    ws = astral_dsl.compiles(FABRIC + "scenario tor_share { fail 25 % of X.fabric.tor }\n"
                             "scenario eighth { fail 12.5 % of X.fabric.core }\n", name="s.astral")
    rows = {r.name: r for r in mx.matrix(collect(ws, views=()))}
    assert rows["quarter_core"].cell("network").notes == ("out of service: 25 % of X.fabric.core",)
    assert rows["eighth"].cell("network").notes == ("out of service: 12.5 % of X.fabric.core",)
    eighth = {o.name: o for o in astral_dsl.check(ws, ["eighth"]).scenarios}["eighth"]
    assert eighth.notes[0] == "12.5 % of X.fabric.core failed"
    assert rows["tor_share"].cell("network").notes == ()
    assert rows["plane_b"].cell("network").notes == ("out of service: X.fabric.plane[B]",)


def test_one_switch_off_without_a_declared_power_is_its():
    # "1 `tor` switch off (their power is not declared)"
    text = FABRIC.replace(", power = 1 kW", "") + \
        "scenario one { fail X.fabric.rail[0].plane[A].tor[0] }\n"
    _, out = outcomes(text)
    assert "1 `tor` switch off (its power is not declared)" in out["one"].notes
    assert "8 `tor` switches off (their power is not declared)" in out["plane_b"].notes


# 2 pods of 8 racks of 4 hosts, a fabric in each pod (switches of 750 W)
PODS = _parts().lstrip("\n") + """\
fabric F {
  rails = 8
  tier leaf { switch = Sw, scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Sw, scope = pod, down = 64 x 400 Gb/s }
}
pod P { racks = 8 x R, fabric = F }
site S { pods = 2 x P }
"""


def test_two_shares_of_one_shared_tier_by_two_routes_are_e202():
    """`P.fabric.spine` (every pod's, the instance the pods share) and `S.pods[0].fabric.spine`
    name one tier of pod 0: two shares of it were not caught (the routes differ). Pods 0 and 1
    are different replicas of that instance: a share of each is no E202, and fails each pod's
    share: a pod's 8 rails x 32 leaves x 32 uplinks / 64 ports = 4 spines, so 25 % is 1 spine of
    pod 1 and 50 % 2 of pod 0."""
    design = astral_dsl.loads(PODS + "scenario two {\n  fail 25 % of P.fabric.spine\n"
                                     "  fail 50 % of S.pods[0].fabric.spine\n}\n", name="p.astral")
    (e202,) = [d for d in design.diagnostics if d.is_error]
    assert e202.code == "E202" and e202.span.start.line == 15
    assert e202.message == ("`S.pods[0].fabric.spine` already has a share failed in this "
                            "scenario (25 % of `P.fabric.spine` at 14:3)")
    _, out = outcomes(PODS + "scenario each {\n  fail 25 % of S.pods[1].fabric.spine\n"
                             "  fail 50 % of S.pods[0].fabric.spine\n}\n")
    offs = [n for n in out["each"].notes if " off" in n]
    assert offs == ["2 `spine` switches off: 1.5 kW less network power",
                    "1 `spine` switch off: 0.8 kW less network power"]


def test_fail_of_values_over_a_group_says_what_fail_takes():
    # `S.pods[*].fabric.spine` is a tier of each pod's fabric (values over a group), not a part
    design = astral_dsl.loads(PODS + "scenario s { fail 25 % of S.pods[*].fabric.spine }\n",
                              name="p.astral")
    (e303,) = [d for d in design.diagnostics if d.is_error]
    assert e303.code == "E303" and e303.span.start.line == 13
    assert e303.message == ("`fail` needs a part of the design, not values over a group (one "
                            "for each replica a `[*]` or a range selects)")
    assert "a scenario can fail a feeder" in e303.hint and "`P.fabric.spine`" in e303.hint
    (e303,) = [d for d in astral_dsl.loads(PODS + "scenario s { fail 3 }\n",
                                           name="p.astral").diagnostics if d.is_error]
    assert e303.message == "`fail` needs a part of the design, not a number"


TWO_FABRICS = """\
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
switch S { ports = 64, port_speed = 400 Gb/s, power = 1 kW }
host H { gpus = 8 x G, nics = 8 x N, power = 10 kW }
rack R { hosts = 4 x H }
fabric F {
  rails = 8
  tier leaf { switch = S, scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = S, scope = pod, down = 64 x 400 Gb/s }
}
fabric F2 {
  rails = 8
  tier leaf { switch = S, scope = pod, per = [rail], down = 32 x 400 Gb/s }
}
pod Big { racks = 10 x R, fabric = F }
pod Small { racks = 2 x R, fabric = F2 }
site Site { pods = [1 x Big, 3 x Small] }
"""


def test_each_owner_of_a_fabric_is_counted_apart_whatever_their_ids(monkeypatch):
    """The owners of fabrics were keyed by id(fabric) ^ id(inst): two different (owner, fabric)
    pairs whose ids XOR alike became one, and one pod's fabric vanished from the counts,
    depending on where the objects happened to sit in memory. Numbered 0, 1, 2, ... in the
    order first seen, Small's pair (F2 0, Small 1) and Big's (F 2, Big 3) XOR alike (1 == 1):
    each must still be counted, Big's pod once and Small's three."""
    import builtins

    from astral_dsl.analyses import network

    design = astral_dsl.loads(TWO_FABRICS, name="p.astral")
    real = network.fabric_counts(design)
    seen = {}
    monkeypatch.setattr(network, "id", lambda obj: seen.setdefault(builtins.id(obj), len(seen)),
                        raising=False)
    numbered = network.fabric_counts(design)
    assert [(c.owner, c.fabric, c.instances) for c in numbered] == \
        [(c.owner, c.fabric, c.instances) for c in real] == \
        [("Site.pods[0]", "Site.pods[0].fabric", 1), ("Site.pods[1]", "Site.pods[1].fabric", 3)]


ONE_CORE = _parts().lstrip("\n") + """\
fabric F {
  rails = 8, max_oversubscription = 1
  tier tor { switch = Sw, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier core { switch = Sw, scope = site, down = 64 x 400 Gb/s }
}
site X { racks = 16 x R, fabric = F }
scenario one_core { fail X.fabric.core[0] }
scenario quarter_core { fail 25 % of X.fabric.core }
"""


def test_a_named_core_switch_off_shows_in_the_tiers_oversubscription():
    """The tier's oversubscription in `astral size --scenario`'s oversub. column and the JSON is
    its worst switch's: it stayed 1:1 as declared while E602 said the ToRs run above it. 64 hosts x
    8 NICs = 512 ports, 32 per ToR: 16 ToRs x 32 uplinks = 512 links over 64-port cores: 8, a
    mesh; core[0] off takes 1 / 8 of every ToR's uplinks: 1 / (1 - 1/8) = 8 / 7 = 1.1429:1."""
    from astral_dsl.outputs.size_report import bom_lines

    _, out = outcomes(ONE_CORE)
    (fc,) = out["one_core"].result.fabrics
    assert fc.tiers[0].shown_oversubscription == pytest.approx(8 / 7)
    assert fc.tiers[0].oversubscription == 1          # Seer's: each job's switches by the damage
    assert ("tor: oversubscribed 1.1429:1 at its worst switch under the scenario's failures, "
            "1:1 as declared") in bom_lines(fc)
    (share,) = out["quarter_core"].result.fabrics     # a share: every ToR, as before
    assert share.tiers[0].oversubscription == pytest.approx(4 / 3)


def test_a_plane_of_a_one_plane_fabric_is_e214_in_the_singular():
    design = astral_dsl.loads(ONE_CORE + "scenario b { fail X.fabric.plane[B] }\n",
                              name="p.astral")
    (e214,) = [d for d in design.diagnostics if d.is_error]
    assert e214.code == "E214" and e214.span.start.line == 14
    assert e214.message == "plane B is out of range: the fabric has 1 plane (only A)"
