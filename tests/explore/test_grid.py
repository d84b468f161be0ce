"""Grid syntax: ranges, stepped ranges, lists with units, exact decimal steps, grid order, and
every malformed grid rejected with a message that says what is wrong."""
from __future__ import annotations

import pytest

from astral_dsl.explore.grid import GridError, parse_grids, parse_spec, points


@pytest.mark.parametrize("spec, values", [
    ("2..6", ("2", "3", "4", "5", "6")),
    ("2..10:2", ("2", "4", "6", "8", "10")),
    ("10..2:-4", ("10", "6", "2")),
    ("5", ("5",)),
    ("40kW,45kW,50kW", ("40 kW", "45 kW", "50 kW")),
    ("40 kW, 45 kW", ("40 kW", "45 kW")),
    ("40kW..50kW:5kW", ("40 kW", "45 kW", "50 kW")),
    ("40kW..50kW:5", ("40 kW", "45 kW", "50 kW")),       # a bare step takes the ends' unit
    ("0.1..0.3:0.1", ("0.1", "0.2", "0.3")),               # exact: never 0.30000000000000004
    ("-0.5..0.5:0.25", ("-0.5", "-0.25", "0", "0.25", "0.5")),
    ("1e3..3e3:1e3", ("1000", "2000", "3000")),
    ("30degC..40degC:5", ("30 degC", "35 degC", "40 degC")),
    ("true,false", ("true", "false")),
    ('"a","b,c"', ('"a"', '"b,c"')),
    # a step in another unit of the kind: 0.05 kW is 50 W
    ("600W..800W:0.05kW", ("600 W", "650 W", "700 W", "750 W", "800 W")),
    # a range of temperature points steps by a difference: 5 K; 5 K = 9 degF; 500 mK = 0.5 K
    ("80degC..90degC:5K", ("80 degC", "85 degC", "90 degC")),
    ("176degF..194degF:5K", ("176 degF", "185 degF", "194 degF")),
    ("80degC..81degC:500mK", ("80 degC", "80.5 degC", "81 degC")),
    ("80degC..90degC:9delta_degF", ("80 degC", "85 degC", "90 degC")),
])
def test_good_specs(spec, values):
    assert parse_spec("x", spec).values == values


def test_a_step_that_misses_the_end_stops_short_and_says_so():
    g = parse_spec("x", "2..10:3")
    assert g.values == ("2", "5", "8")
    assert g.note == "--grid x=2..10:3 stops at 8, short of 10"


@pytest.mark.parametrize("spec, message", [
    ("", "has no values"),
    ("6..2", "the range is empty (the end is below the start); write `6..2:-1` to count down"),
    ("2..6:0", "the step is zero"),
    ("2..6:-1", "goes away from the end"),
    ("2..6:", "the step after `:` is missing"),
    ("2..", "a range needs both ends"),
    ("..3", "a range needs both ends"),
    ("a..b", "the start `a` is not a number"),
    ("2..b", "the end `b` is not a number"),
    ("1..2..3", "a range is START..END or START..END:STEP"),
    ("40kW..5GB", "the ends are in `kW` and `GB`, which measure different things"),
    ("40kW..50MW", "write both ends in the same unit"),
    ("1,,2", "an empty value in the list"),
    ("2furlongs..3furlongs", "unknown unit"),
    ('"a', "an unterminated string"),
    ("1..1000000", "1,000,000 values, more than a sweep takes (100,000)"),
    # 10^300 + 1 values: its order, not its 301 digits
    ("1..2:1e-300", "about 10^300 values, more than a sweep takes (100,000)"),
    # a point is no step: the language adds a difference to a temperature, never a point
    ("80degC..90degC:5degC", "the step of a range of temperatures is a difference: write `5 K`"),
    ("600W..800W:5m", "the step is in `m` and the ends in `W`, which measure different things"),
])
def test_bad_specs(spec, message):
    with pytest.raises(GridError) as err:
        parse_spec("x", spec)
    assert str(err.value).startswith(f"--grid x={spec.strip()}") or "--grid x=" in str(err.value)
    assert message in str(err.value)


@pytest.mark.parametrize("specs, sets, message", [
    (["n"], {}, "--grid expects NAME=VALUES, got `n`"),
    (["n=1..2", "n=3"], {}, "--grid n is given twice"),
    (["n=1..2"], {"n": "3"}, "n is given both by --grid and by --set"),
    (["2n=1"], {}, "is not a parameter name"),
    (["a=1..400", "b=1..400", "c=1..400"], {}, "the grids make 64,000,000 points"),
])
def test_bad_grid_lists(specs, sets, message):
    with pytest.raises(GridError) as err:
        parse_grids(specs, sets)
    assert message in str(err.value)


