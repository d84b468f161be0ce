"""How the diagnosis says what it found: a tie of two parts reads as a tie, a diagnostic
repeated alike for every file is said once, a world size that is not one is named, and the
breakdown's medians are one statistic with labels that say what it is."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import attrs
import jsonschema
import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, observe, seer
from astral_dsl.synth import generate, write
from astral_dsl.synth.inject import random_fault
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "tests" / "fixtures" / "diagnose" / "small.astral"


def _cli(*args):
    return _astral_cli(*args, cwd=REPO)


@pytest.fixture(scope="module")
def small():
    design = astral_dsl.load(str(SMALL))
    return design, seer.forecast(design), diagnose.rank_map(design)


def test_a_tie_of_the_two_ends_of_a_transfer_reads_as_a_tie(small, tmp_path):
    """`astral synth small.astral --fault link_flap --seed 33 --iterations 12`: the NIC of
    rank 48 flaps (rank = tp + 8 (dp + 8 pp): tp 0, dp 6, pp 0; host 48 / 8 = 6, the third
    host of the second rack: racks[1].hosts[2], GPU 0 on nics[0]); only its pipeline transfers
    with rank 112 (pp 1, same tp and dp: host 14, racks[3].hosts[2].nics[0]) ran slow, and
    nothing else either NIC carries was slow: the two ends explain the same instances within
    a factor e. The headline names both, by name, as a tie (it had named one end alone, at
    times the wrong one, with the other only among the parts). Which draws tie depends on the
    forecast the data are drawn around (with the shipped fit of stop 43, seed 4 did)."""
    design, fc, rm = small
    fault = random_fault("link_flap", rm, fc, np.random.default_rng(33), 33, 12)
    assert fault.part.startswith("Small.racks[1].hosts[2].nics[0].port[")
    data = generate(fc, rm, [fault], iterations=12, seed=33)
    log = tmp_path / "flap.csv"
    write.write_log(data, str(log))
    result = diagnose.diagnose(design, observe.load([str(log)]))
    first = result.suspects[0]
    ends = ("Small.racks[1].hosts[2].nics[0].port[a|b]",
            "Small.racks[3].hosts[2].nics[0].port[a|b]")
    assert first.path == f"{ends[0]} or {ends[1]}"
    assert first.kind == "nic port" and first.tied == ends
    assert first.covers(fault.part) and first.probability > 0.95
    tie = "(tied: the evidence cannot tell them apart)"
    assert first.summary.startswith(f"NIC (either port or its cable) {first.path} {tie}: ")
    assert first.note.startswith(f"tied: {ends[0]} and {ends[1]} explain the same slow "
                                 f"instances")
    assert "one suspect" not in first.note        # they do not cross the same collectives
    text = _cli("diagnose", str(SMALL), "--observed", str(log))
    assert text.returncode == 1
    assert f"  1. nic port {first.path} {tie}   probability" in text.stdout
    proc = _cli("diagnose", str(SMALL), "--observed", str(log), "--format", "json")
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, json.loads((REPO / "schema" / "diagnosis.schema.json").read_text()))
    assert doc["suspects"][0]["path"] == first.path
    assert doc["suspects"][0]["tied"] == list(ends)


def test_the_proof_counts_the_ties_it_scores_first():
    """A tie covering the injected part counts as first (the engineer is sent to it and its
    tied parts, named together); the proof says how many firsts were ties, per kind."""
    from benchmarks.bench_diagnose import summary

    def run(kind, position, tied):
        return {"kind": kind, "position": position, "tied": tied, "suspects": 1}

    results = [run("gpu", 1, 0), run("link_flap", 1, 2), run("link_flap", 1, 0),
               run("nic_port", 2, 0), run("none", None, 0)]
    lines = summary(results).splitlines()
    assert lines[0].startswith("injected part is the first suspect: 3/4 ")
    assert lines[-1] == ("of those named first, in a tie of parts the evidence cannot tell "
                         "apart (the suspect names them all, \"A or B\"): 1/3 (link_flap 1)")


TRACES = REPO / "tests" / "fixtures" / "traces"


# stand-ins for a rank and a world size in the trace's text (_trace_text), never in a trace
_RANK, _WORLD = "\x00rank\x00", "\x00world\x00"


@functools.lru_cache(maxsize=None)
def _trace_text(info: bool) -> str:
    """The real 2-rank trace as json.dumps writes it, with its `distributedInfo` (rank and world
    size the stand-ins above) or without one: parsed and written once for the module (0.2 s of
    CPU a file, four times what reading it costs the tests below)."""
    import gzip

    doc = json.loads(gzip.decompress((TRACES / "nccl_data_rank-0.json.gz").read_bytes()))
    if info:
        doc["distributedInfo"].update(rank=_RANK, world_size=_WORLD)
    else:
        del doc["distributedInfo"]
    return json.dumps(doc)


def _other_job(directory: Path, ranks: int, world, info: bool = True) -> None:
    """`ranks` traces of another job (the real 2-rank trace, its `distributedInfo` saying
    rank r of `world`, or none with `info=False`), rank-r.json each: the bytes json.dumps
    writes of the trace with those values (each value as json.dumps writes it alone)."""
    text = _trace_text(info)
    directory.mkdir()
    for r in range(ranks):
        one = text.replace(json.dumps(_RANK), json.dumps(r)).replace(json.dumps(_WORLD),
                                                                     json.dumps(world))
        (directory / f"rank-{r}.json").write_text(one)


def test_another_jobs_traces_are_said_once(tmp_path):
    """Six traces of an 8-rank job handed to the 128-rank job: one E785 (it had been one per
    file: 1,024 files, 1,024 errors), with the count and the first four files."""
    other = tmp_path / "other"
    _other_job(other, 6, 8)
    with pytest.raises(diagnose.DiagnoseError) as info:
        diagnose.diagnose(astral_dsl.load(str(SMALL)), observe.load([str(other)]))
    [d] = info.value.diagnostics
    assert (d.code, d.file) == ("E785", str(other / "rank-0.json"))
    assert d.message == ("the trace is from a job of 8 ranks, `small` has 128: left out (said "
                         "once for 6 files alike)")
    assert d.notes == ("the files: " + ", ".join(str(other / f"rank-{r}.json")
                                                 for r in range(4)) + " and 2 more",)
    proc = _cli("diagnose", str(SMALL), "--observed", str(other))
    assert proc.returncode == 2 and proc.stdout.count("E785") == 1


def test_a_log_passed_twice_is_said_once(small, tmp_path):
    """The same log of 128 ranks passed twice (or two runs' logs in one directory): one E786
    for the second file, with its ranks (it had been one a rank, 128 of them); one rank read
    twice keeps its own words."""
    design, fc, rm = small
    first, again = tmp_path / "run.csv", tmp_path / "again.csv"
    write.write_log(generate(fc, rm, [], iterations=1, seed=2), str(first))
    again.write_bytes(first.read_bytes())
    found = diagnose.diagnose(design, observe.load([str(first), str(again)]))
    [d] = [d for d in found.diagnostics if d.code == "E786"]
    assert (d.message, d.file) == ("128 ranks (0-127) appear twice: already read from "
                                   f"{first}; these are left out", str(again))
    assert found.ranks_read == tuple(range(128))
    lines = first.read_text().splitlines()
    one = tmp_path / "one.csv"
    one.write_text("\n".join([lines[0]] + [r for r in lines[1:] if r.startswith("5,")]) + "\n")
    [d] = [d for d in observe.load([str(first), str(one)]).diagnostics if d.code == "E786"]
    assert d.message == f"rank 5 appears twice: already read from {first}; this one is left out"


def test_traces_without_distributed_info_are_said_once(tmp_path):
    """A job's traces recorded without torch.distributed: W783 once for the directory (its
    message names no rank, the file name gives it), not once per rank."""
    other = tmp_path / "traces"
    _other_job(other, 3, 8, info=False)
    obs = observe.load([str(other)])
    [w] = [d for d in obs.diagnostics if d.code == "W783"]
    assert w.message == ("no `distributedInfo` in the trace: the rank is taken from the file "
                         "name (`rank-N`) (said once for 3 files alike)")
    assert sorted(t.rank for t in obs.traces) == [0, 1, 2]


def test_a_diagnostic_of_one_file_is_not_merged():
    """said_once leaves alone a diagnostic said for one file, however often, and keeps the
    order of the others."""
    from astral_dsl.observe.kineto import diag
    from astral_dsl.observe.said import said_once

    a, b = diag("E781", "the file is empty", "a.json"), diag("E781", "the file is empty",
                                                             "b.json")
    c = diag("W782", "skipped: notes", "README")
    merged = said_once([a, c, a, b])
    assert [(d.code, d.file) for d in merged] == [("E781", "a.json"), ("W782", "README")]
    assert merged[0].message.endswith("(said once for 2 files alike)")
    assert said_once([a, a]) == [a, a]


@pytest.mark.parametrize("value, shown", [
    (1e300, "1e+300"), (0, "0"), (-4, "-4"), (1.5, "1.5"), ("abc", '"abc"'), (True, "true"),
    (2 ** 31, "2147483648"),                 # one past c10d's int
    (10 ** 300, "1" + "0" * 36 + "...")],    # past 64 bits: the full parse; 40 characters
    ids=["1e300", "0", "-4", "1.5", "text", "true", "2^31", "10^300"])
def test_a_world_size_that_is_not_one_is_named(tmp_path, value, shown):
    """`distributedInfo.world_size` 1e300 had been printed in E785 as a 301-digit job size, 0
    as "a job of 0 ranks", and a text or a fraction taken as unsaid without a word: it is
    named as not a world size (W785), and the trace is not checked against the job's."""
    other = tmp_path / "traces"
    _other_job(other, 1, value)
    tiny = astral_dsl.load(str(REPO / "tests" / "fixtures" / "diagnose" / "tiny.astral"))
    result = diagnose.diagnose(tiny, observe.load([str(other)]))
    assert [d.code for d in result.diagnostics] == ["W785", "W787"]
    assert result.diagnostics[0].message == (
        f"`distributedInfo.world_size` is {shown}, not a world size (a whole number from 1 to "
        f"2,147,483,647): the trace is not checked against the job's world size")
    assert result.ranks_read == (0,)


