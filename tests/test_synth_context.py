"""Drills of context parallelism and of ZeRO-3 / FSDP with expert parallelism (synth/context.py,
synth/sharded.py): the drill generator replays Transformer Engine's CP ring (a step per
attention layer, overlapped with the attention kernel, its gradients' exchange in the
backward) and the DP x CP gradient reduction, and under ZeRO-3 with experts each layer's dense
weights' collectives over DP x CP and the routed experts' over the expert-data-parallel group;
`astral diagnose` judges those groups and names the injected part first, and a healthy drill
raises no alarm.

The smallest design that crosses hosts: tiny.astral's two hosts of 8 H100 (16 ranks).
- `ctx`: tp 8, cp 2: rank = tp + 8 cp, so each CP group (and DP x CP group: dp 1) is the pair
  {t, t + 8}, one GPU of each host: 8 groups, each crossing the hosts' NICs of rail t.
- `fmoe`: tp 1, dp 16, ep 8, zero 3: the EP groups are the hosts (0-7, 8-15: NVLink), the
  expert-data-parallel groups (EDP = 16 / 8 = 2) the pairs {r, r + 8}, the DP group all 16.
- `ep`: the same with zero 1: the EP groups the hosts, the DP group all 16."""
from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.diagnose import match
from astral_dsl.observe.load import load
from astral_dsl.observe import kernels, tracedoc
from astral_dsl.observe.records import OP_INDEX, PHASES
from astral_dsl.outputs import diagnosis as diagnosis_out
from astral_dsl.synth import Fault, generate, write
from astral_dsl.synth.generator import PHASE_NAMES
from clirun import astral as _astral_cli
from jobtext import job

ROOT = Path(__file__).resolve().parent / "fixtures" / "diagnose"
MODELS = """
model Mini {
  layers = 4
  hidden = 2048
  heads = 16
  kv_heads = 8
  ffn = 8192
  vocab = 32000
  seq = 8192
  activation = swiglu
  source = "a test model: four dense layers"
}

model MiniMoE {
  layers = 2
  hidden = 2048
  heads = 16
  kv_heads = 8
  ffn = 4096
  vocab = 32000
  seq = 4096
  experts = 16
  top_k = 2
  moe_ffn = 1024
  dense_layers = 0
  activation = swiglu
  source = "a test model: two MoE layers, 16 experts"
}
"""
TEXT = (ROOT / "tiny.astral").read_text() + MODELS + \
    job("ctx", "Mini", 16, "tp = 8, cp = 2, pp = 1, dp = 1",
        "global_batch = 8, micro = 1, seq = 8192", "Tiny") + \
    job("fmoe", "MiniMoE", 16, "tp = 1, pp = 1, dp = 16, ep = 8, zero = 3",
        "global_batch = 32, micro = 1, seq = 4096", "Tiny") + \
    job("ep", "MiniMoE", 16, "tp = 1, pp = 1, dp = 16, ep = 8, zero = 1",
        "global_batch = 32, micro = 1, seq = 4096", "Tiny") + \
    job("apart", "MiniMoE", 16, 'tp = 1, pp = 2, dp = 8, ep = 8, zero = 3, '
        'order = "tp-cp-ep-pp-dp"', "global_batch = 32, micro = 1, seq = 4096", "Tiny")
CP, EDP, DP = (match.KIND_CODES[k] for k in ("cp", "edp", "dp"))


@pytest.fixture(scope="module")
def design():
    return astral_dsl.loads(TEXT, name="tiny.astral", root=ROOT)


@pytest.fixture(scope="module")
def ctx(design):
    return seer.forecast(design, job="ctx"), diagnose.rank_map(design, "ctx")


@pytest.fixture(scope="module")
def fmoe(design):
    return seer.forecast(design, job="fmoe"), diagnose.rank_map(design, "fmoe")


def _count(data, phase):
    return int((data.phase == PHASE_NAMES.index(phase)).sum())


def _traces(data, tmp_path):
    write.write_traces(data, str(tmp_path), compress=False)
    return load(sorted(glob.glob(str(tmp_path / "*.json"))), workers=1)


