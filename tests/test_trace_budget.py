"""A trace's events are counted before they cost memory (tracedoc.MAX_EVENTS, MAX_KEPT): a 400 kB
gzip file inflating to 10^8 elements `0,0,0,...` took 11 GB (msgspec's view of each element, 56
bytes: 28 times the file), E000 out of memory under a limit, and one of tiny kernels 10 times
its size. Now E781, the trace refused, its count read from the bytes (observe/jsoncount.py)."""
from __future__ import annotations

import gzip
import json
import pickle
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


# ---- the memory budget of a large file's parse (observe/budget.py) ---------------------------
# A value built whole outside the events read (a key the reader does not use, `distributedInfo`,
# a kernel's field, an event the schema does not fit, a JSON Lines row, a CSV row): a trace
# `{"junk": [[], [], ...]}` of 30 million entries, 87 kB gzipped, peaked at 2.2 GB (about 27
# GB at the 1 GiB cap). Here each is 2,000,000 entries, 128 MB of lists or more, every file
# parsed in the bounded child with a budget of 8 MiB (the child's address space grows first
# into what the process holds unused at the fork: a thread's malloc arena reserves 64 MiB).
JUNK = b"[" + b"[]," * 1_999_999 + b"[]]"
KERNEL = b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1'
HOSTILE = {
    "a key not read": b'{"junk": ' + JUNK + b"}",
    "a key not read, NaN": b'{"traceEvents": [{"ts": NaN}], "junk": ' + JUNK + b"}",
    "distributedInfo": b'{"traceEvents": [], "distributedInfo": {"rank": 0, "x": ' + JUNK
                       + b"}}",
    "deviceProperties": b'{"traceEvents": [], "deviceProperties": ' + JUNK + b"}",
    "a kernel's name": b'{"traceEvents": [' + KERNEL.replace(b'"k"', JUNK) + b"}]}",
    "an event the schema does not fit": b'{"traceEvents": [' + KERNEL + b', "args": null, '
                                        b'"x": ' + JUNK + b"}]}",
    "a JSON Lines row": b'{"rank": 0, "iteration": 1, "phase": "forward", "start_s": 1, '
                        b'"duration_s": 1, "x": ' + JUNK + b"}\n",
    "a CSV row": b"rank,iteration,phase,start_s,duration_s\n" + b"ab," * 2_000_000 + b"\n",
}


@pytest.fixture
def small_budget(monkeypatch):
    from astral_dsl.observe import budget

    monkeypatch.setattr(budget, "FROM_BYTES", 0)
    return budget


