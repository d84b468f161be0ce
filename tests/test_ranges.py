"""One meaning for `a..b`: both ends included, in the language (selectors, comprehensions,
aggregates, the options of `?`) and on the command line (`astral sweep --grid`, `astral search
--gpus`, `astral forecast --window`); `a..<b` stops before b everywhere. Where a design written
for the old `..` (which stopped before its end) now means something else and it can be told, a
diagnostic says so: E214's hint for a selector one past its group, W317 when sizing picks the
end of a `?`'s range."""
from __future__ import annotations

import textwrap

import pytest

import astral_dsl
from astral_dsl.explore import sweep
from astral_dsl.explore.engines import LocalEngine
from astral_dsl.explore.grid import GridError, parse_spec


def loads(text: str, tmp_path):
    return astral_dsl.loads(textwrap.dedent(text), name="ranges.astral", root=tmp_path)


def checked(text: str, tmp_path):
    path = tmp_path / "ranges.astral"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return astral_dsl.check(astral_dsl.compile(path))


def _values(text: str, tmp_path):
    """The whole numbers a range written in the language holds, in order."""
    d = loads(f"""
        gpu G(slot: count = 0) {{ power = (slot + 1) * 1 W }}
        site S {{ gpus = [G(slot = i) for i in {text}] }}
    """, tmp_path)
    assert d.valid, d.diagnostics
    return [str(int(g.field("power").si) - 1) for g in _slots(d)]


def _slots(design):
    site = design.roots[0]
    group = site.members[0].value
    return [inst for _, inst in group.flat()]


# ---- the language --------------------------------------------------------------------------------

def test_a_range_holds_both_ends_and_the_half_open_form_stops_before_its_end(tmp_path):
    d = loads("""
        check count(1..6) == 6 and sum(1..6) == 21
        check count(1..<6) == 5 and sum(1..<6) == 15
        check count(3..3) == 1 and count(3..<3) == 0
        check sum([i * i for i in 1..3]) == 14 and sum([i for i in 0..<4]) == 6
        gpu G { power = 1 W }
        site S {
          gpus = 6 x G
          check count(gpus[0..2]) == 3 and count(gpus[0..<2]) == 2
          check count(gpus[0..5]) == 6 and count(gpus[2..<6]) == 4
        }
    """, tmp_path)
    assert d.valid, d.diagnostics
    assert len(d.checks) == 6 and all(c.passed for c in d.checks)


def test_a_selector_one_past_its_group_says_the_meaning_changed(tmp_path):
    d = loads("""
        gpu G { power = 1 W }
        site S { gpus = 8 x G, let old = gpus[0..8] }
    """, tmp_path)
    (e,) = [x for x in d.diagnostics if x.code == "E214"]
    assert e.message == "range 0..8 is outside the group of 8 (members 0..7)"
    assert "`a..b` includes b (it used to stop before b)" in e.hint
    assert "`0..<8`" in e.hint and "`0..7`" in e.hint
    # an index one past the end (e.g. from `for i in 0..n`) gets the same explanation
    d = loads("""
        gpu G { power = 1 W }
        site S { gpus = 8 x G, let old = [gpus[i] for i in 0..8] }
    """, tmp_path)
    (e,) = [x for x in d.diagnostics if x.code == "E214"]
    assert "index 8 is out of range" in e.message and "`a..<8`" in e.hint


def test_an_index_past_2_53_is_shown_as_the_number_read_not_its_float_s_digits(tmp_path):
    """`gpus[99999999999999999999999]` said "index 99999999999999991611392 is out of range",
    a number the design does not hold: the float it was read as, 1e23."""
    d = loads("""
        gpu G { power = 1 W }
        site S { gpus = 8 x G, let a = gpus[99999999999999999999999], let b = [1, 2][-2e20] }
    """, tmp_path)
    got = [(x.message, x.span.start.column, x.span.end.column, x.hint)
           for x in d.diagnostics if x.code == "E214"]
    assert got == [
        ("index 1e23 is out of range: the group has 8 (indices 0 to 7)", 37, 60,
         "the last is `[7]`: check the count, or the expression giving the index"),
        ("index -2e20 is out of range: the list has 2 items", 78, 83,
         "indices count from the start, not from the end: the last is `[1]`")]


def test_a_backwards_range_is_e309_and_the_empty_one_is_written_half_open(tmp_path):
    d = loads("let xs = [i for i in 5..4]\n", tmp_path)
    (e,) = [x for x in d.diagnostics if x.code == "E309"]
    assert "5..4" in e.message and "`5..<5`" in e.hint
    assert loads("let xs = [i for i in 5..<5]\ncheck count(xs) == 0\n", tmp_path).valid


def test_the_options_of_a_choice_are_the_range_as_written(tmp_path):
    d = loads("""
        gpu G { power = 1 W }
        host H { gpus = 8 x G }
        site S { a = (? in 2..4) x H, b = (? in 2..<4) x H }
    """, tmp_path)
    options = [[o.si for o in u.options] for u in d.unknowns]
    assert options == [[2.0, 3.0, 4.0], [2.0, 3.0]]
    assert [u.inclusive_end for u in d.unknowns] == [True, False]


