"""Every diagnostic has a code, a span and a hint where one helps: the compiler's codes that had
none (an index counted from the end, a built-in's arguments, a declared range, a template's
argument with no near name, rounding a temperature point, a unit the table does not know, a
conversion across dimensions, chained comparisons, a name pattern's placeholder), a non-zero
result that underflows to 0 (E309, as the literal `1e-400` is E106), and the library's errors for
arguments it cannot use, which hold the code the command or the language gives the same
mistake. (docs/diagnostics.md's examples are walked for a span and a hint in test_docs.py.)"""
from __future__ import annotations

import textwrap

import pytest

import astral_dsl
from astral_dsl.diagnose import DiagnoseError
from astral_dsl.explore.sweep import SweepError

POD = "examples/single_pod.astral"


def build(text: str, tmp_path, **kw):
    return astral_dsl.loads(textwrap.dedent(text).lstrip("\n"), name="main.astral",
                            root=tmp_path, **kw)


def errors(design):
    return [d for d in design.diagnostics if d.is_error]


def only(design, code: str):
    found = errors(design)
    assert [d.code for d in found] == [code], [(d.code, d.message) for d in found]
    assert found[0].hint, found[0]
    return found[0]


def at(d):
    return (d.span.start.line, d.span.start.column, d.span.end.line, d.span.end.column)


# ---- a result below the floats -----------------------------------------------------------------
@pytest.mark.parametrize("expr, what", [
    ("1e-300 W / 1e300", "quotient"),       # 1e-600 W: below 5e-324, the least float above 0
    ("1e-200 W * 1e-200", "product"),       # 1e-400 W
    ("0.5 ^ 2000", "power"),                # 2^-2000 = 1e-602
    ("(1e-200 W) ^ 2", "power"),            # 1e-400 W^2
])
def test_a_non_zero_result_that_underflows_to_zero_is_e309(expr, what, tmp_path):
    # was silently 0 W, while the literal 1e-400 is E106
    d = only(build(f"let x = {expr}\n", tmp_path), "E309")
    assert d.message == f"the {what} is too small to represent: it would be read as 0"
    assert at(d) == (1, 9, 1, 9 + len(expr)) and "5e-324" in d.hint


def test_a_literal_whose_unit_takes_it_below_the_floats_is_e309(tmp_path):
    # 1e-320 pW = 1e-320 * 1e-12 W = 1e-332 W, which a float reads as 0
    d = only(build("let x = 1e-320 pW\n", tmp_path), "E309")
    assert at(d) == (1, 9, 1, 18) and "`1e-320 pW`" in d.message


def test_zero_and_small_results_that_the_floats_hold_stay_values(tmp_path):
    design = build("""
        let a = 0 W * 1e-300
        let b = 1e-150 W * 1e-150
        let s = 1e-160 W * 1e-160
        let c = -273.15 degC
        check a == 0 W
        check b * 1e300 == 1 W
        check c - -273.15 degC == 0 K
    """, tmp_path)
    # 1e-300 W a float holds; 1e-320 W a subnormal one (above 5e-324): kept, not refused;
    # 0 * x and absolute zero (0 K, a point) are exact zeros
    assert errors(design) == []


# ---- hints the compiler's codes lacked ------------------------------------------------------
def test_a_negative_index_says_indices_count_from_the_start(tmp_path):
    d = only(build("let xs = [1, 2, 3]\nlet a = xs[-1]\n", tmp_path), "E214")
    assert at(d) == (2, 12, 2, 14)
    assert d.hint == "indices count from the start, not from the end: the last is `[2]`"


@pytest.mark.parametrize("expr, hinted", [
    ("max()", "`max(racks.power)`"),
    ("max([i for i in 0..<0])", "`if count(xs) > 0 then max(xs) else 0 W`"),
    ("count([1], [2])", "`count(a) + count(b)`"),
    ("ceil(1, 2)", "`ceil(total / 40 kW)`"),
    ("sqrt(3 W)", "`sqrt(area / 1 m^2) * 1 m`"),
    ("max(a = 3)", "drop `a =`"),
])
def test_a_built_in_given_the_wrong_arguments_says_how_to_call_it(expr, hinted, tmp_path):
    d = only(build(f"let v = {expr}\n", tmp_path), "E307")
    assert hinted in d.hint


def test_rounding_a_temperature_point_says_how_and_the_hint_works(tmp_path):
    d = only(build("let c = round(21.6 degC)\n", tmp_path), "E302")
    assert "`0 degC + round(t - 0 degC)`" in d.hint
    # the hint's form: 21.6 degC - 0 degC = 21.6 K, rounded 22 K, 0 degC + 22 K = 22 degC
    design = build("""
        let t = 21.6 degC
        check 0 degC + round(t - 0 degC) == 22 degC
        check 0 degC + floor(t - 0 degC) == 21 degC
    """, tmp_path)
    assert errors(design) == []


def test_a_value_outside_a_declared_range_gives_the_range(tmp_path):
    d = only(build("""
        gpu G(k: count = 1) { power = 700 W }
        host H { gpus = 8 x G(k = -2) }
    """, tmp_path), "E309")
    assert d.hint == "it takes values of at least 0: check the number and its unit"
    d = only(build("feeder F { current = ac, voltage = 415 V, phases = 4 }\n", tmp_path), "E309")
    assert d.hint == "it takes values from 1 to 3: check the number and its unit"
    d = only(build("site S { utilization = 120 % }\n", tmp_path), "E309")
    assert "120 % reads as 1.2" in d.hint


