"""A profiler trace's kernels and ProfilerStep annotations whose `ts` or `dur` cannot be read
(not a number, not finite, a negative duration) are skipped and said (E784, as a
rank log's unreadable rows are): they were dropped without a word, and a trace whose step
annotations had NaN starts was then left out as "not a rank of the job" alone (E790, its
iterations numbered by their pattern), one whose kernels had negative durations as "no GPU
kernel falls in a profiled iteration" alone."""
from __future__ import annotations

import json

import pytest

from astral_dsl.observe import read_file


def _trace(kernels, steps=((0.0, 100.0), (100.0, 100.0))) -> dict:
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i + 1}", "ts": ts,
               "dur": dur, "pid": 1, "tid": 1} for i, (ts, dur) in enumerate(steps)]
    events += [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": ts, "dur": dur, "pid": 0,
                "tid": 7, "args": {"device": 0}} for ts, dur in kernels]
    return {"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": events}


def _read(tmp_path, doc):
    path = tmp_path / "rank-0.json"
    path.write_text(json.dumps(doc))              # NaN and Infinity as Python's json writes them
    traces, diags = read_file(str(path))
    return traces, [(d.code, d.message) for d in diags]


GOOD = [(10.0, 20.0), (40.0, 20.0), (110.0, 20.0), (140.0, 20.0)]


def test_a_sound_trace_says_nothing(tmp_path):
    traces, diags = _read(tmp_path, _trace(GOOD))
    assert diags == [] and len(traces) == 1
    assert traces[0].iteration.tolist() == [1, 1, 2, 2]


def test_kernels_with_unreadable_times_are_skipped_and_said(tmp_path):
    bad = [(float("nan"), 5.0), (60.0, -5.0), (70.0, 10 ** 400), (70.0, float("inf")), ("12", 5.0)]
    traces, diags = _read(tmp_path, _trace(GOOD + bad))
    assert len(traces) == 1 and traces[0].iteration.tolist() == [1, 1, 2, 2]
    [(code, message)] = diags
    assert code == "E784"
    assert message.startswith("5 GPU kernel or ProfilerStep event(s) of the trace cannot be "
                              "read and are skipped; one of them, `gemm`: ")
    # one of them: the reason of a kernel whose start is not finite
    assert message.endswith("`ts` is nan: not a finite time")


@pytest.mark.parametrize("kernel, why", [
    ((60.0, -5.0), "`dur` is -5, a negative duration"),
    ((60.0, 10 ** 400), "`dur` is an integer past a float's range: not a finite time"),
    ((None, 5.0), "no `ts`"),
    (("12", 5.0), "`ts` is not a number: '12'"),
])
def test_why_an_event_is_skipped_is_named(tmp_path, kernel, why):
    _, diags = _read(tmp_path, _trace(GOOD + [kernel]))
    assert diags == [("E784", "1 GPU kernel or ProfilerStep event(s) of the trace cannot be "
                              "read and are skipped; one of them, `gemm`: " + why)]


def test_a_step_annotation_with_a_nan_start_is_said(tmp_path):
    traces, diags = _read(tmp_path, _trace(GOOD, steps=((float("nan"), 100.0), (100.0, 100.0))))
    assert ("E784", "1 GPU kernel or ProfilerStep event(s) of the trace cannot be read and are "
                    "skipped; one of them, `ProfilerStep#1`: `ts` is nan: not a finite time") in diags
    assert traces[0].iteration.tolist() == [2, 2]     # the kernels of step 1 fall in none


def test_a_rank_past_c10ds_int_is_no_rank(tmp_path):
    # it was taken, and E786 printed its 401 digits; as a negative one, the file name says
    doc = _trace(GOOD)
    doc["distributedInfo"]["rank"] = 10 ** 400
    traces, diags = _read(tmp_path, doc)
    assert diags == [("W783", "`distributedInfo.rank` is 1000000000000000000000000000000000000"
                              "..., not a rank: the rank is taken from the file name (`rank-N`)")]
    assert traces[0].rank == 0


def test_a_step_annotation_with_a_negative_duration_is_skipped_and_said(tmp_path):
    # it was kept as a step (as_num checks no sign) while E784 counted it skipped; the kernels
    # of step 1 then fall in no step
    traces, diags = _read(tmp_path, _trace(GOOD, steps=((0.0, -5.0), (100.0, 100.0))))
    assert diags == [("E784", "1 GPU kernel or ProfilerStep event(s) of the trace cannot be read "
                              "and are skipped; one of them, `ProfilerStep#1`: `dur` is -5, a "
                              "negative duration")]
    assert traces[0].iteration.tolist() == [2, 2]


def test_a_file_name_rank_past_any_world_size_is_no_rank(tmp_path):
    # a 60-digit rank in the name was taken whole when the trace said none
    doc = _trace(GOOD)
    del doc["distributedInfo"]
    path = tmp_path / f"rank-{'9' * 60}.json"
    path.write_text(json.dumps(doc))
    traces, diags = read_file(str(path))
    assert not traces
    [d] = diags
    assert d.code == "E783" and "past any world size" in d.message
    assert "99999999999999999999..." in d.message and "9" * 21 not in d.message
