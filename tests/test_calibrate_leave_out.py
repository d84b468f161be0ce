"""`astral calibrate --leave-out exact|one-step` and `--jobs N` (runs/accuracy.py): how each
group's (and each source's) refit without its rows is made, the exact refits in forked
processes (pools.forked_map) giving the same figures whatever their number; and the docs' tables
of an exact fit (`NAME-exact`, outputs/calibration.py `rewrite`)."""
from __future__ import annotations

import json
import os

import pytest

from astral_dsl import cli
from astral_dsl.outputs import calibration as tables
from astral_dsl.pools import forked_map
from astral_dsl.runs import accuracy
from astral_dsl.runs.evaluate import evaluate_one
from astral_dsl.runs.fit import fitted, rows_of
from astral_dsl.runs.table import parse_table
from test_cli import call
from test_runs import _row, _write

# two of Korthikanti et al.'s runs and two of Narayanan et al.'s: four configurations, two
# sources; two iterations a fit (seconds of CPU)
ROWS = ("k22b_full", "k175b_sel", "n1_7b", "n39_1b")
ITERATIONS = 2


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("leave_out")
    return _write(d, [_row(b) for b in ROWS], "four.csv")


@pytest.fixture(scope="module")
def exact(table, tmp_path_factory):
    """The table's fit with every leave-out refit exact, in this process."""
    return _fit(table, tmp_path_factory.mktemp("exact"), "--leave-out", "exact", "--jobs", "1")


def _fit(path, tmp_path, *flags):
    out = tmp_path / f"fit{len(list(tmp_path.iterdir()))}.json"
    code = cli.main(["calibrate", str(path), "--max-iterations", str(ITERATIONS),
                     "--by-source", "four", "-o", str(out), "--format", "json", *flags])
    assert code == 0
    return out.read_bytes()


def _exact_by_hand(path, keys_of):
    """row id -> its error with the constants fitted from the priors without the rows whose key
    is its own (the definition of an exact leave-out)."""
    rows, _ = rows_of([("four", parse_table(path.read_text(encoding="utf-8"), str(path)))])
    out = {}
    for key in {keys_of(r) for r in rows}:
        cal = fitted([r for r in rows if keys_of(r) != key], max_iter=ITERATIONS)[0]
        for r in rows:
            if keys_of(r) == key:
                out[r.prepared.row.id] = round(100 * evaluate_one(r.prepared, cal).error, 2)
    return out


def test_exact_refits_are_whole_fits_without_the_group_and_without_the_source(table, exact):
    doc = json.loads(exact)
    assert doc["leave_out"] == "exact" and doc["groups"] == 4
    left_out = {r["id"]: r["left_out_pct"] for r in doc["rows"]}
    assert left_out == _exact_by_hand(table, lambda r: r.group)
    # each source left out exactly too (it was one step from the fit whatever the mode)
    by_source = _exact_by_hand(table, lambda r: r.prepared.row.source_version)
    for key, stats in doc["sources"].items():
        mine = [v for rid, v in by_source.items() if rid[0] == ("k" if "Korth" in key else "n")]
        assert stats["rows"] == 2
        assert stats["left_out_max_pct"] == pytest.approx(max(abs(v) for v in mine), abs=0.011)


def test_the_figures_are_the_same_whatever_the_number_of_processes(table, exact, tmp_path):
    assert _fit(table, tmp_path, "--leave-out", "exact", "--jobs", "3") == exact
    # a small table is left out exactly by default
    assert _fit(table, tmp_path) == exact


def test_one_step_is_chosen_by_name_and_said(table, exact, tmp_path, capsys):
    doc = json.loads(_fit(table, tmp_path, "--leave-out", "one-step"))
    assert doc["leave_out"] == "one-step"
    assert doc["constants"] == json.loads(exact)["constants"]     # the fit itself is the same
    code, out, _ = call(["calibrate", str(table), "--max-iterations", "1", "--leave-out",
                         "one-step", "--color", "never"], capsys)
    assert code == 0 and "one Gauss-Newton step from the fit" in out.replace("\n", " ")


@pytest.mark.parametrize("flags, said", [
    (["--jobs", "0"], "--jobs 0: at least one process refits"),
    (["--jobs", "1025"], "--jobs 1,025: more than 1,024 local worker processes"),
    (["--leave-out", "some"], "invalid choice: 'some'"),
    (["--jobs", "\uff12"], "argument --jobs: `\uff12` is not a whole number (digits 0-9)"),
    (["--max-iterations", "1_0"], "`1_0` is not a whole number"),
])
def test_bad_leave_out_options_are_usage_errors(table, flags, said, capsys):
    code, out, err = call(["calibrate", str(table), *flags], capsys)
    assert code == 2 and said in out + err


def test_the_library_refuses_an_unknown_way_of_leaving_out(table):
    with pytest.raises(ValueError, match="leave_out_by is one of exact, one-step or None"):
        accuracy.calibrate([("four", parse_table(table.read_text(encoding="utf-8"),
                                                 str(table)))], leave_out_by="exactly")


def _pid_twice(x):
    return os.getpid(), 2 * x


def test_forked_map_keeps_the_order_and_tells_each_result():
    told = []
    got = forked_map(_pid_twice, range(7), 3, done=told.append)
    assert [v for _, v in got] == [0, 2, 4, 6, 8, 10, 12] and told == list(range(1, 8))
    if hasattr(os, "fork"):
        assert os.getpid() not in {pid for pid, _ in got}          # forked, not here
    here = forked_map(_pid_twice, range(3), 1)
    assert here == [(os.getpid(), 0), (os.getpid(), 2), (os.getpid(), 4)]
    # a thread that could hold a lock the children need: done here
    assert {pid for pid, _ in forked_map(_pid_twice, range(3), 2, safe=lambda: False)} == \
        {os.getpid()}


def _md(*names):
    return "".join(f"<!-- calibration:{n} -->\nold\n<!-- /calibration:{n} -->\n" for n in names)


def test_exact_tables_are_written_from_an_exact_fit_only():
    from astral_dsl.seer.calibration import shipped_document

    one_step = dict(shipped_document(), leave_out="one-step")
    exact = dict(one_step, leave_out="exact",
                 families={k: dict(v, mean_abs_pct=99.0)
                           for k, v in one_step["families"].items()})
    both = _md("accuracy", "accuracy-exact", "constants")
    # a one-step fit writes its tables and leaves the exact ones
    text = tables.rewrite(both, one_step)
    assert text.count("\nold\n") == 1 and "accuracy-exact -->\nold\n" in text
    # an exact fit then writes only the exact ones: the others stay the one-step fit's
    again = tables.rewrite(text, exact)
    assert again.count("99.0 %") >= 1 and "\nold\n" not in again
    assert again.split("<!-- calibration:accuracy-exact")[0] == \
        text.split("<!-- calibration:accuracy-exact")[0]
    # a file with no exact table takes an exact fit's figures in its tables, as before
    plain = tables.rewrite(_md("accuracy"), exact)
    assert "99.0 %" in plain and "\nold\n" not in plain
    assert tables.markers(both) == ["accuracy", "accuracy-exact", "constants"]