def _port(rm, rank):
    return rm.ranks[rank].ports[0].name


def test_the_cp_ring_is_replayed_where_seer_prices_it(design, ctx):
    """cp 2: one ring step per attention layer (cp - 1), forward and backward: 4 layers x 2
    passes x 8 micro-batches (global 8 / micro 1 / dp 1) x 3 iterations x 16 ranks = 3,072
    cp_comm records; the gradients are reduced over DP x CP (the pairs {t, t + 8}), the groups
    the traces name. Healthy, no alarm: 8 CP groups x 64 steps x 3 iterations = 1,536 CP
    instances and 8 DP x CP groups x 1 bucket x 3 = 24 gradient reductions, none slow."""
    fc, rm = ctx
    data = generate(fc, rm, [], seed=1)
    assert _count(data, "cp_comm") == 4 * 2 * 8 * 3 * 16
    assert data.groups["cp"] == data.groups["dpcp"] == tuple((t, t + 8) for t in range(8))
    # every step's record on a rank lasts at least Seer's priced step (its own noise aside:
    # 3 % log-normal, -4 sigma at most) and the forecast keys the median step
    net = diagnose._forecast_net(fc)
    steps = sorted(o.dur for ph in "FB" for o in fc.lowering.template(0, 0, ph).ops
                   if o.stream == "cp")
    assert len(steps) == 8 and net[(CP, 0)] == pytest.approx((steps[3] + steps[4]) / 2)
    cp = data.phase == PHASE_NAMES.index("cp_comm")
    assert data.duration[cp].min() > steps[0] * 0.88
    found = diagnose.diagnose(design, write.to_observed(data), job="ctx")
    assert found.verdict == "healthy" and not found.suspects
    assert found.instances["cp"] == (1536, 0) and found.instances["dpcp"] == (24, 0)


@pytest.mark.parametrize("kind", ["nic_port", "gpu"])
def test_a_fault_under_cp_is_named_first(design, ctx, kind):
    """Rank 3's NIC port at half rate: its CP group {3, 11} runs every step of its ring ~2x
    its peers' (192 = 64 steps x 3 iterations), and its DP x CP reduction (3), slow; the first
    suspect covers the port (the timings cannot tell the pair's two NICs apart: both are
    named). Rank 3's GPU 20 % slow: named first, by its compute."""
    fc, rm = ctx
    fault = Fault("nic_port", _port(rm, 3), 0.5, 3) if kind == "nic_port" else \
        Fault("gpu", rm.ranks[3].gpu, 0.2, 3)
    found = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [fault], seed=1)),
                              job="ctx")
    assert found.verdict != "healthy" and found.suspects[0].covers(fault.part)
    if kind == "nic_port":
        assert found.instances["cp"] == (1536, 192) and found.instances["dpcp"] == (24, 3)
    else:
        assert found.suspects[0].path == rm.ranks[3].gpu


def test_cp_traces_name_their_groups(design, ctx, tmp_path):
    """A profiler trace's CP ring steps run in CONTEXT_PARALLEL_GROUP, its gradient reductions
    in DATA_PARALLEL_GROUP_WITH_CP: matched on the rank map's `cp` and `dpcp` groups; rank 3's
    NIC at half rate is named first from them."""
    fc, rm = ctx
    fault = Fault("nic_port", _port(rm, 3), 0.5, 3)
    observed = _traces(generate(fc, rm, [fault], seed=1), tmp_path)
    doc = json.loads((tmp_path / "rank-3.json").read_text())
    descs = {g["pg_desc"]: g["ranks"] for g in doc["distributedInfo"]["pg_config"]}
    assert descs["CONTEXT_PARALLEL_GROUP"] == descs["DATA_PARALLEL_GROUP_WITH_CP"] == [3, 11]
    found = diagnose.diagnose(design, observed, job="ctx")
    assert found.instances["cp"] == (1536, 192) and found.suspects[0].covers(fault.part)


