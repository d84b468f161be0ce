"""The numeric bracket of solve.py against boundaries known by hand, and how many times it
evaluates the design to get there (each probe is a full compile and check)."""
from __future__ import annotations

import math

import pytest

from astral_dsl.explore.margins.limits import Limit
from astral_dsl.kept import Kept
from astral_dsl.explore.margins.solve import (REL_TOL, Probed, Shown, Uncompiled, _limit,
                                              numeric_range)
from astral_dsl.outputs.margins import _rounded


def _probe(lhs_of, rhs: float, calls: list, op: str = "<=", compiles=lambda x: True):
    def probe(x: float):
        calls.append(x)
        if not compiles(x):
            return Uncompiled(("E210",))
        return Probed({"k": Limit("k", "check", "k", lhs_of(x), rhs, op, "W")})
    return probe


def test_an_affine_limit_takes_a_few_probes_not_a_bisection():
    # 10.2 kW per host x h <= 45 kW: the boundary is 45 / 10.2 = 4.41176... hosts (a real)
    calls: list = []
    r = numeric_range("k", "h", 4.0, False, _probe(lambda x: 10.2e3 * x, 45e3, calls), True)
    true = 45 / 10.2
    assert r.high == pytest.approx(true, rel=REL_TOL) and r.high <= true
    # the outward search takes one step to cross it (4 x 2^(1/4) = 4.76); then the secant:
    # the root, one value just past it, and a rounder value between
    above = {x for x in calls if x > 4.0}      # margins.analyse caches probes by value
    assert len(above) <= 4, above
    # the same bracket narrowed by bisection alone (no slack to interpolate) takes 11 or more
    bisected: list = []
    probe = _probe(lambda x: 10.2e3 * x, 45e3, bisected)
    side = _limit(4.0, 4.0 * 2 ** 0.25, False, lambda x: probe(x)["k"].holds, True, [], None)
    assert side.bound == pytest.approx(true, rel=REL_TOL) and len(set(bisected)) >= 11


def test_a_boundary_at_a_round_value_is_reported_as_that_value():
    # supply (K) <= 45 degC: the secant lands on the root, which holds at equality
    calls: list = []
    r = numeric_range("k", "supply", 313.15, False, _probe(lambda x: x, 318.15, calls), True,
                      point=True)
    assert r.high == pytest.approx(318.15, abs=1e-9)


def test_a_step_limit_falls_back_to_bisection_and_stays_within_tolerance():
    # ceil(10.2 h / 10) PDUs <= 5 with h a real: holds while h <= 50 / 10.2 = 4.90196...
    calls: list = []
    r = numeric_range("k", "h", 4.0, False,
                      _probe(lambda x: math.ceil(10.2 * x / 10), 5.0, calls), True)
    true = 50 / 10.2
    assert true * (1 - 2 * REL_TOL) <= r.high <= true


def test_a_broken_limit_brackets_where_it_holds_again():
    # 12 kW x h <= 45 kW at h = 4 is broken; it holds again below 3.75
    calls: list = []
    r = numeric_range("k", "h", 4.0, False, _probe(lambda x: 12e3 * x, 45e3, calls), False)
    assert r.again_below == pytest.approx(3.75, rel=REL_TOL) and r.again_below <= 3.75
    assert r.again_above is None


def test_counts_bracket_to_adjacent_whole_numbers():
    calls: list = []
    r = numeric_range("k", "n", 4.0, True, _probe(lambda x: 10.2e3 * x, 450e3, calls), True)
    assert r.high == 44          # 44 x 10.2 = 448.8 <= 450 < 459 = 45 x 10.2


def test_a_probe_that_does_not_compile_inside_the_bracket_is_stepped_around():
    # odd counts do not compile (a gap); the limit's boundary (44) is still found
    calls: list = []
    r = numeric_range("k", "n", 4.0, True,
                      _probe(lambda x: 10.2e3 * x, 450e3, calls,
                             compiles=lambda x: x % 2 == 0), True)
    assert r.high == 44


def test_an_equality_is_bracketed_by_bisection():
    calls: list = []
    r = numeric_range("k", "h", 4.0, False, _probe(lambda x: x, 4.0, calls, op="=="), True)
    assert r.low == pytest.approx(4.0, rel=REL_TOL) and r.high == pytest.approx(4.0, rel=REL_TOL)


