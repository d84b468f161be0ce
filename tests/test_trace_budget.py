"""A trace's events are counted before they cost memory (tracedoc.MAX_EVENTS, MAX_KEPT): a 400 kB
gzip file inflating to 10^8 elements `0,0,0,...` took 11 GB (msgspec's view of each element, 56
bytes: 28 times the file), E000 out of memory under a limit, and one of tiny kernels 10 times
its size. Now E781, the trace refused, its count read from the bytes (observe/jsoncount.py)."""
from __future__ import annotations

import gzip
import json
import random
from typing import List

import msgspec
import pytest

from astral_dsl.observe import jsoncount, ranklog, tracedoc
from astral_dsl.observe.load import read_file

HEAD = b'{"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": ['


def _codes(path):
    traces, diags = read_file(str(path))
    return traces, [(d.code, d.message) for d in diags]


def test_a_gzip_file_of_more_elements_than_the_budget_is_refused_before_they_are_built(tmp_path):
    p = tmp_path / "rank-0.json.gz"
    n = tracedoc.MAX_EVENTS + 1                    # 20 MB inflated, from 20 kB
    p.write_bytes(gzip.compress(HEAD + b"0," * (n - 1) + b"0]}"))
    traces, said = _codes(p)
    assert traces == [] and said == [(
        "E781", "the trace holds more than 10,000,000 trace events, past the reader's budget "
                "for one rank's trace (its memory): not read")]


@pytest.mark.parametrize("body", [
    HEAD + b"0," * 40 + b"0]}",                                 # the schema's decode
    HEAD + b"NaN," + b"0," * 40 + b"0]}",                       # a NaN: the full parse
    b" [" + b"{}, " * 40 + b"{}]",                              # a bare list of events
    HEAD + b'"\\\\",' * 40 + b"[1, [2, 3], {\"a\": \",\"}]]}",  # escapes, nested commas
], ids=["schema", "full-parse", "bare-list", "escapes"])
def test_every_way_of_reading_stops_past_the_events_budget(tmp_path, monkeypatch, body):
    monkeypatch.setattr(tracedoc, "MAX_EVENTS", 40)
    monkeypatch.setattr(jsoncount, "CHUNK", 7)              # carried from chunk to chunk
    p = tmp_path / "rank-0.json"
    p.write_bytes(body)
    traces, said = _codes(p)
    assert traces == [] and [c for c, _ in said] == ["E781"]
    assert "more than 40 trace events" in said[0][1]


@pytest.mark.parametrize("nan", [False, True])
def test_every_way_of_reading_stops_past_the_kept_events_budget(tmp_path, monkeypatch, nan):
    monkeypatch.setattr(tracedoc, "MAX_KEPT", 5)
    kernels = b"".join(b'{"ph": "X", "cat": "kernel", "name": "k", "ts": %d, "dur": 1}, ' % i
                       for i in range(6))
    p = tmp_path / "rank-0.json"
    p.write_bytes(HEAD + (b"NaN, " if nan else b"") + kernels + b"0]}")
    traces, said = _codes(p)
    assert traces == [] and said == [(
        "E781", "the trace holds more than 5 GPU kernels, memory copies, launches and "
                "ProfilerStep annotations, past the reader's budget for one rank's trace (its "
                "memory): not read")]


def test_a_trace_within_the_budget_is_read_as_before(tmp_path, monkeypatch):
    """Its commas past the budget (so counted), its events within: read, the same trace."""
    step = b'{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 0, "dur": 100}, '
    kernels = b", ".join(b'{"ph": "X", "cat": "kernel", "name": "k", "ts": %d, "dur": 1, '
                         b'"args": {"device": 0}}' % (10 * i) for i in range(7))
    p = tmp_path / "rank-0.json"
    p.write_bytes(HEAD + step + kernels + b"]}")
    before, said = _codes(p)
    monkeypatch.setattr(tracedoc, "MAX_EVENTS", 8)           # 8 events, 48 commas
    monkeypatch.setattr(jsoncount, "CHUNK", 5)
    after, again = _codes(p)
    assert again == said and [t.rank for t in after] == [t.rank for t in before] == [0]
    assert after[0].duration.tolist() == before[0].duration.tolist() and \
        after[0].start.tolist() == before[0].start.tolist() and len(after[0].start) == 7


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 3 else 3)
    if kind == 0:
        return rng.choice([0, -1.5, None, True])
    if kind in (1, 2):       # strings of quotes, backslashes and brackets: escapes of any run
        return "".join(rng.choice(['\\', '"', ",", "[", "]", "{", "}", "a", "\\\\", "\u2028"])
                       for _ in range(rng.randrange(9)))
    if kind in (3, 4):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(_value(rng, 3)): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_the_count_is_the_arrays_length_whatever_the_chunks(monkeypatch):
    views = msgspec.json.Decoder(List[msgspec.Raw])
    rng = random.Random(7)
    for _ in range(400):
        text = json.dumps([_value(rng) for _ in range(rng.randrange(6))],
                          indent=rng.choice([None, 1])).encode()
        for chunk in (1, 2, 3, 8, 1 << 24):
            monkeypatch.setattr(jsoncount, "CHUNK", chunk)
            assert jsoncount.elements(text, 10 ** 9) == len(views.decode(text)), (chunk, text)


def test_a_gzip_rank_log_of_more_rows_than_the_budget_is_refused_before_they_are_read(tmp_path):
    """A 780 kB gzip log of 25 million rows took 17 GB (E000 out of memory under a limit)."""
    p = tmp_path / "job.csv.gz"
    rows = ranklog.MAX_ROWS + 1                    # 64 MB inflated, from 60 kB
    p.write_bytes(gzip.compress(b"rank,iteration,phase,start_s,duration_s\n"
                                + b"0,1,forward,1,1\n" * (rows - 1)))
    traces, said = _codes(p)
    assert traces == [] and said == [(
        "E781", "the rank log holds 4,000,001 lines, more than the 4,000,000 rows one file is "
                "read with (their memory): not read")]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("jsonl", [False, True])
def test_a_rank_logs_lines_are_counted_at_every_line_end(tmp_path, monkeypatch, end, jsonl):
    monkeypatch.setattr(ranklog, "MAX_ROWS", 4)
    row = '{"rank": 0, "iteration": 1, "phase": "forward", "start_s": %d, "duration_s": 1}' \
        if jsonl else "0,1,forward,%d,1"
    head = [] if jsonl else ["rank,iteration,phase,start_s,duration_s"]
    p = tmp_path / ("job.jsonl" if jsonl else "job.csv")
    for lines, refused in ((4, False), (5, True)):       # each ended, the header's too
        rows = [row % i for i in range(lines - len(head))]
        p.write_bytes(end.join(head + rows + [""]).encode())
        traces, said = _codes(p)
        assert bool(said) == refused and len(traces) == (not refused), (lines, said)
        if refused:
            assert said[0][0] == "E781" and "more than the 4 rows" in said[0][1]
