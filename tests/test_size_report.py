"""`astral size`: a report an engineer reads (issue: a twin you can trust, section 5).

It fits the terminal (stacked tables when narrow), writes numbers in readable units, its
power-by-level rows add up to the headline, sizing's choices are named by their field with the
objective's value, the JSON carries everything the tables show, and a what-if changes what flows,
never the installed equipment, with each result named in its own replica. Expected values are
computed by hand in the comments."""
from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.cli.size import terminal_width
from astral_dsl.outputs.size_report import render_report
from astral_dsl.outputs.feeder_load import failover_share_w
from astral_dsl.units import readable
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _cli(args, columns=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return _astral_cli(*args, cwd=REPO, env=env)


@pytest.fixture(scope="module")
def reference():
    ws = astral_dsl.compile(REPO / "examples" / "astral.astral")
    design = ws.design
    return astral_dsl.check(ws, scenarios=["hvdc_lost"])


@pytest.fixture(scope="module")
def summary():
    proc = _cli(["size", "examples/astral.astral", "--format", "json"])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["summary"]


# ---- fits the terminal ---------------------------------------------------------------------------
@pytest.mark.parametrize("columns", [60, 80, 100, 132])
def test_every_line_fits_the_width(reference, columns):
    text = render_report(reference.design, reference.engineering, width=columns)
    assert max(len(line) for line in text.splitlines()) <= columns


def test_a_narrow_terminal_gets_stacked_tables(reference):
    # at 60 columns the power-by-level table (about 100 wide) is one block per row
    text = render_report(reference.design, reference.engineering, width=60)
    block = text[text.index("Power by level"):]
    assert " site Astral\n  replicas: 1\n  peak each: 668.47 MW\n" in block
    assert " network Astral.fabric\n" in block
    assert "─" not in block.split("\n\n")[0]                 # no table rule: stacked


def test_a_wide_terminal_gets_tables(reference):
    text = render_report(reference.design, reference.engineering, width=132)
    assert "level     instance" in text and "────" in text
    assert " site Astral\n" not in text


def test_the_width_is_columns_else_the_terminal_else_100():
    class Tty(io.StringIO):
        def isatty(self):
            return True

        def fileno(self):
            raise OSError("no terminal here")

    assert terminal_width(io.StringIO(), {"COLUMNS": "80"}) == 80
    assert terminal_width(io.StringIO(), {}) == 100            # a pipe: not a terminal
    assert terminal_width(io.StringIO(), {"COLUMNS": "wide"}) == 100
    assert terminal_width(Tty(), {}) == 100                    # a terminal of unknown size


def test_the_cli_follows_columns():
    narrow = _cli(["size", "examples/astral.astral"], columns=80).stdout
    piped = _cli(["size", "examples/astral.astral"]).stdout
    assert max(map(len, narrow.splitlines())) <= 80
    assert max(map(len, piped.splitlines())) <= 100
    assert "level     instance" in piped and "level     instance" not in narrow


# ---- readable units -----------------------------------------------------------------------------
def test_readable_units_per_magnitude_and_per_column():
    assert readable.power(708_608_000) == "708.61 MW"
    assert readable.power(40_800) == "40.8 kW"
    assert readable.power(25) == "25 W"
    # one unit per column when every value reads at least 1 in it...
    assert readable.powers([16_056_320, 8_028_160, None]) == ["16.06 MW", "8.03 MW", "-"]
    # ...else each value in its own (the site in MW, a rack in kW)
    assert readable.powers([668_467_200, 40_800]) == ["668.47 MW", "40.8 kW"]
    assert readable.powers([358_400, 0]) == ["358.4 kW", "0 kW"]
    assert readable.currents([3400, 1136.1]) == ["3,400 A", "1,136 A"]
    assert readable.currents([31_090, 400]) == ["31.09 kA", "0.40 kA"]


def test_the_headline_is_in_mw(reference):
    text = render_report(reference.design, reference.engineering, width=132)
    # IT 708,608 kW peak, 541,491.2 kW average; facility 606,822.5 kW average, 852,013.9 kW
    # at the peak hour (tests/test_reference_facility.py adds them up by hand, the transformers'
    # load losses on the kVA at the feeders' 95 % power factor, the facility-water pumps' heat
    # rejected with the load): PUE 606,822.5 / 541,491.2 = 1.12065
    assert "IT 708.61 MW peak, 541.49 MW average; facility 606.82 MW average, 852.01 MW peak; " \
           "PUE 1.1207" in text
    assert " 40.8 kW " in text and " 668.47 MW " in text


# ---- the rows add up ----------------------------------------------------------------------------
def test_power_by_level_adds_up_to_the_headline(summary):
    # site 65,536 hosts x 10.2 kW = 668,467.2 kW + network 20,480 x 1.96 kW = 40,140.8 kW
    #   = 708,608.0 kW, the headline; average 501,350.4 + 40,140.8 = 541,491.2 kW
    levels = summary["power_by_level"]
    rows = {r["kind"]: r for r in levels["rows"] if r["kind"] in levels["sums"]}
    assert rows["site"]["peak_kw_total"] == pytest.approx(668_467.2)
    assert rows["network"]["peak_kw_total"] == pytest.approx(40_140.8)
    assert rows["network"]["path"] == "Astral.fabric"
    total = sum(r["peak_kw_total"] for r in levels["rows"] if r["kind"] in levels["sums"])
    assert total == pytest.approx(summary["it_power_kw"]) == pytest.approx(708_608.0)
    avg = sum(r["average_kw_total"] for r in levels["rows"] if r["kind"] in levels["sums"])
    assert avg == pytest.approx(summary["it_power_avg_kw"]) == pytest.approx(541_491.2)


def test_the_level_table_has_the_network_row_and_the_total(reference):
    text = render_report(reference.design, reference.engineering, width=132)
    assert "network   Astral.fabric                                    1   40.14 MW" in text
    assert "IT total" in text and "541.49 MW   708.61 MW" in text



def test_down_ports_used_print_as_a_count(reference):
    """The network's "down used" column printed 128.0: each tor switch of examples/astral.astral
    takes one port of one NIC of each of its 128 hosts (128 of its 128 down ports), each agg
    the 64 uplinks of its tors, each core 128 (the average per switch: one decimal only where
    it is not whole)."""
    import re

    text = render_report(reference.design, reference.engineering, width=132)
    table = text[text.index("ports and links per tier"):]
    used = dict(re.findall(r"^ (tor|agg|core) +(\S+) ", table, re.M))
    assert used == {"tor": "128", "agg": "64", "core": "128"}

def test_the_air_table_is_per_unit_like_its_json(reference, summary):
    # a pod's room: 8 units, each 20.89 MW peak and 15,667.2 kW average heat; fans 3 % of the
    # average: 470.016 kW each (the column read 8 x that, 3.76 MW, beside heat and flow per unit)
    text = render_report(reference.design, reference.engineering, width=132)
    (row,) = [line for line in text.splitlines() if line.startswith(" Astral.pods[0].room ")]
    cells = row.split()
    assert cells[1] == "8" and cells[2:4] == ["20.89", "MW"] and cells[-2:] == ["470.0", "kW"]
    (unit,) = [a for a in summary["air_units"] if a["path"] == "Astral.pods[0].room"]
    assert unit["fan_kw_average"] == pytest.approx(0.03 * 15_667.2) == pytest.approx(470.016)
    assert "each unit's heat, flow and fans" in text


def test_the_heat_rejection_hours_add_up_to_the_year(reference, summary):
    # free, partial and mechanical hours, disjoint: Chilled 4,472 + 2,751 + 1,537 = 8,760 (the
    # column "chiller h" read 4,288 = partial + mechanical, and the row added up to 11,511)
    text = render_report(reference.design, reference.engineering, width=132)
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if "free h" in line)
    assert lines[head].split()[2:6] == ["free", "h", "partial", "h"] and "mechanical h" in \
        lines[head] and "chiller h" not in lines[head]
    circuits = {c["path"]: c for c in summary["facility"]["circuits"]}
    for line in lines[head + 2:head + 4]:
        name = line.split()[0]
        hours = [int(x.replace(",", "")) for x in line.split() if x.replace(",", "").isdigit()]
        assert sum(hours) == 8760, line
        c = circuits[name]
        assert hours == [round(c["free_cooling_h"]), round(c["partial_h"]),
                         round(c["mechanical_h"])]
        assert c["chiller_h"] == pytest.approx(c["partial_h"] + c["mechanical_h"])
    assert [h for h in lines[head + 3].split() if h[0].isdigit() and "," in h] == \
        ["4,472", "2,751", "1,537"]


