"""A sweep's table says a warning once with the points that have it; one that every point of a
sweep has says `all N points` (it said "4 points (util=60 %; util=70 %; util=80 % and 1 more)",
which reads as if one point had escaped it), and one that some have still names them."""
from __future__ import annotations

from astral_dsl.explore import sweep
from astral_dsl.explore.engines import LocalEngine
from astral_dsl.outputs import sweep as sweep_out

LAB = """
param util = 80 %
param n = 4
gpu G { power = 700 W }
host N { gpus = 8 x G, power = 10.2 kW }
rack R {
  hosts = n x N
}
let single = if n > 1 then false else true
check single else warning "more than one host"
site S { racks = 2 x R, utilization = util }
"""


def _table(tmp_path, grids):
    path = tmp_path / "lab.astral"
    path.write_text(LAB, encoding="utf-8")
    result = sweep.run(str(path), grids, engine=LocalEngine(1))
    return " ".join(sweep_out.table(result, False, width=400).split())


def test_a_warning_of_every_point_says_all_of_them(tmp_path):
    text = _table(tmp_path, ["util=60%..90%:10%"])
    assert "all 4 points: W626 2 rack(s)" in text
    assert "and 1 more" not in text


def test_a_warning_of_some_points_names_them(tmp_path):
    text = _table(tmp_path, ["n=1..5"])      # W500 from n=2 on
    assert "4 points (n=2; n=3; n=4 and 1 more): W500 more than one host" in text
    assert "all 5 points" not in text


def test_a_sweep_of_one_point_says_one_point(tmp_path):
    text = _table(tmp_path, ["n=2"])
    assert "lab.astral: 1 point " in text or text.startswith("lab.astral: 1 point")
    assert "1 points" not in text
