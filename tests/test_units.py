"""The unit algebra (astral_dsl.units): exact conversions, dimensions, temperature points.

Every expected value below is computed by hand from the defining constant named in the comment
beside it, never by calling the code under test a second way."""
from __future__ import annotations

import math

import pytest

import astral_dsl
from astral_dsl.units import (DIMENSION_TYPES, DIMENSIONLESS, Quantity, UnitError, dimension_name,
                              format_number, parse_unit)
from astral_dsl.units.table import UnitSpecError

Q = Quantity.of


def conv(value, unit, target):
    return Q(value, unit).value_in(target)


def raises_unit_error(fn) -> UnitError:
    with pytest.raises(UnitError) as info:
        fn()
    return info.value


# ---- information and bandwidth -------------------------------------------------------------------

def test_400_gigabit_per_second_is_50_gigabyte_per_second():
    # 1 byte = 8 bits (IEC 80000-13); G = 10^9 for both: 400e9 b/s / 8 = 50e9 B/s
    assert conv(400, "Gb/s", "GB/s") == pytest.approx(50.0, rel=1e-15)
    assert conv(50, "GB/s", "Gb/s") == pytest.approx(400.0, rel=1e-15)
    assert Q(400, "Gb/s") == Q(50, "GB/s")


def test_gigabit_is_a_gigabit_not_a_gilbert():
    # Gb = 10^9 bit. The gilbert (CGS magnetomotive force) would carry an electric current
    # dimension; here Gb is pure information.
    gb = parse_unit("Gb")
    assert gb.dims == DIMENSION_TYPES["information"][0]
    assert gb.dims[3] == 0  # no ampere exponent
    assert Q(1, "Gb").si == pytest.approx(1e9)         # SI base: bits
    assert conv(1, "Gb", "b") == pytest.approx(1e9)
    assert conv(8, "Gb", "GB") == pytest.approx(1.0)   # 8 bits per byte
    assert Q(1, "Gb").dimension() == "information"


def test_gib_is_binary_and_gb_is_decimal():
    # IEC 80000-13: GiB = 2^30 bytes = 1,073,741,824 B; GB = 10^9 B (SI prefix)
    assert conv(1, "GiB", "B") == pytest.approx(1_073_741_824, rel=1e-15)
    assert conv(1, "GB", "B") == pytest.approx(1_000_000_000, rel=1e-15)
    assert conv(1, "GiB", "GB") == pytest.approx(1.073741824, rel=1e-15)
    # 80 GB of HBM = 80e9 / 2^30 GiB = 74.50580596923828 GiB
    assert conv(80, "GB", "GiB") == pytest.approx(74.50580596923828, rel=1e-12)
    assert Q(1, "GiB") != Q(1, "GB")


def test_bits_and_bytes_are_not_dimensionless():
    assert not Q(80, "GB").dimensionless
    assert Q(80, "GB").dims != DIMENSIONLESS


def test_compute_units():
    # 989 TFLOP/s = 989e12 FLOP per second
    assert Q(989, "TFLOP/s").si == pytest.approx(989e12)
    assert parse_unit("TFLOP/s").dims == DIMENSION_TYPES["compute"][0]


# ---- power, energy, heat ------------------------------------------------------------------------

def test_one_kilowatt_in_btu_per_hour():
    # BTU (International Table) = 1055.05585262 J (ISO 31-4):
    # 1 kW = 1000 J/s * 3600 s/h / 1055.05585262 J/BTU = 3412.14163312794 BTU/h
    assert conv(1, "kW", "BTU/h") == pytest.approx(3412.14163312794, rel=1e-12)
    assert round(conv(1, "kW", "BTU/h"), 2) == 3412.14


def test_btu_conversion_expression_in_the_language():
    # 45 kW = 45 * 3412.14163312794 BTU/h = 153546.3734907573 BTU/h; shown with 10 digits
    d = astral_dsl.loads("let heat = 45 kW to BTU/h\n", name="u.astral")
    assert d.valid, d.diagnostics
    q = Q(45, "kW").to(parse_unit("BTU/h"))
    assert q.unit == "BTU/h"
    assert q.magnitude == pytest.approx(153546.3734907573, rel=1e-12)
    assert str(q) == "153546.3735 BTU/h"


