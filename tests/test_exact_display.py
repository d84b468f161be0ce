"""Quantities are held as the float nearest their SI value (a temperature in kelvin); what people
and `astral export` read is the shortest decimal in the quantity's unit that converts back to the
same float, so a unit conversion adds no digits the source did not write (audit: 40 degC
exported as 39.99999999999998, a diagnostic at "-2.309263891e-14 degC"). The values analyses
compute with (`value_in`) are unchanged."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.outputs.export import export_design, value_json
from astral_dsl.units import Quantity

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("value, unit, exact", [
    (40, "degC", 39.99999999999998),      # the float nearest 313.15 K, less 273.15 K exactly
    (-5, "degC", -5.000000000000023),
    (6.7, "degC", 6.700000000000022),
    (104, "degF", 103.99999999999996),
    (48, "U", 48.00000000000001),         # 48 x 0.04445 m, divided back
])
def test_a_literal_reads_as_written_and_computes_as_before(value, unit, exact):
    q = Quantity.of(value, unit)
    assert q.value_in(unit) == exact                  # what analyses compute with: unchanged
    assert q.magnitude == value and str(q) == f"{value} {unit}"
    assert value_json(q) == {"value": value, "unit": unit}


def test_a_computed_value_keeps_its_digits():
    # 2,500 kVA x 0.5 x (1 / 99.53 % - 1) / 2 = 2.951371445795159 kW: no shorter decimal
    # multiplies back to the same watts
    q = Quantity.of(2500, "kW").mul(Quantity(0.5 * (1 / 0.9953 - 1) / 2))
    assert q.magnitude == pytest.approx(2.951371445795159, rel=1e-15)
    assert q.magnitude == q.value_in("kW")
    assert Quantity.of(0, "degC").magnitude == 0.0 and str(Quantity.of(1e-300, "W")) == "1e-300 W"


def test_export_writes_declared_temperatures_and_rack_units_exactly(tmp_path):
    text = """
import stdlib.power { Transformer }
param height = 48 U
gpu G { power = 700 W, max_supply = 45 degC }
host H { gpus = 8 x G, power = 10 kW }
rack R { hosts = 4 x H }
site S {
  racks = 1 x R
  transformer mv = Transformer(rating = 100 kVA)
  check ceil(height) == 48 U           // the ceiling of 48 U read back as 48.00000000000001: 49
}
"""
    ws = astral_dsl.loads(text, name="main.astral", root=tmp_path)
    assert ws.valid, ws.diagnostics
    doc = export_design(ws)
    assert doc["params"]["height"] == {"value": 48, "unit": "U"}
    by = {i["path"]: i for i in doc["instances"]}
    (gpu,) = [i for i in doc["instances"] if i["kind"] == "gpu"]
    assert gpu["fields"]["max_supply"] == {"value": 45, "unit": "degC"}
    # a transformer's losses are real power: kW, not the rating's kVA. At 100 kVA the DOE's
    # efficiency is 99.03 % + (99.11 - 99.03) % x (100 - 75) / (112.5 - 75) = 99.08333 %:
    # 100 kVA x 0.5 x (1 / 0.9908333 - 1) = 0.4626 kW at half load: P0 = 0.2313 kW,
    # Pk = 0.9251 kW
    mv = by["S.mv"]["fields"]
    assert mv["capacity"] == {"value": 100, "unit": "kVA"}
    assert mv["no_load_loss"]["unit"] == mv["load_loss"]["unit"] == "kW"
    assert mv["load_loss"]["value"] == pytest.approx(100 * 0.5 * (1 / 0.99083333333 - 1) * 2)
    assert mv["no_load_loss"]["value"] == pytest.approx(100 * 0.5 * (1 / 0.99083333333 - 1) / 2)


def test_a_fluid_property_failure_names_the_temperature_without_float_noise(tmp_path):
    # the tutorial's loop at -5 degC supply and 10 K rise: its mean is 0 degC, below water's
    # melting point (E646); it read "at -2.309263891e-14 degC"
    path = tmp_path / "tutorial_rack.astral"
    shutil.copy(REPO / "examples" / "tutorial_rack.astral", path)
    text = path.read_text(encoding="utf-8")
    assert text.count("supply = 35 degC") == 1
    path.write_text(text.replace("supply = 35 degC", "supply = -5 degC"), encoding="utf-8")
    result = astral_dsl.check(astral_dsl.compile(path))
    (e646,) = [d for d in result.diagnostics if d.code == "E646"]
    assert e646.message.startswith("fluid properties of `Water` at 0 degC:"), e646.message
