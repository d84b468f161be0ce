"""The domains of the power chain's values: a power factor below any plausible load's (W632),
an AC feeder that is neither single- nor three-phase (E636), and E309's hint on a value outside
a field's declared range."""
from __future__ import annotations

import pytest

import astral_dsl

SITE = """
host H {{ power = 10 kW }}
rack R {{ hosts = 4 x H }}
site S {{
  racks = 2 x R
  transformer mv {{
    capacity = 1000 kVA, count = 1, no_load_loss = 0.2 kW, load_loss = 1 kW{transformer}
  }}
  feeder a {{
    current = ac, voltage = 400 V, phases = {phases}, capacity = 100 kW, efficiency = 97 %
    power_factor = {pf}, serves = racks
    conductor_area = 95 mm^2, length = 20 m, ampacity = 300 A, material = copper
    conductor_temperature = 70 degC, reactance = 0.08 ohm/km
  }}
}}
"""


def _check(pf="95 %", phases="3", transformer=""):
    design = astral_dsl.compiles(SITE.format(pf=pf, phases=phases, transformer=transformer),
                                 name="pf.astral")
    return astral_dsl.check(design)


def _codes(checked, code):
    return [d for d in checked.diagnostics if d.code == code]


def test_a_power_factor_of_one_percent_warns():
    checked = _check(pf="1 %")
    (w,) = _codes(checked, "W632")
    assert w.span is not None and w.span.start.line == 11 and w.hint   # the text opens with \n
    # 1 / 0.01: its current is 100 times that at power factor 1
    assert "`S.a` declares a power factor of 0.01" in w.message and "100 times" in w.message
    (f,) = checked.engineering.power.feeders
    # the value is used as declared: 80 kW / 0.97 / (sqrt(3) x 400 V x 0.01) = 11,904.4 A
    assert f.current_a == pytest.approx(80e3 / 0.97 / (3 ** 0.5 * 400 * 0.01))


def test_a_transformer_power_factor_below_half_warns_and_a_plausible_one_does_not():
    (w,) = _codes(_check(transformer=", power_factor = 40 %"), "W632")
    assert "`S.mv` declares a power factor of 0.4" in w.message and "2.5 times" in w.message
    assert not _codes(_check(pf="50 %", transformer=", power_factor = 85 %"), "W632")


def test_power_factor_outside_zero_to_one_is_an_error():
    for pf, code in (("0 %", "E315"), ("110 %", "E309")):
        design = astral_dsl.loads(SITE.format(pf=pf, phases="3", transformer=""),
                                  name="pf.astral")
        assert [d.code for d in design.diagnostics if d.is_error] == [code]


def test_two_phases_is_an_error_with_a_hint():
    (e,) = _codes(_check(phases="2"), "E636")
    assert e.is_error and e.span.start.line == 10
    assert "`phases = 1`" in e.hint
    for phases in ("1", "3"):
        assert not _codes(_check(phases=phases), "E636")


def test_e309_says_the_range_and_the_percent_slip():
    design = astral_dsl.loads(SITE.format(pf="95", phases="3", transformer=""),
                              name="pf.astral")
    (e,) = [d for d in design.diagnostics if d.code == "E309"]
    assert e.message == "`power_factor` must be at most 100 %, not 95"
    assert e.hint.startswith("a plain number is a fraction: write `95 %` for a percent")
    design = astral_dsl.loads(SITE.format(pf="95 %", phases="4", transformer=""),
                              name="pf.astral")
    (e,) = [d for d in design.diagnostics if d.code == "E309"]
    assert e.hint.startswith("it takes values from 1 to 3")
