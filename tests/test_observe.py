"""Reading observed data: the three real PyTorch profiler traces (HolisticTraceAnalysis's test
data, MIT licence, tests/fixtures/traces/), compact rank logs, and every kind of bad input."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

from astral_dsl import observe
from astral_dsl.observe import kineto
from astral_dsl.observe.records import COMM_CODES, COMPUTE_CODES, PHASE_INDEX

TRACES = Path(__file__).parent / "fixtures" / "traces"


def codes(obs):
    return [d.code for d in obs.diagnostics]


def test_nccl_trace_two_rank_job():
    obs = observe.load([str(TRACES / "nccl_data_rank-0.json.gz")])
    assert codes(obs) == []
    t = obs.ranks[0]
    assert (t.rank, t.world_size, t.iterations_from) == (0, 2, "ProfilerStep")
    assert t.device == "NVIDIA A100-PG509-200"
    assert [g.to_json() for g in t.groups] == [
        {"name": "0", "description": "default_pg", "ranks": [0, 1]}]
    s = t.summary()
    assert sorted(s) == [4, 5, 6]
    # 900 GPU kernels per step (893 compute, 7 NCCL all-reduce/broadcast), as HTA 0.5.0 counts
    # them; the kernel durations summed to the microsecond (HTA floors each to 1 us)
    for it in (4, 5, 6):
        sel = t.iteration == it
        assert np.isin(t.phase[sel], COMPUTE_CODES).sum() == 893
        assert np.isin(t.phase[sel], COMM_CODES).sum() == 7
    assert s[4]["compute_s"] == pytest.approx(38506.406e-6, abs=1e-9)
    assert s[4]["comm_s"] == pytest.approx(11989.021e-6, abs=1e-9)
    assert s[5]["compute_s"] == pytest.approx(38429.422e-6, abs=1e-9)
    assert s[5]["comm_s"] == pytest.approx(12300.029e-6, abs=1e-9)
    assert s[6]["comm_s"] == pytest.approx(22587.443e-6, abs=1e-9)


def test_sampled_traces_of_a_128_rank_job():
    obs = observe.load([str(TRACES / "sampled_rank-0.json.gz"),
                        str(TRACES / "sampled_rank-1.json.gz")])
    assert codes(obs) == []
    assert sorted(obs.ranks) == [0, 1]
    assert [(t.world_size, t.file) for t in obs.traces] == [
        (128, str(TRACES / "sampled_rank-0.json.gz")), (128, str(TRACES / "sampled_rank-1.json.gz"))]
    t1 = obs.ranks[1]
    assert t1.groups == ()              # this trace records no process groups
    s = t1.summary()
    assert sorted(s) == [551, 552]
    # HTA 0.5.0 on iteration 551 of rank 1: 135,548 us of compute kernels, 168,027 us of NCCL
    assert s[551]["compute_s"] == pytest.approx(0.135548, abs=1e-9)
    assert s[551]["comm_s"] == pytest.approx(0.168027, abs=1e-9)
    assert s[552]["compute_s"] == pytest.approx(0.136425, abs=1e-9)
    assert s[552]["comm_s"] == pytest.approx(0.211026, abs=1e-9)
    # its NCCL kernels (SendRecv implementing all-to-all) name no group: generic communication
    assert set(t1.phase[np.isin(t1.phase, COMM_CODES)]) == {PHASE_INDEX["comm"]}


def test_iterations_from_the_repeating_pattern():
    doc = json.load(gzip.open(TRACES / "nccl_data_rank-0.json.gz"))
    doc["traceEvents"] = [e for e in doc["traceEvents"]
                          if not str(e.get("name", "")).startswith("ProfilerStep")]
    t, diags = kineto.read("x.json", doc)
    assert diags == [] and t.iterations_from == "pattern" and t.iterations == (0, 1, 2)
    by_step = observe.load([str(TRACES / "nccl_data_rank-0.json.gz")]).ranks[0].summary()
    for it, step in zip((0, 1, 2), (4, 5, 6)):
        # cut at the largest idle gap instead of the step annotation: the same kernels but for
        # a few at the edges
        assert t.summary()[it]["compute_s"] == pytest.approx(by_step[step]["compute_s"],
                                                             rel=0.01)


def test_group_kinds_from_process_group_names():
    assert kineto.group_kind("TENSOR_MODEL_PARALLEL_GROUP") == "tp"
    assert kineto.group_kind("PIPELINE_MODEL_PARALLEL_GROUP") == "pp"
    assert kineto.group_kind("DATA_PARALLEL_GROUP_WITH_CP") == "dp"
    assert kineto.group_kind("EXPERT_MODEL_PARALLEL_GROUP") == "ep"
    assert kineto.group_kind("default_pg") == ""


LOG = """rank,iteration,phase,start_s,duration_s,peer,op
0,1,forward,10.0,0.5,,
0,1,pp_comm,10.5,0.01,1,send
0,1,backward-compute,10.6,1.0,,
1,1,forward-recv,10.4,0.11,0,
1,1,forward,10.51,0.5,,
"""


def test_csv_log(tmp_path):
    p = tmp_path / "job.csv"
    p.write_text(LOG)
    obs = observe.load([str(p)])
    assert codes(obs) == [] and sorted(obs.ranks) == [0, 1]
    t0, t1 = obs.ranks[0], obs.ranks[1]
    assert t0.summary()[1]["compute_s"] == pytest.approx(1.5)
    assert t0.summary()[1]["comm_s"] == pytest.approx(0.01)
    assert list(t0.peer) == [-1, 1, -1]
    # Megatron-LM's timer names: forward-recv is a pipeline receive
    assert t1.phase[0] == PHASE_INDEX["pp_comm"] and t1.op[0] == 2


def test_jsonl_log_reads_as_the_csv(tmp_path):
    lines = [json.dumps({"rank": 0, "iteration": 1, "phase": "forward", "start_s": 1.0,
                         "duration_s": 0.5}),
             json.dumps({"rank": 0, "iteration": 1, "phase": "dp_comm", "start_s": 1.5,
                         "duration_s": 0.25})]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(lines) + "\n")
    obs = observe.load([str(p)])
    assert codes(obs) == []
    assert obs.ranks[0].summary()[1] == {"compute_s": 0.5, "comm_s": 0.25, "memory_s": 0.0,
                                         "span_s": 0.75, "events": 2}


def test_bad_rows_are_skipped_and_named(tmp_path):
    p = tmp_path / "job.csv"
    p.write_text(LOG + "2,1,forward,abc,0.5,,\n3,1,forward,1.0,-2,,\n4,1,warmup,1.0,1.0,,\n")
    obs = observe.load([str(p)])
    assert codes(obs) == ["E784", "W784"]
    assert "2 row(s)" in obs.diagnostics[0].message and "line 7" in obs.diagnostics[0].message
    assert sorted(obs.ranks) == [0, 1, 4]          # the good rows are kept


@pytest.mark.parametrize("bad_row", ["", "2,1,forward,abc,0.5,,\n"])
def test_a_row_repeated_in_one_file_is_read_once(tmp_path, bad_row):
    """A log appended twice: rank 0's forward row (line 2) again at lines 7 and 8 (8 and 9
    after a bad row: the row-by-row road). Rank 0's compute in iteration 1 stays the LOG's
    1.5 s (forward 0.5 + backward-compute 1.0), not 2.5 s; W786 counts the repeats and names
    the first."""
    first = LOG.splitlines()[1]
    p = tmp_path / "job.csv"
    p.write_text(LOG + bad_row + first + "\n" + first + "\n")
    obs = observe.load([str(p)])
    repeat = [d for d in obs.diagnostics if d.code == "W786"]
    assert codes(obs) == (["E784"] if bad_row else []) + ["W786"]
    line = 8 if bad_row else 7
    assert f"2 row(s) of the rank log repeat" in repeat[0].message
    assert f"the first, line {line}, repeats line 2" in repeat[0].message
    assert repeat[0].hint
    assert obs.ranks[0].summary()[1]["compute_s"] == pytest.approx(1.5)
    assert obs.ranks[0].phase.size == 3


RESTART = """rank,iteration,phase,start_s,duration_s,peer,op
0,100,forward,0.0,0.5,,
0,100,backward,0.5,1.0,,
0,101,forward,2.0,0.5,,
0,101,backward,2.5,1.0,,
0,102,forward,4.0,0.5,,
1,100,forward,0.0,0.5,,
1,101,forward,2.0,0.5,,
1,100,dp_comm,2.1,0.3,,all_reduce
1,101,backward,2.5,1.0,,
0,101,dp_comm,99.9,0.05,,all_reduce
0,101,forward,100.0,0.6,,
0,101,backward,100.6,1.2,,
0,102,forward,102.0,0.6,,
"""


@pytest.mark.parametrize("bad_row", ["", "2,1,forward,abc,0.5,,\n"])
def test_a_restart_that_logs_iterations_again_is_read_from_it(tmp_path, bad_row):
    """Rank 0 runs iterations 100, 101 and the start of 102, and after a restart from the
    checkpoint of 101 (t = 99.9 s, line 11) runs 101 and 102 again. Its last run is read: 101
    from line 11 (its all-reduce before its forward) and 102, 0.6 + 1.2 = 1.8 s of compute in
    101 (summed with the earlier run it had been 0.5 + 1.0 + 0.6 + 1.2 = 3.3 s), iteration 100
    gone with the earlier run (lines 2-6: 5 rows); W796 names the rank, the iteration and the
    first line of each of its runs (line 4, line 11). Rank 1's all-reduce of iteration 100 that
    ends after its forward of 101 is no restart: communication alone does not count. The same
    on the row-by-row road (a bad row at line 15)."""
    p = tmp_path / "job.csv"
    p.write_text(RESTART + bad_row)
    obs = observe.load([str(p)])
    assert codes(obs) == (["E784"] if bad_row else []) + ["W796"]
    w = obs.diagnostics[-1]
    assert w.message == ("1 rank(s) log iterations twice at different times (a restart): each "
                         "rank's last run is read and its 5 earlier row(s) left out; the first, "
                         "rank 0, logs iteration 101 from line 4 and again from line 11")
    assert w.hint and w.file == str(p)
    r0, r1 = obs.ranks[0], obs.ranks[1]
    assert r0.iteration.tolist() == [101, 101, 101, 102]
    assert r0.start.tolist() == [99.9, 100.0, 100.6, 102.0]
    assert r0.summary()[101]["compute_s"] == pytest.approx(0.6 + 1.2)
    assert r1.iteration.tolist() == [100, 101, 100, 101]


@pytest.mark.parametrize("content,code", [
    (b"", "E781"),
    (b"\x1f\x8b\x08\x00garbage", "E781"),
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1', "E781"),
    (b"\xff\xfe\x00bin", "E781"),
    (b"hello world\n", "E782"),
    (b'{"schemaVersion": 1}', "E782"),
    (b'{"traceEvents": []}', "E783"),
    (b'{"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": []}', "E788"),
    (b"rank,phase\n0,forward\n", "E782"),
])
def test_bad_files(tmp_path, content, code):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    obs = observe.load([str(p)])
    assert codes(obs) == [code]
    assert obs.diagnostics[0].file == str(p)
    assert obs.ranks == {}


def test_truncated_gzip_trace(tmp_path):
    data = (TRACES / "sampled_rank-1.json.gz").read_bytes()
    p = tmp_path / "rank-1.json.gz"
    p.write_bytes(data[: len(data) // 2])
    obs = observe.load([str(p), str(TRACES / "sampled_rank-0.json.gz")])
    assert codes(obs) == ["E781"] and sorted(obs.ranks) == [0]     # the other file still read


def test_corrupt_gzip_trace(tmp_path):
    """A flipped bit in the compressed data, or in the gzip trailer's CRC-32: E781, whichever
    inflate implementation reads it (ISA-L's when installed, else zlib's)."""
    data = bytearray((TRACES / "sampled_rank-1.json.gz").read_bytes())
    crc = bytearray(data)
    crc[-6] ^= 0xFF                          # the trailer: CRC-32, then the length mod 2^32
    block = bytearray(data)
    block[len(block) // 2] ^= 0xFF
    for i, body in enumerate((crc, block)):
        p = tmp_path / f"rank-{i}.json.gz"
        p.write_bytes(bytes(body))
        obs = observe.load([str(p)])
        assert codes(obs) == ["E781"] and "corrupt" in obs.diagnostics[0].message
        assert not obs.traces


def test_rank_from_file_name_and_duplicates(tmp_path):
    doc = json.load(gzip.open(TRACES / "sampled_rank-1.json.gz"))
    del doc["distributedInfo"]
    p = tmp_path / "trainer_rank-7.json"
    p.write_text(json.dumps(doc))
    obs = observe.load([str(p)])
    assert codes(obs) == ["W783"] and sorted(obs.ranks) == [7] and obs.ranks[7].world_size is None
    # the same rank twice with one world size: the second is left out
    obs = observe.load([str(TRACES / "sampled_rank-0.json.gz"),
                        str(TRACES / "sampled_rank-0.json.gz")])
    assert codes(obs) == ["E786"] and len(obs.traces) == 1
    assert obs.diagnostics[0].hint == ("two copies of one rank's file, or two runs' files in "
                                       "one directory: pass the files of one run")
    # two world sizes claiming rank 0 are two jobs: both kept, the diagnosis picks its own
    obs = observe.load([str(TRACES / "sampled_rank-0.json.gz"),
                        str(TRACES / "nccl_data_rank-0.json.gz")])
    assert codes(obs) == [] and [t.world_size for t in obs.traces] == [128, 2]


def test_directories_and_missing_paths(tmp_path):
    (tmp_path / "README.md").write_text("# traces of run 7\n")
    (tmp_path / "job.csv").write_text(LOG)
    obs = observe.load([str(tmp_path), str(tmp_path / "nope.json")])
    assert sorted(codes(obs)) == ["E780", "W782"]
    assert sorted(obs.ranks) == [0, 1]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert codes(observe.load([str(empty)])) == ["E780"]


def test_a_directorys_fifo_or_dangling_link_is_skipped_with_a_warning(tmp_path):
    """A FIFO (or a link to nothing) in a directory given was left out in silence: its rank
    unread, no word why. It is W782 now, named, as a README is; a folder in it stays unread
    and unsaid (directories are not walked)."""
    (tmp_path / "job.csv").write_text(LOG)
    os.mkfifo(tmp_path / "rank-2.csv")
    os.symlink(tmp_path / "gone.csv", tmp_path / "rank-3.csv")
    (tmp_path / "older").mkdir()
    obs = observe.load([str(tmp_path)])
    hint = "copy the profiler trace or rank log into the directory as a regular file to read it"
    assert [(d.code, d.message, d.file, d.hint) for d in obs.diagnostics] == [
        ("W782", "skipped: not a regular file (a FIFO, a device or a socket)",
         str(tmp_path / "rank-2.csv"), hint),
        ("W782", "skipped: a link to nothing", str(tmp_path / "rank-3.csv"), hint)]
    assert obs.files == (str(tmp_path / "job.csv"),) and sorted(obs.ranks) == [0, 1]
    only = tmp_path / "only"
    only.mkdir()
    os.mkfifo(only / "rank-0.csv")
    assert codes(observe.load([str(only)])) == ["W782", "E780"]


def test_empty_iteration_is_said(tmp_path):
    doc = json.load(gzip.open(TRACES / "nccl_data_rank-0.json.gz"))
    steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep")]
    last = max(e["ts"] + e["dur"] for e in doc["traceEvents"] if "ts" in e and "dur" in e)
    doc["traceEvents"].append(dict(steps[-1], name="ProfilerStep#7", ts=last + 10.0, dur=50.0))
    p = tmp_path / "rank-0.json"
    p.write_text(json.dumps(doc))
    obs = observe.load([str(p)])
    assert codes(obs) == ["W788"] and "iteration 7" in obs.diagnostics[0].message
    assert obs.ranks[0].iterations == (4, 5, 6)


# ---- the schema decode (tracedoc) against the full parse ---------------------------------------
def _same(a, b):
    assert (a.rank, a.world_size, a.groups, a.device, a.iterations_from) == \
        (b.rank, b.world_size, b.groups, b.device, b.iterations_from)
    for col in ("iteration", "phase", "start", "duration", "peer", "op", "group"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col


@pytest.mark.parametrize("name", ["nccl_data_rank-0.json.gz", "sampled_rank-0.json.gz",
                                  "sampled_rank-1.json.gz"])
def test_schema_decode_reads_the_real_traces_as_the_full_parse(name):
    from astral_dsl.observe import tracedoc

    body = gzip.decompress((TRACES / name).read_bytes())
    fast = tracedoc.decode(body)
    assert fast is not None                  # the real traces take the fast road
    t_fast, d_fast = kineto.read(name, fast)
    t_full, d_full = kineto.read(name, json.loads(body))     # every field parsed, as dicts
    assert d_fast == d_full
    _same(t_fast, t_full)
    # and what observe.load reports is that
    _same(observe.load([str(TRACES / name)]).traces[0], t_fast)


def test_odd_fields_read_alike_on_both_roads(tmp_path):
    """Kernels with a start that is a string, a negative or infinite duration, an event that is
    not an object, a category that is a list, arguments of null, a duration past a float's range, group ranks as a list: the
    schema decode gives up on what it cannot type (the file then takes the full parse), and
    both ways keep the same kernels."""
    from astral_dsl.observe import tracedoc

    def k(ts, dur, name="gemm", **args):
        return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": args}

    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 0, "dur": 1000}
    ranks = [0, 1]
    events = [step, k(10, 10.0, correlation=1), k("20", 5.0), k(30, -1.0), k(40, 10 ** 400),
              k(50, 20.0, name="ncclDevKernel_AllReduce", **{
                  "Collective name": "allreduce", "Process Group Name": "dp-0",
                  "Process Group Description": "DATA_PARALLEL_GROUP",
                  "Process Group Ranks": ranks}),
              dict(k(80, 30.0), args=None), {"ph": "X", "cat": ["kernel"], "ts": 90, "dur": 1},
              7]
    doc = {"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": events}
    body = json.dumps(doc).encode()
    # `args: null` and `7` do not fit the schema: those two events are decoded as plain JSON
    # (the launch's arguments empty, the number dropped), the rest against the schema
    assert tracedoc.decode(body) is not None
    p = tmp_path / "rank-1.json"
    p.write_bytes(body)
    obs = observe.load([str(p)])
    # the three kernels whose times cannot be read are said (E784, tests/test_trace_times.py),
    # one of them named; the event of a list category is no kernel
    assert [(d.code, d.message) for d in obs.diagnostics] == [
        ("E784", "3 GPU kernel or ProfilerStep event(s) of the trace cannot be read and are "
                 "skipped; one of them, `gemm`: `ts` is not a number: '20'")]
    t = obs.ranks[1]
    # kept: gemm at 10 us (10 us), the all-reduce at 50 us (20 us), gemm at 80 us (30 us);
    # dropped: the string start, the negative and the 10^400 us duration, the list category
    assert t.start.tolist() == pytest.approx([10e-6, 50e-6, 80e-6])
    assert t.summary()[3]["compute_s"] == pytest.approx(40e-6)      # 10 + 30 us
    assert t.summary()[3]["comm_s"] == pytest.approx(20e-6)
    assert t.phase[1] == PHASE_INDEX["dp_comm"]
    assert [g.to_json() for g in t.groups] == [
        {"name": "dp-0", "description": "DATA_PARALLEL_GROUP", "ranks": [0, 1]}]
    # the same document without the two events the schema cannot type: the fast road, the
    # same kernels
    doc["traceEvents"] = [e for e in events if e != 7 and not (isinstance(e, dict)
                                                              and e.get("args", {}) is None)]
    fast = tracedoc.decode(json.dumps(doc).encode())
    assert fast is not None
    t_fast, _ = kineto.read("rank-1.json", fast)
    assert t_fast.start.tolist() == pytest.approx([10e-6, 50e-6])
    _same(t_fast, kineto.read("rank-1.json", doc)[0])


def test_multi_member_gzip_and_trailing_zeros(tmp_path):
    """A gzip file of two members (as `cat a.gz b.gz` writes) reads as their concatenation,
    as gzip itself reads it; zero padding after the last member is ignored."""
    body = gzip.decompress((TRACES / "sampled_rank-1.json.gz").read_bytes())
    p = tmp_path / "rank-1.json.gz"
    p.write_bytes(gzip.compress(body[:1000]) + gzip.compress(body[1000:]) + b"\0" * 16)
    obs = observe.load([str(p)])
    assert codes(obs) == []
    _same(obs.ranks[1], observe.load([str(TRACES / "sampled_rank-1.json.gz")]).ranks[1])


def test_a_launch_time_past_a_floats_range_is_not_a_time(tmp_path):
    """A `cudaLaunchKernel` whose start is an integer of 400 digits: that launch is not used (its
    kernel falls back on its own start), no OverflowError; the other launch still counts."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 1000},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10 ** 400, "dur": 1,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 5, "dur": 1,
         "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10, "dur": 5,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 2000, "dur": 5,
         "args": {"correlation": 2}}]
    p = tmp_path / "rank-0.json"
    p.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1},
                             "traceEvents": events}))
    obs = observe.load([str(p)])
    assert codes(obs) == []
    # the second kernel runs after the step ended (2,000 us) but was launched in it (5 us)
    assert obs.ranks[0].iteration.tolist() == [1, 1]
    assert obs.ranks[0].start.tolist() == pytest.approx([10e-6, 2000e-6])