def test_the_largest_world_size_c10d_holds_is_one(tmp_path):
    """2^31 - 1 ranks (c10d's int) is a world size: another job's (E785), not W785."""
    other = tmp_path / "traces"
    _other_job(other, 1, 2 ** 31 - 1)
    obs = observe.load([str(other)])
    assert obs.traces[0].world_size == 2 ** 31 - 1 and obs.diagnostics == ()


def test_the_breakdowns_medians_are_one_statistic():
    """Two ranks read: every line of the breakdown takes the mean of the two middle values.
    HTA's idle time by cause had taken the upper one (3 ms where the median is 2 ms) and
    said neither what it was a median of nor per what."""
    from astral_dsl.diagnose.breakdown import Breakdown, RankBreakdown

    def rank(r, idle_ms, host_ms):
        s = 1e-3
        return RankBreakdown(r, 0, 3, 10 * s, 6 * s, 3 * s, {"dp": 3 * s}, 0.0, idle_ms * s,
                             0.0, None, {"host_wait": host_ms * s, "kernel_wait": 0.0,
                                         "other": 2 * host_ms * s})

    b = Breakdown("kineto", (rank(0, 1.0, 1.0), rank(1, 2.0, 3.0)), (), ())
    # idle: (1 + 2) / 2 = 1.5 ms; host wait (1 + 3) / 2 = 2 ms; other (2 + 6) / 2 = 4 ms
    assert b.median("idle_s") == pytest.approx(1.5e-3)
    assert b.median_causes() == pytest.approx({"host_wait": 2e-3, "kernel_wait": 0.0,
                                               "other": 4e-3})
    lines = out_lines(b)
    assert lines[0].startswith("  per rank   (median over ranks of each rank's mean per "
                               "iteration, kineto) window 10.000 ms")
    assert "idle 1.500 ms" in lines[0]
    assert lines[1] == ("  idle by cause (HolisticTraceAnalysis, summed over streams; median "
                        "over ranks of each rank's mean per iteration): host wait 2.000 ms, "
                        "kernel wait 0.000 ms, other 4.000 ms")


