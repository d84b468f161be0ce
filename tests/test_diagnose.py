"""The diagnosis, proven on generated data with known faults (a small fixed-seed sample; the
full proof over hundreds of random injections on the single-pod example is
benchmarks/bench_diagnose.py), and its handling of bad input."""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, observe, seer
from astral_dsl.synth import Fault, Noise, generate, write
from benchmarks.proof import trial
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "tests" / "fixtures" / "diagnose" / "small.astral"
TRACES = REPO / "tests" / "fixtures" / "traces"


@pytest.fixture(scope="module")
def small():
    design = astral_dsl.load(str(SMALL))
    return design, seer.forecast(design), diagnose.rank_map(design)


@pytest.fixture(scope="module")
def small_checked():
    return astral_dsl.check(astral_dsl.compile(str(SMALL)))


def test_a_fast_drill_is_beyond_what_the_forecasts_band_explains(small):
    """A `fast` drill (synth's default draw, the proof's) is faster than the job's forecast by
    more than its band allows: from 1.13 to 3.48 times 1 / (the band's low ratio), the drill as
    first drawn (1.3-4x) against the default band's 1.15x. A 1.3x draw had been within Seer's
    -25 % band (1.33x), no fault the diagnosis could name."""
    from astral_dsl.diagnose.verdict import band_of
    from astral_dsl.synth.inject import random_fault

    design, fc, rm = small
    low = band_of(fc)[0][0]
    drawn = [random_fault("fast", rm, fc, np.random.default_rng(s)).severity
             for s in range(200)]
    assert min(drawn) >= 1.13 / low and max(drawn) <= 3.48 / low
    assert min(drawn) * low > 1.1              # every draw >10 % beyond the band's edge
    # with the default band (1 / 1.15 low) the range is the drill's first: 1.2995 .. 4.002
    assert (1.13 * 1.15, 3.48 * 1.15) == pytest.approx((1.2995, 4.002))


SAMPLE_SEEDS = (1, 2, 3, 4, 5)
FLAP_ITERATIONS = 12      # the small job has few transfers: a link bad 15 % of the time needs 12
TARGETS = {"first": 0.95, "top3": 0.99, "alarms": 0.02}


def test_localisation_sample(small):
    """The fixed-seed sample of the proof on the small design (compact log rows, through the
    log reader's column path): every kind of fault five times, five fault-free runs. Prints
    the targets and the rates measured on the sample; with these few trials every one must
    hold (the statistics of the full proof: benchmarks/bench_diagnose.py)."""
    design, fc, rm = small
    rows = []
    for kind in ("gpu", "nic_port", "tor", "agg", "link_flap", "none"):
        for seed in SAMPLE_SEEDS:
            its = FLAP_ITERATIONS if kind == "link_flap" else 3
            t = trial(design, fc, rm, kind, seed, "memory", iterations=its)
            print(kind, seed, t.fault.part if t.fault else "-", "->", t.first)
            assert t.diagnostics == ()
            rows.append(t)
    faults = [t for t in rows if t.kind != "none"]
    first = sum(t.position == 1 for t in faults) / len(faults)
    top3 = sum(t.position is not None and t.position <= 3 for t in faults) / len(faults)
    alarms = sum(t.suspects > 0 for t in rows if t.kind == "none") / \
        sum(t.kind == "none" for t in rows)
    print(f"targets: first >= {TARGETS['first']:.0%}, top 3 >= {TARGETS['top3']:.0%}, "
          f"fault-free alarms <= {TARGETS['alarms']:.0%}")
    print(f"sample: first {first:.0%}, top 3 {top3:.0%} of {len(faults)} injections; alarms "
          f"{alarms:.0%} of {len(rows) - len(faults)} fault-free runs")
    missed = [(t.kind, t.fault.part, t.position, t.first) for t in faults if t.position != 1]
    assert not missed, missed
    assert alarms == 0


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "kineto"])
def test_each_format_localises(small, fmt):
    """The same faults written as CSV, JSON Lines and Kineto traces, read back and found."""
    design, fc, rm = small
    for kind in ("none", "gpu", "nic_port", "tor", "agg"):
        t = trial(design, fc, rm, kind, 1, fmt)
        print(kind, fmt, t.fault.part if t.fault else "-", "->", t.first)
        assert t.diagnostics == ()
        assert (t.suspects == 0) if kind == "none" else (t.position == 1)


