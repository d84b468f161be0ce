"""`astral runs` beside each row's error in the fit gives, for a row of the shipped fit's own
tables forecast with the shipped constants, its error with its configuration left out of the fit
(runs/left_out.py: the exact refits of fit-exact.json), in the text, the JSON and the API; a row
that differs in any cell, or another fit's constants, get none."""
from __future__ import annotations

import csv
import json
import re

import pytest

from astral_dsl.runs.left_out import left_out
from astral_dsl.runs.table import read_table
from astral_dsl.seer.calibration import FIT_FILE, read_calibration, shipped, \
    shipped_exact_document

from test_cli import call
from test_runs import _row, _write

EXACT = {(r["set"], r["id"]): r["left_out_pct"] / 100 for r in shipped_exact_document()["rows"]}


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """Two A100 runs and a GB200 one as shipped, the GB200 one again under an id of the user's
    (the same published run), and a run of the user's with the GB200 one's layout."""
    rows = [_row("n1_7b"), _row("k22b_sel"), _row("r117"), _row("r117", id="mine"),
            _row("r117", id="ours", tokens_per_s_per_gpu="7000")]
    return _write(tmp_path_factory.mktemp("left"), rows)


def test_a_shipped_row_gets_its_exact_left_out_error_and_another_run_none(table, capsys):
    code, out, _ = call(["runs", str(table), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    rows = doc["rows"]
    assert [r["left_out_error"] for r in rows[:3]] == [
        EXACT["a100", "n1_7b"], EXACT["a100", "k22b_sel"], EXACT["modern", "r117"]]
    # the left-out figure differs from the error in the fit (the fit saw the row)
    assert all(r["left_out_error"] != r["error"] for r in rows[:3])
    # the same published run under the user's id: the same figures
    assert rows[3]["error"] == rows[2]["error"]
    assert rows[3]["left_out_error"] == rows[2]["left_out_error"]
    # the user's own run of that layout (another published figure): none
    assert rows[4]["status"] == "ok" and rows[4]["error"] is not None
    assert rows[4]["left_out_error"] is None
    left = doc["summary"]["left_out"]
    assert left["rows"] == 4 and left["families"]["all"]["rows"] == 4
    four = [r["left_out_error"] for r in rows[:4]]
    assert left["families"]["all"]["mean_abs_pct"] == pytest.approx(
        100 * sum(map(abs, four)) / 4, abs=0.006)
    assert left["families"]["A100 BF16 dense"]["rows"] == 2


def test_a_shipped_id_with_another_cell_is_another_run(tmp_path, capsys):
    """The shipped row's id with another published figure (or any other cell) is not the run
    the exact refits left out."""
    for cells in ({"tokens_per_s_per_gpu": "7000"}, {"notes": "our own rerun"},
                  {"source_version": "our cluster, 2026-12"}):
        path = _write(tmp_path, [_row("r117", **cells)])
        code, out, _ = call(["runs", str(path), "--format", "json"], capsys)
        (row,) = json.loads(out)["rows"]
        assert code == 0 and row["error"] is not None and row["left_out_error"] is None, cells


def test_the_text_shows_the_left_out_column_and_family_figure(table, capsys):
    code, out, _ = call(["runs", str(table)], capsys)
    assert code == 0
    assert "left out |error|" in out and "fit-exact.json" in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if re.match(r"id +model ", line))
    assert "left" in lines[head - 1].split() and "out" in lines[head].split()
    a100 = next(line for line in lines if line.startswith("A100 BF16 dense"))
    want = 100 * (abs(EXACT["a100", "n1_7b"]) + abs(EXACT["a100", "k22b_sel"])) / 2
    assert a100.rstrip().endswith(f"{want:.1f} %")
    # GB200's family holds three rows, two of them the shipped run: the count in brackets
    gb200 = next(line for line in lines if line.startswith("GB200 "))
    assert gb200.rstrip().endswith("(2)")


def test_another_fits_constants_give_no_left_out_figure(table, capsys):
    """fit.json alone (its one-step bands, without fit-exact.json) is not the shipped fit: its
    forecasts are not those the exact refits were measured against."""
    assert read_calibration(FIT_FILE) != shipped()
    code, out, _ = call(["runs", str(table), "--format", "json", "--calibration",
                         str(FIT_FILE)], capsys)
    assert code == 0
    doc = json.loads(out)
    assert all(r["left_out_error"] is None for r in doc["rows"])
    assert doc["summary"]["left_out"] == {"rows": 0, "families": {}}
    code, out, _ = call(["runs", str(table), "--calibration", str(FIT_FILE)], capsys)
    assert "left out |error|" not in out and "fit-exact.json" not in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if re.match(r"id +model ", line))
    assert "left" not in lines[head - 1] + lines[head]


def test_the_api_rows_carry_it_and_the_columns_order_does_not_matter(table, tmp_path):
    from astral_dsl import score_runs

    rows = score_runs(table).rows
    assert [r.left_out for r in rows] == [EXACT["a100", "n1_7b"], EXACT["a100", "k22b_sel"],
                                          EXACT["modern", "r117"], EXACT["modern", "r117"],
                                          None]
    # the same rows with the columns reversed: the same runs
    with open(table, encoding="utf-8", newline="") as fh:
        lines = list(csv.reader(fh))
    flipped = tmp_path / "flipped.csv"
    with open(flipped, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([list(reversed(c)) for c in lines])
    runs = read_table(flipped).runs
    assert [left_out(r, shipped()) for r in runs] == [r.left_out for r in rows]


def test_two_shipped_rows_alike_but_for_their_ids_give_neither(tmp_path, monkeypatch):
    """A table whose two rows differ only by their ids, with other left-out figures: which one a
    user's row is cannot be told, so neither figure is given."""
    from astral_dsl.runs import left_out as lo
    from astral_dsl.seer import calibration as cal

    _write(tmp_path, [_row("r117"), _row("r117", id="twin")], name="modern.csv")
    doc = {"rows": [{"set": "modern", "id": "r117", "left_out_pct": 1.0},
                    {"set": "modern", "id": "twin", "left_out_pct": 2.0}]}
    monkeypatch.setattr(cal, "HERE", tmp_path)
    monkeypatch.setattr(cal, "shipped_exact_document", lambda: doc)
    lo._shipped_rows.cache_clear()
    try:
        (run, _) = read_table(tmp_path / "modern.csv").runs
        assert lo.left_out(run, shipped()) is None
        doc["rows"][1]["left_out_pct"] = 1.0        # alike figures: the run is told
        lo._shipped_rows.cache_clear()
        assert lo.left_out(run, shipped()) == 0.01
    finally:
        monkeypatch.undo()
        lo._shipped_rows.cache_clear()