def out_lines(b):
    from astral_dsl.outputs import diagnosis

    return diagnosis._breakdown(b)


def test_traces_naming_no_process_group_are_no_all_clear(small, tmp_path):
    """A healthy run's traces, those of stage 1 (ranks 64-127) as an older PyTorch writes them:
    NCCL kernels without process group or peer arguments, no `pg_config`. Their DP collectives
    and every pipeline transfer (stage 0's sends name a peer, stage 1's receives none) cannot be
    matched: 8 of the 16 hosts have no collective to align on, and the network they cross is not
    judged. W795 says so once, naming 64 files; nothing suspect is then no all-clear (exit 2),
    where it had been `healthy` (exit 0) with no word of it."""
    from astral_dsl.outputs.diagnosis import final_verdict

    design, fc, rm = small
    src, dst = tmp_path / "new", tmp_path / "old"
    write.write_traces(generate(fc, rm, seed=5), str(src), compress=False)
    dst.mkdir()
    named = ("Collective name", "Process Group Name", "Process Group Description",
             "Process Group Ranks", "Src Rank", "Dst Rank", "Group size")
    for r in range(rm.world):
        doc = json.loads((src / f"rank-{r}.json").read_text())
        if r >= 64:
            doc["distributedInfo"].pop("pg_config")
            for e in doc["traceEvents"]:
                for k in named:
                    (e.get("args") or {}).pop(k, None)
        (dst / f"rank-{r}.json").write_text(json.dumps(doc))
    result = diagnose.diagnose(design, observe.load([str(dst)]))
    (w,) = result.diagnostics
    assert w.code == "W795" and w.file == str(dst / "rank-100.json")
    assert "64 of the 128 ranks' traces name no process group and no peer" in w.message
    assert w.notes[0].endswith("and 60 more")
    assert result.verdict == "healthy" and len(result.clocks.aligned) == 8
    assert final_verdict(result, result.diagnostics) == "unusable"
    assert final_verdict(diagnose.diagnose(design, observe.load([str(src)])), ()) == "healthy"


