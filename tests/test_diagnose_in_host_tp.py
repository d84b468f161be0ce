"""TP collectives inside a host with too few groups a stage to compare with each other are judged
against Seer's price of them inside its blocks (diagnose/in_blocks.py), and a GPU's NVLink port
can be drilled (`astral synth --fault nvlink`) and named.

The reproduction: tiny.astral's two hosts of 8 H100 and Llama 3 8B at tp 8, dp 2 (`inhost`):
its two TP groups are the hosts, one stage. A healthy drill had W797 ("6 of the 6 TP
collectives on stage 0 are not judged") and exit 2 (`no all-clear`): Seer prices TP inside the
blocks, and the diagnosis read no TP time from its forecast. `intp2` (tp 2, dp 8) puts 4 TP
groups on each host and each DP group of 8 on both hosts, 4 GPUs on each: a GPU's NVLink port
is then told apart from its host's NVSwitches."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.diagnose import in_blocks
from astral_dsl.diagnose.units import channel_units
from astral_dsl.diagnose.verdict import band_of
from astral_dsl.observe.load import Observed
from astral_dsl.observe.ranklog import columns_to_traces
from astral_dsl.outputs.diagnosis import EXIT_CODES, final_verdict
from astral_dsl.synth import Fault, generate, write
from astral_dsl.synth.inject import nvlink_ranks
from clirun import astral
from jobtext import job

ROOT = Path(__file__).resolve().parent / "fixtures" / "diagnose"
JOBS = job("inhost", "Llama3_8B", 16, "tp = 8, pp = 1, dp = 2",
           "global_batch = 16, micro = 1, seq = 4096", "Tiny") + \
    job("intp2", "Llama3_8B", 16, "tp = 2, pp = 1, dp = 8",
        "global_batch = 16, micro = 1, seq = 4096", "Tiny") + \
    job("onehost", "Llama3_8B", 8, "tp = 8, pp = 1, dp = 1",
        "global_batch = 16, micro = 1, seq = 4096", "Tiny")
TEXT = (ROOT / "tiny.astral").read_text() + JOBS
HOST0, HOST1 = "Tiny.racks[0].hosts[0]", "Tiny.racks[0].hosts[1]"


@pytest.fixture(scope="module")
def design():
    return astral_dsl.loads(TEXT, name="tiny.astral", root=ROOT)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("inhost") / "tiny.astral"
    path.write_text(TEXT)
    return path


def _job(design, name):
    return seer.forecast(design, job=name), diagnose.rank_map(design, name)


def test_seers_tp_price_at_three_grains(design):
    """Llama 3 8B (32 layers) at tp 8: a forward block holds 66 TP collectives (an attention and
    an MLP all-reduce a layer, the embedding's and the loss's), a backward block 65 (the input
    gradients' all-reduces of qkv and fc1 a layer, and the logits'); 8 micro-batches a rank
    (16 / dp 2), so 8 x (66 + 65) = 1,048 a stage and iteration, one price a `tp` operator; 16
    blocks, each the time its compute waits for its TP collectives (in_blocks.waits; where
    they are the block's only communication, as here, the breakdown's exposed TP, to the
    last bit: the breakdown's is the idle time times the stream's busy time over all of it);
    and their sum."""
    fc, _ = _job(design, "inhost")
    table = in_blocks.forecast_tp(fc)
    assert sorted(table) == [(0, 1), (0, 16), (0, 1048)]
    low = fc.lowering
    blocks = [low.template(0, b.chunk, b.phase) for b in fc.runs[0].blocks]
    assert table[(0, 16)] == tuple(in_blocks.waits(t, "tp") for t in blocks)
    assert table[(0, 16)] == pytest.approx(tuple(t.exposed["tp"] for t in blocks), rel=1e-12)
    assert table[(0, 1)] == (sum(table[(0, 16)]),)
    assert table[(0, 1048)] == tuple(o.dur for t in blocks for o in t.ops if o.stream == "tp")
    # the backward's gradient all-reduces run beside its weight-gradient GEMMs: exposed less
    back = [t for t, b in zip(blocks, fc.runs[0].blocks) if b.phase == "B"][0]
    assert back.exposed["tp"] < sum(o.dur for o in back.ops if o.stream == "tp")


@pytest.mark.parametrize("out", ["healthy.csv", "healthy"])
def test_a_healthy_job_with_tp_inside_its_hosts_is_healthy(source, tmp_path, out):
    """The reproduction, by the command line, a rank log (one TP row a rank and iteration) and
    profiler traces (one TP kernel a block): `healthy`, exit 0, no W797, every TP instance
    judged and none slow (6 = 2 groups x 3 iterations; 96 = 2 x 16 blocks x 3)."""
    path = tmp_path / out
    assert astral("synth", source, "--job", "inhost", "-o", path, "--seed", "1").returncode == 0
    proc = astral("diagnose", source, "--job", "inhost", "--observed", path, "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["verdict"] == "healthy"
    assert "W797" not in {d["code"] for d in doc["diagnostics"]}
    assert doc["instances"]["tp"] == {"matched": 6 if out.endswith(".csv") else 96, "slow": 0}


def test_an_nvlink_drill_names_the_host(source, tmp_path):
    """`astral synth --fault nvlink --part GPU 4 of host 1 --severity 0.5`: the port at half
    its rate, every collective of host 1's TP group 2x as long. The diagnosis names host 1
    (its TP group is the host: its GPUs' NVLink ports and its NVSwitches carry the same
    collectives, one suspect, named as the host), exit 1; the drill's answer says what it
    injected."""
    gpu, path = f"{HOST1}.gpus[4]", tmp_path / "nv.csv"
    proc = astral("synth", source, "--job", "inhost", "-o", path, "--fault", "nvlink",
                  "--part", gpu, "--severity", "0.5", "--seed", "1")
    assert proc.returncode == 0 and f"injected: nvlink {gpu} (severity 0.5)" in proc.stdout
    proc = astral("diagnose", source, "--job", "inhost", "--observed", path, "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["verdict"] == "suspects"
    top = doc["suspects"][0]
    assert (top["kind"], top["path"]) == ("host", HOST1) and top["probability"] > 0.95
    assert doc["instances"]["tp"] == {"matched": 6, "slow": 3}
    assert "NVLink" in top["note"] and f"nvlink {HOST1}.gpus[1]" in top["note"]


def test_an_nvlink_drill_names_the_gpus_port(design):
    """`intp2`: GPU 3 of host 0 (rank 3) at half rate slows its TP group (2, 3) and its DP
    group (ranks 1, 3, ..., 15: 4 on each host, NVLink inside each); nothing else. Its NVLink
    port is the one unit both cross: named alone (kind `nvlink`, the GPU's name). Its 3 TP
    and 3 DP instances ran slow; a fourth TP instance (group 6, iteration 102) passed the 25 %
    mark from the waits a per-iteration sum holds (the healthy drill has 2 such), explained by
    no suspect. Healthy: no suspect."""
    fc, rm = _job(design, "intp2")
    gpu = rm.ranks[3].gpu
    assert rm.group("tp", 3).ranks == (2, 3)
    assert rm.group("dp", 3).ranks == tuple(range(1, 16, 2))
    found = diagnose.diagnose(design, write.to_observed(
        generate(fc, rm, [Fault("nvlink", gpu, 0.5, 3)], seed=1)), job="intp2")
    named = [(s.kind, s.path) for s in found.suspects if not s.alternative]
    assert named == [("nvlink", gpu)] and found.verdict == "suspects"
    assert found.instances["tp"] == (24, 4) and found.instances["dp"] == (6, 3)
    healthy = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=1)),
                                job="intp2")
    assert healthy.verdict == "healthy" and not healthy.suspects


def test_one_group_a_stage_is_judged_beyond_seers_band(design):
    """`onehost` (tp 8 on one host, dp 1): one TP group, one NVLink domain, so the level cannot
    tell a fault from Seer's error and is held within its band (0.79-1.25x outside the
    calibrated envelope). Healthy: `healthy`. The NVLink at half rate: each iteration's sum
    about 2.2x Seer's (its waits in it), the level stops at the band's high edge, so the
    expected time is Seer's sum x the edge, and the host is named."""
    fc, rm = _job(design, "onehost")
    (low, high), _ = band_of(fc)
    healthy = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=1)),
                                job="onehost")
    assert healthy.verdict == "healthy" and healthy.instances["tp"] == (3, 0)
    found = diagnose.diagnose(design, write.to_observed(
        generate(fc, rm, [Fault("nvlink", rm.ranks[3].gpu, 0.5, 3)], seed=1)), job="onehost")
    assert [(s.kind, s.path) for s in found.suspects] == [("host", HOST0)]
    total = in_blocks.forecast_tp(fc)[(0, 1)][0]
    assert found.suspects[0].evidence[0].expected_s == pytest.approx(total * high, rel=1e-12)
    assert found.instances["tp"] == (3, 3)