def test_zero3_with_experts_splits_each_layers_collectives(fmoe):
    """ZeRO-3 with ep 8: each layer's gather (before its forward and again before its
    backward) and reduce-scatter are two collectives, the dense weights' over the DP group and
    the experts' over the EDP group: 2 micro-batches (32 / 16) x (2 + 2 + 2) x 3 iterations x
    16 ranks = 576 of each. The forecast, where the data shows them apart, keys each part; the
    two sum to Seer's operator. A log folds each expert collective into its dense one (one
    row, as Megatron-LM's timers time them): 576 dp_comm rows, no other."""
    fc, rm = fmoe
    data = generate(fc, rm, [], seed=1)
    assert _count(data, "dp_comm") == _count(data, "edp_comm") == 2 * 6 * 3 * 16
    assert data.groups["edp"] == tuple((r, r + 8) for r in range(8))
    whole = diagnose.forecast_net.forecast_net(fc)
    apart = diagnose.forecast_net.forecast_net(fc, apart=True)
    ag = OP_INDEX["all_gather"]
    for k in range(8):               # 2 micro-batches x (2 forward + 2 backward) gathers
        assert apart[(DP, 0, ag, k)] + apart[(EDP, 0, ag, k)] == \
            pytest.approx(whole[(DP, 0, ag, k)], rel=1e-12)
        assert 0 < apart[(EDP, 0, ag, k)] < whole[(DP, 0, ag, k)]
    rows = write.log_rows(data)
    assert rows[2].count("dp_comm") == 576 and "edp_comm" not in rows[2]


def test_a_slow_link_under_zero3_with_experts_is_named_first(design, fmoe, tmp_path):
    """Traces, rank 3's NIC port at half rate: its EDP group {3, 11} runs each of its 12
    expert collectives an iteration ~2x its 7 peer groups' (36 of 288 slow), and the one DP
    group's dense collectives cross it (all 36 slow against the forecast); the first suspect
    covers the port. Healthy traces: nothing slow, no alarm."""
    fc, rm = fmoe
    healthy = diagnose.diagnose(design, _traces(generate(fc, rm, [], seed=1), tmp_path / "ok"),
                                job="fmoe")
    assert healthy.verdict == "healthy" and healthy.instances["edp"] == (288, 0) and \
        healthy.instances["dp"] == (36, 0)
    fault = Fault("nic_port", _port(rm, 3), 0.5, 3)
    found = diagnose.diagnose(design, _traces(generate(fc, rm, [fault], seed=1),
                                              tmp_path / "bad"), job="fmoe")
    assert found.instances["edp"] == (288, 36) and found.instances["dp"] == (36, 36)
    assert found.suspects[0].covers(fault.part)


def test_a_slow_gpu_under_zero3_with_experts_is_named_first(design, fmoe):
    """A rank log, rank 3's GPU 20 % slow: named first; the same log healthy raises no alarm
    (each layer's two collectives one row: 36 DP instances, none slow)."""
    fc, rm = fmoe
    healthy = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=2)),
                                job="fmoe")
    assert healthy.verdict == "healthy" and healthy.instances["dp"] == (36, 0)
    fault = Fault("gpu", rm.ranks[3].gpu, 0.2, 3)
    found = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [fault], seed=2)),
                              job="fmoe")
    assert found.suspects[0].path == rm.ranks[3].gpu


def test_a_group_across_stages_is_refused_before_the_drill(design, tmp_path):
    """order tp-cp-ep-pp-dp with pp 2: pp's stride is 1 (tp, cp 1; the dense numbering's ep
    1), so an EP group (8 consecutive ranks of the expert numbering) would hold ranks of both
    stages. Megatron-Core refuses such an order (parallel_state: the experts' data-parallel
    size must equal dp when pp is not last), and so does validation (E759 at the `order`
    field): `astral synth` says so, exit 1, nothing written; the drill generator's own guard
    (E798) is never reached by a job that validates."""
    with pytest.raises(seer.ForecastError) as exc:
        seer.forecast(design, job="apart")
    assert "E759" in str(exc.value)
    src = tmp_path / "tiny.astral"
    src.write_text(TEXT)
    out = tmp_path / "drill.csv"
    run = _astral_cli("synth", str(src), "--job", "apart", "-o", str(out), "--format", "json")
    assert run.returncode == 1 and not out.exists()
    codes = [d for d in json.loads(run.stdout)["diagnostics"] if d["severity"] == "error"]
    line = next(i for i, t in enumerate(TEXT.splitlines(), 1) if "tp-cp-ep-pp-dp" in t)
    assert [d["code"] for d in codes] == ["E759"] and codes[0]["hint"]
    assert codes[0]["range"]["start"]["line"] == line