def test_refrigeration_ton():
    # 1 RT = 12,000 BTU/h = 12000 * 1055.05585262 / 3600 W = 3516.8528420667 W
    assert conv(1, "RT", "W") == pytest.approx(3516.8528420667, rel=1e-12)


def test_kwh_and_megawatt():
    # 1 Wh = 3600 J, so 1 kWh = 3.6e6 J; 1 MW = 1000 kW
    assert conv(1, "kWh", "J") == pytest.approx(3.6e6)
    assert conv(2.5, "MW", "kW") == pytest.approx(2500)


def test_power_times_time_is_energy():
    # 10 kW for 2 h = 20 kWh = 72e6 J
    e = Q(10, "kW").mul(Q(2, "h"))
    assert e.dims == DIMENSION_TYPES["energy"][0]
    assert e.si == pytest.approx(72e6)
    assert e.value_in("kWh") == pytest.approx(20)


# ---- flow --------------------------------------------------------------------------------------

def test_cubic_metre_per_hour_in_cfm():
    # 1 ft = 0.3048 m exactly (1959 international yard and pound agreement):
    # 1 ft^3 = 0.028316846592 m^3, so 1 m^3/h = (1/60) m^3/min / 0.028316846592 = 0.588577779 CFM
    assert conv(1, "m^3/h", "CFM") == pytest.approx(0.5885777786914765, rel=1e-12)
    assert round(conv(1, "m^3/h", "CFM"), 4) == 0.5886


def test_litres_per_minute():
    # 1 L = 10^-3 m^3 (CGPM 1964); 1.5 L/min = 1.5e-3 / 60 m^3/s = 2.5e-5 m^3/s
    q = Q(1.5, "L/min")
    assert q.dims == DIMENSION_TYPES["flow"][0]
    assert q.si == pytest.approx(2.5e-5, rel=1e-15)
    # 1 US gal = 3.785411784 L: 1.5 L/min = 0.396258078 GPM
    assert q.value_in("GPM") == pytest.approx(1.5 / 3.785411784, rel=1e-12)


def test_litres_per_minute_in_the_language():
    d = astral_dsl.loads("let f = 1.5 L/min\ncheck f == 0.025 L/s\n", name="u.astral")
    assert d.valid, d.diagnostics
    assert [c.passed for c in d.checks] == [True]


# ---- compound units -----------------------------------------------------------------------------

def test_specific_heat_kj_per_kg_per_kelvin():
    # kJ/kg/K parses left to right: kJ / kg / K = 1000 m^2 s^-2 K^-1
    u = parse_unit("kJ/kg/K")
    assert u.dims == DIMENSION_TYPES["specific_heat"][0]
    assert float(u.scale) == pytest.approx(1000.0)
    assert not u.point
    # water: 4.178 kJ/kg/K = 4178 J/(kg K)
    assert Q(4.178, "kJ/kg/K").si == pytest.approx(4178.0)


def test_resistivity_ohm_square_millimetre_per_metre():
    # annealed copper (IEC 60028): 0.01724 ohm*mm^2/m = 0.01724e-6 ohm*m = 1.724e-8 ohm*m
    u = parse_unit("ohm*mm^2/m")
    assert u.dims == DIMENSION_TYPES["resistivity"][0]
    assert float(u.scale) == pytest.approx(1e-6)
    assert Q(0.01724, "ohm*mm^2/m").si == pytest.approx(1.724e-8, rel=1e-12)


def test_area_and_time_units():
    # 1 mm^2 = 1e-6 m^2; 15 min = 900 s
    assert Q(500, "mm^2").si == pytest.approx(5e-4)
    assert Q(15, "min").si == pytest.approx(900)


def test_compound_unit_with_a_temperature_point_is_rejected():
    for spec in ("kJ/kg/degC", "degC/min", "W/degF"):
        with pytest.raises(UnitSpecError) as info:
            parse_unit(spec)
        assert "temperature point" in str(info.value)
        assert "K" in (info.value.hint or "")


def test_compound_unit_with_degc_rejected_in_the_language():
    d = astral_dsl.loads("let c = 4.2 kJ/kg/degC\n", name="u.astral")
    errors = [x for x in d.diagnostics if x.code == "E300"]
    assert len(errors) == 1
    assert errors[0].span.start.line == 1
    assert "temperature point" in errors[0].message


