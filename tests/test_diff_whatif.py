"""`astral diff` sees what a scenario does and where a job runs: a `fail` or `set` that names
another part or value, a scenario added, and a job moved to other replicas were "no
differences" (exit 0 with `--exit-code`): the facts held every field and member of every
instance, and a scenario's actions are neither, a placement's value the instance the
replicas share (`S.rows[0]` for `rows[0..1]` and `rows[2..3]` alike)."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import api
from astral_dsl.outputs.diff.facts import values

DESIGN = """\
import stdlib.hardware { H100_SXM, HGX8, CX7_2x200G }
import stdlib.models { Llama3_8B }
host H = HGX8(gpu = H100_SXM, nic = CX7_2x200G)
rack R { hosts = 2 x H }
row W { racks = 2 x R }
site S {
  rows = 4 x W
  feeder busway { current = dc, voltage = 400 V, capacity = 600 kW, serves = rows, side = A }
  feeder other { current = dc, voltage = 400 V, capacity = 600 kW, serves = rows, side = B }
}
JOB
scenario what {
  fail S.FAILED
  set S.rows[0].racks[0].hosts[0].power = POWER
}
"""

JOB = """\
job train {
  model = Llama3_8B
  placement = S.rows[ROWS]
  gpus = 64
  parallel { tp = 8, pp = 1, dp = 8 }
  batch { global_batch = 64, micro = 1, seq = 8192 }
}
"""


def _write(path: Path, failed="busway", power="9 kW", job="") -> str:
    path.write_text(DESIGN.replace("JOB", job).replace("FAILED", failed)
                    .replace("POWER", power), encoding="utf-8")
    return str(path)


def test_the_facts_hold_a_scenarios_actions_and_a_placement_as_written(tmp_path):
    f = _write(tmp_path / "d.astral", job=JOB.replace("ROWS", "0..1"))
    design = astral_dsl.load(f)
    assert not [d for d in design.diagnostics if d.is_error]
    facts = values(design)
    assert facts["what.actions"] == ("fail S.busway; "
                                     "set S.rows[0].racks[0].hosts[0].power = 9 kW")
    # the value is the row instance the four rows share (`2 x S.rows[0]`): the route says which
    assert facts["train.placement"] == "S.rows[0..1]"


def test_a_job_moved_to_other_rows_is_a_change(tmp_path):
    a = values(astral_dsl.load(_write(tmp_path / "a.astral", job=JOB.replace("ROWS", "0..1"))))
    b = values(astral_dsl.load(_write(tmp_path / "b.astral", job=JOB.replace("ROWS", "2..3"))))
    assert {k for k in a if a[k] != b.get(k)} == {"train.placement"}
    assert b["train.placement"] == "S.rows[2..3]"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> str:
    return _write(tmp_path_factory.mktemp("whatif") / "a.astral")


@pytest.mark.parametrize("failed, power, before, after", [
    # another part failed
    ("other", "9 kW", "fail S.busway; set S.rows[0].racks[0].hosts[0].power = 9 kW",
     "fail S.other; set S.rows[0].racks[0].hosts[0].power = 9 kW"),
    # another value set
    ("busway", "12 kW", "fail S.busway; set S.rows[0].racks[0].hosts[0].power = 9 kW",
     "fail S.busway; set S.rows[0].racks[0].hosts[0].power = 12 kW"),
])
def test_a_scenario_that_names_another_part_or_value_is_a_change(base, tmp_path, failed,
                                                                  power, before, after):
    b = _write(tmp_path / "b.astral", failed=failed, power=power)
    result = api.diff(base, b)
    assert [(c.section, c.key, c.kind, c.before, c.after) for c in result.changes] == [
        ("values", "what.actions", "changed", before, after)]


def test_a_scenario_respelt_is_no_change_and_one_added_is_one(base, tmp_path):
    # 9 kW written 9000 W does the same
    assert api.diff(base, _write(tmp_path / "b.astral", power="9000 W")).changes == ()
    c = tmp_path / "c.astral"
    c.write_text(Path(base).read_text(encoding="utf-8")
                 + "scenario spare { fail S.other }\n", encoding="utf-8")
    result = api.diff(base, str(c))
    assert [(x.key, x.kind, x.after) for x in result.changes] == [
        ("spare.actions", "added", "fail S.other")]


def test_a_side_that_does_not_compile_has_no_values_or_figures_removed(base, tmp_path):
    """B imports a name its module lacks (E208): its values, counts, power, bill of materials
    and jobs are unknown. Before, each of A's was listed as removed (`- racks: 4`, `- pue:
    None`: 43 in a three-line design), as if B had none."""
    b = tmp_path / "b.astral"
    b.write_text(Path(base).read_text(encoding="utf-8").replace("HGX8, CX7_2x200G }",
                                                               "HGX8, CX7_2x200G, Nope }"),
                 encoding="utf-8")
    result = api.diff(base, str(b))
    assert {c.section for c in result.changes} == {"diagnostics"}
    added = [c.after["code"] for c in result.changes if c.kind == "added"]
    assert added == ["E208"]
    doc = result.json()
    assert (doc["a"]["compiled"], doc["b"]["compiled"]) == (True, False)
    assert ("note: b does not compile: source-level values, counts, power and cooling, bill of "
            "materials, job forecasts are not compared") in result.text()


def test_a_figure_gone_reads_none_and_json_deltas_carry_no_float_noise():
    """`pue` is None without cooling: the text said Python's `None`; the JSON's delta of
    40.8 -> 51.0 kW was 10.200000000000003 (the float subtraction), now 10.2."""
    from astral_dsl.outputs.diff.compare import Change
    from astral_dsl.outputs.diff.facts import Side
    from astral_dsl.outputs.diff.render import line, to_json

    assert line(Change("power", "pue", "changed", 1.2034, None)) == "~ pue: 1.2034 -> none"
    assert line(Change("power", "pue", "removed", None, None)) == "- pue: none"
    side = Side("x", True, 0, 0, {})
    doc = to_json(side, side, (Change("power", "it_power_kw", "changed", 40.8, 51.0),
                               Change("counts", "gpus", "changed", 32, 40)))
    assert [c["delta"] for c in doc["changes"]["power"] + doc["changes"]["counts"]] == [10.2, 8]
    assert type(doc["changes"]["counts"][0]["delta"]) is int


def test_a_warning_accepted_is_not_a_warning_fixed(tmp_path):
    """B accepts A's W626 with an `allow`: the diff said `- warning[W626] ...` alone, as if
    the racks had got their feeder."""
    a = tmp_path / "a.astral"
    a.write_text("host H { power = 1 kW }\nrack R { hosts = 2 x H }\n"
                 "site S { racks = 1 x R, utilization = 75 % }\n", encoding="utf-8")
    b = tmp_path / "b.astral"
    b.write_text(a.read_text(encoding="utf-8") + 'allow W626 "a bench rack"\n',
                 encoding="utf-8")
    result = api.diff(str(a), str(b))
    w626 = [c for c in result.changes if c.section == "diagnostics" and "W626" in c.key]
    assert [(c.kind, c.key.split(" 1 rack")[0]) for c in w626] == [
        ("removed", "warning[W626]"), ("added", "accepted warning[W626]")]
    assert w626[1].after["accepted"] == "a bench rack" and "accepted" not in w626[0].before
    assert "  + accepted warning[W626] 1 rack(s) (2 kW) have no feeder" in result.text()
    assert result.text().split("\n")[-4].endswith("(line 2): a bench rack")