def test_a_last_iteration_cut_short_is_said_and_left_out(small, tmp_path):
    """A healthy drill's log (3 iterations) with rank 80's last iteration cut at its middle,
    as a log copied while it was written: its rows of iteration 102 that start before the
    middle are kept, fewer than 90 % of its stage's (every rank of a stage logs the same rows
    per iteration). W788 names the counts and the iteration is left out: its DP collective is
    incomplete, so 16 DP groups (tp 8 x pp 2) x 3 iterations - 1 = 47 are matched; read as it
    was, it had been an iteration of part of the compute and collectives, said nowhere."""
    design, fc, rm = small
    data = generate(fc, rm, [], seed=5)
    path = tmp_path / "run.csv"
    write.write_log(data, str(path), "csv", "kernels")
    lines = path.read_text().splitlines()
    rows = [line.split(",") for line in lines[1:]]
    last = [r for r in rows if r[0] == "80" and r[1] == "102"]
    starts = sorted(float(r[3]) for r in last)
    middle = (starts[0] + starts[-1]) / 2
    kept = [r for r in rows if not (r[0] == "80" and r[1] == "102" and float(r[3]) > middle)]
    path.write_text("\n".join([lines[0]] + [",".join(r) for r in kept]) + "\n")
    n_kept = sum(1 for r in kept if r[0] == "80" and r[1] == "102")
    assert n_kept < 0.9 * len(last)
    result = diagnose.diagnose(design, observe.load([str(path)]))
    said = [d for d in result.diagnostics if d.code == "W788"]
    assert [d.message for d in said] == [
        f"iteration 102 of rank 80 holds {n_kept:,} records, its stage's ranks {len(last):,} "
        f"(median): cut short, it is left out"]
    assert said[0].hint and said[0].file == str(path)
    assert result.instances["dp"][0] == 47


