"""A fit's cost grows with the configurations its rows state, not with its rows (runs/configs.py):
rows that state the same job on the same system (a run published by several releases that Seer
reads alike, a table's repeated runs) share their forecasts, the rule's choices and uses(), and
the fit is the one it was when each row was forecast on its own. `astral calibrate` on 280 rows
(a100.csv's 14 configurations 20 times) had not finished in 600 s; the forecasts are counted
here, not timed. And a long `astral calibrate` says what it is doing on a terminal."""
from __future__ import annotations

import pytest

from astral_dsl.runs import configs, fit as F
from astral_dsl.runs.table import parse_table

from test_runs import _csv, _row

BASE = ("n1_7b", "n7_5b", "n39_1b")
FIGURES = ("tokens_per_s_per_gpu", "step_time_s", "model_tflops_per_gpu")


def _rows(repeats: int, figures=None):
    """The BASE runs, each `repeats` times under ids of its own (`figures`: the published
    figure of each copy after the first, as a scale of the original's)."""
    out = []
    for k in range(repeats):
        for base in BASE:
            row = _row(base, id=f"{base}_{k}")
            if k and figures and figures[k - 1] != 1:
                (metric,) = [m for m in FIGURES if row[m]]
                row[metric] = str(round(float(row[metric]) * figures[k - 1], 3))
            out.append(row)
    rows, _ = F.rows_of([("t", parse_table(_csv(out), "t.csv"))])
    assert len(rows) == repeats * len(BASE)
    return rows


@pytest.fixture
def counted(monkeypatch):
    """Every forecast the fit makes: Seer's iteration() and run() (the rule's choices)."""
    from benchmarks.bench_calibrate import counting

    return counting(monkeypatch.setattr)


def _work(rows):
    """What a fit does at each step: the rule's choices, uses(), the log errors, a Jacobian."""
    from astral_dsl.seer.calibration import CONSTANTS, priors

    prob = F.Problem(rows, CONSTANTS, priors())
    prob.find_depends()
    x = prob.x(priors())
    r = prob.residuals(priors())
    return prob, r, prob.jacobian(x, r)


def test_repeated_rows_cost_the_forecasts_of_one(counted):
    once, r1, j1 = _work(_rows(1))
    cost = dict(counted)
    counted.update(iteration=0, run=0)
    thrice, r3, j3 = _work(_rows(3))
    assert cost["iteration"] > len(BASE) and cost["run"] == len(BASE)
    assert dict(counted) == cost and thrice.forecasts == once.forecasts
    assert F.configurations([r.prepared for r in _rows(3)]) == ([0, 1, 2] * 3, [0, 1, 2])
    n = len(BASE)
    assert [r3[i] for i in range(3 * n)] == [r1[i] for i in range(n)] * 3
    assert (j3[:3 * n] == list(j1[:n]) * 3).all()


def test_sharing_the_forecasts_changes_no_number(monkeypatch):
    """The fit of a table of repeats (with figures of their own) is the fit that forecast every
    row on its own: the same constants, Jacobian and log errors; and a repeat with the
    original's figure has the original's error."""
    rows = _rows(3, figures=(1.0, 0.9))
    shared = F.fit(rows, max_iter=3)
    every = list(range(len(rows)))
    monkeypatch.setattr(F, "configurations", lambda rows: (every, every))
    alone = F.fit(rows, max_iter=3)
    assert alone[1].forecasts > shared[1].forecasts
    assert shared[0] == alone[0]
    assert (shared[2] == alone[2]).all()
    assert shared[3] == alone[3]
    assert shared[1].specs == alone[1].specs       # each row's job under its own name
    assert [s.name for s in shared[1].specs] == [r.prepared.spec.name for r in rows]
    n = len(BASE)
    for i in range(n):
        assert shared[3][i] == shared[3][n + i] != shared[3][2 * n + i]


def test_a_configuration_is_what_the_forecast_reads_not_the_row():
    """Rows of one configuration share it whatever their ids, links and figures; a stated
    column Seer reads (the micro-batch), or a release it reads another stack from, makes
    another."""
    same = [_row("n7_5b"), _row("n7_5b", id="again", source_url="https://example.com/rerun",
                                  model_tflops_per_gpu="100")]
    other = [_row("n7_5b", id="micro2", mbs="2"),
             _row("n7_5b", id="nemo", source_version="NeMo 25.09 container")]
    rows, _ = F.rows_of([("t", parse_table(_csv(same + other), "t.csv"))])
    assert [configs.stated(r.prepared) == configs.stated(rows[0].prepared) for r in rows] == \
        [True, True, False, False]
    assert F.configurations([r.prepared for r in rows]) == ([0, 0, 1, 2], [0, 2, 3])


