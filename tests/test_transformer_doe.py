"""stdlib.power.Transformer's efficiency follows its rating (US DOE, 10 CFR 431.196(b)(2), the
2016 levels for three-phase liquid-immersed distribution transformers, at 50 % load), linear
between the listed ratings, the nearest end's value with W215 outside 15-2,500 kVA; and the
`interpolate` built-in that reads the table (docs/language.md, section 10.9)."""
from __future__ import annotations

import pytest

import astral_dsl


def _transformer(rating: str):
    design = astral_dsl.compiles("import stdlib.power { Transformer }\n"
                                 f"site S {{ transformer mv = Transformer(rating = {rating}) }}\n",
                                 name="t.astral").design
    (mv,) = [i for i in design.instances if i.kind == "transformer"]
    return mv, [d for d in design.diagnostics if d.code == "W215"]


@pytest.mark.parametrize("rating, p0_w, pk_w", [
    # a listed row, as before the table: 2,500 kVA at 99.53 %: 2,500 x 0.5 x (1 / 0.9953 - 1)
    # = 5,902.74 W at half load = 2 P0 = Pk / 2: P0 = 2,951.37 W, Pk = 11,805.49 W
    ("2500 kVA", 2951.37, 11805.49),
    # another listed row: 225 kVA at 99.23 %: 112.5 x (1 / 0.9923 - 1) = 0.872972 kW: P0 =
    # 436.49 W, Pk = 1,745.94 W (the 2,500 kVA value would have given 265.62 W and 1,062.49 W)
    ("225 kVA", 436.49, 1745.94),
    # between 1,000 kVA (99.43 %) and 1,500 kVA (99.48 %): 1,200 kVA at 99.43 + 0.05 x 200 /
    # 500 = 99.45 %: 600 x (1 / 0.9945 - 1) = 3.318250 kW: P0 = 1,659.13 W, Pk = 6,636.50 W
    ("1200 kVA", 1659.13, 6636.50),
    # the first row: 15 kVA at 98.65 %: 7.5 x (1 / 0.9865 - 1) = 0.102636 kW: P0 = 51.32 W
    ("15 kVA", 51.32, 205.27),
])
def test_the_losses_follow_the_doe_efficiency_of_the_rating(rating, p0_w, pk_w):
    mv, w215 = _transformer(rating)
    assert mv.field("no_load_loss").si == pytest.approx(p0_w, abs=0.01)
    assert mv.field("load_loss").si == pytest.approx(pk_w, abs=0.01)
    assert w215 == []                         # the table's ends are in its range


@pytest.mark.parametrize("rating, p0_w, end", [
    # above the table: 3,000 kVA takes 2,500 kVA's 99.53 %: 1,500 x (1 / 0.9953 - 1) / 2 =
    # 3,541.65 W
    ("3000 kVA", 3541.65, "above"),
    # below: 10 kVA takes 15 kVA's 98.65 %: 5 x (1 / 0.9865 - 1) / 2 = 34.21 W
    ("10 kVA", 34.21, "below"),
])
def test_a_rating_outside_the_table_takes_its_end_with_w215(rating, p0_w, end):
    mv, (w,) = _transformer(rating)
    assert mv.field("no_load_loss").si == pytest.approx(p0_w, abs=0.01)
    assert f"{rating} is {end} the range of the US DOE's 2016 minimum efficiencies" in w.message
    assert "15 kVA to 2500 kVA" in w.message and "10 CFR 431.196(b)(2)" in w.message
    # at the user's declaration, not in the stdlib
    assert (w.span.file, w.span.start.line, w.span.start.column) == ("t.astral", 2, 22)
    assert "data sheet" in w.hint


def test_losses_stated_by_the_user_read_no_table():
    design = astral_dsl.compiles(
        "import stdlib.power { Transformer }\n"
        "site S { transformer mv = Transformer(rating = 3000 kVA) { no_load_loss = 2.6 kW, "
        "load_loss = 21 kW } }\n", name="t.astral").design
    assert design.valid and not [d for d in design.diagnostics if d.code == "W215"]


@pytest.mark.parametrize("expr, want", [
    ('interpolate(50, [0, 100], [0 W, 10 W], "t") == 5 W', True),        # halfway: 5 W
    ('interpolate(100, [0, 100, 200], [1 W, 3 W, 7 W], "t") == 3 W', True),  # a listed point
    ('interpolate(150, [0, 100, 200], [1 W, 3 W, 7 W], "t") == 5 W', True),  # 3 + 4 x 0.5
])
def test_interpolate(expr, want):
    design = astral_dsl.compiles(f"site S {{ check {expr} }}\n", name="i.astral").design
    assert design.valid, design.diagnostics
    assert [c.passed for c in design.checks] == [want]


@pytest.mark.parametrize("expr, code", [
    ('interpolate(5, [0, 10], [1 W, 2 W])', "E307"),                 # no table name
    ('interpolate(5, [10, 0], [1 W, 2 W], "t")', "E307"),            # not increasing
    ('interpolate(5, [0, 10], [1 W], "t")', "E307"),                 # lists of unequal length
    ('interpolate(5 W, [0, 10], [1 W, 2 W], "t")', "E301"),          # x of another dimension
    ('interpolate(5, [0, 10], [1 W, 2 m], "t")', "E301"),            # ys of two dimensions
    ('interpolate(5, 3, [1 W, 2 W], "t")', "E303"),                  # not a list
    ('interpolate(5, [0, 10], [1 W, 2 W], 7)', "E303"),              # the name not a string
])
def test_interpolate_misuse_is_a_diagnostic(expr, code):
    design = astral_dsl.compiles(f"site S {{ let v = {expr}\n check v > 0 W }}\n",
                                 name="i.astral").design
    (d,) = [d for d in design.diagnostics if d.severity.value == "error"]
    assert d.code == code and d.span is not None and d.hint