# ---- the JSON carries everything ---------------------------------------------------------------
def test_json_per_feeder(summary):
    f = {x["path"]: x for x in summary["feeder_list"]}
    hvdc = f["Astral.pods[0].rows[0].hvdc"]
    # 652.8 kW at the batteries' 198 V end (120 x 1.65 V): 3,297.0 A, 824.2 A in each of 4
    # conductor sets; drop = 2 x 824.2 A x 30 m x rho_90 / 630 mm^2, rho_90 = 0.017241 x (1 +
    # 0.00393 x 70) = 0.021984 ohm mm^2/m -> 1.7256 V, 0.872 % of the 198 V the current is
    # computed at; the equipment sees 196.27 V
    rho90 = 0.017241 * (1 + 0.00393 * 70)
    amps = 652_800 / 198
    assert (hvdc["replicas"], hvdc["count"], hvdc["running"]) == (1024, 1, 1)
    assert (hvdc["low_voltage_v"], hvdc["low_voltage_from"]) == (198, "battery end of discharge")
    assert hvdc["current_a"] == pytest.approx(amps, abs=1e-3)
    assert hvdc["conductor_current_a"] == pytest.approx(amps / 4, abs=1e-3)
    drop = 2 * amps / 4 * 30 * rho90 / 630
    assert hvdc["voltage_drop_v"] == pytest.approx(drop, abs=1e-4)
    assert hvdc["voltage_drop_ratio"] == pytest.approx(drop / 198, abs=1e-6)
    assert hvdc["equipment_v"] == pytest.approx(198 - drop, abs=1e-4)
    assert (hvdc["normal_kw"], hvdc["failover_kw"], hvdc["capacity_kw"]) == (326.4, 652.8, 800)
    assert hvdc["average_kw"] == pytest.approx(0.75 * 326.4)
    # IEEE 485: 3,297.0 A x 0.25 h x 1.25 x 1.1 = 1,133.3 Ah
    assert hvdc["rectifier_modules_needed"] == 15
    assert hvdc["battery_required_ah"] == pytest.approx(amps * 0.25 * 1.25 * 1.1, abs=0.01)
    net = f["Astral.net_utility"]
    # the network: 40,140.8 kW on 56 utility feeders, 716.8 kW each alone, 738.97 kW through
    # their 97 %, at AC400's 360 V and pf 0.95: 738,969 / (sqrt(3) x 360 x 0.95) = 1,247.5 A
    assert (net["count"], net["network_kw"], net["failover_kw"]) == (56, 40_140.8, 716.8)
    assert net["current_a"] == pytest.approx(716_800 / 0.97 / (3 ** 0.5 * 360 * 0.95) / 1,
                                             abs=1e-3)