def test_a_grain_seer_does_not_price_is_still_said(design):
    """Each TP row of the healthy `inhost` log cut in two (2 a rank and iteration): the
    forecast prices 1,048, 16 or 1 a group and iteration, not 2: W797 says so and the verdict
    is `unusable` (exit 2): what was not judged gets no all-clear."""
    fc, rm = _job(design, "inhost")
    rank, it, ph, st, du, pe, op = write.log_rows(generate(fc, rm, [], seed=1))
    rows = []
    for r in zip(rank, it, ph, st, du, pe, op):
        halves = [(r[3], r[4] / 2), (r[3] + r[4] / 2, r[4] / 2)] if r[2] == "tp_comm" else \
            [(r[3], r[4])]
        rows += [r[:3] + h + r[5:] for h in halves]
    cols = dict(zip(("rank", "iteration", "phase", "start_s", "duration_s", "peer", "op"),
                    map(list, zip(*rows))))
    cols["peer"] = [None if p < 0 else p for p in cols["peer"]]
    traces, diags = columns_to_traces("halved", cols)
    found = diagnose.diagnose(design, Observed(tuple(traces), tuple(diags), ("halved",),
                                               ("halved",)), job="inhost")
    said = [d.message for d in found.diagnostics if d.code == "W797"]
    assert said == ["12 of the 12 TP collectives on stage 0 are not judged: fewer than 3 TP "
                    "groups of their stage run each to compare it with, and the data gives 2 a "
                    "group and iteration, a grain the forecast does not price them at (1048, "
                    "16 or 1)"]
    verdict = final_verdict(found, found.diagnostics)
    assert verdict == "unusable" and EXIT_CODES[verdict] == 2


