"""Sizing (analyses/sizing.py): the MILP optimum equals a brute-force search on a small case,
chosen values flow back into the model, and an infeasible design names its conflicts."""
from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.analyses.cost import total_cost
from astral_dsl.analyses.engineering import analyse
from astral_dsl.model.values import Choice
from astral_dsl.outputs.export import export_design
from astral_dsl.units import Quantity

SMALL = """\
gpu G { power = 700 W, price = 20000 USD }
host H { gpus = 8 x G, power = 10 kW, liquid_share = 80 %, price = 40000 USD }
rack R {
  hosts = (? in 1..3) x H
  power_limit = 35 kW
}
fluid F { coolprop = "Water" }
cdu C { capacity = 100 kW, price = 30000 USD }
rectifier Rect { module = 25 kW, redundancy = n_plus_1, price = 1500 USD, modules = ? in 3..8 }
row Row {
  racks = 4 x R
  feeder a {
    current = dc, voltage = 240 V, side = A, capacity = 50 kW
    count = ? in 1..<4, price = 5000 USD
    rectifier = Rect
    serves = racks
  }
  loop l { fluid = F, supply = 35 degC, rise = 10 K, cdu = C, cdus = ? in 1..4,
           redundancy = n_plus_1, serves = racks }
}
site S {
  rows = 2 x Row
  check gpus >= 96 else error "need 96 GPUs"
  minimize cost
}
"""


def _brute_force(path: Path, design):
    """Every assignment of every unknown, compiled and checked; the cheapest valid one."""
    structural = [u for u in design.unknowns if u.role == "structural"]
    counts = [u for u in design.unknowns if u.role == "count"]
    best = None
    for index in itertools.product(*[range(len(u.options)) for u in structural]):
        for values in itertools.product(*[range(u.low, u.high + 1) for u in counts]):
            assign = {u.key: Choice(i) for u, i in zip(structural, index)}
            assign.update({u.key: Quantity(float(v)) for u, v in zip(counts, values)})
            d = astral_dsl.compile(path).compile(assignments=assign)
            if not d.valid:
                continue
            eng = analyse(d)
            if any(x.is_error for x in eng.diagnostics):
                continue
            cost = total_cost(d, eng)
            if best is None or cost < best[0] - 1e-6:
                best = (cost, index, values)
    return best


def test_milp_optimum_matches_brute_force(tmp_path):
    path = tmp_path / "small.astral"
    path.write_text(SMALL)
    ws = astral_dsl.compile(path)
    design = ws.design
    roles = sorted(u.role for u in design.unknowns)
    assert roles == ["count", "count", "count", "structural"]
    checked = astral_dsl.check(ws)
    assert checked.valid, checked.diagnostics
    sizing = checked.sizing
    best = _brute_force(path, design)
    assert best is not None
    assert sizing.value == pytest.approx(best[0])
    # the chosen design costs what the solver says, and is valid
    final = checked.design
    assert total_cost(final, analyse(final)) == pytest.approx(sizing.value)
    # hand check: 96 GPUs over 8 racks needs >= 1.5 hosts per rack -> 2 (3 would break 35 kW);
    # a row then draws 4 x 2 x 10 = 80 kW: 2 feeders of 50 kW (no partner: one failed -> 80 kW
    # on... no: each must carry 80 kW alone) -> 3 feeders (80/50 + 1 -> 2.6 -> 3);
    # rectifier: 80 / 2 = 40 kW per feeder with one failed -> 2 + 1 = 3 modules;
    # CDUs: 80 % of 80 kW = 64 kW -> 1 + 1 = 2.
    chosen = {key.rsplit(":", 2)[1]: value for key, value in final.chosen}
    assert chosen["4"].si == 2            # hosts per rack (line 4)
    assert chosen["14"].si == 3           # feeders (line 14)
    assert chosen["9"].si == 3            # rectifier modules (line 9)
    assert chosen["18"].si == 2           # CDUs (line 18)