def test_json_per_loop_and_air_unit(summary):
    (loop,) = summary["loops"]
    assert (loop["path"], loop["replicas"], loop["cdus"], loop["cdus_needed"]) == \
        ("Astral.pods[0].secondary", 8, 34, 34)
    assert loop["heat_kw"] == pytest.approx(62_668.8)          # 75 % of a pod's 83,558.4 kW
    assert loop["flow_l_per_min"] == pytest.approx(summary["liquid_flow_l_per_min"] / 8,
                                                   abs=0.01)
    air = {a["path"]: a for a in summary["air_units"]}
    room = air["Astral.pods[0].room"]
    # 25 % of a pod's 83,558.4 kW = 20,889.6 kW peak, 15,667.2 kW at 75 %; fans 3 %
    assert (room["heat_kw"], room["average_heat_kw"]) == (20_889.6, 15_667.2)
    assert room["fan_kw_average"] == pytest.approx(0.03 * 15_667.2)
    assert air["Astral.netroom"]["network_heat_kw"] == pytest.approx(40_140.8)


def test_json_facility_components(summary):
    fac = summary["facility"]
    avg, peak = fac["average"], fac["peak"]
    assert sum(v for k, v in avg.items() if k != "total_kw") == pytest.approx(avg["total_kw"],
                                                                              abs=0.01)
    assert avg["total_kw"] == pytest.approx(summary["facility_power_kw"])
    assert peak["total_kw"] == pytest.approx(summary["facility_power_peak_kw"])
    # fans: 3 % of the average air heat 165,478.4 kW = 4,964.4 kW; at the peak of 207,257.6 kW
    assert avg["fans_kw"] == pytest.approx(4_964.352) and peak["fans_kw"] == pytest.approx(
        6_217.728)
    circuits = {c["path"]: c for c in fac["circuits"]}
    assert (circuits["Warm"]["rejection"], circuits["Warm"]["rejection_approach_k"],
            circuits["Warm"]["water_class"]) == ("dry_cooler", 6, "W32")
    assert (circuits["Chilled"]["rejection"], circuits["Chilled"]["rejection_approach_k"]) == \
        ("cooling_tower", 5.6)
    for c in circuits.values():
        assert c["free_cooling_h"] + c["partial_h"] + c["mechanical_h"] == pytest.approx(8760)
    assert (fac["climate"], fac["climate_hours"]) == ("stdlib/climate/723170TYA.CSV", 8760)
    assert fac["pue"] == pytest.approx(avg["total_kw"] / avg["it_kw"], abs=1e-6)


def test_json_network_per_tier_with_its_bill_of_materials(summary):
    (net,) = summary["network"]
    tiers = {t["name"]: t for t in net["tiers"]}
    # 8,192 ToRs x (1 kW + 64 x 15 W) = 16,056.3 kW
    assert tiers["tor"]["switches"] == 8192
    assert tiers["tor"]["power_kw"] == pytest.approx(8192 * 1.96)
    assert tiers["tor"]["oversubscription"] == 1.0
    assert net["power_kw"] == pytest.approx(40_140.8)
    assert [r["tier"] for r in net["bom"] if r["item"] == "switch"] == ["tor", "agg", "core"]


# ---- sizing: the field and the objective --------------------------------------------------------
def test_chosen_values_are_named_by_their_field_in_size_and_check():
    expected = ["chosen by sizing: Cluster.rows[0].racks[0].hosts = 3 (in all 48 racks)",
                "chosen by sizing: Cluster.rows[0].hvdc.count = 3 (in all 4 feeders)",
                "chosen by sizing: Cluster.rows[0].hvdc.rectifier.modules = 9 (in all 4 "
                "feeders)",
                "chosen by sizing: Cluster.rows[0].hvdc.battery.strings = 2 (in all 4 feeders)",
                "chosen by sizing: Cluster.rows[0].secondary.cdu = SmallCDU (in all 4 loops)",
                "chosen by sizing: Cluster.rows[0].secondary.cdus = 2 (in all 4 loops)"]
    # the cost at the chosen design (prices of examples/sizing.astral):
    #   144 hosts x 300,000 = 43,200,000; 12 feeders x 15,000 = 180,000; 12 x 9 rectifier
    #   modules x 1,500 = 162,000; 12 x 2 battery strings x 8,000 = 192,000; 4 loops x 2 CDUs x
    #   60,000 = 480,000 -> 44,214,000 USD
    objective = "objective: minimize cost = 44,214,000 USD"
    for command in ("size", "check"):
        out = _cli([command, "examples/sizing.astral"]).stdout.splitlines()
        assert [line for line in out if line.startswith("chosen by sizing")] == expected
        assert any(line.startswith(objective) for line in out), out
    doc = json.loads(_cli(["size", "examples/sizing.astral", "--format", "json"]).stdout)
    assert doc["summary"]["objective"]["value"] == pytest.approx(44_214_000)
    assert doc["summary"]["objective"]["unit"] == "USD"
    cdus = doc["chosen"][-1]
    assert (cdus["path"], cdus["field"], cdus["value"], cdus["replicas"]) == \
        ("Cluster.rows[0].secondary", "cdus", "2", 4)
    assert (cdus["file"], cdus["line"]) == ("examples/sizing.astral", 50)