def test_unknown_unit_has_a_did_you_mean_hint():
    with pytest.raises(UnitSpecError) as info:
        parse_unit("kw")
    assert "unknown unit `kw`" in str(info.value)
    assert info.value.hint == "did you mean `kW`?"
    with pytest.raises(UnitSpecError) as info:
        parse_unit("Gbs")
    assert info.value.hint == "did you mean `Gbps`?"


def test_unknown_unit_in_the_language_is_e300_at_the_unit():
    d = astral_dsl.loads("site S {\n  power_limit = 45 kw\n}\n", name="u.astral")
    (e,) = [x for x in d.diagnostics if x.code == "E300"]
    # `45 kw`: the unit starts at column 20 and ends (exclusive) at column 22
    assert (e.span.start.line, e.span.start.column) == (2, 20)
    assert (e.span.end.line, e.span.end.column) == (2, 22)
    assert e.hint == "did you mean `kW`?"


# ---- temperature points and differences ----------------------------------------------------------

def test_100_degc_is_212_degf():
    # degF = degC * 9/5 + 32 (ITS-90 / definition of the Fahrenheit scale)
    assert conv(100, "degC", "degF") == pytest.approx(212.0, rel=1e-12)
    assert conv(0, "degC", "degF") == pytest.approx(32.0, abs=1e-9)
    assert conv(-40, "degC", "degF") == pytest.approx(-40.0, rel=1e-12)
    assert str(Q(100, "degC").to(parse_unit("degF"))) == "212 degF"
    # 0 degC = 273.15 K absolute (SI definition)
    assert Q(0, "degC").si == pytest.approx(273.15)


def test_point_plus_difference_is_a_point():
    q = Q(40, "degC").add(Q(10, "K"))
    assert q.point
    assert q.unit == "degC"
    assert q.value_in("degC") == pytest.approx(50.0)
    assert str(q) == "50 degC"
    # commutative: a difference plus a point is the same point
    q2 = Q(10, "K").add(Q(40, "degC"))
    assert q2.point and q2.value_in("degC") == pytest.approx(50.0)


def test_point_minus_point_is_a_difference_in_kelvin():
    q = Q(50, "degC").sub(Q(40, "degC"))
    assert not q.point
    assert q.unit == "K"
    assert q.si == pytest.approx(10.0)
    assert str(q) == "10 K"


def test_point_minus_difference_is_a_point():
    q = Q(50, "degC").sub(Q(10, "K"))
    assert q.point and q.value_in("degC") == pytest.approx(40.0)


def test_adding_two_points_is_e302():
    err = raises_unit_error(lambda: Q(40, "degC").add(Q(40, "degC")))
    assert err.code == "E302"
    assert "10 K" in (err.hint or "")


def test_other_point_misuse_is_e302():
    assert raises_unit_error(lambda: Q(10, "K").sub(Q(40, "degC"))).code == "E302"
    assert raises_unit_error(lambda: Q(40, "degC").mul(Q(2))).code == "E302"
    assert raises_unit_error(lambda: Q(40, "degC").neg()).code == "E302"
    assert raises_unit_error(lambda: Q(40, "degC").compare(Q(10, "K"))).code == "E302"


def test_point_arithmetic_in_the_language():
    d = astral_dsl.loads("let t = 40 degC + 10 K\ncheck t == 50 degC\n"
                         "let dt = 50 degC - 40 degC\ncheck dt == 10 K\n", name="u.astral")
    assert d.valid, d.diagnostics
    assert [c.passed for c in d.checks] == [True, True]


def test_adding_two_points_in_the_language_is_e302_at_the_expression():
    d = astral_dsl.loads("site S {\n  let c = 40 degC + 40 degC\n}\n", name="u.astral")
    (e,) = [x for x in d.diagnostics if x.code == "E302"]
    # the whole `40 degC + 40 degC` (columns 11..28)
    assert (e.span.start.line, e.span.start.column) == (2, 11)
    assert (e.span.end.line, e.span.end.column) == (2, 28)


def test_kelvin_difference_in_fahrenheit_degrees():
    # a difference of 1 K is 9/5 = 1.8 Fahrenheit degrees
    assert conv(1, "K", "delta_degF") == pytest.approx(1.8)
    assert conv(1, "K", "delta_degC") == pytest.approx(1.0)


