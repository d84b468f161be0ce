"""What a feeder's equipment is sized for and what its shares mean under a scenario.

The batteries of a `count = N` group without a partner were sized for the normal share (the
load over N) while its rectifier modules were sized for the share with one feeder failed (over
N-1): a group designed to run N-1 until the failed feeder is repaired rode a utility outage in
that time on batteries a third short (N = 3). IEEE Std 485 sizes a battery for its duty cycle,
the load it must supply in any state the system is designed to run in: both now hold the
failover share, and the outputs say which share the batteries were sized for.

Under a scenario that failed a feeder, the `failover` figure of a surviving feeder was what it
carried now (the `normal` figure again), under a header that says "with one feeder failed":
it is now the share with one more feeder failed (none where nothing would be left), and the
size table's headers say `now` and `one more`."""
from __future__ import annotations

import json

import pytest

import astral_dsl
from astral_dsl.outputs.feeder_load import failover_share_w
from astral_dsl.outputs.size_report import render_report
from clirun import astral

# 3 racks of 100 kW on three 240 V DC feeders with no partner: 100 kW each normally, 150 kW
# each with one failed; lead-acid strings of 120 cells ending at 1.75 V (210 V), 10 min
GROUP = """\
host H { power = 10 kW }
rack R { hosts = 10 x H }
battery Bat {
  autonomy = 10 min, chemistry = lead_acid, cells = 120, end_voltage = 1.75 V
  aging_factor = 1.25, design_factor = 1.1, temperature_factor = 1, recharge_rate = 0.1
  string_capacity = @AH@, strings = 1
}
rectifier Rect { module = 25 kW, modules = 10, redundancy = n_plus_1, efficiency = 97 % }
site S {
  racks = 3 x R
  utilization = 100 %
  feeder hvdc {
    current = dc, voltage = 240 V, count = 3, capacity = 200 kW
    rectifier = Rect, battery = Bat, serves = racks
  }
}
scenario one_down { fail S.hvdc }
"""


def _ah(load_w: float) -> float:
    """IEEE 485 as analyses/formulas computes it: I = P / (cells x end voltage), x the
    autonomy in hours, x aging 1.25 x design margin 1.1."""
    return load_w / (120 * 1.75) * (10 / 60) * 1.25 * 1.1


def _checked(ah: str = "200 Ah", scenarios: bool = False):
    text = GROUP.replace("@AH@", ah)
    return astral_dsl.check(astral_dsl.compiles(text, name="group.astral"),
                            all_scenarios=scenarios)


def test_an_n_minus_1_groups_batteries_ride_through_its_share_with_one_failed():
    checked = _checked()
    (f,) = checked.engineering.power.feeders
    assert (f.normal_w, f.failover_w) == (pytest.approx(100e3), pytest.approx(150e3))
    # 150 kW / 210 V x 10 min x 1.375 = 163.7 Ah (the normal 100 kW gave 109.1 Ah)
    assert f.battery_required_ah == pytest.approx(_ah(150e3))
    assert round(f.battery_required_ah, 1) == 163.7
    assert (f.battery_w, f.battery_for) == (pytest.approx(150e3), "failover")
    # the rectifier modules hold the same 150 kW and the strings' recharge: 0.1 C of 200 Ah at
    # 240 V = 4.8 kW; 154.8 kW on 25 kW modules is 7, N+1 makes 8
    assert f.recharge_w == pytest.approx(4.8e3)
    assert f.rectifier_modules_needed == 8


def test_a_string_that_holds_the_normal_share_but_not_the_failover_is_e623():
    # 150 Ah holds the 109.1 Ah of the normal share, not the 163.7 Ah of the failover share
    checked = _checked("150 Ah")
    (e,) = [d for d in checked.diagnostics if d.code == "E623"]
    assert e.message == ("batteries of `S.hvdc` hold 150 Ah but 10 min at 150 kW (its share "
                         "with one feeder failed) needs 163.7 Ah (IEEE 485: aging 1.25 x design "
                         "margin 1.1)")
    assert e.hint == "use at least 2 strings"