def test_a_restarted_job_is_diagnosed_on_its_last_run(small, tmp_path):
    """A healthy job logs iterations 100-102, restarts from the checkpoint of 101 a minute
    later and logs 101 and 102 again, into the same file (the same hosts, so the same clocks:
    the same seed). The diagnosis reads each rank's last run (W796, the 128 ranks) and finds it
    healthy, compute at the forecast's; the two runs of 101 and 102 summed as one had doubled
    every rank's compute: `software`, every stage 2.01x the forecast."""
    design, fc, rm = small
    path = tmp_path / "run.csv"
    write.write_log(generate(fc, rm, [], seed=3), str(path))
    again = generate(fc, rm, [], seed=3, iterations=2, first_iteration=101)
    again = attrs.evolve(again, start=again.start + 3 * fc.iteration_time + 60.0)
    write.write_log(again, str(tmp_path / "again.csv"))
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines((tmp_path / "again.csv").read_text().splitlines(True)[1:])
    result = diagnose.diagnose(design, observe.load([str(path)]))
    said = [d for d in result.diagnostics if d.code == "W796"]
    assert len(said) == 1 and said[0].message.startswith(
        "128 rank(s) log iterations twice at different times (a restart)")
    assert result.iterations == (101, 102) and result.suspects == ()
    assert 0.95 < result.compute_ratio < 1.05


def test_a_job_that_cannot_be_forecast_is_said_at_the_job_and_the_all_clear_claims_no_forecast(
        tmp_path):
    """A job with an error of its own (E757: Llama 2 7B on two A100s, ZeRO-1 over 2, does not
    fit) is diagnosed against its peers only (W791). W791 had no span and no hint (`-->
    design.astral` alone), and the text then said every rank was "within the noise of its
    peers and the forecast", of a forecast there was none of, its verdict blaming the observed
    data ("part of the observed data could not be used"). Two ranks' hand-written log:
    0.1 s forward, 0.2 s backward and a 10 ms all-reduce an iteration, alike."""
    design = tmp_path / "a100.astral"
    design.write_text(
        "import stdlib.hardware { A100_80GB, CX6_HDR, HGX8 }\n"
        "import stdlib.models { Llama2_7B }\n"
        "host Node = HGX8(gpu = A100_80GB, nic = CX6_HDR, power = 6.5 kW, units = 6 U)\n"
        "rack R { hosts = 1 x Node }\n"
        "site Lab { racks = 1 x R }\n"
        "job small {\n"
        "  model = Llama2_7B, placement = Lab, gpus = 2\n"
        "  parallel { tp = 1, pp = 1, dp = 2, zero = 1 }\n"
        "  batch { global_batch = 8, micro = 2, seq = 4096 }\n"
        "  recompute = full\n"
        "}\n", encoding="utf-8")
    rows = ["rank,iteration,phase,start_s,duration_s,peer,op"]
    for it in range(3):
        t = 1_700_000_000.0 + it * 0.5
        for rank in (0, 1):
            rows += [f"{rank},{it},forward,{t:.4f},0.1,,",
                     f"{rank},{it},backward,{t + 0.1:.4f},0.2,,",
                     f"{rank},{it},dp_comm,{t + 0.3:.4f},0.01,,all_reduce"]
    log = tmp_path / "log.csv"
    log.write_text("\n".join(rows) + "\n", encoding="utf-8")
    proc = _astral_cli("diagnose", str(design), "--observed", str(log), cwd=tmp_path)
    out = proc.stdout
    assert "error[E757]" in out, out
    said = out[out.index("warning[W791]"):]
    assert said.splitlines()[1].strip().endswith("a100.astral:6:1"), said
    assert "= hint: fix the job's errors above" in said.split("\n\n")[0], said
    assert "within the noise of its peers (no forecast to compare with, W791)" in out, out
    assert "its peers and the forecast" not in out
    # nor is it the observed data's fault, which the verdict's reason said
    verdict = next(line for line in out.splitlines() if line.lstrip().startswith("verdict"))
    assert verdict.endswith("(the job has errors (above): no forecast to compare with (W791))"), \
        verdict