# ---- under a scenario ---------------------------------------------------------------------------
def test_a_failure_leaves_the_installed_equipment_alone(reference, summary):
    outcome = next(o for o in reference.scenarios if o.name == "hvdc_lost")
    base, under = reference.engineering.power, outcome.result.power
    # 1,024 x 15 + 56 x 16 modules, and 2,160 feeders, with or without the failure
    assert under.rectifier_modules == base.rectifier_modules == 16_256
    assert sum(f.replicas * f.count for f in under.feeders) == summary["feeders"] == 2160
    f = {x.path: x for x in under.feeders}
    down, other = f["Astral.pods[0].rows[0].hvdc"], f["Astral.pods[0].rows[0].utility"]
    assert (down.count, down.running, down.normal_w) == (1, 0, 0.0)
    assert down.rectifier_modules_needed == 15 and down.battery_required_ah == \
        pytest.approx(652_800 / 198 * 0.25 * 1.25 * 1.1)
    # the surviving side carries the whole row now; with one more failed (it too) nothing is
    # left to carry it: its failover is none, not what it carries now
    assert other.normal_w == pytest.approx(652_800) and other.failover_w == 0.0
    assert failover_share_w(other) is None and other.degraded


def test_under_a_scenario_each_part_is_named_in_its_own_replica(reference):
    outcome = next(o for o in reference.scenarios if o.name == "hvdc_lost")
    loops = {lp.path: lp for lp in outcome.result.cooling.loops}
    assert set(loops) == {"Astral.pods[0].secondary", "Astral.pods[1].secondary"}
    rest = [(k, p, n) for k, p, n, _, _ in loops["Astral.pods[1].secondary"].parts]
    assert rest == [("row", "Astral.pods[1].rows[0]", 128),
                    ("rack", "Astral.pods[1].rows[0].racks[0]", 2048)]
    pod0 = [(k, p, n) for k, p, n, _, _ in loops["Astral.pods[0].secondary"].parts]
    # the failed row's feeder splits the rows (1 + 127), not the racks: one line of 2,048
    assert pod0 == [("row", "Astral.pods[0].rows[0]", 1), ("row", "Astral.pods[0].rows[1]", 127),
                    ("rack", "Astral.pods[0].rows[0].racks[0]", 2048)]
    text = render_report(outcome.applied.design, outcome.result, width=132)
    table = text[text.index("Liquid flow per row and rack"):]
    assert table.index("Astral.pods[0].secondary") < table.index("row Astral.pods[0].rows[0]") \
        < table.index("Astral.pods[1].secondary") < table.index("row Astral.pods[1].rows[0]")
    assert "1 (down)" in text


def test_e642_names_the_gpu_of_the_loop_it_is_about(tmp_path):
    text = (REPO / "examples" / "astral.astral").read_text()
    text += "\nscenario hot3 { set Astral.pods[3].secondary.supply = 46 degC }\n"
    path = tmp_path / "hot3.astral"
    path.write_text(text)
    ws = astral_dsl.compile(path)
    design = ws.design
    (outcome,) = [o for o in astral_dsl.check(ws, scenarios=["hot3"]).scenarios
                  if o.name == "hot3"]
    (e,) = [d for d in outcome.broken if d.code == "E642"]
    assert e.message == ("loop `Astral.pods[3].secondary` supplies 46 degC but "
                         "`Astral.pods[3].rows[0].racks[0].hosts[0].gpus[0]` accepts at most "
                         "45 degC")


def test_messages_write_readable_quantities():
    # 8 leaves + 4 spines of 1 kW with no cooling unit: 12 kW, not "0.012 MW"
    text = """
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
switch S { ports = 64, port_speed = 400 Gb/s, power = 1 kW }
host H { gpus = 8 x G, nics = 8 x N }
fabric F {
  rails = 8
  tier leaf { switch = S, scope = site, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = S, scope = site, down = 64 x 400 Gb/s }
}
site S0 { hosts = 32 x H, fabric = F, air room { supply = 25 degC, rise = 12 K } }
"""
    ws = astral_dsl.compiles(text, name="net.astral")
    design = ws.design
    (w,) = [d for d in astral_dsl.check(ws).diagnostics if d.code == "W647"]
    assert w.message == "the switches of `S0.fabric` make 12 kW of heat that no air unit removes"


