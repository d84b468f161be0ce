"""W778: a runs-table row that publishes tokens/s per GPU and a step time that disagree beyond
their cells' rounding is warned of at the two cells, with the step the tokens/s imply (the row
is scored on the tokens/s: score.published); rows that agree within rounding, as the shipped
tables' do, are not."""
from __future__ import annotations

import csv
import io

from astral_dsl import score_runs
from astral_dsl.runs.agree import half_unit
from astral_dsl.runs.table import COLUMNS, parse_table, read_table
from astral_dsl.seer.calibration import RUN_FILES

MODERN = list(csv.DictReader(io.StringIO(RUN_FILES["modern"].read_text(encoding="utf-8"))))
R241 = next(r for r in MODERN if r["id"] == "r241")    # 64 GPUs, gbs 96, seq 8192


def _csv(rows) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return out.getvalue()


def test_half_units_of_the_written_digits():
    assert half_unit("3.313") == 0.0005 and half_unit("4,912") == 0.5
    assert half_unit("5000") == 500 and half_unit("3708.5") == 0.05 and half_unit("n/a") is None


def test_a_step_time_the_tokens_do_not_imply_is_w778_over_the_two_cells():
    # r241: 96 x 8192 tokens per step / (3708.5 tokens/s per GPU x 64 GPUs) = 786,432 /
    # 237,344 = 3.3135 s; 3.4 s is 3.4 / 3.3135 - 1 = +2.6 % from it, beyond the rounding
    # 0.05 / 3708.5 + 0.05 / 3.4 = 1.5 % and within the 5 % past which the row is rejected
    # (E777: 3.9 s, +17.7 %, row g); 3.313 s (r241's own) is within 0.0005 / 3.313 +
    # 0.05 / 3708.5 = 0.03 %, and so is 3.31 (its rounding 0.005 / 3.31 = 0.15 %); 3.30 is not
    # (3.30 / 3.3135 - 1 = -0.41 % against 0.005 / 3.30 + 0.0013 % = 0.15 %)
    rows = [dict(R241, id="a", step_time_s="3.4"), dict(R241, id="b"),
            dict(R241, id="c", step_time_s="3.31"), dict(R241, id="d", step_time_s="3.30"),
            dict(R241, id="e", step_time_s=""), dict(R241, id="f", step_time_s="x"),
            dict(R241, id="g", step_time_s="3.9")]
    text = _csv(rows)
    t = parse_table(text, "t.csv")
    assert [d.code for d in t.warnings] == ["W778", "W778"]
    a, d = t.warnings
    assert "row `a`: step_time_s 3.4 s and tokens_per_s_per_gpu 3708.5 disagree" in a.message
    assert "96 x 8,192 / (3708.5 x 64) = 3.313 s" in a.message and "+2.6 %" in a.message
    assert "row `d`" in d.message and "-0.4 %" in d.message
    assert a.hint and "3.313 s" in a.hint and a.severity.name == "WARNING"
    line = text.splitlines()[1]
    got = line[a.span.start.column - 1:a.span.end.column - 1]
    assert got == "3708.5,,3.4" and a.span.start.line == 2
    assert [r.id for r in t.runs if r.problems] == ["f", "g"]   # rejected (E777), not W778


def test_the_shipped_tables_agree_within_their_rounding():
    for path in RUN_FILES.values():
        assert read_table(path).warnings == ()


def test_the_library_returns_the_warning(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(_csv([dict(R241, step_time_s="3.4", gpus="n/a")]), encoding="utf-8")
    assert read_table(path).warnings == ()        # no GPU count: no step is implied
    path.write_text(_csv([dict(R241, step_time_s="3.4")]), encoding="utf-8")
    got = score_runs(path)
    assert [d.code for d in got.diagnostics] == ["W778"]
    assert got.rows[0].metric == "tokens_per_s_per_gpu"      # still scored on the tokens/s