def test_runs_forecasts_a_configuration_once(counted, tmp_path):
    """`astral runs` forecasts each configuration once (configs.py), as a fit does: a table of
    20,000 copies of one run had not finished in 200 s at one forecast a row. Each row keeps
    its own job name, figures and errors, the numbers of each row forecast on its own."""
    from astral_dsl.runs.evaluate import evaluate, evaluate_one, prepare
    from astral_dsl.seer.calibration import shipped

    rows = [_row(b, id=f"{b}_{k}") for k in range(4) for b in BASE]
    rows[-1] = _row(BASE[-1], id="own", tokens_per_s_per_gpu="400")   # a figure of its own
    prepared = prepare(parse_table(_csv(rows), "t.csv"))
    counted.update(iteration=0, run=0)
    shared = evaluate(prepared, shipped())
    assert counted["run"] == len(BASE)
    alone = [evaluate_one(p, shipped()) for p in prepared]
    assert shared == alone
    assert [r.job.name for r in shared] == [f"run_{r['id']}" for r in rows]
    assert shared[-1].error != shared[len(BASE) - 1].error


def test_calibrate_says_what_it_is_doing_on_a_terminal(tmp_path):
    from test_progress import _with_a_terminal

    from test_runs import _write

    path = _write(tmp_path, [_row(b) for b in BASE], "small.csv")
    # refits in this process tell each one's iterations; in forked ones, each refit done
    for jobs, said in (("1", "astral calibrate: leaving out configuration 1 of 3: fitting 2 runs "
                             "(2 configurations), iteration 1 ("),
                       ("2", "astral calibrate: left out 1 of 3 configurations, each refitted (")):
        code, out, tty = _with_a_terminal(["calibrate", str(path), "--max-iterations", "2",
                                           "--jobs", jobs], ASTRAL_PROGRESS_DELAY="0")
        assert code == 0, (out, tty)
        assert said in tty
        assert tty.rstrip("\r\n").endswith("\r\x1b[K") and "astral calibrate:" not in out


def test_calibrate_off_a_terminal_prints_nothing_new(tmp_path, capsys):
    from astral_dsl import cli

    from test_runs import _write

    path = _write(tmp_path, [_row(b) for b in BASE], "small.csv")
    assert cli.main(["calibrate", str(path), "--max-iterations", "2"]) == 0
    err = capsys.readouterr().err
    assert "astral calibrate:" not in err and "\x1b[K" not in err


def test_the_spread_of_repeats_is_the_least_over_the_published_values():
    """repeats(): the least mean |c / v - 1| over the published values c of a set, found at
    their median weighted 1 / v (not by trying every value against every other: a run given
    100,000 times), the same number as trying them all."""
    import random

    from astral_dsl.runs.repeats import least_spread

    rnd = random.Random(60)
    for _ in range(2000):
        pool = [round(rnd.uniform(1, 1000), rnd.choice((0, 1, 3))) or 1.0
                for _ in range(rnd.randint(1, 6))]
        values = [rnd.choice(pool) for _ in range(rnd.randint(1, 12))]
        assert least_spread(values) == min(sum(abs(c / v - 1.0) for v in values)
                                           for c in values), values


def test_beyond_left_out_is_against_the_other_groups_ranges():
    """Each row's dimensions outside the ranges of the rows of the other groups (merged from
    each group's own ranges), as reading the other rows' points again gives them."""
    import random

    from astral_dsl.runs.fit_document import beyond_left_out, grouped
    from astral_dsl.seer import checked

    rnd = random.Random(60)
    for _ in range(300):
        points = [{k: rnd.choice((1, 2, 4, 8, 2.0)) for k in
                   rnd.sample(list(checked.NAMES), rnd.randint(1, 6))}
                  for _ in range(rnd.randint(1, 30))]
        keys = [rnd.randint(0, 5) for _ in points]
        expected = [[] for _ in points]
        for idx in grouped(keys).values():
            others = checked.ranges(p for i, p in enumerate(points) if i not in idx)
            for i in idx:
                expected[i] = [b.field for b in checked.beyond(points[i], others)]
        assert beyond_left_out(points, keys) == expected