def test_cell_widths_count_terminal_cells():
    """Wide (CJK, fullwidth) characters take two cells, combining marks none: the tables'
    columns line up on a terminal (UAX #11)."""
    from astral_dsl.outputs.table import cell_width

    assert cell_width("rack-12") == 7
    assert cell_width("机架") == 4 and cell_width("ＡＢ") == 4
    assert cell_width("e\u0301") == 1 and cell_width("\u200b") == 0


def test_the_transformer_table_gives_ratings_and_load_in_kva_and_losses_in_kw():
    # the tutorial: 52.691 kW at the peak hour through one 100 kVA unit (the facility-water
    # pumps' heat rejected with the load), at the feeders' 95 % power factor: 52.691 / 0.95 =
    # 55.465 kVA. Losses (stdlib, the DOE's 99.08333 % at 100 kVA, between its 75 and 112.5 kVA
    # rows: P0 = 231.29 W, Pk = 925.15 W): at the peak x = 55.465 / 100, 231.29 + 925.15 x
    # 0.55465^2 = 515.90 W, real power; on average 231.29 + 925.15 x 0.14820 (the mean of x^2
    # over the hours) = 368.39 W
    proc = _cli(["size", "examples/tutorial_rack.astral", "--format", "json"])
    assert proc.returncode == 0, proc.stderr
    (tr,) = json.loads(proc.stdout)["summary"]["facility"]["transformers"]
    assert (tr["capacity_kva"], tr["power_factor"], tr["power_factor_from"]) == \
        (100.0, 0.95, "feeders")
    assert (tr["peak_load_kw"], tr["peak_load_kva"]) == (52.691, 55.465)
    assert tr["losses_kw_peak"] == pytest.approx(0.516, abs=0.001)
    assert "capacity_kw" not in tr
    text = _cli(["size", "examples/tutorial_rack.astral"], columns=132).stdout
    row = next(line for line in text.splitlines() if line.startswith(" Tutorial.mv "))
    assert row.split() == ["Tutorial.mv", "1", "100", "kVA", "n", "0.95", "(feeders'", "lowest)",
                           "55.5", "kVA", "368.4", "W", "515.9", "W"]


def test_a_lone_feeder_has_no_failover_load_and_the_tables_show_the_power_through_it():
    """The tutorial's busway is its only IT feeder: with it failed the rack's 40.8 kW are lost,
    so no feeder carries anything ("-", JSON null), where it read 0 W. Its 97 % efficiency puts
    40.8 / 0.97 = 42.06 kW through its conductors, the figure its capacity, current and E620
    are of (the power view's "normal 42.1 kW (93.5 %)"), a column of its own beside the load."""
    doc = json.loads(_cli(["size", "examples/tutorial_rack.astral", "--format", "json"]).stdout)
    busway = next(f for f in doc["summary"]["feeder_list"] if f["path"] == "Tutorial.busway")
    assert (busway["normal_kw"], busway["failover_kw"]) == (40.8, None)
    assert busway["carried_kw"] == pytest.approx(40.8 / 0.97, abs=1e-3)
    out = _cli(["size", "examples/tutorial_rack.astral"], columns=120).stdout
    (row,) = [ln.split() for ln in out.splitlines() if ln.startswith(" Tutorial.busway  ")
              and "kW" in ln]
    # feeder, x, type, V, then load, normal, through, failover, capacity
    assert row[4:] == ["40.8", "kW", "40.8", "kW", "42.1", "kW", "-", "45.0", "kW"], row
    assert "failover -: no feeder is left to carry the load when one fails" in out
    # a redundant pair keeps its figure: the gb200 hall's mechanical feeders, A and B, each
    # carry half of the facility's 301.1 kW and all of it alone
    doc = json.loads(_cli(["size", "examples/gb200_nvl72.astral", "--format", "json"]).stdout)
    mech = {f["path"]: f for f in doc["summary"]["mechanical_feeders"]}["Hall.mech_a"]
    assert mech["failover_kw"] == pytest.approx(2 * mech["normal_kw"], abs=2e-3)


def test_the_headline_counts_are_those_of_check():
    # one rack is "1 rack", as `astral check` says it (the size report read "1 racks")
    out = _cli(["size", "examples/tutorial_rack.astral"]).stdout
    # the report's first line, under the stdlib's stated assumptions the tutorial accepts (W216)
    (headline,) = [line for line in out.splitlines() if line.startswith("examples/")]
    assert headline == "examples/tutorial_rack.astral: 32 GPUs, 4 hosts, 1 rack, 0 switches"
    from astral_dsl.analyses.summary import counts_text
    assert counts_text({"gpus": 1, "hosts": 1, "racks": 2, "switches": 1}) == \
        "1 GPU, 1 host, 2 racks, 1 switch"


def test_no_rejection_approach_without_a_climate():
    # the tutorial declares free-cooling hours and no climate: its dry coolers' approach to an
    # outdoor temperature is never used, so it is null, not the 0 K it read
    doc = json.loads(_cli(["size", "examples/tutorial_rack.astral", "--format", "json"]).stdout)
    circuits = doc["summary"]["facility"]["circuits"]
    assert [(c["path"], c["rejection_approach_k"]) for c in circuits] == [
        ("Tutorial.chilled", None), ("Tutorial.water", None)]