def test_degc_and_degf_names():
    assert dimension_name(parse_unit("degC").dims, True) == "temperature"
    assert dimension_name(parse_unit("K").dims, False) == "temperature difference"
    assert parse_unit("degC").point and parse_unit("degF").point
    assert not parse_unit("K").point


# ---- incompatible dimensions ---------------------------------------------------------------------

def test_power_plus_bandwidth_is_e301_naming_both():
    err = raises_unit_error(lambda: Q(1, "kW").add(Q(1, "Gb/s")))
    assert err.code == "E301"
    assert "power (kW)" in err.message
    assert "bandwidth (Gb/s)" in err.message


def test_bytes_plus_percent_is_e301():
    # bits/bytes are a dimension of their own, so 80 GB + 75 % cannot pass as "both dimensionless"
    err = raises_unit_error(lambda: Q(80, "GB").add(Q(75, "%")))
    assert err.code == "E301"
    assert "information" in err.message


def test_power_plus_bandwidth_in_the_language():
    d = astral_dsl.loads("site S {\n  let c = 1 kW + 1 Gb/s\n}\n", name="u.astral")
    (e,) = [x for x in d.diagnostics if x.code == "E301"]
    assert (e.span.start.line, e.span.start.column) == (2, 11)
    assert "kW" in e.message and "Gb/s" in e.message


def test_bytes_plus_percent_in_the_language():
    d = astral_dsl.loads("site S {\n  let c = 80 GB + 75 %\n}\n", name="u.astral")
    assert [x.code for x in d.diagnostics] == ["E301"]


def test_conversion_to_a_wrong_dimension_is_e301():
    err = raises_unit_error(lambda: Q(45, "kW").to(parse_unit("Gb/s")))
    assert err.code == "E301"
    with pytest.raises(UnitError):
        Q(45, "kW").value_in("GB")


def test_converting_a_point_to_kelvin_or_a_difference_to_degc_says_how():
    err = raises_unit_error(lambda: Q(20, "degC").to(parse_unit("K")))
    assert err.code == "E301" and "`t - -273.15 degC`" in err.hint
    # the hint's form, by hand: 20 degC - -273.15 degC = (293.15 - 0) K = 293.15 K
    assert Q(20, "degC").sub(Q(-273.15, "degC")).si == pytest.approx(293.15)
    err = raises_unit_error(lambda: Q(10, "K").to(parse_unit("degC")))
    assert "`delta_degC`" in err.hint
    assert raises_unit_error(lambda: Q(45, "kW").to(parse_unit("GB"))).hint == \
        "`to` converts within one dimension: power is shown in units such as `W`"


def test_a_non_zero_result_below_the_floats_is_e309_not_zero():
    # 1e-300 / 1e300 = 1e-600, 1e-200 * 1e-200 = 1e-400: both below 5e-324, read as 0.0
    for err in (raises_unit_error(lambda: Q(1e-300, "W").div(Q(1e300))),
                raises_unit_error(lambda: Q(1e-200, "W").mul(Q(1e-200)))):
        assert err.code == "E309" and "too small" in err.message and "5e-324" in err.hint
    assert Q(0, "W").mul(Q(1e-300)).si == 0.0          # an exact zero stays one


def test_a_result_past_the_floats_has_a_hint():
    err = raises_unit_error(lambda: Q(1e308, "W").mul(Q(10)))
    assert err.code == "E309" and "1.8e308" in err.hint


def test_percent_is_a_dimensionless_hundredth():
    q = Q(75, "%")
    assert q.dimensionless
    assert q.si == pytest.approx(0.75)
    assert str(q) == "75 %"          # written as in the source (and as `astral fmt` writes it)


def test_watts_per_percent_is_a_sensitivity():
    """`W/%` (power per percentage point) reads in a design, as `%/s` did: 50 W/% is 5,000 W
    per unit of ratio, so 50 W/% * 10 % = 50 W * 10 = 500 W."""
    d = astral_dsl.loads("let fan = 50 W/%\ncheck fan * 10 % == 500 W\n"
                         "check fan == 5 kW\ncheck 1 W/%^2 == 10 kW\n", name="u.astral")
    assert d.valid, d.diagnostics
    assert [c.passed for c in d.checks] == [True, True, True]      # 1 W / 0.01^2 = 10,000 W


def test_division_by_zero_is_e305():
    assert raises_unit_error(lambda: Q(1, "kW").div(Q(0, "s"))).code == "E305"