# ---- sizing: the design, and the old meaning named ---------------------------------------
DESIGN = """\
gpu G {{ power = 700 W }}
host Node {{ gpus = 8 x G, power = 10.2 kW }}
rack R {{ hosts = (? in {options}) x Node, power_limit = 45 kW }}
site S {{
  racks = 4 x R
  maximize gpus
}}
"""


def test_maximize_gpus_considers_the_end_of_the_range_and_says_so(tmp_path):
    """`hosts = (? in 2..4) x Node` with `maximize gpus` once never considered 4."""
    result = checked(DESIGN.format(options="2..4"), tmp_path)
    assert result.valid, result.diagnostics
    assert [v.si for _, v in result.design.chosen] == [4.0]     # 4 x 10.2 kW fits in 45 kW
    (w,) = [d for d in result.diagnostics if d.code == "W317"]
    assert (w.span.start.line, w.span.start.column) == (3, 19)
    assert w.message == ("sizing chose 4 for this `?`, the end of its range `2..4`, which `..` "
                         "includes")
    assert "`2..<4`" in w.hint


def test_the_half_open_range_excludes_its_end_and_warns_of_nothing(tmp_path):
    result = checked(DESIGN.format(options="2..<4"), tmp_path)
    assert result.valid, result.diagnostics
    assert [v.si for _, v in result.design.chosen] == [3.0]
    assert not [d for d in result.diagnostics if d.code == "W317"]


def test_an_end_not_chosen_warns_of_nothing(tmp_path):
    result = checked(DESIGN.format(options="2..6"), tmp_path)     # 5 x 10.2 kW > 45 kW
    assert [v.si for _, v in result.design.chosen] == [4.0]
    assert not [d for d in result.diagnostics if d.code == "W317"]


def test_an_equipment_count_sized_to_its_range_end_is_named(tmp_path):
    result = checked("""
        gpu G { power = 700 W }
        host H { gpus = 8 x G, power = 10 kW }
        rack R { hosts = 4 x H }
        row Row {
          racks = 4 x R
          feeder a { current = dc, voltage = 240 V, capacity = 60 kW, count = ? in 1..4,
                     serves = racks }
        }
        site S { rows = 1 x Row, minimize power }
    """, tmp_path)                       # 160 kW on 60 kW feeders, one of them failed: 4
    assert result.valid, result.diagnostics
    (w,) = [d for d in result.diagnostics if d.code == "W317"]
    assert w.message.startswith("sizing chose 4 for S.rows[0].a.count, the end of its range "
                                "`1..4`")


# ---- the command line reads them the same way ----------------------------------------------------
@pytest.mark.parametrize("text", ["2..6", "2..<6", "0..0", "3..<4", "1..12"])
def test_language_and_grid_hold_the_same_values(tmp_path, text):
    assert list(parse_spec("n", text).values) == _values(text, tmp_path)


def test_grid_half_open_and_stepped(tmp_path):
    assert parse_spec("n", "0..<10:2").values == ("0", "2", "4", "6", "8")
    assert parse_spec("n", "10..<2:-2").values == ("10", "8", "6", "4")
    assert parse_spec("p", "40kW..<50kW:5kW").values == ("40 kW", "45 kW")
    with pytest.raises(GridError, match="the range is empty"):
        parse_spec("n", "2..<2")


def test_sweep_points_are_the_range_as_written(tmp_path):
    path = tmp_path / "s.astral"
    path.write_text(textwrap.dedent("""
        param n = 1
        gpu G { power = 700 W }
        host H { gpus = 8 x G, power = 10 kW }
        site S { hosts = n x H }
    """), encoding="utf-8")
    inclusive = sweep.run(str(path), ["n=2..4"], engine=LocalEngine(1))
    half_open = sweep.run(str(path), ["n=2..<4"], engine=LocalEngine(1))
    assert [r["params"]["n"] for r in inclusive.rows] == ["2", "3", "4"]
    assert [r["metrics"]["gpus"] for r in inclusive.rows] == [16, 24, 32]
    assert [r["params"]["n"] for r in half_open.rows] == ["2", "3"]


def test_forecast_window_or_level_without_their_output_is_a_usage_error(capsys, tmp_path):
    """--window picks micro-batches of --trace or --plot, --level the detail of --trace: alone
    they were ignored in silence (exit 0); now exit 2, before the design is read."""
    from test_cli import call

    missing = str(tmp_path / "none.astral")          # (not read: the options fail first)
    for argv, said in ((["--window", "0..3"], "--window picks the micro-batches of --trace or "
                                              "--plot"),
                       (["--level", "layer"], "--level sets the detail of --trace"),
                       (["--level", "layer", "--plot", "p.png"], "--level sets the detail")):
        code, out, err = call(["forecast", missing] + argv, capsys)
        assert (code, out) == (2, "") and said in err, (argv, err)


def test_forecast_window_reads_ranges_as_the_language_does():
    from astral_dsl.cli.forecast import _window

    assert _window("2..5") == (2, 6)          # micro-batches 2, 3, 4, 5
    assert _window("2..<5") == (2, 5)
    assert _window("2:5") == (2, 5)           # as before: a slice
    assert _window("3") == (3, 4)