def test_the_battery_column_gives_what_is_installed_beside_what_is_needed(reference, summary):
    """The text gave one figure under `battery`, the capacity IEEE 485 needs (1,133 Ah on the
    reference's row feeder), where the JSON has both: it read as what the batteries hold (6
    strings of 190 Ah = 1,140 Ah). It now reads as the rectifiers' `installed (needs N)`, and
    a battery that declares no capacity says `needs`."""
    text = render_report(reference.design, reference.engineering, width=200)
    hvdc = next(f for f in summary["feeder_list"] if f["path"] == "Astral.pods[0].rows[0].hvdc")
    assert (hvdc["battery_available_ah"], round(hvdc["battery_required_ah"], 1)) == (1140, 1133.3)
    row = next(line for line in text.splitlines()
               if line.lstrip().startswith("Astral.pods[0].rows[0].hvdc ") and " Ah" in line)
    assert row.rstrip().endswith("1,140 Ah (needs 1,133)"), row
    from astral_dsl.outputs.size_report import _battery

    class Declared:
        battery_required_ah, battery_available_ah = 315.39, None
    assert _battery(Declared) == "needs 315 Ah"


def test_a_rectifier_that_states_no_modules_reads_as_a_battery_that_states_no_capacity(
        reference, summary):
    """The reference's row rectifier states no `modules`: its column gave the bare need (`15`),
    read as modules installed, beside the battery's `needs N Ah`; it now says `needs 15`, and
    a rectifier that states them `installed (needs N)`, as the JSON's two keys have it."""
    text = render_report(reference.design, reference.engineering, width=200)
    hvdc = next(f for f in summary["feeder_list"] if f["path"] == "Astral.pods[0].rows[0].hvdc")
    assert (hvdc["rectifier_modules"], hvdc["rectifier_modules_needed"]) == (None, 15)
    row = next(line for line in text.splitlines()
               if line.lstrip().startswith("Astral.pods[0].rows[0].hvdc ") and " Ah" in line)
    assert " needs 15  1,140 Ah (needs 1,133)" in row, row
    from astral_dsl.outputs.size_report import _modules

    class Stated:
        rectifier_modules, rectifier_modules_needed = 1200, 1150
    assert _modules(Stated) == "1,200 (needs 1,150)"


def test_a_cdu_that_states_no_power_is_not_counted_as_a_0_w_draw(summary, tmp_path):
    """The stdlib's generic `CDU` states no `power` (its own draw besides the loop's pumps,
    which the pumps' line counts): the loop's JSON has null, not 0 kW, and the facility table
    says it is not counted; a CDU that states it (`RowCDU`: 1 % of 2 MW, 20 kW) is counted."""
    (loop,) = summary["loops"]
    assert (loop["cdu_model"], loop["cdu_power_kw"]) == ("CDU", None)
    text = _cli(["size", "examples/astral.astral"], columns=132).stdout
    (line,) = [ln for ln in text.splitlines() if ln.startswith(" CDUs ")]
    assert line.split()[1:] == ["0", "MW", "0", "MW", "`CDU`", "states", "no", "`power`:",
                                "not", "counted"]
    src = (REPO / "examples" / "single_pod.astral").read_text()
    assert "cdu = CDU(capacity = 1.2 MW), cdus = 5" in src
    path = tmp_path / "row_cdu.astral"
    assert "import stdlib.cooling { Water, CDU }" in src
    path.write_text(src.replace("cdu = CDU(capacity = 1.2 MW), cdus = 5",
                                "cdu = RowCDU(capacity = 2 MW), cdus = 5")
                    .replace("{ Water, CDU }", "{ Water, RowCDU }"))
    proc = _astral_cli("size", str(path), "--format", "json", cwd=REPO)
    (loop,) = json.loads(proc.stdout)["summary"]["loops"]
    # n_plus_1 of 5: 4 running x 20 kW
    assert (loop["cdu_model"], loop["cdu_power_kw"]) == ("RowCDU", 80.0)
    table = _astral_cli("size", str(path), cwd=REPO, env={**os.environ, "COLUMNS": "132"}).stdout
    (line,) = [ln for ln in table.splitlines() if ln.startswith(" CDUs ")]
    assert line.endswith("the running CDUs' declared power")


def test_the_designs_cdu_power_is_null_where_no_loops_cdu_states_it(summary):
    """The summary's `cdu_power_kw` totals the loops': where every loop's is null (the stdlib's
    `CDU` states no `power`), the total is null too, not the 0 kW draw each loop's no longer
    claims."""
    assert [lp["cdu_power_kw"] for lp in summary["loops"]] == [None]
    assert summary["cdu_power_kw"] is None


def test_the_failover_column_is_the_power_through_the_feeder_as_e621_checks_it(reference):
    """The reference's utility feeders are 97 % efficient: a row's whole 652.8 kW, with its HVDC
    side failed, is 652.8 / 0.97 = 673.0 kW through the feeder, the figure E621 compares with
    its 800 kW capacity. The failover column read 652.8 kW (the load), so a feeder whose check
    failed (446.8 kW through a 440 kW rating) showed a failover under its capacity."""
    text = render_report(reference.design, reference.engineering, width=200)
    (row,) = [ln.split() for ln in text.splitlines()
              if ln.startswith(" Astral.pods[0].rows[0].utility ") and "kW" in ln]
    # feeder, x, type (2 words), V, then load, normal, through, failover, capacity
    assert row[5:] == ["652.8", "kW", "326.4", "kW", "336.5", "kW", "673.0", "kW", "800.0",
                       "kW"], row
    assert "through, failover: the feeder's share of the load over its efficiency (against its " \
           "capacity), in normal operation and with one feeder failed" in " ".join(text.split())