def test_products_keep_readable_units():
    q = Q(100, "GB").div(Q(10, "s"))
    assert q.dims == DIMENSION_TYPES["bandwidth"][0]
    assert str(q) == "10 GB/s"


# ---- format_number --------------------------------------------------------------------------------

@pytest.mark.parametrize("value, text", [
    (0.0, "0"),
    (-0.0, "0"),
    (42.0, "42"),
    (1234567.0, "1234567"),
    (0.1 + 0.2, "0.3"),              # float noise is rounded to 10 significant digits
    (1 / 3, "0.3333333333"),
    (2.5, "2.5"),
    (-2.5, "-2.5"),
    (1e20, "1e20"),                  # no `e+20`, no leading zeros in the exponent
    (1.5e15, "1.5e15"),
    (2.5e-7, "2.5e-7"),
    (524288.0, "524288"),
])
def test_format_number(value, text):
    assert format_number(value) == text


def test_format_number_is_deterministic():
    values = [i / 7 for i in range(-50, 50)] + [10.0 ** k for k in range(-12, 22)]
    first = [format_number(v) for v in values]
    second = [format_number(v) for v in values]
    assert first == second
    assert all(" " not in t and "+" not in t for t in first)


def test_format_number_special_values():
    assert format_number(math.inf) == "inf"
    assert format_number(float("nan")) == "nan"


def test_quantity_str_uses_format_number():
    assert str(Q(700, "W")) == "700 W"
    assert str(Q(2.5, "MW")) == "2.5 MW"
    assert str(Q(3)) == "3"


@pytest.mark.parametrize("base, exponent, message, hint", [
    # 2^10000 = 10^3010.3, beyond the largest float (1.8e308): Python's OverflowError reads
    # "(34, 'Numerical result out of range')", never shown
    (Q(2), Q(10000), "2 ^ 10000 is too large to compute", "the largest number is about 1.8e308"),
    (Q(0), Q(-1), "0 ^ -1 divides by zero", "zero has no negative power"),
    (Q(0, "W"), Q(-1), "0 W ^ -1 divides by zero", "zero has no negative power"),
    # (-8)^0.5 is 2.83i: Python's TypeError was about `float()` and 'complex'
    (Q(-8), Q(0.5), "(-8) ^ 0.5 is not a real number", "a negative number has no fractional power"),
])
def test_a_power_that_cannot_be_computed_says_why_in_words(base, exponent, message, hint):
    e = raises_unit_error(lambda: base.pow(exponent))
    assert (e.code, e.message, e.hint) == ("E309", message, hint)


@pytest.mark.parametrize("written, meant", [
    # the nearest unit by its letters would be `degF`, `m`, nothing, `h`... : the unit meant
    ("degK", "K"), ("m3", "m^3"), ("sec", "s"), ("hrs", "h"), ("mm2", "mm^2"), ("lbs", "lb")])
def test_an_other_tools_spelling_of_a_unit_gets_the_unit_meant(written, meant):
    with pytest.raises(UnitSpecError) as info:
        parse_unit(written)
    assert info.value.hint == f"did you mean `{meant}`?"
    parse_unit(meant)                      # and the suggestion is a unit


# ---- equality, hashing and ordering of Quantities (the library's, as the language's) -----------

def test_tiny_quantities_are_told_apart():
    """Equality and hashing read 12 significant digits, not 12 decimals of the SI value: 1e-13
    W and 4e-13 W were both rounded to 0 and equal (and so were 0.1 ps and 0.14 ps)."""
    assert Q(1e-13, "W") != Q(4e-13, "W")
    assert Q(1e-4, "ns") != Q(1.4e-4, "ns")
    assert len({Q(1e-13, "W"), Q(4e-13, "W")}) == 2
    # what the rounding is for: a float's last digits (0.1 + 0.2 is 0.30000000000000004)
    assert Q(0.1 + 0.2) == Q(0.3) and hash(Q(0.1 + 0.2)) == hash(Q(0.3))
    assert Q(1, "kW") == Q(1000, "W") and hash(Q(1, "kW")) == hash(Q(1000, "W"))
    assert Q(0.0) == Q(-0.0) and hash(Q(0.0)) == hash(Q(-0.0))