def test_points_are_in_grid_order_first_grid_slowest():
    grids = parse_grids(["a=1..2", "b=x,y,z"], {})
    assert [(p["a"], p["b"]) for p in points(grids)] == [
        ("1", "x"), ("1", "y"), ("1", "z"), ("2", "x"), ("2", "y"), ("2", "z")]


@pytest.mark.parametrize("spec, values", [
    ("1e300,1e-5", ("1e300", "0.00001")),           # never 301 digits, never through float
    ("1.5e300", ("1.5e300",)),
    ("1e15,1e16", ("1000000000000000", "1e16")),
    ("1e-20", ("1e-20",)),
    ("1..2:0.125", ("1", "1.125", "1.25", "1.375", "1.5", "1.625", "1.75", "1.875", "2")),
])
def test_long_numbers_are_written_compactly_and_exactly(spec, values):
    assert parse_spec("x", spec).values == values


@pytest.mark.parametrize("spec", ["1e400", "1..1e400", "1e-400", "2..6:1e400"])
def test_a_number_beyond_floats_is_a_usage_error(spec):
    with pytest.raises(GridError) as err:
        parse_spec("x", spec)
    assert "is beyond the range of a number" in str(err.value)


@pytest.mark.parametrize("spec, message", [
    ("big=1,0", "--grid big: `1` is not `true` or `false`, and `big` is a yes/no value (true)"),
    ("label=a,b", "--grid label: `a` is not a quoted string, and `label` is text (\"a\")"),
])
def test_yes_no_and_text_params_take_only_their_literals(spec, message):
    from astral_dsl.explore.grid import check_names
    from astral_dsl.units import Quantity

    params = {"big": True, "label": "a", "n": Quantity(2)}
    with pytest.raises(GridError) as err:
        check_names(parse_grids([spec], {}), params)
    assert message in str(err.value)
    check_names(parse_grids(["big=true,false", 'label="x","y"'], {}), params)   # no error


def test_bare_ends_with_a_difference_step_say_how_to_write_temperatures():
    """`t=80..90:5K` makes 80 K .. 90 K (bare ends take the step's unit): differences, where
    `t` holds temperatures. The message says how a range of temperatures is written; a
    parameter of differences takes the same range."""
    from astral_dsl.explore.grid import check_names
    from astral_dsl.units import Quantity

    params = {"t": Quantity.of(40, "degC"), "rise": Quantity.of(10, "K")}
    with pytest.raises(GridError) as err:
        check_names(parse_grids(["t=80..90:5K"], {}), params)
    assert str(err.value) == (
        "--grid t: `80 K` is not a temperature like `t` (40 degC): a temperature takes `degC` "
        "or `degF`; a range of them is written with its ends' unit and a difference as its "
        "step, `80degC..90degC:5K`")
    check_names(parse_grids(["rise=8..12:2K", "t=80degC..90degC:5K"], {}), params)  # no error


def test_a_range_is_written_with_the_digits_0_to_9():
    # the grid's own number pattern took `\d`, any script's digits: `٣..٤` swept 3 and 4
    with pytest.raises(GridError) as err:
        parse_spec("hosts", "\u0663..\u0664")
    assert str(err.value).endswith("the start `\u0663` is not a number (with an optional unit)")
    with pytest.raises(GridError):
        parse_spec("limit", "4\u0660kW..50kW:5kW")


@pytest.mark.parametrize("spec, values, again", [
    # `--grid x=1,1,2` evaluated the point x=1 twice, silently: two rows of the same work
    ("1,1,2", ("1", "2"), "`1` again as `1`"),
    ("2,1.0,1,2.00", ("2", "1"), "`2` again as `2.00`; `1` again as `1`"),
    ("600W,0.6kW,500W", ("600 W", "500 W"), "`600 W` again as `0.6kW`"),
    ("true,false,true", ("true", "false"), "`true` again as `true`"),
    ('"a","b","a"', ('"a"', '"b"'), '`"a"` again as `"a"`'),
])
def test_a_value_listed_twice_is_evaluated_once_with_a_note(spec, values, again):
    g = parse_spec("x", spec)
    assert g.values == values
    assert g.note == f"--grid x={spec} lists a value more than once ({again}): each is " \
                     "evaluated once"


def test_distinct_values_and_temperature_points_are_kept():
    assert parse_spec("x", "20degC,293.15K").values == ("20 degC", "293.15 K")
    assert parse_spec("x", "1,2,3").note is None