def test_the_json_carries_the_power_through_each_feeder_as_the_table_shows_it(summary):
    """The table's `through` and `failover` columns are the power through the feeder (its share
    over its efficiency); the JSON had only the shares (`normal_kw`, `failover_kw`) and the
    larger through-power (`carried_kw`), so a reader of it could not find the failover figure
    E621 checks: `through_kw` and `failover_through_kw` carry them (null where none is left)."""
    (row,) = [f for f in summary["feeder_list"] if f["path"] == "Astral.pods[0].rows[0].utility"]
    assert (row["normal_kw"], row["failover_kw"]) == (326.4, 652.8)
    # 326.4 / 0.97 = 336.4948 and 652.8 / 0.97 = 672.9897 kW (the table: 336.5, 673.0)
    assert (row["through_kw"], row["failover_through_kw"]) == (336.495, 672.99)
    assert row["carried_kw"] == max(row["through_kw"], row["failover_through_kw"])
    lone = [f for f in summary["feeder_list"] if f["failover_kw"] is None]
    assert all(f["failover_through_kw"] is None for f in lone)


_TOWERS = """
import stdlib.cooling { Centrifugal }
gpu G { power = 700 W }
host H { gpus = 8 x G, power = 10.2 kW, liquid_share = 0 % }
rack R { hosts = 4 x H }
facility Chilled {
  supply = 16 degC, rise = 8 K, pump_head = 300 kPa, pump_efficiency = 80 %
  rejection = cooling_tower, rejection_approach = 5.6 K, CHILLER
}
site S {
  racks = 20 x R
  auxiliary = 5 kW
  utilization = 80 %
  climate = "stdlib/climate/723170TYA.CSV"
  air room {
    supply = 25 degC, rise = 12 K, FANS approach = 9 K, dew_point = 12 degC, facility = Chilled
  }
}
"""


def test_the_peak_hour_is_the_hour_that_draws_the_most_not_said_to_be_the_hottest(tmp_path):
    """Greensboro's hottest hour is 07-09 14:00 (35.6 degC dry bulb), but cooling towers follow
    the wet bulb: their chillers work hardest on 07-20 13:00 (33.9 degC, the year's highest dew
    point, 25 degC). The size report called that hour "the hottest hour"; and where nothing
    counted follows the weather (no chiller, no fans) every hour draws alike, and it named the
    file's first hour (01-01 01:00) as the hottest."""
    towers = tmp_path / "towers.astral"
    towers.write_text(_TOWERS.replace("CHILLER", "chiller = Centrifugal, rejection_fan_ratio = 1 %")
                      .replace("FANS", "fan_power_ratio = 3 %,"))
    out = " ".join(_cli(["size", str(towers)], columns=200).stdout.split())
    assert "peak demand at the utility point: 961.6 kW, the hour of " \
           "`stdlib/climate/723170TYA.CSV` that draws the most (07-20 13:00)" in out
    assert "hottest" not in out
    flat = tmp_path / "flat.astral"
    flat.write_text(_TOWERS.replace("CHILLER", "economiser = none").replace("FANS", ""))
    run = _cli(["size", str(flat), "--format", "json"])
    assert json.loads(run.stdout)["summary"]["facility"]["peak_hour"] is None
    out = " ".join(_cli(["size", str(flat)], columns=200).stdout.split())
    assert "full load, every hour of `stdlib/climate/723170TYA.CSV` alike" in out


_UNSTATED = """
import stdlib.cooling { Water, RowCDU }
gpu G { power = 700 W, max_supply = 45 degC }
host H { gpus = 8 x G, power = 10.2 kW, liquid_share = 75 % }
rack R { hosts = 4 x H }
facility W { supply = 18 degC, rise = 8 K, rejection = dry_cooler, rejection_approach = 6 K }
site S {
  racks = 20 x R
  auxiliary = 5 kW
  utilization = 80 %
  climate = "stdlib/climate/723170TYA.CSV"
  loop plates {
    fluid = Water, supply = 36 degC, rise = 10 K, cdu = RowCDU(capacity = 1 MW), cdus = 2
    redundancy = n_plus_1, facility = W
  }
  air room { supply = 25 degC, rise = 12 K, approach = 5 K, dew_point = 12 degC, facility = W }
}
"""