def test_templates_with_tiny_arguments_are_two_instances():
    """A template instantiated with 1e-13 W and with 4e-13 W is two instances: they shared
    one (the template's memo read the rounded value), and H2's GPU drew H1's 1e-13 W."""
    d = astral_dsl.loads(
        'gpu G(p: power) {\n  power = p\n  memory = 80 GB\n  flops_bf16 = 989 TFLOP/s\n'
        '  source = "x"\n}\n'
        "host H1 { gpus = 1 x G(p = 1e-13 W) }\nhost H2 { gpus = 1 x G(p = 4e-13 W) }\n",
        name="tiny.astral")
    assert d.valid, d.diagnostics
    assert d.instance("H1").power.si == 1e-13
    assert d.instance("H2").power.si == 4e-13


def test_quantities_of_one_dimension_are_ordered():
    """`<` as the language's: 900 W < 1.5 kW < 2 kW; equal amounts are not less; two
    dimensions are UnitError E301; a number is not a Quantity (TypeError)."""
    assert sorted([Q(2, "kW"), Q(900, "W"), Q(1.5, "kW")]) == [Q(900, "W"), Q(1.5, "kW"),
                                                               Q(2, "kW")]
    assert Q(1, "kW") <= Q(1000, "W") and Q(1, "kW") >= Q(1000, "W")
    assert not Q(1, "kW") < Q(1000, "W") and not Q(1, "kW") > Q(1000, "W")
    assert Q(0.3) <= Q(0.1 + 0.2) and not Q(0.3) < Q(0.1 + 0.2)      # equal, as == says
    assert max(Q(9.8, "s"), Q(9500, "ms")) == Q(9.8, "s")
    assert raises_unit_error(lambda: Q(1, "kW") < Q(1, "s")).code == "E301"
    with pytest.raises(TypeError, match="not supported"):
        Q(1, "kW") < 1  # noqa: B015


def test_quantity_arguments_of_the_wrong_kind_are_type_errors():
    """Not float()'s `could not convert string to float` nor `'NoneType' has no attribute
    'dims'`: the message names what a Quantity takes."""
    for value in ("x", None, True):
        with pytest.raises(TypeError, match="the value of a Quantity is a number"):
            Q(value, "kW")
    for unit in (None, 5):
        with pytest.raises(TypeError, match="a unit is a unit name"):
            Q(1, unit)
        with pytest.raises(TypeError, match="a unit is a unit name"):
            Q(1, "kW").to(unit)



@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("unit", ["kW", "", "degC"])
def test_a_quantity_is_a_finite_amount(value, unit):
    """`Quantity.of(float("nan"), "kW")` was a Quantity (`nan kW`, equal to nothing, not even
    itself), as was an infinity: an amount is a finite number, as a literal is."""
    with pytest.raises(ValueError, match="the value of a Quantity is a finite number, not"):
        Q(value, unit)


def test_a_quantity_beyond_a_float_in_si_units_is_a_value_error():
    """1e308 kW is 1e311 W, beyond a float: it was `inf W` shown as `inf kW`."""
    with pytest.raises(ValueError, match="1e308 kW is too large to represent in SI units"):
        Q(1e308, "kW")
    assert Q(1e308, "W").si == 1e308 and Q(-1.5e308, "").si == -1.5e308

def test_a_subnormal_amount_compares_above_zero():
    """1e-160 W x 1e-160 = 1e-320 W, a subnormal double (about 9.99989e-321: below 2.2e-308 a
    double keeps fewer digits) but not zero, so it is above 0 W. The comparison's tolerance
    had a floor of 1e-300 x 1e-9 = 1e-309: any amount below it equalled zero."""
    d = astral_dsl.loads("check 1e-160 W * 1e-160 > 0 W\ncheck 1e-160 W * 1e-160 != 0 W\n"
                         "check -(1e-160 W * 1e-160) < 0 W\n", name="u.astral")
    assert d.valid, d.diagnostics
    d = astral_dsl.loads("check 1e-160 W * 1e-160 == 0 W\n", name="u.astral")
    assert [x.code for x in d.diagnostics] == ["E500"]
    # the rule the checks, the margins (explore/margins/limits.py) and `astral diff` share
    from astral_dsl.units import same_amount
    assert not same_amount(1e-320, 0.0) and same_amount(0.0, -0.0)
    assert same_amount(1.0, 1.0 + 5e-10) and not same_amount(1.0, 1.0 + 2e-9)
    from astral_dsl.explore.margins.limits import Limit    # `0 W < 1e-320 W` holds

    def limit(lhs, rhs, strict):
        return Limit("k", "check", "a check", lhs, rhs, "<=", "W", strict=strict)
    assert limit(0.0, 1e-320, True).holds and not limit(1e-320, 0.0, False).holds


