"""The diagnosis, proven on generated data with known faults (a small fixed-seed sample; the
full proof over hundreds of random injections on the single-pod example is
benchmarks/bench_diagnose.py), and its handling of bad input."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, observe, seer
from astral_dsl.synth import Fault, generate, inject, write

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "tests" / "fixtures" / "diagnose" / "small.astral"
TRACES = REPO / "tests" / "fixtures" / "traces"


@pytest.fixture(scope="module")
def small():
    design = astral_dsl.load(str(SMALL))
    return design, seer.forecast(design), diagnose.rank_map(design)


@pytest.mark.parametrize("kind", ["none", "gpu", "nic_port", "tor", "agg", "link_flap"])
@pytest.mark.parametrize("fmt", ["csv", "jsonl", "kineto"])
def test_injected_part_is_the_first_suspect(small, kind, fmt):
    design, fc, rm = small
    for seed in (1, 2):
        t = inject.trial(design, fc, rm, kind, seed, fmt)
        print(kind, fmt, seed, t.fault.part if t.fault else "-", "->", t.first)
        assert t.diagnostics == ()
        if kind == "none":
            assert t.suspects == 0, "a fault-free run raised an alarm"
        else:
            assert t.position == 1, f"{t.fault} ranked {t.position}: first {t.first}"


def test_single_pod_sample(tmp_path):
    """Two runs on the single-pod example's 1,024-rank job, through the compact log."""
    design = astral_dsl.load(str(REPO / "examples" / "single_pod.astral"))
    fc = seer.forecast(design)
    rm = diagnose.rank_map(design)
    for kind, seed in (("nic_port", 11), ("none", 12)):
        t = inject.trial(design, fc, rm, kind, seed, "csv")
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
    design, fc, rm = small
    faults = [Fault("gpu", r.gpu, 0.25, r.rank) for r in rm.ranks]
    design, path = _log(small, tmp_path, faults)
    result = diagnose.diagnose(design, observe.load([str(path)]))
    assert [s.kind for s in result.suspects] == ["software"]
    pct = int(re.search(r"computes (\d+)% slower", result.suspects[0].summary).group(1))
    assert 23 <= pct <= 28          # 25 % injected, GPUs spread by about 1 %


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
    assert result.suspects[0].path == rm.ranks[5].gpu          # what can be read is analysed


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
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "astral_dsl.cli", *args], capture_output=True,
                          text=True, env=env, cwd=REPO)


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
    first = doc["suspects"][0]
    assert first["kind"] == "nic port" and port.name in first["parts"]
    assert first["evidence"][0]["ranks"][:1] and doc["world_size"] == 128
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    proc = _cli("diagnose", str(SMALL), "--observed", str(bad))
    assert proc.returncode == 2 and "E781" in proc.stdout