# Each file is read in a fresh process (one for them all): the child's budget is address space
# beyond what the reading process holds at the fork, and what a long test run's process holds
# unused (its allocator's freed heap, which the child may fill first) is no small budget: after
# a few hundred other tests, 128 MB of lists had fitted within it and been read (the parse is
# bounded by that process's free memory plus BUDGET, as budget.py says, not by BUDGET alone).
_READ_EACH = """
import json, sys
from astral_dsl.observe import budget
from astral_dsl.observe.load import read_file
budget.FROM_BYTES, budget.BUDGET = 0, 8 << 20
out = {}
for path in sys.argv[1:]:
    traces, diags = read_file(path)
    out[path] = [len(traces), [[d.code, d.message] for d in diags]]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def hostile_read(tmp_path_factory):
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("hostile")
    paths = {}
    for i, (where, body) in enumerate(HOSTILE.items()):
        p = folder / str(i) / ("rank-0.csv.gz" if where == "a CSV row" else "rank-0.json.gz")
        p.parent.mkdir()
        p.write_bytes(gzip.compress(body))
        paths[where] = str(p)
    done = subprocess.run([sys.executable, "-c", _READ_EACH, *paths.values()],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout)
    return {where: read[path] for where, path in paths.items()}


@pytest.mark.parametrize("where", list(HOSTILE))
def test_a_value_built_whole_past_the_memory_budget_is_refused(hostile_read, where):
    traces, said = hostile_read[where]
    assert traces == 0 and said == [[
        "E781", "the read of the file took more than the reader's memory budget (8 MiB beyond "
                "the file's bytes): not read"]], where


def test_a_file_within_the_budget_reads_the_same_in_the_bounded_child(small_budget, tmp_path):
    """A real trace (and a rank log) parsed in the child: the same traces and diagnostics."""
    from pathlib import Path

    log = tmp_path / "job.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s\n" +
                   "".join(f"{r},{i},forward,{i}.5,0.25\n" for r in range(2) for i in range(3)) +
                   "0,9,forward,x,1\n")
    real = Path(__file__).parent / "fixtures" / "traces" / "nccl_data_rank-0.json.gz"
    for path in (str(real), str(log)):
        child = read_file(path)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(small_budget, "FROM_BYTES", 1 << 40)
            here = read_file(path)
        assert child[1] == here[1] and len(child[0]) == len(here[0]) > 0
        for a, b in zip(child[0], here[0]):
            assert pickle.dumps(a) == pickle.dumps(b)


def test_the_bounded_child_says_its_death_and_raises_its_errors(small_budget):
    import os
    import signal

    def die(handed):
        os.kill(os.getpid(), signal.SIGKILL)

    def fail(handed):
        raise ValueError("a reader's bug")

    def pid(what, handed):
        return what, handed.pop(), os.getpid()

    with pytest.raises(small_budget.OverBudget, match=r"died \(out of memory, or killed\)"):
        small_budget.bounded(die, handed=[])
    with pytest.raises(ValueError, match="a reader's bug"):
        small_budget.bounded(fail, handed=[])
    handed = [b"bytes"]
    assert small_budget.bounded(pid, "x", handed=handed)[:2] == ("x", b"bytes") and \
        handed == []                         # the child's alone: dropped here at the fork
    assert small_budget.bounded(pid, "x", handed=[b""])[2] != os.getpid()


def test_a_child_at_its_cap_is_ended_as_over_budget_not_left_to_fail_mappings(small_budget,
                                                                              monkeypatch):
    """A parse at its address-space cap went on, every object it made one failed mapping of an
    arena (730,000 of them, 6.4 s, for each hostile file above, before its MemoryError): the
    parent now ends a child within an arena of its cap, with the memory budget's E781. This
    child fills its space to there and then waits, as one that failed mappings would go on."""
    import mmap
    import resource
    import time

    monkeypatch.setattr(small_budget, "BUDGET", 64 << 20)

    def fill(handed):
        cap = resource.getrlimit(resource.RLIMIT_AS)[0]
        with open("/proc/self/statm") as fh:
            size = int(fh.read().split()[0]) * resource.getpagesize()
        held = mmap.mmap(-1, cap - size - small_budget.ARENA // 2)
        time.sleep(30)
        return len(held)

    with pytest.raises(small_budget.OverBudget, match=r"took more than the reader's memory "
                                                       r"budget \(64 MiB beyond"):
        small_budget.bounded(fill, handed=[])


def test_the_bounded_child_is_the_out_of_memory_killers_first_choice(small_budget):
    """On a machine with less free memory than the budget the kernel kills the child (E781),
    not the process that reads the files or another program."""
    def score(handed):
        with open("/proc/self/oom_score_adj") as fh:
            return fh.read().strip()

    assert small_budget.bounded(score, handed=[]) == "1000"


@pytest.mark.parametrize("name, forked", [("another", False), ("astral-progress", True)])
def test_with_another_thread_running_the_parse_is_not_forked(small_budget, name, forked):
    """A fork could catch another thread holding a lock (the child would wait for ever); the
    progress line of `astral diagnose` on a terminal takes none the child needs."""
    import os
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name=name)
    other.start()
    try:
        pid = small_budget.bounded(lambda handed: os.getpid(), handed=[])
    finally:
        stop.set()
        other.join()
    assert (pid != os.getpid()) == forked
