"""`astral forecast`'s options read as a user means them: a `--window` past the job's
micro-batches, `A:` to the last, an operator table's rows that priced nothing named, the JSON's
"may not fit" as the table says it (docs/seer.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_cli import call

TINY = Path(__file__).parent / "fixtures" / "diagnose" / "tiny.astral"   # 8 micro-batches


def test_window_reads_a_colon_without_its_end_as_to_the_last():
    from astral_dsl.cli.forecast import _window

    assert _window("3:") == (3, None)          # was (3, 4): one micro-batch, in silence
    assert _window(":4") == (0, 4)
    assert _window("3") == (3, 4)


@pytest.mark.parametrize("window, kept", [("6:", [6, 8]), ("6:100", [6, 8]), ("7..7", [7, 8])])
def test_a_window_stops_at_the_last_micro_batch(capsys, tmp_path, window, kept):
    """tiny.astral: global batch 8, micro 1, dp 1: micro-batches 0..7."""
    out = tmp_path / "t.json"
    code, _, err = call(["forecast", str(TINY), "--trace", str(out), "--window", window],
                        capsys)
    assert code == 0, err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["otherData"]["window"] == kept
    mbs = {e["args"].get("micro_batch") for e in doc["traceEvents"] if e["ph"] == "X"}
    assert mbs - {None} == set(range(*kept))


@pytest.mark.parametrize("option", ["--trace", "--plot"])
def test_a_window_past_the_micro_batches_is_a_usage_error(capsys, tmp_path, option):
    """It wrote the optimizer step alone (a chart titled "micro-batches 8-9"), exit 0."""
    out = tmp_path / ("t.json" if option == "--trace" else "t.png")
    code, stdout, err = call(["forecast", str(TINY), option, str(out), "--window", "8:10"],
                             capsys)
    assert code == 2 and stdout == ""
    assert "--window 8:10: the job has 8 micro-batches per pipeline (0..7)" in err
    assert not out.exists()