@pytest.mark.parametrize("text, shown", [
    # (2 kW/h)^2 = 4 kW^2/h^2; the unit was `kW/h^2`, which reads back as another dimension,
    # and showing the value raised UnitError (`astral diff`: E000)
    ("(2 kW/h) ^ 2", "4 kW^2/h^2"),
    ("1 m^2^2", "1 m^4"),                         # was `m^2^2`, which does not parse
    ("(3 m) ^ 2", "9 m^2"),
    ("(1 m^2) ^ 7", "1 m^12*m^2"),                # m^14: no one factor may go beyond 12
    # 1 / (2 m x 1 s^2) = 0.5 m^-1 s^-2: was `m^-1/s^-2`, which reads back as m^-1*s^2
    ("1 / (2 m * 1 s^2)", "0.5 m^-1*s^-2"),
    ("1 / (1 m^12 * 1 m^2)", "1 m^-12*m^-2"),
    # a negative power of a quotient: 1 / (2 kW/h)^2 = 0.25 h^2/kW^2, was shown `kW^-2/h^-2`;
    # negative exponents become a denominator wherever a factor stays in the numerator
    ("(2 kW/h) ^ -2", "0.25 h^2/kW^2"),
    ("(2 kW/h) ^ -1", "0.5 h/kW"),
    ("(1 kW) ^ -2 / (1 h) ^ -2", "1 h^2/kW^2"),
    ("(1 m^-1) / (1 s^-2)", "1 s^2/m"),              # was `m^-1/s^-2`
    ("(4 m/s*kg) ^ -1", "0.25 s/m/kg"),               # each divisor after its own `/`
    ("(1 kJ/kg/K) ^ -2", "1 kg^2*K^2/kJ^2"),
    ("(1 W*s) ^ -1", "1 W^-1*s^-1"),                  # no numerator: no leading `/`
    # a quotient reads in the units written, as a power does: 1 / (2 kW/h) = 0.5 h/kW (was
    # 1.8 s^4/kg/m^2, base units: 0.5 h/kW = 0.5 x 3600 s / 1000 W = 1.8 s/W)
    ("1 / (2 kW/h)", "0.5 h/kW"),
    ("3 / (2 kW/h)", "1.5 h/kW"),
    ("1 / (2 kW)", "0.5 kW^-1"),                     # was 0.0005 s^3/kg/m^2
    ("1 / (1 kW * 1 h)", "1 kW^-1*h^-1"),
    ("50 % / (2 kW)", "0.25 kW^-1"),                 # a ratio adds no unit
    ("1 / (10 ms)", "100 Hz"),                       # nothing above the line: a named unit
    ("(10 GB/s) / (2 GB)", "5 Hz"),                  # was `GB/s/GB`
    # a name divided by itself cancels: 6 kW*h / 2 h = 3 kW (was `kW*h/h`)
    ("(6 kW*h) / (2 h)", "3 kW"),
    ("(1 kW/h) / (2 h^-1)", "0.5 kW"),
    ("1 kW * (1 h/kW)", "1 h"),
    # quotients of quotients: (1 m/s) / (1 s/m) = 1 m^2/s^2; (1 kW) / (1 h/kW) = 1 kW^2/h
    ("(1 m/s) / (1 s/m)", "1 m^2/s^2"),
    ("(1 kW) / (1 h/kW)", "1 kW^2/h"),
    ("1 / (2 kW^2/h^2)", "0.5 h^2/kW^2"),
    # names of one dimension above and below the line cancel, the value shown in what is
    # left: 1 GB / (1 Gb/s) = 8 s (8 bits a byte; was 1 GB*s/Gb); 1 kW*h / 1 W = 1000 h;
    # 1 MW/h / 1 kW = 1000 per hour, shown in the hours written: 1000 h^-1 (was 1 MW/h/kW,
    # then 1000 / 3600 s = 0.2777777778 Hz: a rate per hour read back in another unit);
    # 1 L/min / 1 L = 1 min^-1 (was 1 / 60 s = 0.01666666667 Hz); a remainder in seconds is the
    # same number in Hz: 2 L/s / 1 L = 2 Hz
    ("1 GB / (1 Gb/s)", "8 s"),
    ("(1 kW*h) / (1 W)", "1000 h"),
    ("(1 MW/h) / (1 kW)", "1000 h^-1"),
    ("(1 kW/h) / (1 kW)", "1 h^-1"),
    ("(1 L/min) / (1 L)", "1 min^-1"),
    ("(1 GB/h) / (1 MB)", "1000 h^-1"),
    ("(2 L/s) / (1 L)", "2 Hz"),
    ("(1 km^2) / (1 m)", "1000 km"),
    # information per second inverted: 2 / (4 GB/s) = 0.5 s/GB; the base-unit fallback had
    # spelled it `s/bit`, no unit, and showing the value raised UnitSpecError
    ("2 / (4 GB/s)", "0.5 s/GB"),
    ("1 / (1 m^12)^2", "1 m^-12*m^-12"),
])
def test_a_computed_unit_reads_back_as_its_quantity(text, shown):
    d = astral_dsl.loads(f"let a = {text}\nlet b = {shown}\ncheck a == b\n", name="u.astral")
    assert d.valid, d.diagnostics
    (value,) = [v for k, v in d.lets if k == "a"]
    assert str(value) == shown
    assert parse_unit(value.unit).dims == value.dims
    # the display, read as a literal, is the same quantity (and shows as itself)
    (again,) = [v for k, v in d.lets if k == "b"]
    assert again.dims == value.dims and str(again) == shown and d.checks[0].passed


