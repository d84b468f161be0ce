"""Sized values everywhere (issue #25, item 4): a design with `?` is sized once and every command
and `load()` use the values chosen, marked as chosen: examples/sizing.astral passes `check`,
`forecast` and `check --margins` on them; sizing's result is kept per user, so a second command
on the same text compiles the design once with the chosen values (and gives the same output,
byte for byte); the language server's analysis reuses it. (`minimize cost` without prices: W800,
tests/test_sizing.py; one `?` against none: benchmarks/bench_one_unknown.py.)"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import pipeline_sizing
from test_cli import call, out, run

REPO = Path(__file__).resolve().parents[1]
SIZING = REPO / "examples" / "sizing.astral"
CHOSEN = ["Cluster.rows[0].racks[0].hosts = 3", "Cluster.rows[0].hvdc.count = 3",
          "Cluster.rows[0].hvdc.rectifier.modules = 9", "Cluster.rows[0].hvdc.battery.strings = 2",
          "Cluster.rows[0].secondary.cdu = SmallCDU", "Cluster.rows[0].secondary.cdus = 2"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache of this test's own (the parser tables and syntax trees are built again)."""
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("ASTRAL_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def design(tmp_path) -> Path:
    path = tmp_path / "sizing.astral"
    shutil.copy(SIZING, path)
    return path


def _no_sizing(monkeypatch):
    """Fail the test if the combinations are compiled and checked again."""
    def refuse(*args, **kw):
        raise AssertionError("sized again: the kept result was not used")
    monkeypatch.setattr(pipeline_sizing, "_size", refuse)


# ---- every command and load() -------------------------------------------------------------------
def test_load_gives_the_design_with_the_values_chosen(cache):
    design = astral_dsl.load(SIZING)
    assert design.valid, design.diagnostics
    assert not design.needs_sizing and len(design.unknowns) == 6    # kept, with their options
    rack = design.instance("Cluster.rows[0].racks[0]")
    assert rack.members[0].value.count == 3                          # not the first option, 1
    assert design.instance("Cluster.rows[0].hvdc").field("count").si == 3
    assert "count" in design.instance("Cluster.rows[0].hvdc").chosen     # marked as chosen
    assert [str(v) for _, v in design.chosen][:2] == ["3", "3"]
    assert astral_dsl.summary(design)["gpus"] == 1152


def test_check_forecast_and_margins_of_examples_sizing(cache):
    proc = run(["check", "examples/sizing.astral"], REPO)
    assert proc.returncode == 0, out(proc)
    for line in CHOSEN:
        assert f"chosen by sizing: {line}" in out(proc)
    # the job needs 1,024 GPUs: the first option (1 host per rack, 384 GPUs) could not hold it
    proc = run(["forecast", "examples/sizing.astral"], REPO)
    assert proc.returncode == 0, out(proc)
    text = out(proc)
    assert "forecast: job `llama70b` (Llama2_70B) on 1,024 x H100_SXM in Cluster" in text
    assert text.index("chosen by sizing: Cluster.rows[0].racks[0].hosts = 3") < \
        text.index("forecast:")
    doc = json.loads(out(run(["forecast", "examples/sizing.astral", "--format", "json"], REPO)))
    assert doc["valid"] and [c["value"] for c in doc["chosen"]][0] == "3"
    proc = run(["check", "--margins", "--format", "json", "examples/sizing.astral"], REPO)
    assert proc.returncode == 0, out(proc)
    doc = json.loads(out(proc))
    assert any(n.startswith("around the values sizing chose (Cluster.rows[0].racks[0].hosts = 3")
               for n in doc["margins_notes"]), doc["margins_notes"]
    rack = next(m for m in doc["margins"] if m["limit"].startswith("rack power of"))
    assert rack["lhs"]["value"] == pytest.approx(30.6) and rack["holds"]   # 3 hosts: 30.6 kW


def test_a_forecast_under_a_scenario_is_of_the_sized_design(cache):
    ws = astral_dsl.compile(SIZING)
    fc = astral_dsl.forecast(ws, scenario="one_feeder_down")
    assert fc.iteration_time.si == pytest.approx(astral_dsl.forecast(ws).iteration_time.si)
    assert ws.sized.chosen
    # the design as written, with the first option of each `?` (1 host per rack, 384 GPUs),
    # cannot hold the job: the forecasts above are of the sized one
    from astral_dsl.seer import ForecastError

    with pytest.raises(ForecastError):
        astral_dsl.forecast(ws, design=ws.design)


def test_an_infeasible_design_loads_with_its_e660(cache):
    design = astral_dsl.load(REPO / "tests" / "sizing" / "infeasible.astral")
    assert not design.valid and "E660" in [d.code for d in design.diagnostics]


# ---- sized once ---------------------------------------------------------------------------------
def test_the_second_command_uses_the_kept_result_and_says_the_same(design, cache, monkeypatch,
                                                                   capsys):
    first = [call(["check", str(design)], capsys), call(["check", str(design), "--format",
                                                         "json"], capsys),
             call(["size", str(design)], capsys), call(["export", str(design)], capsys)]
    entries = [p.name for p in cache.iterdir() if p.name.startswith("sizing-")]
    assert len(entries) == 1
    _no_sizing(monkeypatch)
    again = [call(["check", str(design)], capsys), call(["check", str(design), "--format",
                                                         "json"], capsys),
             call(["size", str(design)], capsys), call(["export", str(design)], capsys)]
    assert again == first                      # the same exit codes and bytes, kept or not
    assert "objective: minimize cost = 44,214,000 USD (the best of 2 feasible combination(s) " \
           "of 10)" in first[0][1]


def test_another_text_or_override_is_sized_afresh(design, cache, monkeypatch):
    astral_dsl.check(astral_dsl.compile(design))
    design.write_text(design.read_text().replace("capacity = 300 kW", "capacity = 150 kW"))
    sized = []
    real = pipeline_sizing._size

    def counted(ws, d):
        sized.append(d.file)
        return real(ws, d)
    monkeypatch.setattr(pipeline_sizing, "_size", counted)
    checked = astral_dsl.check(astral_dsl.compile(design))
    assert checked.valid and sized == [str(design)]
    assert dict((k.rsplit(":", 2)[1], v.si) for k, v in checked.design.chosen
                if hasattr(v, "si"))["40"] == 4       # 150 kW feeders: one more per row
    astral_dsl.check(astral_dsl.compile(design))          # the same text again: kept
    assert sized == [str(design)]


def test_a_damaged_entry_is_sized_again(design, cache):
    astral_dsl.check(astral_dsl.compile(design))
    (entry,) = [p for p in cache.iterdir() if p.name.startswith("sizing-")]
    entry.write_bytes(entry.read_bytes()[:-5] + b"xxxxx")
    checked = astral_dsl.check(astral_dsl.compile(design))
    assert checked.valid and len(checked.design.chosen) == 6


def test_without_a_cache_it_is_sized_each_time(design, monkeypatch):
    monkeypatch.setenv("ASTRAL_CACHE_DIR", "off")
    a = astral_dsl.check(astral_dsl.compile(design))
    b = astral_dsl.check(astral_dsl.compile(design))
    assert a.design.chosen == b.design.chosen and a.sizing.value == b.sizing.value


def test_the_language_server_reuses_the_kept_result(design, cache, monkeypatch):
    from astral_dsl.lsp.analysis import analyse

    text = design.read_text()
    first = analyse(design.as_uri(), design, text)
    _no_sizing(monkeypatch)
    again = analyse(design.as_uri(), design, text)
    assert again.diagnostics == first.diagnostics


# ---- the climate file's contents are in the key -------------------------------------------------
_CLIMATE_SIZED = """import stdlib.cooling { Centrifugal }
host H { power = 10 kW }
rack R { hosts = (? in 1..4) x H }
facility Chilled {
  supply = 14 degC, rise = 6 K, chiller = Centrifugal, rejection = dry_cooler
  rejection_approach = 8 K, pump_head = 250 kPa, pump_efficiency = 75 %
  rejection_fan_ratio = 2 %
}
site S {
  racks = 2 x R
  climate = "weather.csv"
  air room {
    supply = 25 degC, rise = 12 K, fan_power_ratio = 3 %, serves = racks
    facility = Chilled, approach = 10 K, dew_point = 10 degC
  }
  feeder mech {
    current = ac, voltage = 400 V, phases = 3, power_factor = 95 %
    capacity = 20 kW, efficiency = 100 %, mechanical = true
  }
  maximize hosts
}
"""


def _weather(dry_bulb_c: float) -> str:
    """A TMY3 file of one day at a constant dry bulb (10 degC dew point, 1,013 mbar)."""
    return "\n".join(['1,"TEST",XX,0.0,36.0,-80.0,0',
                      "Date (MM/DD/YYYY),Time (HH:MM),Dry-bulb (C),Dew-point (C),Pressure (mbar)"]
                     + [f"07/01/1999,{h:02d}:00,{dry_bulb_c:.1f},10.0,1013"
                        for h in range(1, 25)]) + "\n"


def test_a_climate_file_edited_in_place_is_sized_afresh(tmp_path, cache):
    """The 20 kW mechanical feeder carries the chillers, the air units' fans and the pumps of
    2 racks of 10 kW hosts: at a 10 degC dry bulb it carries them for 4 hosts a rack (80 kW), at
    40 degC only for 3 (the chillers' lift, and their power, grow with the outdoor air; 4 hosts
    then overload it). The text is the same: only the climate file's contents tell them apart,
    and a key without them gave 4 hosts again in the hot year."""
    design = tmp_path / "d.astral"
    design.write_text(_CLIMATE_SIZED)
    weather = tmp_path / "weather.csv"

    def hosts():
        checked = astral_dsl.check(astral_dsl.compile(design))
        return [v.si for _, v in checked.design.chosen]

    weather.write_text(_weather(10.0))
    assert hosts() == [4]
    weather.write_text(_weather(40.0))
    assert hosts() == [3]
    weather.write_text(_weather(10.0))
    assert hosts() == [4]                      # the first entry, kept
    assert len([p for p in cache.iterdir() if p.name.startswith("sizing-")]) == 2