DEEP = 1_000_000


@pytest.mark.parametrize("where", ["info", "args", "top"])
def test_json_nested_a_million_deep_is_a_diagnostic(tmp_path, where):
    """JSON nested a million deep: no crash (orjson 3.8 took the process down with a
    segmentation fault), no RecursionError (msgspec and json raise it). Nested in
    `distributedInfo`, at the top, or in an argument the reader does not use, the file cannot
    be read (E781): Python's JSON parsers all stop at about 1,000 levels (docs/diagnose.md)."""
    deep = "[" * DEEP + "]" * DEEP
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 100}
    kernel = '{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10, "dur": 5, "args": {%s}}'
    info = '{"rank": 0, "world_size": 1%s}' % (', "x": ' + deep if where == "info" else "")
    text = {"top": deep,
            "info": '{"distributedInfo": %s, "traceEvents": [%s, %s]}'
                    % (info, json.dumps(step), kernel % ""),
            "args": '{"distributedInfo": %s, "traceEvents": [%s, %s]}'
                    % (info, json.dumps(step), kernel % ('"Input Dims": ' + deep))}[where]
    p = tmp_path / "rank-0.json"
    p.write_text(text)
    traces, diags = observe.read_file(str(p))
    assert [d.code for d in diags] == ["E781"] and traces == []