def test_the_facility_table_names_what_it_does_not_count_beside_its_0_w(tmp_path):
    """A hall that declares no pumps (loop and circuit), no fan ratios, no chiller and no feeder
    draws 0 W for each of them, which warnings say (W648, W657, W656, W626); the facility table
    printed each 0 W line with its basis as if it were computed ("hour by hour over the
    climate" beside 0 W of chillers for 3,000 h of chiller hours), and its PUE with them."""
    design = tmp_path / "unstated.astral"
    design.write_text(_UNSTATED)
    out = " ".join(_cli(["size", str(design)], columns=200).stdout.split())
    table = out[out.index("Facility: what it draws"):]
    for line in ("transformer losses 0 kW 0 kW no `transformer` and no feeder (W626): not counted",
                 "conversion losses 0 kW 0 kW no feeder (W626): not counted",
                 "secondary pumps 0 kW 0 kW at the loops' design flow, all year; `S.plates`: "
                 "pumps not stated (W648), not counted",
                 "facility-water pumps 0 kW 0 kW at the circuits' design flow, all year; `W`: "
                 "pumps not stated (W648), not counted",
                 "air units: fan ratio x heat removed; `S.room`: no `fan_power_ratio` (W657), "
                 "not counted",
                 "chillers 0 kW 0 kW hour by hour over the climate; `W`: no `chiller` (W656), "
                 "not counted",
                 "heat rejection fans 0 kW 0 kW fan ratio x heat rejected; `W`: no "
                 "`rejection_fan_ratio`, not counted"):
        assert line in table, line
    # the headline's PUE, 1.023 with all of that at 0 W, says it is a lower bound, and the JSON
    # which components it leaves parts of out
    assert "PUE 1.023 (a lower bound: transformer losses, conversion losses, secondary " \
           "pumps, facility-water pumps, fans (air units), chillers, heat rejection fans not all " \
           "counted, see the facility table)" in out
    doc = json.loads(_cli(["size", str(design), "--format", "json"]).stdout)
    (circuit,) = doc["summary"]["facility"]["circuits"]
    assert circuit["rejection_fan_ratio"] is None           # not declared: was 0.0
    assert doc["summary"]["facility"]["uncounted"] == [
        "transformers_kw", "losses_kw", "pumps_kw", "facility_pumps_kw", "fans_kw",
        "chillers_kw", "rejection_kw"]
    # a design that declares them all reads as before (the gb200 hall's CDUs aside)
    out = " ".join(_cli(["size", "examples/gb200_nvl72.astral"], columns=200).stdout.split())
    assert "not counted" not in out.replace("`CDU` states no `power`: not counted", "")
    assert "PUE 1.1466 (a lower bound: CDUs not all counted, see the facility table)" in out


_MV = """host H { power = 10 kW }
rack R { hosts = 4 x H }
site S {
  racks = 10 x R
  auxiliary = 5 kW
  transformer mv { capacity = 2000 kVA, count = 2, redundancy = two_n, power_factor = 95 % }
  feeder f { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, capacity = 500 kW
             efficiency = 97 %, serves = racks }
  air room { supply = 25 degC, rise = 12 K, fan_power_ratio = 3 % }
  facility water { supply = 15 degC, rise = 8 K, free_cooling = 0 h, chiller_cop = 5 }
}
"""


def test_a_transformer_without_losses_is_named_beside_its_0_w(tmp_path):
    """`transformer mv { capacity = 2000 kVA, count = 2 }` states no losses: W630 says they count
    as 0 W, and the facility table's transformer line read 0 W "no-load and load losses, hour
    by hour" as if computed."""
    design = tmp_path / "mv.astral"
    design.write_text(_MV)
    out = " ".join(_cli(["size", str(design)], columns=250).stdout.split())
    assert "transformer losses 0 kW 0 kW no-load and load losses, hour by hour; `S.mv`: no " \
           "`no_load_loss` or `load_loss` (W630), not counted" in out



def test_a_feeder_without_efficiency_is_named_beside_the_conversion_losses(tmp_path):
    """W624: a feeder without `efficiency` (nor a rectifier's) loses 0 W; the conversion losses'
    line named no one, and the headline's PUE did not say it left them out."""
    design = tmp_path / "eff.astral"
    design.write_text(_MV.replace("efficiency = 97 %, ", ""))
    out = " ".join(_cli(["size", str(design)], columns=250).stdout.split())
    assert "feeders' conversion, rectifiers at no load; `S.f`: no `efficiency` (W624), not " \
           "counted" in out
    assert "(a lower bound: transformer losses, conversion losses, facility-water pumps, heat " \
           "rejection fans not all counted" in out


def test_the_liquid_flow_table_is_titled_by_the_design_s_own_levels():
    """A design of halls (no rows): its loops list racks alone, but the table said "per row
    and rack"; it names the kinds of part it lists."""
    def title(parts: str, site: str) -> str:
        text = ("import stdlib.cooling { Water }\n"
                "host H { power = 10 kW, liquid_share = 75 % }\n"
                "rack R { hosts = 4 x H }\n"
                f"{parts}\nsite S {{ {site}\n"
                "  loop plates { fluid = Water, supply = 35 degC, rise = 10 K, serves = all } }\n")
        checked = astral_dsl.check(astral_dsl.compiles(text, name="levels.astral"))
        report = render_report(checked.design, checked.engineering, width=132)
        return next(line for line in report.splitlines() if line.startswith("Liquid flow"))

    assert title("hall Hall { racks = 4 x R }", "all = 2 x Hall") == \
        "Liquid flow per rack (each, in each loop)"
    assert title("row Row { racks = 4 x R }", "all = 2 x Row") == \
        "Liquid flow per row and rack (each, in each loop)"
    assert title("row Row { racks = 4 x R }\nblock B { racks = 2 x R }",
                 "rows = 2 x Row\n  blocks = 1 x B\n  all = [rows, blocks]") == \
        "Liquid flow per block, row and rack (each, in each loop)"