def _kernels(path, stream):
    """(start, end) in us of a trace's kernels on one stream (synth/write.py's streams)."""
    doc = json.loads(path.read_text())
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in doc["traceEvents"]
                  if e.get("cat") == "kernel" and e["tid"] == stream)


@pytest.fixture(scope="module")
def ep(design):
    return seer.forecast(design, job="ep"), diagnose.rank_map(design, "ep")


def test_a_slow_gpu_under_ep_is_named_from_traces(design, ep, tmp_path):
    """Job `ep`, traces: rank 3's GPU 20 % slow makes its EP group (host 0) wait for it in every
    all-to-all. Each block's compute is written in the stretches between its all-to-alls, as a
    profiler shows the kernels (no compute kernel over an all-to-all it waits for): the
    peers' wait is inside their all-to-all kernels, and rank 3 is named first by its compute.
    The block's compute had been one kernel from the block's start, run over its all-to-alls:
    each peer's wait for rank 3 was an idle gap after it (about 7 ms an iteration on host 0,
    1.4 ms on rank 3), and counted with its compute (a GPU waiting for its host is idle) it
    made the peers as slow as rank 3: `healthy`, no suspect (the rank log named rank 3).
    Healthy traces raise no alarm."""
    fc, rm = ep
    fault = Fault("gpu", rm.ranks[3].gpu, 0.2, 3)
    found = diagnose.diagnose(design, _traces(generate(fc, rm, [fault], seed=1),
                                              tmp_path / "bad"), job="ep")
    compute = _kernels(tmp_path / "bad" / "rank-0.json", 7)
    a2a = _kernels(tmp_path / "bad" / "rank-0.json", 32)
    # (within 1 us: the times are microseconds since 1970 as doubles, a quarter-us apart)
    assert len(a2a) == 48 and max(min(e, e2) - max(s, s2) for s, e in compute
                                  for s2, e2 in a2a) < 1.0
    assert found.verdict == "suspects" and found.suspects[0].path == rm.ranks[3].gpu
    assert found.suspects[0].probability > 0.95 and len(found.suspects) == 1
    healthy = diagnose.diagnose(design, _traces(generate(fc, rm, [], seed=1), tmp_path / "ok"),
                                job="ep")
    assert healthy.verdict == "healthy" and not healthy.suspects and healthy.probability < 0.1


DEEP_EP = ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, "
           "float*, int*, int*, int4 const*, float const*, long const*, float const*, "
           "bool const*, int const*, int, int, int, int, int, int, int, int, void**, int, int, "
           "int)")