def test_chosen_values_flow_into_the_model_and_export(tmp_path):
    path = tmp_path / "small.astral"
    path.write_text(SMALL)
    checked = astral_dsl.check(astral_dsl.compile(path))
    final = checked.design
    feeder = final.instance("S.rows[0].a")
    assert feeder.field("count").si == 3
    assert "count" in feeder.chosen
    doc = export_design(final)
    assert [c["at"].rsplit(":", 2)[1] for c in doc["chosen"]] == ["4", "9", "14", "18"]
    exported = {i["path"]: i for i in doc["instances"]}
    assert exported["S.rows[0].a"]["chosen"] == ["count"]


def test_infeasible_names_the_conflicting_constraints(tmp_path):
    path = tmp_path / "tight.astral"
    # 8 racks at most 3 hosts (35 kW) hold 192 GPUs at most: 400 cannot be reached
    path.write_text(SMALL.replace("check gpus >= 96", "check gpus >= 400"))
    checked = astral_dsl.check(astral_dsl.compile(path))
    assert not checked.valid
    e660 = [d for d in checked.diagnostics if d.code == "E660"]
    assert len(e660) == 1
    d = e660[0]
    # every combination breaks the check (E500 at 23:9, `gpus >= 400`): E660 points there, not
    # at the objective (24:3), and its hint says so
    assert (d.span.start.line, d.span.start.column) == (23, 9)
    assert d.hint.startswith("every combination breaks this constraint ([E500])")
    text = "\n".join(d.notes)
    assert "[E500] need 96 GPUs" in text   # the failing check (its message is unchanged) ...
    assert ":23)" in text                  # ... with its source line
    assert "all 3 combinations" in text


def test_domain_conflict_names_both_lines(tmp_path):
    path = tmp_path / "narrow.astral"
    path.write_text(SMALL.replace("count = ? in 1..<4", "count = ? in 1..2")
                    .replace("(? in 1..3) x H", "(? in 3..<4) x H"))
    checked = astral_dsl.check(astral_dsl.compile(path))
    e660 = [d for d in checked.diagnostics if d.code == "E660"]
    assert e660, checked.diagnostics
    text = "\n".join(e660[0].notes)
    assert "allows at most 2" in text and ":14" in text and ":13)" in text