GOOD_ROW = {"rank": 0, "iteration": 1, "phase": "forward", "start_s": 0.0, "duration_s": 1.0,
            "peer": 1, "op": "send"}


def _log_of(folder, rows, fmt):
    """`rows` (GOOD_ROW's columns) written as a JSON Lines or a CSV log; its path."""
    p = folder / f"log.{fmt}"
    if fmt == "jsonl":
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        p.write_text(",".join(GOOD_ROW) + "\n" +
                     "".join(",".join(str(v) for v in r.values()) + "\n" for r in rows))
    return p


@pytest.mark.parametrize("field", ["rank", "iteration", "peer"])
@pytest.mark.parametrize("value, why", [(2 ** 63, "beyond 2^53"), (2 ** 64 + 1, "beyond 2^53"),
                                        (-2 ** 63, "beyond 2^53"), (2 ** 53 + 2, "beyond 2^53"),
                                        (2 ** 53 + 1, "beyond 2^53"), (-2 ** 53 - 1, "beyond 2^53"),
                                        ("9007199254740993.0", "beyond 2^53"),
                                        ("9.007199254740993e15", "beyond 2^53"),
                                        (1e300, "beyond 2^53")])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_whole_number_past_2_53_is_a_bad_row(tmp_path, field, value, why, fmt):
    """Past 2^53 a float64 no longer holds every whole number, and from 2^63 an int64 holds
    none: such a rank, iteration or peer is a bad row (E784), on the column road and the
    row-by-row road alike, never an OverflowError nor a wrapped-around number."""
    rows = [dict(GOOD_ROW), dict(GOOD_ROW, start_s=1.0), dict(GOOD_ROW, **{field: value})]
    obs = observe.load([str(_log_of(tmp_path, rows, fmt))])
    assert codes(obs) == ["E784"], obs.diagnostics
    assert "1 row(s)" in obs.diagnostics[0].message and why in obs.diagnostics[0].message
    assert f"line {3 if fmt == 'jsonl' else 4}" in obs.diagnostics[0].message   # csv: a header
    assert len(obs.ranks[0]) == 2 and obs.ranks[0].iteration.tolist() == [1, 1]


