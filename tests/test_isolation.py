"""What-ifs hit exactly what they name (issue: a twin you can trust, section 1).

A scenario's `fail` and `set` keep the path as written; under the scenario the compiler gives the
named replicas their own instances (semantics/isolate.py) and leaves every other replica as it
was. These tests compute by hand what failing one row's feeder does, check that the other pod is
untouched, and that the symbolic model stays symbolic."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.analyses.engineering import analyse
from astral_dsl.outputs.export import export_design

REPO = Path(__file__).resolve().parents[1]

# 2 pods x 4 rows x 2 racks x 2 hosts of 10 kW: a row is 40 kW peak, 20 kW average (50 %).
# Each row has an HVDC side (96 % efficient) and a utility side (97 %), each rated for the row.
ROWS = """\
gpu G { power = 1 kW, max_supply = 45 degC }
host H { gpus = 8 x G, power = 10 kW }
rack R { hosts = 2 x H }
row Row {
  racks = 2 x R
  feeder hvdc { current = dc, voltage = 240 V, side = A, capacity = 50 kW, efficiency = 96 %,
                serves = racks }
  feeder utility { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, side = B,
                   capacity = 50 kW, efficiency = 97 %, serves = racks }
}
pod P { rows = 4 x Row }
site S {
  pods = 2 x P
  utilization = 50 %
  air room { supply = 25 degC, rise = 12 K }    // a design with no cooling has no PUE (W653)
}
scenario one_row { fail S.pods[1].rows[2].hvdc }
scenario every_pod_row0 { fail S.pods[*].rows[0].hvdc }
scenario first_two_rows { fail S.pods[0].rows[0..1].hvdc }
scenario derated { set S.pods[1].rows[3].utility.capacity = 30 kW }
scenario all_utilities_weaker { set Row.utility.capacity = 45 kW }
"""


@pytest.fixture(scope="module")
def rows():
    ws = astral_dsl.compiles(ROWS, name="rows.astral")
    design = ws.design
    assert design.valid, design.diagnostics
    return design, astral_dsl.check(ws, all_scenarios=True)


def _outcome(checked, name):
    return next(o for o in checked.scenarios if o.name == name)


def _feeders(result):
    return {f.path: f for f in result.power.feeders}


def test_failing_one_row_isolates_it_and_only_it(rows):
    design, checked = rows
    o = _outcome(checked, "one_row")
    twin = o.applied.design
    site = twin.roots[0]
    # 1 x pods[0] (untouched) + 1 x pods[1] (a copy holding the named row), in that order
    assert str(site.member("pods")) == "1 x S.pods[0] + 1 x S.pods[1]"
    pod1 = site.member("pods").at(1)
    assert str(pod1.member("rows")) == \
        "2 x S.pods[0].rows[0] + 1 x S.pods[1].rows[2] + 1 x S.pods[0].rows[0]"
    assert o.applied.failed == frozenset({"S.pods[1].rows[2].hvdc"})
    assert o.notes == ("feeder S.pods[1].rows[2].hvdc failed",)
    # O(description): the copies are the pod, the row and its two feeders, nothing expanded
    assert len(twin.instances) == len(design.instances) + 4


def test_failing_one_row_moves_exactly_that_rows_load(rows):
    _, checked = rows
    base = _feeders(checked.engineering)
    under = _feeders(_outcome(checked, "one_row").result)
    row_w = 2 * 2 * 10e3                          # 40 kW peak per row
    # the failed HVDC side carries nothing, its utility side the whole row
    assert under["S.pods[1].rows[2].hvdc"].normal_w == 0.0
    assert under["S.pods[1].rows[2].utility"].normal_w == pytest.approx(row_w)
    assert under["S.pods[1].rows[2].utility"].replicas == 1
    # the 7 other rows keep 2N sharing: half the row on each side
    assert under["S.pods[0].rows[0].hvdc"].replicas == 7
    assert under["S.pods[0].rows[0].hvdc"].normal_w == pytest.approx(row_w / 2)
    assert base["S.pods[0].rows[0].hvdc"].replicas == 8


def test_failing_one_row_changes_losses_and_pue_by_that_rows_share(rows):
    _, checked = rows
    o = _outcome(checked, "one_row")
    b, u = checked.engineering, o.result
    avg = 0.5                                      # utilization
    row_w = 40e3
    # by hand: normally half the row's average load through each side ...
    row_loss_2n = (row_w / 2 * avg) * (1 / 0.96 - 1) + (row_w / 2 * avg) * (1 / 0.97 - 1)
    # ... with its HVDC side down, all of it through the utility side
    row_loss_failed = (row_w * avg) * (1 / 0.97 - 1)
    assert b.power.conversion_loss_w == pytest.approx(8 * row_loss_2n, rel=1e-12)
    assert u.power.conversion_loss_w == pytest.approx(7 * row_loss_2n + row_loss_failed,
                                                      rel=1e-12)
    # the IT load is the same, so PUE moves by exactly the loss change over the IT average,
    # through the transformers (no `transformer` declared: 99.53 %, W630)
    assert u.power.it_average_w == b.power.it_average_w == pytest.approx(8 * row_w * avg)
    assert u.cooling.pue - b.cooling.pue == pytest.approx(
        (row_loss_failed - row_loss_2n) / 0.9953 / (8 * row_w * avg), rel=1e-9)


def test_failing_in_pod_1_leaves_pod_0_identical(rows):
    design, checked = rows
    twin = _outcome(checked, "one_row").applied.design
    before = {i["path"]: i for i in export_design(design)["instances"]
              if i["path"].startswith("S.pods[0]")}
    after = {i["path"]: i for i in export_design(twin)["instances"]
             if i["path"].startswith("S.pods[0]")}
    assert before == after and before


def test_a_wildcard_means_every_replica(rows):
    _, checked = rows
    o = _outcome(checked, "every_pod_row0")
    twin = o.applied.design
    # one copy of the pod serves both replicas: still symbolic
    assert str(twin.roots[0].member("pods")) == "2 x S.pods[0]"
    under = _feeders(o.result)
    assert under["S.pods[0].rows[0].hvdc"].replicas == 2
    assert under["S.pods[0].rows[0].hvdc"].normal_w == 0.0
    assert under["S.pods[0].rows[1].hvdc"].replicas == 6


def test_a_range_means_those_replicas(rows):
    _, checked = rows
    under = _feeders(_outcome(checked, "first_two_rows").result)
    failed = [f for f in under.values() if f.normal_w == 0.0]
    assert [(f.path, f.replicas) for f in failed] == [("S.pods[0].rows[0].hvdc", 2)]


def test_a_set_changes_only_the_named_replica_and_what_follows_from_it(rows):
    _, checked = rows
    o = _outcome(checked, "derated")
    under = _feeders(o.result)
    weak = under["S.pods[1].rows[3].utility"]
    assert (weak.capacity_w, weak.replicas) == (30e3, 1)
    # with one side carrying the whole 40 kW row, the derated feeder is over its capacity
    assert [d.code for d in o.broken] == ["E621"]
    assert "S.pods[1].rows[3].utility" in o.broken[0].message
    others = [f for f in under.values() if f.path.endswith("utility") and f is not weak]
    assert all(f.capacity_w == 50e3 for f in others)
    assert o.applied.changed == (("S.pods[1].rows[3].utility", "capacity", "30 kW"),)


def test_a_template_root_means_the_instance_shared_on_purpose(rows):
    _, checked = rows
    o = _outcome(checked, "all_utilities_weaker")
    caps = {f.capacity_w for f in o.result.power.feeders if f.path.endswith("utility")}
    assert caps == {45e3}
    assert o.broken == ()


def test_the_reference_hvdc_lost_fails_one_of_1024_feeders():
    ws = astral_dsl.compile(REPO / "examples" / "astral.astral")
    design = ws.design
    checked = astral_dsl.check(ws)
    (o,) = checked.scenarios
    under = _feeders(o.result)
    failed = [f for f in under.values() if f.path.endswith("hvdc") and f.normal_w == 0.0]
    assert [(f.path, f.replicas) for f in failed] == [("Astral.pods[0].rows[0].hvdc", 1)]
    healthy = under["Astral.pods[0].rows[1].hvdc"]
    assert healthy.replicas == 1023 and healthy.normal_w == pytest.approx(652.8e3 / 2)
    assert o.result.power.it_peak_w == checked.engineering.power.it_peak_w


def test_the_python_api_and_a_recompile_agree():
    """No fallback that changes only what the analyses read: checking a design of a workspace
    compiles it again under the scenario, as the command line does."""
    ws = astral_dsl.compiles(ROWS, name="rows.astral")
    direct = astral_dsl.check(ws, ["derated"])
    again = astral_dsl.check(ws, ["derated"], design=ws.compile())
    assert [d.code for d in direct.diagnostics] == [d.code for d in again.diagnostics]


def test_unisolable_routes_and_unmodelled_failures_are_errors():
    text = ROWS.replace("scenario one_row { fail S.pods[1].rows[2].hvdc }",
                        "scenario one_row { set S.pods[1].rows[2].hvdc.serves[0].power_limit "
                        "= 40 kW }\nscenario rack { fail S.pods[0].rows[0].racks[1] }")
    design = astral_dsl.loads(text, name="rows.astral")
    codes = sorted(d.code for d in design.diagnostics if d.is_error)
    assert codes == ["E217", "E218"]


def test_a_derived_group_is_named_through_its_members():
    text = ROWS + "scenario via_racks { set S.pods[0].racks[5].power_limit = 30 kW }\n"
    ws = astral_dsl.compiles(text, name="rows.astral")
    design = ws.design
    assert any(d.code == "E217" and "rows[0]" in (d.hint or "") for d in design.diagnostics)
    single = ROWS[:ROWS.index("scenario")].replace("pod P { rows = 4 x Row }",
                                                   "pod P { rows = 1 x Row }") + \
        "scenario via_racks { set S.pods[0].racks[1].power_limit = 25 kW }\n"
    ws = astral_dsl.compiles(single, name="rows.astral")
    design = ws.design
    assert design.valid, design.diagnostics
    (action,) = [s for s in design.scenarios if s.template == "via_racks"][0].actions
    assert action.route.display == "S.pods[0].rows[0].racks[1]"
    o = next(o for o in astral_dsl.check(ws, ["via_racks"]).scenarios if o.name == "via_racks")
    limits = {(i.path, i.field("power_limit").si) for i in o.applied.design.instances
              if i.kind == "rack" and i.field("power_limit") is not None}
    assert limits == {("S.pods[0].rows[0].racks[1]", 25e3)}


def test_isolation_keeps_the_design_symbolic_at_scale():
    ws = astral_dsl.compile(REPO / "examples" / "astral.astral")
    design = ws.design
    scenario = next(s for s in design.scenarios if s.template == "hvdc_lost")
    twin = ws.under(scenario)
    # pod, row, its two feeders, and the pod's own loop and air unit: 6 copies of 524,288 GPUs'
    assert len(twin.instances) == len(design.instances) + 6
    assert astral_dsl.summary(twin)["gpus"] == astral_dsl.summary(design)["gpus"] == 524288
    eng = analyse(twin)
    assert eng.power.it_peak_w == analyse(design).power.it_peak_w


def test_a_copy_is_not_taken_for_a_route_node_that_lived_at_the_same_address():
    """Isolator.split keeps the copies it made per (item, the route nodes it was isolated
    for), keyed by their id()s: a node freed during the compile (a frame's pending plan replaced
    by a merge) could leave its id to a new node, and the item then came back as the old copy,
    isolated for the other node (CPython reuses a freed object's memory at once). The entry now
    holds its nodes, so their ids stay theirs while it lives."""
    from types import SimpleNamespace

    from astral_dsl.model.values import Group, Run
    from astral_dsl.semantics.isolate import Isolator, Node, Plan

    class Ev:
        def copy(self, frame):
            return SimpleNamespace(pending=None, kind="rack", defs={}, of=frame)

        def given(self, *args):
            pass

    iso = Isolator(Ev(), Plan({}, {}))
    item = SimpleNamespace(name="R")
    group = Group((Run(2, item),))
    first = Node()
    old = iso.split(group, {0: first}).at(0)
    assert old.pending is first
    old.pending = None                       # the copy's plan replaced: `first` held by nothing
    gone = id(first)
    del first
    made = []
    for _ in range(10_000):                 # a new node at the freed one's address
        made.append(Node())
        if id(made[-1]) == gone:
            break
    second = made[-1]
    new = iso.split(group, {0: second}).at(0)
    assert new.pending is second and new is not old