def test_a_product_beyond_any_unit_is_e313():
    # m^12 x m^12 x m^12 = m^36, beyond the ±24 a unit may spell: it was made, then unshowable
    d = astral_dsl.loads("let a = 1 m^12 * 1 m^12 * 1 m^12\n", name="u.astral")
    (e,) = d.diagnostics
    assert e.code == "E313" and (e.span.start.line, e.span.start.column) == (1, 9)
    assert e.hint.startswith("units take a base dimension to at most ±24")


@pytest.mark.parametrize("text", ["(1 kW/h) / (2 MW/h)", "(1 kW/h) / (1 W/min)", "1 km / 1 m"])
def test_a_dimensionless_quotient_is_a_plain_number(text):
    # (1 kW/h) / (2 MW/h) = 0.0005; (1 kW/h) / (1 W/min) = 1000/60 = 16.67; 1 km / 1 m = 1000
    d = astral_dsl.loads(f"let a = {text}\n", name="u.astral")
    (value,) = [v for k, v in d.lets if k == "a"]
    assert value.unit == "" and value.dimensionless


def test_the_base_units_of_information_are_bits():
    """The preferred unit of a dimension no name has is spelled in base units, information's
    being `b` (`bit` is no unit: showing it, or a hint with it, raised UnitSpecError)."""
    from astral_dsl.units.dimension import dim
    from astral_dsl.units.spelling import preferred_unit
    assert preferred_unit(dim(s=1, bit=-1)) == "s/b"
    assert preferred_unit(dim(kg=-1, m=-2, s=4)) == "s^4/kg/m^2"
    err = raises_unit_error(lambda: Q(1, "s/GB").to("kW"))
    assert "`s/b`" in err.hint


def test_a_quantity_formats_its_magnitude_with_a_spec_and_keeps_its_unit():
    """`format(q, ".3f")` was a TypeError (object.__format__ takes no spec): the spec formats
    the magnitude, the unit follows as str() shows it; an empty spec is str()."""
    q = Quantity.of(40.8123, "kW")
    assert (format(q, ".3f"), f"{q:>8.1f}", f"{q}", format(q, "")) == (
        "40.812 kW", "    40.8 kW", "40.8123 kW", "40.8123 kW")
    assert f"{Quantity.of(3.14159):.2f}" == "3.14"                    # a plain number: no unit
    assert f"{Quantity.of(40, 'degC'):.1f}" == "40.0 degC"            # a point, in its unit
    assert f"{Quantity.of(45.25, '%'):.1f}" == "45.2 %"
    with pytest.raises(ValueError, match="Unknown format code 'd'"):
        format(q, "d")