def test_doubled_noise_raises_no_alarm(small):
    """Twice the generator's noise (kernels 4 %, network 6 %, GPUs 2 %): the spreads are
    measured from the data, so healthy runs stay quiet and faults are still found."""
    design, fc, rm = small
    noise = Noise(kernel=0.04, comm=0.06, iteration=0.02, gpu_spread=0.02)
    for seed in (11, 12, 13):
        assert trial(design, fc, rm, "none", seed, "memory", noise).suspects == 0
    for kind in ("nic_port", "tor", "agg"):
        assert trial(design, fc, rm, kind, 11, "memory", noise).position == 1


def test_an_uplink_is_a_link_suspect():
    """Four ToRs per rail and plane: the pipeline's transfers climb from every ToR, so one
    ToR's uplinks (slow) are told apart from the ToR (its data-parallel traffic stays below),
    the aggregation group and the other ToRs' uplinks (healthy): a `link` suspect named by its
    ends, the upper end the group (ECMP decides the switch), every plane."""
    text = SMALL.read_text().replace("gpus = 128", "gpus = 256").replace(
        "parallel { tp = 8, pp = 2, dp = 8 }", "parallel { tp = 8, pp = 4, dp = 8 }").replace(
        "global_batch = 32", "global_batch = 64")
    design = astral_dsl.loads(text, name=str(SMALL))
    fc, rm = seer.forecast(design), diagnose.rank_map(design)
    t = trial(design, fc, rm, "uplink", 41, "memory")
    assert t.fault.part == "Small.fabric.rail[6].plane[A].tor[1] -- Small.fabric.rail[6].plane[A].agg[0]"
    assert t.position == 1
    assert t.first == ("link Small.fabric.rail[6].plane[A|B].tor[1] -- "
                       "Small.fabric.rail[6].plane[A|B].agg")


def test_single_pod_sample(tmp_path):
    """Two runs on the single-pod example's 1,024-rank job, through the compact log."""
    design = astral_dsl.load(str(REPO / "examples" / "single_pod.astral"))
    fc = seer.forecast(design)
    rm = diagnose.rank_map(design)
    for kind, seed in (("nic_port", 11), ("none", 12)):
        t = trial(design, fc, rm, kind, seed, "memory")
        print(kind, t.fault, "->", t.first)
        assert t.diagnostics == ()
        assert (t.position == 1) if kind != "none" else (t.suspects == 0)


def _log(small, tmp_path, faults=(), seed=3):
    design, fc, rm = small
    data = generate(fc, rm, list(faults), seed=seed)
    path = tmp_path / "log.csv"
    write.write_log(data, str(path))
    return design, path


def _rows(path):
    with open(path) as fh:
        return list(csv.reader(fh))


def _write(path, rows):
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)


def test_slow_everywhere_is_software_not_hardware(small, tmp_path):
    """Every GPU 60 % slower: beyond the forecast's band (its envelope, -21/+26 % for this job
    outside the calibrated regimes), the software or the forecast, not one part. 25 % slower
    is within the band: Seer cannot tell it from its own error, and names nothing."""
    design, fc, rm = small
    assert fc.envelope().band[1] < 0.6
    faults = [Fault("gpu", r.gpu, 0.6, r.rank) for r in rm.ranks]
    design, path = _log(small, tmp_path, faults)
    result = diagnose.diagnose(design, observe.load([str(path)]))
    assert [s.kind for s in result.suspects] == ["software"]
    pct = int(re.search(r"computes (\d+) % slower", result.suspects[0].summary).group(1))
    assert 57 <= pct <= 63          # 60 % injected, GPUs spread by about 1 %
    faults = [Fault("gpu", r.gpu, 0.25, r.rank) for r in rm.ranks]
    design, path = _log(small, tmp_path, faults)
    assert diagnose.diagnose(design, observe.load([str(path)])).suspects == ()