@pytest.mark.parametrize("field", ["rank", "iteration"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_negative_rank_or_iteration_is_a_bad_row(tmp_path, field, fmt):
    """An iteration of -5 was read as one (`iterations -5`): every row of a log so numbered
    fell into one iteration, and the diagnosis found compute at 3x the forecast."""
    rows = [dict(GOOD_ROW), dict(GOOD_ROW, start_s=1.0), dict(GOOD_ROW, **{field: -5})]
    obs = observe.load([str(_log_of(tmp_path, rows, fmt))])
    assert codes(obs) == ["E784"], obs.diagnostics
    assert f"{field} -5 is negative" in obs.diagnostics[0].message
    assert len(obs.ranks[0]) == 2 and obs.ranks[0].iteration.tolist() == [1, 1]


@pytest.mark.parametrize("key", ["rank", "duration_s", "comment"])
def test_a_jsonl_row_naming_a_key_twice_is_a_bad_row(tmp_path, key):
    """A row `{"rank": 0, ..., "rank": 3}` was read as rank 3 (json keeps the last value),
    silently: which value the logger meant is not known, so the row is E784 at its line."""
    good = json.dumps(GOOD_ROW)
    twice = json.dumps(dict(GOOD_ROW, start_s=1.0, **{key: 3}))[:-1] + f', "{key}": 4}}'
    p = tmp_path / "log.jsonl"
    p.write_text(good + "\n" + twice + "\n" + json.dumps(dict(GOOD_ROW, start_s=2.0)) + "\n")
    obs = observe.load([str(p)])
    assert codes(obs) == ["E784"], obs.diagnostics
    d = obs.diagnostics[0]
    assert d.message == ("1 row(s) of the rank log cannot be read and are skipped; the first, "
                         f"line 2: the key `{key}` is given twice: which value is meant is "
                         "not known")
    assert d.hint == "columns: rank, iteration, phase, start_s, duration_s [, peer, op]"
    assert list(obs.ranks) == [0] and len(obs.ranks[0]) == 2


def test_whole_numbers_up_to_2_53_are_read_exactly(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text(json.dumps(dict(GOOD_ROW, iteration=2 ** 53)) + "\n")
    obs = observe.load([str(p)])
    assert codes(obs) == [] and obs.ranks[0].iteration.tolist() == [2 ** 53]


@pytest.mark.parametrize("field", list(GOOD_ROW))
@pytest.mark.parametrize("value, kind", [([1], "list"), ({"a": 1}, "object"), ([], "list")])
def test_a_list_or_object_in_any_field_is_a_bad_row(tmp_path, field, value, kind):
    rows = [dict(GOOD_ROW), dict(GOOD_ROW, **{field: value}), dict(GOOD_ROW, start_s=2.0),
            dict(GOOD_ROW, **{field: value})]
    p = tmp_path / "log.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    obs = observe.load([str(p)])
    assert codes(obs) == ["E784"], obs.diagnostics
    message = obs.diagnostics[0].message
    assert "2 row(s)" in message and "line 2" in message
    assert f"`{field}` is not a single value: a JSON {kind}" in message
    assert len(obs.ranks[0]) == 2


def test_a_log_line_nested_a_million_deep_is_a_bad_row(tmp_path):
    rows = ['{"rank": 0, "iteration": 1, "phase": "forward", "start_s": 0, "duration_s": 1}',
            '{"rank": 0, "iteration": 1, "phase": "backward", "start_s": 1, "duration_s": 1}',
            "[" * DEEP + "]" * DEEP]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(rows) + "\n")
    obs = observe.load([str(p)])
    assert len(obs.ranks[0]) == 2 and [d.file for d in obs.diagnostics] == [str(p)]


def test_an_integer_past_64_bits_in_distributed_info(tmp_path):
    """msgspec refuses an integer past 64 bits where it decodes any JSON: the trace is then
    parsed in full, with the rank and world size it states."""
    p = tmp_path / "trace.json"
    p.write_text('{"distributedInfo": {"rank": 3, "world_size": 4, "seed": 18446744073709551616}'
                 ', "traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1",'
                 ' "ts": 0, "dur": 100}, {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10,'
                 ' "dur": 5}]}')
    traces, diags = observe.read_file(str(p))
    assert diags == [] and (traces[0].rank, traces[0].world_size) == (3, 4)


BIG = "1" * 23_000      # past Python's 4,300-digit limit on converting an integer's text


@pytest.mark.parametrize("where, codes_seen, rows", [
    ("skipped", [], 1), ("ts", ["E781"], 0), ("info", ["E781"], 0), ("jsonl", ["E784"], 1)])
def test_an_integer_of_23000_digits(tmp_path, where, codes_seen, rows):
    """json.loads raises a ValueError that is no JSONDecodeError on it (found by
    tests/fuzz_traces.py: it was an AttributeError traceback): in a field the reader skips the
    trace reads; where it reads, the file is E781; in a JSON Lines log, its row is E784."""
    step = '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":0,"dur":1000}'
    kernel = '{"ph":"X","cat":"kernel","name":"gemm","ts":%s,"dur":5,"args":{"x":%s}}'
    text = {
        "skipped": '{"distributedInfo":{"rank":0},"traceEvents":[%s,%s]}' % (step,
                                                                            kernel % (10, BIG)),
        "ts": '{"distributedInfo":{"rank":0},"traceEvents":[%s,%s]}' % (step, kernel % (BIG, 1)),
        "info": '{"distributedInfo":{"rank":0,"y":%s},"traceEvents":[%s,%s]}'
                % (BIG, step, kernel % (10, 1)),
        "jsonl": '{"rank":0,"iteration":1,"phase":"forward","start_s":0,"duration_s":%s}\n'
                 '{"rank":0,"iteration":1,"phase":"forward","start_s":0,"duration_s":1}\n'
                 % BIG}[where]
    p = tmp_path / "rank-0.json"
    p.write_text(text)
    traces, diags = observe.read_file(str(p))
    assert [d.code for d in diags] == codes_seen and len(traces) == rows


def test_a_step_number_of_23000_digits_is_no_step(tmp_path):
    """ProfilerStep#<23,000 digits>: not a step (int() refused it with a ValueError traceback,
    found by tests/fuzz_traces.py); the other step still counts."""
    p = tmp_path / "rank-0.json"
    p.write_text('{"distributedInfo":{"rank":0},"traceEvents":['
                 '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%s","ts":0,"dur":10},'
                 '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","ts":20,"dur":10},'
                 '{"ph":"X","cat":"kernel","name":"gemm","ts":22,"dur":1}]}' % BIG)
    traces, diags = observe.read_file(str(p))
    assert diags == [] and traces[0].iterations == (2,)


@pytest.mark.parametrize("field, value", [("duration_s", 1e308), ("duration_s", 1.5e12),
                                          ("start_s", -1e13), ("start_s", 1e300)])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_time_beyond_10_12_s_is_a_bad_row(tmp_path, field, value, fmt):
    """A start or a duration past 10^12 s is a bad row (E784), on both roads: a duration of
    1e308 s made the diagnosis's sums and spreads infinite, which its JSON cannot hold (E000;
    found by make fuzz-deep). 10^12 s itself is read."""
    rows = [dict(GOOD_ROW), dict(GOOD_ROW, start_s=1.0), dict(GOOD_ROW, **{field: value}),
            dict(GOOD_ROW, start_s=2.0, duration_s=1e12)]
    obs = observe.load([str(_log_of(tmp_path, rows, fmt))])
    assert codes(obs) == ["E784"], obs.diagnostics
    assert "1 row(s)" in obs.diagnostics[0].message
    assert f"`{field}` is beyond 10^12 s" in obs.diagnostics[0].message
    assert len(obs.ranks[0]) == 3 and obs.ranks[0].duration.max() == 1e12



@pytest.mark.parametrize("field", ["rank", "iteration", "peer", "start_s", "duration_s"])
@pytest.mark.parametrize("value", ["\u0661", "\uff11", "1_0", "\u0661.5"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_number_in_other_digits_is_a_bad_row(tmp_path, field, value, fmt):
    """A cell of another script's digits (ARABIC-INDIC `١`, full-width `１`) or with a `_`
    (`1_0`) read as a number through float() and numpy (`١` as 1): a bad row (E784) on both
    roads, as a runs table's cell is (the digits 0-9 alone, runs/table.py)."""
    rows = [dict(GOOD_ROW), dict(GOOD_ROW, start_s=1.0), dict(GOOD_ROW, **{field: value})]
    p = tmp_path / f"log.{fmt}"
    if fmt == "jsonl":      # a JSON string: a JSON number is ASCII by the grammar
        p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        p.write_text(",".join(GOOD_ROW) + "\n" + "".join(
            ",".join(str(v) for v in r.values()) + "\n" for r in rows), encoding="utf-8")
    obs = observe.load([str(p)])
    assert codes(obs) == ["E784"], obs.diagnostics
    message = obs.diagnostics[0].message
    assert "1 row(s)" in message and f"line {3 if fmt == 'jsonl' else 4}" in message
    assert f"`{field}` is not a number: {value!r}; write it with the digits 0-9" in message
    assert len(obs.ranks[0]) == 2


def test_a_phase_with_a_lone_surrogate_is_named_escaped(tmp_path):
    """A phase name holding a lone surrogate (JSON's "\\ud800") is named in W784 with it
    escaped: written as it was, no UTF-8 output could hold the message (`diagnose -o` raised
    UnicodeEncodeError: E000; found by make fuzz-deep's observed target)."""
    obs = observe.load([str(_log_of(tmp_path, [dict(GOOD_ROW, phase="\ud800x")], "jsonl"))])
    assert codes(obs) == ["W784"]
    assert "phase `\\ud800x` is not known" in obs.diagnostics[0].message
    obs.diagnostics[0].message.encode("utf-8")          # writable


_TESTS = os.getpid()         # the test process (a forked worker inherits the number)


def _read_slowly_or_interrupt(path):
    import signal
    import time

    if os.getpid() == _TESTS:           # never read here: its parent is not ours to signal
        raise AssertionError("read in the test process, not in a worker")
    if path.endswith("slow"):
        time.sleep(60)
    os.kill(os.getppid(), signal.SIGINT)          # Ctrl-C, as it reaches the reading process
    time.sleep(60)


def test_ctrl_c_while_the_workers_read_stops_them_at_once(monkeypatch):
    """pools.py: the readers ignore SIGINT (a terminal sends it to the whole group, and one
    interrupted inside its result queue's lock hung the pool), and the interrupted parent stops
    them instead of waiting for their files (here 60 s each)."""
    import importlib
    import multiprocessing
    import time

    load = importlib.import_module("astral_dsl.observe.load")   # (observe.load: the function)
    monkeypatch.setattr(load, "read_file", _read_slowly_or_interrupt)    # forked: inherited
    # the pool even where another test left a thread running (a process with threads reads
    # in itself: forking it is what the engines' pools do regardless)
    monkeypatch.setattr(load.budget, "fork_safe", lambda: True)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        load._read_all(["a.slow", "b"], workers=2)
    assert time.monotonic() - start < 20
    # none left running (the pool's own thread may be reaping them meanwhile: a moment)
    while multiprocessing.active_children() and time.monotonic() - start < 30:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def _where_read(path):
    import sys

    return os.getpid(), sys.stderr.name


def test_the_readers_fork_beside_the_progress_line_and_never_write_its_stderr(monkeypatch):
    """`diagnose --jobs N` on a terminal: its progress line's thread (astral-progress) ran,
    and a process running threads read its files in itself, one by one. It may now fork the
    readers (pools.SAFE_THREADS), which start with their stderr on /dev/null (pools.quiet);
    a thread of another name still keeps the reads here."""
    import importlib
    import threading

    load = importlib.import_module("astral_dsl.observe.load")
    monkeypatch.setattr(load, "read_file", _where_read)      # forked: inherited
    for name, forked in (("astral-progress", True), ("another", False)):
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait, name=name, daemon=True)
        thread.start()
        # the threads are this one and `thread` (another test may have left one running)
        monkeypatch.setattr(threading, "enumerate", lambda: [threading.current_thread(),
                                                            thread])
        try:
            read = load._read_all(["a", "b", "c", "d"], workers=2)
        finally:
            monkeypatch.undo()
            monkeypatch.setattr(load, "read_file", _where_read)
            stop.set()
            thread.join()
        pids = {pid for pid, _ in read}
        assert (os.getpid() not in pids) == forked, name
        here = _where_read("")[1]                 # this process's stderr (pytest's)
        assert {where for _, where in read} == ({os.devnull} if forked else {here}), name


_BUSY_STDERR = """
import importlib, os, sys, threading, time
load = importlib.import_module("astral_dsl.observe.load")
def busy():                               # a progress line that writes all the time
    while True:
        sys.stderr.write("x" * 65536)
        sys.stderr.flush()
threading.Thread(target=busy, name="astral-progress", daemon=True).start()
time.sleep(0.2)
def where(path):
    return os.getpid()
load.read_file = where
pids = {pid for pid in load._read_all(["a", "b", "c", "d"], workers=2)}
print(os.getpid() not in pids, flush=True)
os._exit(0)
"""


def test_a_reader_forked_while_the_progress_line_writes_does_not_hang():
    """A reader forked while the progress thread held stderr's lock (a buffered stderr, no
    PYTHONUNBUFFERED) waited for it for ever when it flushed stderr as it exited, and the pool
    with it (9 runs of 10 hung before the readers' stderr was /dev/null): they end."""
    import subprocess
    import sys
    import threading

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    p = subprocess.Popen([sys.executable, "-c", _BUSY_STDERR], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, start_new_session=True)
    threading.Thread(target=lambda: [None for _ in iter(lambda: p.stderr.read(1 << 16), b"")],
                     daemon=True).start()
    try:
        assert p.wait(timeout=60) == 0
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.wait()
        raise AssertionError("the readers hung on the stderr the progress thread held")
    assert p.stdout.read() == b"True\n"          # read in the forked readers


def test_a_fifo_swapped_in_after_the_check_does_not_block(tmp_path):
    # files_of saw a regular file; by the time it is read a named pipe is in its place: the
    # reader must not wait for a writer, and says E780 "not a regular file"
    import importlib
    import threading

    observe_load = importlib.import_module("astral_dsl.observe.load")   # not observe.load()

    fifo = tmp_path / "rank0.json"
    os.mkfifo(fifo)
    box = {}
    reader = threading.Thread(target=lambda: box.update(out=observe_load.read_file(str(fifo))),
                              daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():                     # blocked in open(): release it, then fail
        with open(fifo, "wb"):
            pass
        reader.join(10)
        pytest.fail("reading a FIFO blocked waiting for a writer")
    traces, diags = box["out"]
    assert traces == [] and [d.code for d in diags] == ["E780"]
    # and says what to give, as a FIFO named on the command line does (it had no hint)
    assert (diags[0].message, diags[0].hint, diags[0].file) == (
        "cannot read the file: not a regular file (a FIFO, device or socket)",
        "give a profiler trace or a rank log, or a directory of them", str(fifo))


@pytest.mark.parametrize("make, message, hint", [
    (lambda p: p.mkdir(), "cannot read the file: Is a directory",
     "name a profiler trace or a rank log, not a folder"),
    (lambda p: None, "cannot read the file: No such file or directory",
     "check the path: a relative one starts at the working directory")])
def test_a_file_that_cannot_be_read_says_what_to_do(tmp_path, make, message, hint):
    """read_file (observe's public reader) of a path that is gone by the time it is read,
    or a folder: E780 with E100's hint for the reason (it had none)."""
    import importlib

    observe_load = importlib.import_module("astral_dsl.observe.load")
    path = tmp_path / "rank0.json"
    make(path)
    traces, diags = observe_load.read_file(str(path))
    assert traces == [] and [(d.code, d.message, d.hint) for d in diags] == [
        ("E780", message, hint)]


def test_a_file_past_the_cap_is_refused_unread(tmp_path):
    """A rank log of 1 GiB + 1 byte (sparse: a header, then zeros) is refused from its size
    (E781), without reading it: Python's peak stays far below the cap (it had read the whole
    1 GiB into memory, and taken seconds, to refuse it)."""
    import tracemalloc

    from astral_dsl.observe.load import MAX_BYTES

    p = tmp_path / "huge.csv"
    with open(p, "wb") as fh:
        fh.write(b"rank,iteration,phase,start_s,duration_s\n")
        fh.truncate(MAX_BYTES + 1)
    tracemalloc.start()
    try:
        obs = observe.load([str(p)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(d.code, d.message, d.hint) for d in obs.diagnostics] == [
        ("E781", "the file is larger than 1024 MiB: not read",
         "profile fewer steps per file, or split a rank log by rank")]
    assert peak < 16 << 20


def test_the_column_road_reads_each_rows_phase_and_op_as_the_row_road_does(tmp_path):
    """The column road (observe/ranklog.py _columns) maps each distinct (phase, op) once and
    gives every row its codes: the same phases, ops and W784s, row for row, as the row-by-row
    road (taken when one row is bad), whatever the spellings, aliases, unknown names and ops
    and in whatever order the rows first name them."""
    rows = [("warmup", ""), ("Forward", ""), ("forward-send", ""), ("dp_comm", "all_reduce"),
            (" BACKWARD ", ""), ("pp_comm", "recv"), ("warmup", ""), ("grads-reduce-scatter", ""),
            ("idle", ""), ("pp_comm", "send"), ("Forward", ""), ("comm", "AllGather"),
            ("forward-send", "recv"), ("dp_comm", "all_reduce"), ("idle", "")]
    text = "rank,iteration,phase,start_s,duration_s,peer,op\n" + "".join(
        f"{i % 2},1,{phase},{i}.5,0.25,{'' if 'comm' not in phase else 1 - i % 2},{op}\n"
        for i, (phase, op) in enumerate(rows))
    read = {}
    for road, bad in (("columns", ""), ("rows", "0,1,forward,x,1,,\n")):
        p = tmp_path / f"{road}.csv"
        p.write_text(text + bad)
        obs = observe.load([str(p)])
        read[road] = ({r: (t.phase.tolist(), t.op.tolist()) for r, t in obs.ranks.items()},
                      [(d.code, d.message) for d in obs.diagnostics if d.code == "W784"])
    assert read["columns"] == read["rows"]
    phases, w784 = read["columns"]
    assert phases[0][0][:2] == [PHASE_INDEX["other"], PHASE_INDEX["pp_comm"]]
    assert [m for _, m in w784] == [
        "phase `idle` is not known (2 row(s)): counted as `other`, neither compute nor "
        "communication",
        "phase `warmup` is not known (2 row(s)): counted as `other`, neither compute nor "
        "communication"]


def test_a_rank_log_whose_header_names_a_column_twice_is_e782(tmp_path):
    """The second `rank` column was read (every row rank 7 here), and the log was said to fit
    no rank order of the job (E792), which sent the user after the job's layout."""
    p = tmp_path / "run.csv"
    p.write_text("rank,iteration,phase,start_s,duration_s,rank\n0,1,forward,0,1,7\n"
                 "1,1,forward,0,1,7\n")
    obs = observe.load([str(p)])
    assert obs.ranks == {} and codes(obs) == ["E782"]
    d = obs.diagnostics[0]
    assert d.file == str(p) and d.message == (
        "the rank log's header names `rank` 2 times (columns 1, 6): which is the `rank` is not "
        "known")
    assert d.hint == ("keep one column of each name: rank, iteration, phase, start_s, "
                      "duration_s [, peer, op]")
    p.write_text("rank,iteration,phase,start_s,duration_s,note,note\n0,1,forward,0,1,a,b\n")
    assert sorted(observe.load([str(p)]).ranks) == [0]        # a column of no use, twice: read


def test_a_rank_log_cell_of_true_or_false_is_not_a_number_not_missing(tmp_path):
    """`"rank": true` in a JSON Lines log was said to be missing: the row names its rank, with a
    yes/no value where a number goes."""
    p = tmp_path / "run.jsonl"
    p.write_text('{"rank": true, "iteration": 1, "phase": "forward", "start_s": 0, '
                 '"duration_s": 1}\n{"rank": 0, "iteration": 1, "phase": "forward", '
                 '"start_s": 0, "duration_s": false}\n{"iteration": 1, "phase": "forward", '
                 '"start_s": 0, "duration_s": 1}\n')
    obs = observe.load([str(p)])
    (d,) = obs.diagnostics
    assert d.code == "E784" and d.file == str(p)
    assert d.message == ("3 row(s) of the rank log cannot be read and are skipped; the first, "
                         "line 1: `rank` is not a number: true, a JSON yes/no value")
    from astral_dsl.observe.log_numbers import finite_number

    with pytest.raises(ValueError, match="`duration_s` is not a number: false"):
        finite_number(False, "duration_s")
    with pytest.raises(ValueError, match="`rank` is missing"):
        finite_number(None, "rank")