def test_the_outputs_say_what_the_batteries_were_sized_for(tmp_path):
    checked = _checked()
    text = " ".join(render_report(checked.design, checked.engineering, width=100).split())
    # the need's IEEE 485 factors said beside it (LeadAcid's, stdlib/power.astral)
    assert "S.hvdc: batteries sized for 150 kW, its share with one feeder failed (IEEE 485: " \
           "aging 1.25 x design margin 1.1)" in text
    proc = _size(tmp_path, GROUP.replace("@AH@", "200 Ah"), "--format", "json")
    (row,) = json.loads(proc.stdout)["summary"]["feeder_list"]
    assert (row["battery_kw"], row["battery_for"]) == (150.0, "failover")
    assert row["battery_required_ah"] == pytest.approx(_ah(150e3), abs=0.01)


def test_a_lone_feeders_batteries_hold_its_whole_load_and_say_so(tmp_path):
    text = GROUP.replace("@AH@", "200 Ah").replace("count = 3, capacity = 200 kW",
                                                     "capacity = 400 kW")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="lone.astral"))
    (f,) = checked.engineering.power.feeders
    assert f.battery_required_ah == pytest.approx(_ah(300e3))
    assert (f.battery_w, f.battery_for) == (pytest.approx(300e3), "normal")
    proc = _size(tmp_path, text, "--format", "json")
    (row,) = json.loads(proc.stdout)["summary"]["feeder_list"]
    assert row["battery_for"] == "normal"
    proc = _size(tmp_path, text.replace("rectifier = Rect, battery = Bat, ", ""),
                 "--format", "json")
    (row,) = json.loads(proc.stdout)["summary"]["feeder_list"]
    assert (row["battery_kw"], row["battery_for"]) == (None, None)


def _size(tmp_path, text: str, *args: str):
    path = tmp_path / "design.astral"
    path.write_text(text, encoding="utf-8")
    return astral("size", str(path), *args)


def _under(checked, name: str):
    return {f.path: f for f in next(o for o in checked.scenarios
                                    if o.name == name).result.power.feeders}


def test_under_a_scenario_the_failover_share_is_with_one_more_feeder_failed():
    checked = _checked(scenarios=True)
    f = _under(checked, "one_down")["S.hvdc"]
    # two of three left: 150 kW each now; one more failed leaves one carrying all 300 kW (it
    # read 150 kW, what it carries now)
    assert (f.running, f.normal_w, f.failover_w) == (2, pytest.approx(150e3),
                                                     pytest.approx(300e3))
    assert f.degraded
    # the current, the checks and the equipment take what it carries now (the design's N-1),
    # not the second failure: 150 kW at the batteries' 210 V end, no E620/E621 and the same
    # 163.7 Ah and 8 modules as designed
    assert f.current_a == pytest.approx(150e3 / 210)
    assert f.carried_w == pytest.approx(150e3)
    assert f.battery_required_ah == pytest.approx(_ah(150e3))
    assert f.rectifier_modules_needed == 8
    outcome = next(o for o in checked.scenarios if o.name == "one_down")
    assert not [d for d in outcome.broken if d.is_error]


def test_under_a_scenario_the_last_feeder_left_has_no_failover():
    text = GROUP.replace("@AH@", "200 Ah").replace("count = 3", "count = 2").replace(
        "capacity = 200 kW", "capacity = 300 kW")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="pair.astral"),
                               all_scenarios=True)
    f = _under(checked, "one_down")["S.hvdc"]
    assert (f.running, f.normal_w, f.failover_w) == (1, pytest.approx(300e3), 0.0)
    assert failover_share_w(f) is None              # nothing is left: not 0 kW, not 300 kW


def test_the_size_tables_headers_say_what_the_columns_hold_under_a_scenario(tmp_path):
    text = GROUP.replace("@AH@", "200 Ah")
    proc = _size(tmp_path, text, "--scenario", "one_down")
    out = proc.stdout
    assert "Feeders: peak load, under the scenario's failures and with one more feeder failed" \
        in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("feeder") and
                  "capacity" in line)
    assert header.split() == ["feeder", "x", "type", "V", "load", "now", "through", "one",
                              "more", "capacity"]
    row = next(line for line in out.splitlines() if line.lstrip().startswith("S.hvdc") and
               "(2 up)" in line)
    # load, now, through, one more, capacity
    assert row.split()[-10:] == ["300.0", "kW", "150.0", "kW", "150.0", "kW", "300.0", "kW",
                                 "200.0", "kW"]
    doc = json.loads(_size(tmp_path, text, "--scenario", "one_down", "--format", "json").stdout)
    (row,) = doc["summary"]["feeder_list"]
    assert (row["normal_kw"], row["failover_kw"]) == (150.0, 300.0)
    # without a scenario the headers are those of normal operation
    plain = _size(tmp_path, text).stdout
    assert "Feeders: peak load, in normal operation and with one feeder failed" in plain