def test_nvlink_units_and_drill_parts(design, source, tmp_path):
    """A channel's `nvlink` units are its members' GPUs with another member in their NVLink
    domain: TP group (2, 3) both; a DP group of 8 on two hosts all 8 (4 on each); a pipeline
    pair of two hosts none. The drill draws and accepts a GPU only where such traffic runs; a
    severity above 1 (a rate) is refused."""
    _, rm = _job(design, "intp2")
    units = channel_units(rm, (2, 3))
    assert {u for u in units if u[0] == "nvlink"} == {("nvlink", rm.ranks[2].gpu),
                                                      ("nvlink", rm.ranks[3].gpu)}
    dp = channel_units(rm, tuple(range(1, 16, 2)))
    assert sorted(p for u, p in dp.items() if u[0] == "nvlink") == sorted(
        (rm.ranks[r].gpu,) for r in range(1, 16, 2))
    assert not [u for u in channel_units(rm, (0, 8)) if u[0] == "nvlink"]
    fc, _ = _job(design, "intp2")
    assert nvlink_ranks(rm, fc) == tuple(range(16))
    proc = astral("synth", source, "--job", "intp2", "-o", tmp_path / "x.csv", "--fault",
                  "nvlink", "--severity", "2")
    assert proc.returncode == 2 and "at most 1" in proc.stderr
    proc = astral("synth", source, "--job", "intp2", "-o", tmp_path / "x.csv", "--fault",
                  "nvlink", "--part", "Tiny.racks[0].hosts[0].nics[0].port[a]")
    assert proc.returncode == 2 and "--part" in proc.stderr