def test_a_host_with_slow_gpus_is_the_host(small, tmp_path):
    design, fc, rm = small
    host = rm.ranks[72].host
    faults = [Fault("gpu", r.gpu, 0.2, r.rank) for r in rm.ranks if r.host == host][:6]
    design, path = _log(small, tmp_path, faults)
    result = diagnose.diagnose(design, observe.load([str(path)]))
    assert result.suspects[0].kind == "host" and result.suspects[0].path == host


def test_missing_ranks_and_empty_iterations(small, tmp_path):
    design, fc, rm = small
    faults = [Fault("gpu", rm.ranks[5].gpu, 0.2, 5)]
    design, path = _log(small, tmp_path, faults)
    rows = _rows(path)
    kept = [rows[0]] + [r for r in rows[1:] if r[0] not in ("70", "71")
                        and not (r[0] == "9" and r[1] == "101")]
    _write(path, kept)
    result = diagnose.diagnose(design, observe.load([str(path)]))
    codes = [d.code for d in result.diagnostics]
    assert codes == ["W788", "W787"]
    assert "70-71" in result.diagnostics[1].message and "iteration(s) 101" in \
        result.diagnostics[0].message
    assert f"(looked in {path})" in result.diagnostics[1].message and \
        result.diagnostics[1].file == str(path)
    assert result.suspects[0].path == rm.ranks[5].gpu          # what can be read is analysed


@pytest.mark.parametrize("peer", ["1000", "-7", "9007199254740992"])
def test_a_transfer_with_a_peer_outside_the_job_is_left_out(small, tmp_path, peer):
    """A pipeline transfer naming a peer the job does not have (it indexed the stages past
    their end: IndexError, E000; found by make fuzz-deep) is left out with E786, and the rest
    is diagnosed."""
    design, fc, rm = small
    design, path = _log(small, tmp_path)
    rows = _rows(path)
    col = rows[0].index("peer")
    hit = next(i for i, r in enumerate(rows[1:], 1) if r[col] not in ("", "-1"))
    rows[hit][col] = peer
    _write(path, rows)
    result = diagnose.diagnose(design, observe.load([str(path)]))
    e786 = [d for d in result.diagnostics if d.code == "E786"]
    assert len(e786) == 1 and f"1 record(s) name a peer outside the job's {rm.world} ranks " \
        f"(e.g. {peer})" in e786[0].message and e786[0].file == str(path)
    assert result.suspects == ()            # a fault-free run: still no alarm


def test_a_drifting_clock_cannot_be_aligned(small, tmp_path):
    design, fc, rm = small
    design, path = _log(small, tmp_path)
    rows = _rows(path)
    host_ranks = {str(r.rank) for r in rm.ranks if r.host == rm.ranks[16].host}
    for r in rows[1:]:
        if r[0] in host_ranks and r[1] == "102":
            r[3] = f"{float(r[3]) + 0.05:.7f}"               # 50 ms jump in the last iteration
    _write(path, rows)
    result = diagnose.diagnose(design, observe.load([str(path)]))
    assert [d.code for d in result.diagnostics] == ["E789"]
    assert rm.ranks[16].host in result.diagnostics[0].message
    assert result.diagnostics[0].file == str(path)
    assert result.suspects == ()                              # no false alarm from it


def test_traces_of_another_job(small, tmp_path):
    design, fc, rm = small
    with pytest.raises(diagnose.DiagnoseError) as info:
        diagnose.diagnose(design, observe.load([str(TRACES / "nccl_data_rank-0.json.gz")]))
    assert [d.code for d in info.value.diagnostics] == ["E785"]


def _cli(*args):
    return _astral_cli(*args, cwd=REPO)