def test_deep_eps_kernels_are_the_ep_exchange(design, ep, tmp_path):
    """Megatron-Core's `flex` dispatcher runs DeepEP's kernels, no NCCL ones and no process
    group arguments: the drill's traces of rank 3's GPU 20 % slow with every EP kernel renamed
    so. Read as EP exchanges (matched on the rank's EP group by their order), the peers' wait
    for rank 3 inside them is no compute, and rank 3 is named; read as compute they made every
    peer as slow as rank 3: `healthy`. DeepEP's layout kernel (tokens per rank) computes."""
    fc, rm = ep
    fault = Fault("gpu", rm.ranks[3].gpu, 0.2, 3)
    write.write_traces(generate(fc, rm, [fault], seed=1), str(tmp_path), compress=False)
    for path in tmp_path.glob("*.json"):
        doc = json.loads(path.read_text())
        for e in doc["traceEvents"]:
            if e.get("args", {}).get("Process Group Description") == \
                    "EXPERT_MODEL_PARALLEL_GROUP":
                e["name"] = DEEP_EP
                e["args"] = {k: e["args"][k] for k in ("device", "stream", "correlation")}
        path.write_text(json.dumps(doc))
    observed = load(sorted(glob.glob(str(tmp_path / "*.json"))), workers=1)
    rank0 = next(t for t in observed.traces if t.rank == 0)
    ep_code = PHASES.index("ep_comm")
    assert int((rank0.phase == ep_code).sum()) == 48 and (rank0.group[rank0.phase == ep_code]
                                                          == -1).all()
    found = diagnose.diagnose(design, observed, job="ep")
    assert [s.path for s in found.suspects] == [rm.ranks[3].gpu]
    layout = kernels.from_events(
        [tracedoc.Event("X", "kernel", "void deep_ep::layout::get_dispatch_layout<256, 32, 8>"
                        "(long const*, int*, int*, int*, bool*, int, int, int, int)", 1.0, 2.0,
                        tracedoc.Args())], [], {})
    assert layout.table[layout.code].tolist() == [[PHASES.index("compute"), -1, 0, -1]]


def test_a_slow_gpu_under_cp_is_named_from_traces_alone(design, ctx, tmp_path):
    """Traces of `ctx`, rank 3's GPU 20 % slow: the GPU alone is named (its compute runs beside
    each ring step's exchange and waits for the step's end after it). With the block's compute
    one kernel, rank 11 (its CP peer) had looked idle while waiting for it, and its host was
    named beside the GPU, 0.5 each."""
    fc, rm = ctx
    fault = Fault("gpu", rm.ranks[3].gpu, 0.2, 3)
    found = diagnose.diagnose(design, _traces(generate(fc, rm, [fault], seed=1), tmp_path),
                              job="ctx")
    assert [s.path for s in found.suspects] == [rm.ranks[3].gpu]
    assert found.suspects[0].probability > 0.95


def test_a_small_slow_down_is_no_alarm_and_no_probability_of_one(design, ctx):
    """A healthy `ctx` drill (seed 3): rank 9 computes 2.6, 3.2 and 4.2 % above its stage's
    median (the drill's GPU spread), under SLOW_MIN (5 %) in every iteration: not named, and
    against its stage's spread of 0.73 % its ln Bayes factor is 9.2. It had carried the job's
    probability to >99 % beside a `healthy` verdict; such a unit's factor counts as at most 1.
    By hand: the compute family's prior odds 1/3 over 16 ranks; 15 ranks at the factor of
    three iterations near their median, the mean over q in (1/4, 1/2, 3/4, 1) of (1 - q)^3 =
    (27/64 + 8/64 + 1/64 + 0) / 4 = 0.140625, rank 9 at 1; nothing slow in the network, the
    forecast within its band (factors e^-29 and below): odds (15 x 0.140625 + 1) / 48 =
    0.064779, probability 0.064779 / 1.064779 = 0.0608."""
    fc, rm = ctx
    found = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=3)),
                              job="ctx")
    assert found.verdict == "healthy" and not found.suspects
    assert found.probability == pytest.approx(0.0608, abs=2e-4)
    text = diagnosis_out.render(found)
    assert "verdict    healthy: probability 6 % that something is wrong" in text
    assert diagnosis_out.to_json(found)["probability"] == pytest.approx(0.0608, abs=2e-4)


def test_written_traces_are_the_same_bytes_wherever_and_whenever_written(ctx, tmp_path):
    """Same input, same output: the gzip header of a written trace holds no time of writing
    and no file name (gzip.open stamped both: two runs differed in their headers)."""
    import time

    fc, rm = ctx
    s = generate(fc, rm, [], seed=1, iterations=1)
    a = write.write_traces(s, str(tmp_path / "a"))
    time.sleep(1.1)                     # gzip's mtime is in whole seconds
    b = write.write_traces(s, str(tmp_path / "b"))
    assert len(a) == len(b) > 1
    assert all(Path(x).read_bytes() == Path(y).read_bytes() for x, y in zip(a, b))