def test_design_without_unknowns_does_not_import_the_solver():
    import subprocess
    import sys

    code = ("import sys, astral_dsl;"
            "ws = astral_dsl.compile('examples/single_pod.astral'); astral_dsl.check(ws);"
            "print('cvxpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False", out.stderr


def test_sizing_example(tmp_path):
    root = Path(__file__).resolve().parents[1]
    path = root / "examples" / "sizing.astral"
    checked = astral_dsl.check(astral_dsl.compile(path), all_scenarios=True)
    assert checked.valid, checked.diagnostics
    assert checked.sizing is not None and checked.sizing.feasible >= 1
    assert checked.design.chosen


def test_infeasible_file_under_tests_names_every_conflict():
    root = Path(__file__).resolve().parents[1]
    path = root / "tests" / "sizing" / "infeasible.astral"
    checked = astral_dsl.check(astral_dsl.compile(path))
    (d,) = [x for x in checked.diagnostics if x.code == "E660"]
    # 8 racks x at most 4 hosts x 8 GPUs = 256 < 400 in every combination: the check (20:9)
    assert (d.span.start.line, d.span.start.column) == (20, 9)
    text = "\n".join(d.notes)
    assert "[E500] need 400 GPUs" in text and "infeasible.astral:20)" in text   # the check
    assert "[E624]" in text and "infeasible.astral:8)" in text                  # the rack limit
    assert "allows at most 2" in text and "infeasible.astral:14" in text        # the capped count
    assert "all 4 combinations" in text


def test_minimize_cost_with_nothing_priced_warns_w800(tmp_path):
    """Without a price anywhere every combination costs 0 USD: said, not reported as a cost."""
    import re

    path = tmp_path / "unpriced.astral"
    path.write_text(re.sub(r",\s*price = \d+ USD", "", SMALL))
    assert "price" not in path.read_text()
    checked = astral_dsl.check(astral_dsl.compile(path))
    assert checked.valid, checked.diagnostics
    (w,) = [d for d in checked.diagnostics if d.code == "W800"]
    assert (w.span.start.line, w.span.start.column) == (24, 3)          # `minimize cost`
    assert "nothing declares one" in w.message
    priced = tmp_path / "small.astral"
    priced.write_text(SMALL)
    checked = astral_dsl.check(astral_dsl.compile(priced))
    assert not [d for d in checked.diagnostics if d.code == "W800"]


def test_e660_names_the_constraint_every_combination_breaks():
    # up = 16 x 400G; down = 17..32 x 400G: every choice is above 1:1 (17 / 16 = 1.0625 at
    # best), E602 at line 11 (the `up`), whatever the leaf switch.
    text = """
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
switch Small { ports = 32, port_speed = 400 Gb/s, power = 500 W, price = 20000 USD }
switch Big { ports = 64, port_speed = 400 Gb/s, power = 750 W, price = 30000 USD }
host H { gpus = 8 x G, nics = 8 x N, power = 10 kW }
rack R { hosts = 4 x H }
fabric F {
  rails = 8, max_oversubscription = 1
  tier leaf { switch = ? in [Small, Big], scope = site, per = [rail],
              down = (? in 17..20) x 400 Gb/s, up = 16 x 400 Gb/s }
  tier spine { switch = Big, down = 64 x 400 Gb/s }
}
site S { racks = 8 x R, fabric = F
  minimize cost }
"""
    checked = astral_dsl.check(astral_dsl.compiles(text, name="inf.astral"))
    (d,) = [x for x in checked.diagnostics if x.code == "E660"]
    assert d.notes[0] == "every combination breaks [E602] (inf.astral:11)"
    assert d.notes[-1] == "all 8 combinations of the unknowns fail"
    # ... and points at it, E602's span (the `up` bundle, 11:53), not at `minimize cost`
    assert (d.span.start.line, d.span.start.column) == (11, 53)
    assert "([E602]): relax it" in d.hint


def test_a_constraint_no_unknown_enters_is_its_own_error_not_e660():
    # `cdus = ?` is an equipment count, not a choice, and the feeder's conductors fail whatever
    # it is. 4 racks x 4 hosts x 10 kW = 160 kW at 240 V DC (no standard range, no battery: its
    # nominal voltage) = 666.7 A on one set rated 600 A: E625 itself, with its own hint, as
    # without the `?` (it was E660, "no choice of the unknowns satisfies every constraint", with
    # E625 in a note)
    text = """
cdu C { capacity = 100 kW }
fluid Water { coolprop = "Water" }
row Row {
  racks = 4 x R
  feeder f { current = dc, voltage = 240 V, capacity = 300 kW, conductors = 1,
             conductor_area = 240 mm^2, material = copper, length = 10 m, ampacity = 600 A,
             serves = racks }
  loop l { fluid = Water, supply = 30 degC, rise = 10 K, cdu = C, cdus = ?, serves = racks }
}
rack R { hosts = 4 x H }
host H { power = 10 kW, liquid_share = 80 % }
site S { rows = 1 x Row, utilization = 50 % }
"""
    checked = astral_dsl.check(astral_dsl.compiles(text, name="counts.astral"))
    errors = [x for x in checked.diagnostics if x.is_error]
    assert [x.code for x in errors] == ["E625"], errors
    assert "of `S.rows[0].f` carries 666.7 A" in errors[0].message
    assert errors[0].hint == ("add parallel conductors (`conductors = N`) or a larger "
                              "cross-section")
    # the same without the `?`: the error as sizing reports it
    fixed = astral_dsl.check(astral_dsl.compiles(text.replace("cdus = ?", "cdus = 3"),
                                                 name="counts.astral"))
    assert [(x.code, x.message, x.hint) for x in fixed.diagnostics if x.is_error] == \
        [(x.code, x.message, x.hint) for x in errors]


def test_a_stated_cdu_count_too_small_is_e641_beside_a_sized_feeder():
    """A loop's stated `cdus = 2` on CDUs too small for N+1, in a design that sizes its feeder
    count (`count = ? in 1..3`): E641 itself, whatever the count (it was E660 with E641 in a
    note). 4 racks x 4 hosts x 10 kW x 80 % = 128 kW of liquid heat on 2 x 100 kW: 200 kW
    hold it, one failed leaves 100 kW."""
    text = """
cdu C { capacity = 100 kW, price = 1000 USD }
fluid Water { coolprop = "Water" }
row Row {
  racks = 4 x R
  feeder f { current = dc, voltage = 800 V, capacity = 300 kW, count = ? in 1..3,
             price = 100 USD, serves = racks }
  loop l { fluid = Water, supply = 30 degC, rise = 10 K, cdu = C, cdus = 2,
           redundancy = n_plus_1, serves = racks }
}
rack R { hosts = 4 x H }
host H { power = 10 kW, liquid_share = 80 % }
site S { rows = 1 x Row, utilization = 50 % }
"""
    checked = astral_dsl.check(astral_dsl.compiles(text, name="cdus.astral"))
    errors = [x for x in checked.diagnostics if x.is_error]
    assert [x.code for x in errors] == ["E641"], errors
    assert errors[0].message == ("with one CDU failed, loop `S.rows[0].l` has 100 kW for 128 kW")
    assert errors[0].hint == "3 CDUs are needed (n_plus_1)"
    assert (errors[0].span.start.line, errors[0].span.start.column) == (8, 74)      # `cdus`
    # a check whose sides change with the choice is still E660 (test_e660_names_...), and one
    # that does not fails as itself beside it
    both = text.replace("utilization = 50 % }",
                        "utilization = 50 %\n  check 1 == 2 }").replace("count = ? in 1..3",
                                                                         "count = ? in 1..2")
    assert "E660" not in [x.code for x in astral_dsl.check(astral_dsl.compiles(
        both, name="cdus.astral")).diagnostics]


def test_e660_keeps_the_warnings_every_combination_gives():
    """A design no choice satisfies still shows the warnings that hold whatever the choice
    (they were dropped: only E660 and the front end's warnings were reported)."""
    text = """\
host HA { power = 10 kW, liquid_share = 80 % }
host HB { power = 10 kW }
rack R { hosts = 2 x (? in [HA, HB]), power_limit = 45 kW }
site S { racks = (? in 1..2) x R, check hosts >= 8 }
"""
    checked = astral_dsl.check(astral_dsl.compiles(text, name="warned.astral"))
    by_code = {d.code: d for d in checked.diagnostics}
    assert "E660" in by_code
    # the same in all 4 combinations (no utilization anywhere): as is, without a note
    assert by_code["W627"].notes == ()
    # no feeder in any combination, but the load differs: the first combination's figures
    # (HA, 1 rack: 1 rack x 2 hosts x 10 kW = 20 kW), said to be its own
    w626 = by_code["W626"]
    assert w626.message.startswith("1 rack(s) (20 kW) have no feeder")
    assert w626.notes[-1].startswith("every combination of the unknowns gives this warning, "
                                     "with other figures in some: these are those of ")
    assert w626.notes[-1].endswith("warned.astral:4:19 = 1")
    assert "W653" in by_code                      # no cooling: in every combination
    # HA's cold-plate heat that no loop removes (W651) holds only when HA is chosen
    assert "W651" not in by_code
