"""The forecasts a fit keeps for the next one (runs/memo.py): the exact leave-out refits start
where the full fit starts, and a refit with the forecasts of the fits before makes fewer of its
own and comes out the same, to the bit."""
from __future__ import annotations

import pytest

from astral_dsl.runs import accuracy
from astral_dsl.runs.fit import fitted, rows_of
from astral_dsl.runs.memo import Memo, exactly
from astral_dsl.runs.table import parse_table
from astral_dsl.seer.calibration import CONSTANTS, priors

from test_runs import _csv, _row

ROWS = ("k22b_full", "k175b_sel", "n1_7b", "n39_1b")
ITERATIONS = 2


@pytest.fixture(scope="module")
def rows():
    out, _ = rows_of([("four", parse_table(_csv([_row(b) for b in ROWS]), "four.csv"))])
    assert len(out) == len(ROWS)
    return out


@pytest.fixture
def counted(monkeypatch):
    from benchmarks.bench_calibrate import counting

    return counting(monkeypatch.setattr)


def test_the_memo_keeps_the_most_recently_used():
    memo = Memo(2)
    made = []

    def make(v):
        return lambda: made.append(v) or v

    assert [memo.get(k, make(k)) for k in ("a", "b", "a", "c", "a", "b")] == \
        ["a", "b", "a", "c", "a", "b"]
    # "b" went when "c" came (the least recently used), "a" stayed
    assert made == ["a", "b", "c", "b"] and (memo.hits, memo.misses) == (2, 4)


def test_a_forecast_is_kept_under_its_constants_to_the_bit():
    cal = priors()
    assert exactly(cal) == exactly(cal.with_())
    # equal as numbers, not to the bit
    assert cal.with_(interfere=0.0) == cal.with_(interfere=-0.0)
    assert exactly(cal.with_(interfere=0.0)) != exactly(cal.with_(interfere=-0.0))
    assert exactly(cal.with_(gemm_waves=cal.gemm_waves + 1e-12)) != exactly(cal)


def test_a_refit_after_another_makes_fewer_forecasts_and_the_same_fit(rows, counted):
    without = [[r for r in rows if r.group != rows[k].group] for k in (0, 2)]
    alone = []
    for part in without:
        counted.update(iteration=0, run=0)
        alone.append((fitted(part, max_iter=ITERATIONS)[0], dict(counted)))
    memo = Memo()
    shared = []
    for part in without:
        counted.update(iteration=0, run=0)
        shared.append((fitted(part, max_iter=ITERATIONS, memo=memo)[0], dict(counted)))
    for (cal, _), (again, _) in zip(alone, shared):
        assert again.values() == cal.values()
        assert [v.hex() for v in again.values().values()] == \
            [v.hex() for v in cal.values().values()]
    # the first refit with an empty memo makes every forecast; the second starts with the
    # first's (the rule's choices at the priors, the log errors and the Jacobian there)
    assert shared[0][1] == alone[0][1]
    assert shared[1][1]["run"] < alone[1][1]["run"]
    assert shared[1][1]["iteration"] < alone[1][1]["iteration"]
    assert memo.hits > 0


def test_exact_leave_out_is_the_same_with_the_memo_as_refit_alone(rows, counted):
    keys = [r.group for r in rows]
    kept = accuracy.leave_out_exact(rows, CONSTANTS, keys, ITERATIONS, memo=Memo())
    with_memo = dict(counted)
    counted.update(iteration=0, run=0)
    alone = accuracy.leave_out_exact(rows, CONSTANTS, keys, ITERATIONS,
                                     memo=Memo(0))
    assert kept == alone and with_memo["iteration"] < counted["iteration"]


def test_a_refit_that_needs_the_constants_alone_does_not_choose_again(rows, monkeypatch):
    """fitted(rechosen=False), as leave_out_exact's refits call it: the rule's choices are
    made again with the fitted constants only where another run of the fit follows (here
    every choice is said to change, so that the fit runs twice: the shipped tables' does)."""
    from astral_dsl.runs import fit as F

    real, calls = F.Problem.rechoose, []

    def changed(prob, cal):
        calls.append(real(prob, cal))
        return True

    monkeypatch.setattr(F.Problem, "rechoose", changed)
    cal = fitted(rows, max_iter=ITERATIONS)[0]
    assert len(calls) == 2
    again = fitted(rows, max_iter=ITERATIONS, rechosen=False)[0]
    assert len(calls) == 3 and again.values() == cal.values()