def test_a_bound_of_the_shown_precision_is_found_as_that_value():
    # examples/explore.astral's net_utility feeder holds while switch_power <= 2088.125 W; the
    # secant's root from the probes' rounded sides lands at 2088.124999680581 (holds), the
    # value just past it at 2088.29 (fails): a bracket of 0.165 W (< 1e-4 relative), whose
    # roundest value, 2088.2 W, fails. Printed toward the holding side, 2088.12499968 reads
    # 2088.1249 W; 2088.125 is a value of the 4 decimals shown, 3.2e-7 W from the bracket's end
    # (within a hundredth of the last digit, 1e-6 W): probed, it holds, and is the bound
    calls: list = []

    def state(x):
        calls.append(x)
        return x <= 2088.125

    inside, outside = 2088.124999680581, 2088.29
    side = _limit(inside, outside, False, state, True, [], None)
    assert side.bound == inside and _rounded(side.bound, 4, -1, False) == 2088.1249
    side = _limit(inside, outside, False, state, True, [], None, shown=Shown(1.0, 0.0, 4))
    assert side.bound == 2088.125 and _rounded(side.bound, 4, -1, False) == 2088.125
    assert calls == [2088.2, 2088.2, 2088.125]       # the roundest (twice: no cache here)
    # a bound that is no value of the shown precision stays rounded toward the holding side:
    # 45 / 10.2 = 4.41176470588... is 2.9e-7 from 4.411765, far more than 1e-8 (6 decimals)
    assert Shown(1.0, 0.0, 6).snap(45 / 10.2, 4.4122) is None
    # a lower bound snaps downward (toward the failing side below); kW shown, W in SI:
    # 40.8 kW with noise, 40,800.0000003 W, is 40.8 kW to 4 decimals of kW (0.1 W)
    assert Shown(1000.0, 0.0, 4).snap(40800.0000003, 40790.0) == 40800.0
    # a temperature point: degC from 273.15 K
    assert Shown(1.0, 273.15, 4).snap(318.1499999999, 318.2) == pytest.approx(318.15)


# ---- the symbolic side's solved sets, kept by what was solved (symbolic.py _SOLVED) ----------
def _solved_limit(rhs, strict=False):
    import sympy

    h = sympy.Symbol("h", positive=True)
    lhs = sympy.Float(10.2e3) * h
    return h, Limit("k", "check", "k", 10.2e3 * 4, float(rhs), "<=", "W", lhs_shadow=lhs,
                    rhs_shadow=sympy.Float(rhs), strict=strict)


def test_a_limit_solved_again_is_the_same_range_and_a_changed_one_is_solved_anew(monkeypatch):
    """The second solve of the same limit comes from the kept sets (solveset not called), equal
    to the first; a limit whose numbers or strictness changed is solved again, to its own set."""
    import sympy

    from astral_dsl.explore.margins import symbolic

    monkeypatch.setattr(symbolic, "_SOLVED", Kept(symbolic.MAX_SOLVED))
    solves = []
    real = sympy.solveset
    monkeypatch.setattr(sympy, "solveset", lambda *a, **k: solves.append(a) or real(*a, **k))
    h, lim = _solved_limit(45e3)
    first = symbolic.symbolic_range(lim, "h", h, {h: 4}, False, True)
    again = symbolic.symbolic_range(lim, "h", h, {h: 4}, False, True)
    assert first == again and first.high == pytest.approx(45 / 10.2) and len(solves) == 1
    _, moved = _solved_limit(50e3)              # another number: its own set
    other = symbolic.symbolic_range(moved, "h", h, {h: 4}, False, True)
    assert other.high == pytest.approx(50 / 10.2) and len(solves) == 2
    _, strict = _solved_limit(45e3, strict=True)    # `<`: the end is open
    opened = symbolic.symbolic_range(strict, "h", h, {h: 4}, False, True)
    assert opened.high_open and not first.high_open and len(solves) == 3
    whole = symbolic.symbolic_range(lim, "h", h, {h: 4}, True, True)   # a count: whole values
    assert whole.high == 4 and whole.integer and len(solves) == 4
    # a number that differs only past a float's 15 digits (sympy's precision) is another input
    _, finer = _solved_limit(sympy.Float("45000.000000000000001", 30))
    symbolic.symbolic_range(finer, "h", h, {h: 4}, False, True)
    assert len(solves) == 5


def test_the_solved_sets_kept_are_bounded(monkeypatch):
    from astral_dsl.explore.margins import symbolic

    assert symbolic.MAX_SOLVED == symbolic._SOLVED.most == 512
    monkeypatch.setattr(symbolic, "_SOLVED", Kept(3))
    for rhs in (1e3, 2e3, 3e3, 4e3, 5e3):
        h, lim = _solved_limit(rhs)
        symbolic.symbolic_range(lim, "h", h, {h: 4}, False, True)
    assert len(symbolic._SOLVED) == 3


def test_a_set_solveset_could_not_say_is_kept_too(monkeypatch):
    """None (no set) is an answer like any other: asked again, it is not solved again."""
    from astral_dsl.explore.margins import symbolic

    monkeypatch.setattr(symbolic, "_SOLVED", Kept(symbolic.MAX_SOLVED))
    solved = []
    monkeypatch.setattr(symbolic, "_solve", lambda *a: solved.append(a) and None)
    h, lim = _solved_limit(45e3)
    assert symbolic.symbolic_range(lim, "h", h, {h: 4}, False, True) is None
    assert symbolic.symbolic_range(lim, "h", h, {h: 4}, False, True) is None
    assert len(solved) == 1