def test_an_argument_no_parameter_is_near_lists_the_parameters(tmp_path):
    d = only(build("""
        gpu G(p: power = 700 W) { power = p }
        host H { gpus = 8 x G(zzzzqq = 3 W) }
    """, tmp_path), "E211")
    assert d.hint == "`G` takes its gpu's fields by name; its parameters are `p`"


def test_too_many_positional_arguments_name_the_parameters(tmp_path):
    d = only(build("""
        gpu G(p: power = 700 W) { power = p }
        host H { gpus = 8 x G(1 W, 2 W) }
    """, tmp_path), "E307")
    assert "its parameters are `p`" in d.hint


def test_a_plausible_temperature_range_is_said_once(tmp_path):
    d = only(build("""
        import stdlib.cooling { PG25 }
        loop L { fluid = PG25, rise = 10 K, supply = 2000 degC }
    """, tmp_path), "E316")
    # was "between -100 degC and 1000 degC (-100 degC to 1,000 degC)"
    assert d.hint == ("the plausible range is between -100 degC and 1000 degC; check the unit "
                      "and the number")


@pytest.mark.parametrize("text, code, hinted", [
    ("let a = 45 kWatt\n", "E300", "the unit table"),
    ("let a = 45 kW to GB\n", "E301", "power is shown in units such as `W`"),
    ("let a = 3 to GB\n", "E301", "`n * 1 GB`"),
    ("let a = 1 W / 0\n", "E305", "the divisor is 0"),
    ("let a = (2 W) ^ 0.5\n", "E308", "divide by the unit first"),
    ("let ok = 1 < 2 < 3\n", "E103", "comparisons do not chain"),
])
def test_units_arithmetic_and_syntax_slips_have_hints(text, code, hinted, tmp_path):
    assert hinted in only(build(text, tmp_path), code).hint


def test_a_name_pattern_placeholder_is_said_at_the_pattern(tmp_path):
    ws = astral_dsl.compiles(textwrap.dedent("""
        gpu G { power = 700 W }
        host H { gpus = 8 x G, name = "h-{pod}-{host}" }
        rack R { hosts = 2 x H }
        site S { racks = 2 x R }
    """).lstrip("\n"), name="main.astral", root=tmp_path)
    d = only(astral_dsl.check(ws), "E235")     # had no span
    assert at(d) == (2, 31, 2, 47)


# ---- the library's errors carry codes ----------------------------------------------------------
@pytest.mark.parametrize("kw, code", [
    (dict(observed=[]), "E780"),                           # as a folder with no file
    (dict(observed=["nothing.csv"], timers="x"), "E311"),  # a value none of its options
])
def test_diagnosis_arguments_it_cannot_use_hold_a_code(kw, code):
    with pytest.raises(DiagnoseError) as info:
        astral_dsl.diagnosis(POD, **kw)
    [d] = info.value.diagnostics
    assert d.code == code and d.hint and d.filename == POD


def test_a_diagnosis_order_that_is_not_one_is_e759_as_the_jobs_field(tmp_path):
    with pytest.raises(DiagnoseError) as info:
        astral_dsl.diagnosis(POD, [str(tmp_path)], order="tp-xp")
    assert [d.code for d in info.value.diagnostics if d.is_error] == ["E759"]


@pytest.mark.parametrize("grid, kw, code", [
    ({}, {}, "E307"),
    ({"hosts_per_rack": [2]}, dict(workers=0), "E309"),
    ({"hosts_per_rack": [2]}, dict(calibration="fit.json"), "E307"),
    ({"hosts_per_rack": ["1..3"]}, {}, "E802"),        # a range as one item of a list
])
def test_sweep_arguments_it_cannot_use_hold_a_code(grid, kw, code):
    with pytest.raises(SweepError) as info:
        astral_dsl.sweep(POD, grid, **kw)
    [d] = info.value.diagnostics
    assert d.code == code and d.hint and d.filename == POD


# ---- files that cannot be read -----------------------------------------------------------------
def test_a_runs_table_or_observed_file_that_cannot_be_read_says_what_to_do(tmp_path):
    # E100 (a design) had a hint; a runs table (E766) and an observed file (E780) had none
    from astral_dsl.observe.load import files_of
    from astral_dsl.runs.table import read_table

    relative = "check the path: a relative one starts at the working directory"
    [d] = read_table(tmp_path / "none.csv").diagnostics
    assert (d.code, d.hint) == ("E766", relative)
    [d] = read_table(tmp_path).diagnostics
    assert (d.code, d.hint) == ("E766", "name its CSV file, not a folder")
    _, [d] = files_of([str(tmp_path / "none.csv")])
    assert (d.code, d.message, d.hint) == ("E780", "no such file or directory", relative)
    _, [d] = files_of(["/dev/null"])                       # a device
    assert (d.code, d.message) == ("E780", "not a regular file")
    assert d.hint == "give a profiler trace or a rank log, or a directory of them"
    # a design's: the import's relative path is read from the project root too
    [d] = astral_dsl.load(tmp_path / "none.astral").diagnostics
    assert (d.code, d.hint) == ("E100", relative + " (an import's, at the project root)")