def test_e620_under_a_scenario_says_which_failure_loads_the_feeder():
    text = """\
host H { power = 10 kW }
rack R { hosts = 4 x H }
row W {
  racks = 5 x R
  feeder a { current = dc, voltage = 240 V, side = A, capacity = 250 kW, serves = racks }
  feeder b { current = dc, voltage = 240 V, side = B, capacity = 150 kW, serves = racks }
}
site S { rows = 1 x W }
scenario lose_a { fail S.rows[0].a }
"""
    checked = astral_dsl.check(astral_dsl.compiles(text, name="pair.astral"), all_scenarios=True)
    (e,) = [d for o in checked.scenarios for d in o.broken if d.code == "E620"]
    assert e.message == ("feeder `S.rows[0].b` carries 200 kW with the other side failed, above "
                         "its capacity of 150 kW")


def test_the_review_pages_feeder_table_says_what_the_batteries_were_sized_for():
    import re

    from astral_dsl.outputs.report.sizing import engineering_tables

    page = engineering_tables(_checked().engineering).split('id="size-feeders"')[1]
    page = page.split("</table>")[0]
    head = [re.sub("<[^>]+>", "", c).strip() for c in page.split("</th>")[:-1]]
    (row,) = [[re.sub("<[^>]+>", "", c).strip() for c in r.split("</td>")[:-1]]
              for r in page.split("</tr>")[1:-1]]
    got = dict(zip(head, row))
    assert (got["battery sized for kW"], got["battery sized for"]) == \
        ("150", "its share with one feeder failed (IEEE 485: aging 1.25 x design margin 1.1)")


def test_the_power_pictures_battery_says_what_it_is_sized_for_as_the_size_text_does():
    """The picture's battery said the Ah needed, neither the share it rides through nor the
    IEEE 485 factors the need is multiplied by, which `astral size` and the review say
    (outputs.feeder_load.battery_basis words all three)."""
    import re

    from astral_dsl.outputs.render import render

    checked = _checked()
    source = render(checked.design, "power", checked=checked).source
    (label,) = [re.sub(r"<[^>]*>", "|", m) for m in re.findall(r"label=<(.*?)>\s*(?:\w+=|\])",
                                                                source) if "battery Bat" in m]
    lines = [t for t in label.split("|") if t.strip()]
    at = lines.index("needs 164 Ah")
    assert lines[at + 1:at + 3] == ["for 150 kW, its share with one feeder failed",
                                    "IEEE 485: aging 1.25 x design margin 1.1"]
    size = " ".join(render_report(checked.design, checked.engineering, width=100).split())
    assert "150 kW, its share with one feeder failed (IEEE 485: aging 1.25 x design margin " \
           "1.1)" in size


def test_the_need_says_the_factors_the_battery_declares():
    """The factors are the battery's own where it declares them (a factor of 1 left out): the
    Ah its autonomy needs is multiplied by them, and each place that states the need says so."""
    text = GROUP.replace("@AH@", "150 Ah").replace(
        "aging_factor = 1.25, design_factor = 1.1, temperature_factor = 1",
        "aging_factor = 1, design_factor = 1.15, temperature_factor = 1.11")
    checked = astral_dsl.check(astral_dsl.compiles(text, name="group.astral"))
    (f,) = checked.engineering.power.feeders
    assert f.battery_required_ah == pytest.approx(150e3 / 210 / 6 * 1.15 * 1.11)
    (e,) = [d for d in checked.diagnostics if d.code == "E623"]
    assert e.message.endswith("needs 152 Ah (IEEE 485: design margin 1.15 x temperature 1.11)")
    text = " ".join(render_report(checked.design, checked.engineering, width=100).split())
    assert "its share with one feeder failed (IEEE 485: design margin 1.15 x temperature " \
           "1.11)" in text