def test_cli_exit_codes_and_json(small, tmp_path):
    design, fc, rm = small
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    write.write_log(generate(fc, rm, [], seed=4), str(healthy / "log.csv"))
    proc = _cli("diagnose", str(SMALL), "--observed", str(healthy))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no suspect" in proc.stdout
    port = rm.ranks[100].ports[0]
    faulty = tmp_path / "faulty.jsonl"
    write.write_log(generate(fc, rm, [Fault("nic_port", port.name, 0.5, 100)], seed=4),
                    str(faulty), "jsonl")
    out = tmp_path / "diagnosis.json"
    proc = _cli("diagnose", str(SMALL), "--observed", str(faulty), "--format", "json",
                "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == json.loads(out.read_text())
    import jsonschema

    jsonschema.validate(doc, json.loads((REPO / "schema" / "diagnosis.schema.json").read_text()))
    assert doc["verdict"] == "suspects" and doc["exit_code"] == 1
    first = doc["suspects"][0]
    assert first["kind"] == "nic port" and port.name in first["parts"]
    assert first["evidence"][0]["ranks"][:1] and doc["world_size"] == 128
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    proc = _cli("diagnose", str(SMALL), "--observed", str(bad))
    assert proc.returncode == 2 and "E781" in proc.stdout


def test_the_warnings_a_design_accepts_are_apart_in_diagnose_and_synth(small, tmp_path):
    """`allow W216` was ignored by diagnose (human and JSON, a diagnosis or a failure alike)
    and by synth's JSON: each accepted warning printed in full with its hint to accept it, as
    if the design had not. Now said apart as `check` and `forecast` say them."""
    design, fc, rm = small
    text = SMALL.read_text(encoding="utf-8").replace(", liquid_share = 75 %)", ")")
    text += '\nallow W216 "no data sheet for the host"\n'
    allowed = tmp_path / "allowed.astral"
    allowed.write_text(text, encoding="utf-8")
    healthy = tmp_path / "log.csv"
    write.write_log(generate(fc, rm, [], seed=4), str(healthy))
    said = "accepted by allow at " + str(allowed) + ":"
    for observed, code in ((healthy, 0), (tmp_path / "none", 2)):
        proc = _cli("diagnose", str(allowed), "--observed", str(observed), "--color", "never")
        assert proc.returncode == code, proc.stdout + proc.stderr
        assert "W216" not in proc.stdout.replace("  W216 " + str(allowed), "")
        assert "accepted: 1 warning(s)" in proc.stdout and said in proc.stdout, proc.stdout
        proc = _cli("diagnose", str(allowed), "--observed", str(observed), "--format", "json")
        doc = json.loads(proc.stdout)
        assert [d["code"] for d in doc["accepted"]] == ["W216"]
        assert "W216" not in [d["code"] for d in doc["diagnostics"]]
        import jsonschema

        jsonschema.validate(doc, json.loads((REPO / "schema" / "diagnosis.schema.json")
                                            .read_text()))
    for job in ("small", "nope"):
        proc = _cli("synth", str(allowed), "-o", str(tmp_path / "drill.csv"), "--iterations",
                    "1", "--job", job, "--format", "json")
        doc = json.loads(proc.stdout)
        assert [d["code"] for d in doc["accepted"]] == ["W216"], proc.stdout
        assert "W216" not in [d["code"] for d in doc["diagnostics"]]
    proc = _cli("synth", str(allowed), "-o", str(tmp_path / "drill.csv"), "--job", "nope")
    assert proc.returncode == 1 and "warning[W216]" not in proc.stderr
    assert "accepted: 1 warning(s)" in proc.stderr and said in proc.stderr, proc.stderr


def test_the_diagnosis_does_not_depend_on_the_reading_processes(small, tmp_path):
    """128 Kineto traces (a NIC port at half rate) read by one process, by two, and by the
    default (one per core): the same output and the same diagnosis file, byte for byte."""
    design, fc, rm = small
    port = rm.ranks[100].ports[0]
    traces = tmp_path / "traces"
    write.write_traces(generate(fc, rm, [Fault("nic_port", port.name, 0.5, 100)], seed=4),
                       str(traces))
    outputs = []
    for jobs in (["--jobs", "1"], ["--jobs", "2"], []):
        out = tmp_path / f"diagnosis{len(outputs)}.json"
        proc = _cli("diagnose", str(SMALL), "--observed", str(traces), "--format", "json",
                    "-o", str(out), *jobs)
        assert proc.returncode == 1, proc.stderr
        outputs.append((proc.stdout, out.read_bytes()))
    assert outputs[0] == outputs[1] == outputs[2]
    assert port.name in json.loads(outputs[0][0])["suspects"][0]["parts"]
    proc = _cli("diagnose", str(SMALL), "--observed", str(traces), "--jobs", "0")
    assert proc.returncode == 2 and "--jobs 0" in proc.stderr and not proc.stdout
    # past MAX_LOCAL_WORKERS: 100,000 forked processes (one per file, as many as there are)
    proc = _cli("diagnose", str(SMALL), "--observed", str(traces), "--jobs", "100000")
    assert proc.returncode == 2 and not proc.stdout
    assert "--jobs 100,000: more than 1,024 local worker processes" in proc.stderr


TINY = REPO / "tests" / "fixtures" / "diagnose" / "tiny.astral"


def test_a_directory_mixing_two_jobs_keeps_this_jobs_trace(tmp_path):
    """B1: rank 0 of a 128-rank job and rank 0 of the 2-rank job in one directory: the other
    world size is set aside first (E785), so this job's trace is kept, not called a
    duplicate."""
    mix = tmp_path / "mix"
    mix.mkdir()
    shutil.copy(TRACES / "sampled_rank-0.json.gz", mix / "a_rank-0.json.gz")
    shutil.copy(TRACES / "nccl_data_rank-0.json.gz", mix / "b_rank-0.json.gz")
    result = diagnose.diagnose(astral_dsl.load(str(TINY)), observe.load([str(mix)]))
    assert [d.code for d in result.diagnostics] == ["E785", "W787"]
    assert result.diagnostics[0].file == str(mix / "a_rank-0.json.gz")
    assert result.ranks_read == (0,)
    # W787 names where it looked
    assert f"looked in {mix}" in result.diagnostics[1].message
    assert result.diagnostics[1].file == str(mix)


def test_a_rank_that_is_not_a_rank_is_said_not_a_crash(tmp_path):
    """The real 2-rank trace with `distributedInfo.rank` -1 (or 1.5, or true) had raised
    KeyError: -1 (E000): it is E783 naming the value, or W783 when the file name says the
    rank; a trace handed to the diagnosis with a negative rank is outside the job (E786)."""
    import gzip

    import attrs

    from astral_dsl.observe import kineto
    from astral_dsl.observe.load import Observed

    doc = json.loads(gzip.decompress((TRACES / "nccl_data_rank-0.json.gz").read_bytes()))
    for value, shown in ((-1, "-1"), (1.5, "1.5"), (True, "true")):
        doc["distributedInfo"]["rank"] = value
        path = tmp_path / "trace.json"
        path.write_text(json.dumps(doc))
        proc = _cli("diagnose", str(TINY), "--observed", str(path))
        assert proc.returncode == 2 and "E000" not in proc.stdout + proc.stderr
        assert f"error[E783]: the trace does not say which rank it is: `distributedInfo.rank` " \
               f"is {shown}, not a rank, and no `rank-N` in the file name" in proc.stdout
    named = tmp_path / "rank-1.json"
    named.write_text(json.dumps(doc))
    result = diagnose.diagnose(astral_dsl.load(str(TINY)), observe.load([str(named)]))
    assert result.ranks_read == (1,)
    assert result.diagnostics[0].message == ("`distributedInfo.rank` is true, not a rank: the "
                                             "rank is taken from the file name (`rank-N`)")
    assert result.diagnostics[0].file == str(named)
    doc["distributedInfo"]["rank"] = 0
    trace, _ = kineto.read(str(path), doc)
    with pytest.raises(diagnose.DiagnoseError) as err:
        diagnose.diagnose(astral_dsl.load(str(TINY)),
                          Observed((attrs.evolve(trace, rank=-1),), (), (str(path),)))
    assert [(d.code, d.message, d.hint) for d in err.value.diagnostics] == [
        ("E786", "rank -1 is outside the job's 2 ranks: left out",
         "`two` has ranks 0-1: a file of another job (--job names the job observed) or a "
         "wrong rank column")]
def test_traces_of_another_job_with_the_same_world_size(small, tmp_path):
    """The sampled real traces are of a 128-rank job too: placed as ranks 0 and 1 of the small
    job they are not its ranks (their iterations are none of the others'): E790 naming each
    file, and the other 126 ranks are still analysed."""
    design, fc, rm = small
    data = generate(fc, rm, [Fault("gpu", rm.ranks[5].gpu, 0.2, 5)], seed=3)
    log = tmp_path / "obs" / "log.csv"
    log.parent.mkdir()
    write.write_log(data, str(log))
    rows = _rows(log)
    _write(log, [rows[0]] + [r for r in rows[1:] if r[0] not in ("0", "1")])
    for r in (0, 1):
        shutil.copy(TRACES / f"sampled_rank-{r}.json.gz", log.parent / f"rank-{r}.json.gz")
    result = diagnose.diagnose(design, observe.load([str(log.parent)]))
    e790 = [d for d in result.diagnostics if d.code == "E790"]
    assert [d.file for d in e790] == [str(log.parent / "rank-0.json.gz"),
                                      str(log.parent / "rank-1.json.gz")]
    assert "iterations (551, 552) are none of the other ranks' (100-102)" in e790[0].message
    assert [d.code for d in result.diagnostics] == ["E790", "E790", "W787"]
    assert result.suspects[0].path == rm.ranks[5].gpu


def test_a_schedule_unlike_the_stage_is_another_job(small, tmp_path):
    """A rank whose log holds a tenth of its stage's communication records per iteration:
    its schedule is not the stage's (E790)."""
    design, fc, rm = small
    path = tmp_path / "log.csv"
    write.write_log(generate(fc, rm, [], seed=6), str(path))
    rows = _rows(path)
    comm = [r for r in rows[1:] if r[0] == "9" and r[2].endswith("_comm")]
    drop = {id(r) for r in comm[: int(len(comm) * 0.9)]}
    _write(path, [r for r in rows if id(r) not in drop])
    result = diagnose.diagnose(design, observe.load([str(path)]))
    assert [d.code for d in result.diagnostics] == ["E790", "W787"]
    assert "rank 9" in result.diagnostics[0].message and "schedule" in \
        result.diagnostics[0].message


def test_a_wrong_rank_order_is_said_once(small, tmp_path):
    """Data written in tp-cp-ep-dp-pp diagnosed as tp-cp-ep-pp-dp: the pipeline peers do not
    fit, the default order does; one diagnostic (E792) suggesting it, exit 2, no clock errors
    and no false GPU suspects."""
    design, fc, rm = small
    path = tmp_path / "log.csv"
    write.write_log(generate(fc, rm, [], seed=4), str(path))
    with pytest.raises(diagnose.DiagnoseError) as info:
        diagnose.diagnose(design, observe.load([str(path)]), order="tp-cp-ep-pp-dp")
    assert [d.code for d in info.value.diagnostics] == ["E792"]
    d = info.value.diagnostics[0]
    assert "does not match the rank order tp-cp-ep-pp-dp" in d.message
    assert "tp-cp-ep-dp-pp" in d.message and d.hint == \
        "pass --order tp-cp-ep-dp-pp (or declare `order` in the job's `parallel`)"
    proc = _cli("diagnose", str(SMALL), "--observed", str(path), "--order", "tp-cp-ep-pp-dp")
    assert proc.returncode == 2 and proc.stdout.count("E792") == 1 and "E789" not in proc.stdout


def _suspect(kind, path, parts, confidence=0.9, alternative=False):
    return {"kind": kind, "path": path, "parts": list(parts), "confidence": confidence,
            **({"alternative": True} if alternative else {})}


def test_highlight_rack_view(small, small_checked):
    """A NIC suspect of rank 100 (Small.racks[3].hosts[0], NIC 4) on its rack: both port cells
    and both cables red, the other suspects named in a note (a GPU of another rack) or said to
    be left out (an alternative)."""
    from astral_dsl.outputs.render import render

    design, fc, rm = small
    r = rm.ranks[100]
    nic = [p.name for p in r.ports] + [f"{p.name} -- {p.switch}" for p in r.ports]
    other = rm.ranks[5].gpu
    dot = render(design, "rack", "Small.racks[3]", checked=small_checked, highlight=[
        _suspect("nic port", r.ports[0].name.replace("port[a]", "port[a|b]"), nic),
        _suspect("gpu", other, [other], 0.6),
        _suspect("switch", "Small.fabric.rail[0].plane[A|B].tor[0]", [], 0.01, True)]).source
    assert r.gpu == "Small.racks[3].hosts[0].gpus[4]"
    # host 0's NIC 4: its label and both port cells red (and two swatches of the legend)
    assert dot.count('BGCOLOR="#ffebee"') == 5 and dot.count("NIC 4 · 200G ●") == 1
    assert dot.count('class="network suspect"') == 2            # the two cables
    assert "not in this picture: suspect 2: gpu Small.racks[0].hosts[0].gpus[5] (60 %)" in dot
    assert "1 alternative suspect(s) of the diagnosis are not drawn" in dot


def test_highlight_pod_view(small, small_checked):
    """On the pod view (here the site, which holds the fabric): a first-tier switch suspect
    marks its rail's ToR node of each plane, a tier suspect its groups, an uplink suspect the
    edges between the two tiers of its rail and planes."""
    from astral_dsl.outputs.render import render

    design, fc, rm = small
    f = "Small.fabric"
    dot = render(design, "pod", checked=small_checked, highlight=[
        _suspect("switch", f"{f}.rail[2].plane[A|B].tor[1]",
                 [f"{f}.rail[2].plane[A].tor[1]", f"{f}.rail[2].plane[B].tor[1]"]),
        _suspect("link", f"{f}.rail[5].plane[A|B].tor[0] -- {f}.rail[5].plane[A|B].agg",
                 [f"{f}.rail[5].plane[A].tor[0] -- {f}.rail[5].plane[A].agg",
                  f"{f}.rail[5].plane[B].tor[0] -- {f}.rail[5].plane[B].agg"])]).source
    suspect_nodes = re.findall(r'(\w+) \[label=<[^\n]*class="node[^"]*suspect', dot)
    marked = re.findall(r"^\s*(\w+) \[.*class=\"[^\"]*suspect", dot, re.M)
    assert sorted(marked) == ["f0_t0_2_0", "f0_t0_2_1"], (suspect_nodes, marked)
    edges = re.findall(r"^\s*(\w+) -> (\w+) \[.*class=\"network suspect\"", dot, re.M)
    assert sorted(edges) == [("f0_t1_5_0", "f0_t0_5_0"), ("f0_t1_5_1", "f0_t0_5_1")]
    assert "not in this picture" not in dot


def test_a_tie_across_pods_is_drawn_in_each_pods_picture():
    """A tie of two NICs in two pods (a pipeline transfer between them slow: the drill
    `astral synth two_pods.astral --fault link_flap --seed 4 --iterations 12` gives it,
    `pods[0]...hosts[2].nics[0].port[a|b] or pods[1]...hosts[2].nics[0].port[a|b]`): each
    pod's picture marks its hosts' node, and neither says the suspect is not in it. The path
    starts with the first pod's name: only the first pod's picture had drawn it."""
    from astral_dsl.outputs.render import render

    path = REPO / "tests" / "fixtures" / "diagnose" / "two_pods.astral"
    design = astral_dsl.load(str(path))
    checked = astral_dsl.check(astral_dsl.compile(str(path)))
    nics = [f"Two.pods[{p}].racks[1].hosts[2].nics[0].port[a|b]" for p in (0, 1)]
    tie = dict(_suspect("nic port", " or ".join(nics),
                        [n.replace("[a|b]", f"[{x}]") for n in nics for x in "ab"], 0.98),
               tied=nics)
    for pod in (0, 1):
        dot = render(design, "pod", f"Two.pods[{pod}]", checked=checked,
                     highlight=[tie]).source
        assert re.findall(r"^\s*(\w+) \[.*class=\"[^\"]*suspect", dot, re.M) == ["hosts0"]
        assert "not in this picture" not in dot


def test_render_highlight_cli(small, tmp_path):
    design, fc, rm = small
    port = rm.ranks[100].ports[0]
    faulty = tmp_path / "faulty.csv"
    write.write_log(generate(fc, rm, [Fault("nic_port", port.name, 0.5, 100)], seed=4),
                    str(faulty))
    out = tmp_path / "diagnosis.json"
    proc = _cli("diagnose", str(SMALL), "--observed", str(faulty), "-o", str(out))
    assert proc.returncode == 1, proc.stdout
    dot = tmp_path / "rack.dot"
    proc = _cli("render", str(SMALL), "--view", "rack", "--name", "Small.racks[3]",
                "--highlight", str(out), "-o", str(dot))
    assert proc.returncode == 0, proc.stderr
    assert "1 of 1 suspect(s) drawn" in proc.stdout
    assert 'class="network suspect"' in dot.read_text()
    proc = _cli("render", str(SMALL), "--view", "power", "--highlight", str(out),
                "-o", str(dot))
    assert proc.returncode == 2 and "E702" in proc.stderr
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    proc = _cli("render", str(SMALL), "--view", "rack", "--highlight", str(bad), "-o", str(dot))
    assert proc.returncode == 2 and "is not a diagnosis" in proc.stderr


def test_slow_transfers_on_a_network_with_no_declared_parts(tmp_path):
    """A design whose hosts have NICs but no fabric, and a rank log (found by make fuzz-deep)
    whose pipeline transfers are slow: the transfers cross no declared part, so the network
    has nothing to name (localise raised ValueError on an empty list of suspects: E000)."""
    here = REPO / "tests" / "fixtures" / "diagnose" / "no_fabric"
    proc = _cli("diagnose", str(here / "design.astral"), "--observed", str(here / "ranks.csv"),
                "-o", str(tmp_path / "d.json"), "--color", "never")
    assert proc.returncode in (0, 1), proc.stderr
    assert "E000" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "d.json").read_text())["suspects"]


def test_profiler_step_numbers_past_2_53_are_shown(tmp_path):
    """A profiler trace whose ProfilerStep numbers are 3, 2^53+1 and 2^53+2 (found by make
    fuzz-deep): the text report listed the iterations by building the range between the first
    and the last, and ran out of memory (E000)."""
    here = REPO / "tests" / "fixtures" / "diagnose" / "step_numbers"
    proc = _cli("diagnose", str(here / "design.astral"), "--observed", str(here / "traces"),
                "--color", "never")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "E000" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
    assert "3, 9007199254740993, 9007199254740994" in proc.stdout


def test_consecutive_iterations_are_shown_as_their_ends():
    from astral_dsl.outputs.diagnosis import _its

    assert _its([4, 5, 6, 7]) == "4-7"
    assert _its([4, 5]) == "4, 5"
    assert _its([4, 6, 7]) == "4, 6, 7"
    assert _its([0, 2 ** 62, 2 ** 62 + 1]) == "0, 4611686018427387904, 4611686018427387905"
    assert _its([]) == "-"


def test_a_lone_surrogate_in_a_traces_names_is_written_as_its_escape(tmp_path):
    """A profiler trace whose kernel name is JSON's "\\ud800", a lone surrogate (found by make
    fuzz-deep): a JSON parser accepts it and no UTF-8 output can write it, so the text report,
    `--format json` and `-o` all ended in E000. It is written as its escape."""
    here = REPO / "tests" / "fixtures" / "diagnose" / "surrogate"
    args = ("diagnose", str(here / "design.astral"), "--observed", str(here / "traces"),
            "--color", "never")
    out = tmp_path / "d.json"
    for extra in ((), ("--format", "json"), ("-o", str(out))):
        proc = _cli(*args, *extra)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        assert "E000" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
    assert "\\ud800:" in proc.stdout                            # the text report, escaped
    assert '"name":"\\\\ud800"' in out.read_text(encoding="utf-8")   # its escape, as text


def test_printable_escapes_lone_surrogates_only():
    from astral_dsl.observe.text import printable
    from astral_dsl.outputs.jsonout import dumps

    assert printable("nccl:all_reduce") == "nccl:all_reduce"
    assert printable("x\ud800y") == "x\\ud800y"
    assert printable("héllo 😀") == "héllo 😀"
    assert dumps({"a": "x\ud800"}) == '{"a":"x\\ud800"}'     # JSON's escape, valid UTF-8
    assert json.loads(dumps({"a": "x\ud800"}))["a"] == "x\ud800"
