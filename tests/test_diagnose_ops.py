"""Which collective a data-parallel record is: a group's gradient reductions (all-reduce or
reduce-scatter of a bucket) and its parameter all-gather are different collectives of different
sizes, each compared with its own kind (with its peers, and with the forecast of its kind where
too few peers); where the data does not say which, W797 says so rather than mixing them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.diagnose import match
from astral_dsl.diagnose.model import Suspect
from astral_dsl.outputs.diagnosis import final_verdict, render
from astral_dsl.observe.records import OP_INDEX, PHASE_INDEX, RankTrace, op_of
from astral_dsl.synth import generate, write

ROOT = Path(__file__).resolve().parent / "fixtures" / "diagnose"
# moe.astral's four small racks (48 GPUs), a dense job as DeepSeek-V3's on GB200 has its DP
# groups: tp 1, so one DP group of 24 ranks per stage (fewer than evidence.MIN_PEERS: the DP
# collectives are compared with the forecast); a sharded optimizer (zero 1) reduce-scatters the
# gradients in buckets as the backward ends (overlap_grad_reduce) and all-gathers the parameters
# after the optimizer step
SHARDED = (ROOT / "moe.astral").read_text() + """
model Wide {
  layers = 8
  hidden = 4096
  heads = 32
  kv_heads = 8
  ffn = 14336
  vocab = 32000
  seq = 2048
  activation = swiglu
  source = "a test model: eight dense layers"
}

job sharded {
  model = Wide
  placement = Lab
  gpus = 48
  overlap_grad_reduce = true
  parallel { tp = 1, pp = 2, dp = 24, zero = 1 }
  batch { global_batch = 48, micro = 1, seq = 2048 }
}
"""


@pytest.fixture(scope="module")
def drill():
    design = astral_dsl.loads(SHARDED, name="moe.astral", root=ROOT)
    fc = seer.forecast(design, job="sharded")
    data = generate(fc, diagnose.rank_map(design, "sharded"), [], seed=3)
    return design, fc, data


def test_the_forecast_has_buckets_and_a_gather(drill):
    """The premise: per stage, five buckets of 1.681 ms or 1.063 ms (median 1.681 ms) and one
    parameter all-gather of 3.694 ms, 2.2x the bucket: judged against the bucket's time (the
    DP collectives' one forecast) a healthy all-gather was 'slow' (over 1.25x)."""
    _, fc, _ = drill
    for run in fc.runs:
        buckets = sorted(round((e - a) * 1e3, 3) for a, e, _ in run.dp)
        assert buckets == [1.063, 1.681, 1.681, 1.681, 1.681]
        assert round((run.gather[1] - run.gather[0]) * 1e3, 3) == 3.694
    net = diagnose._forecast_net(fc)
    dp = match.KIND_CODES["dp"]
    assert net[(dp, 0, OP_INDEX["reduce_scatter"])] == pytest.approx(1.681e-3, abs=1e-6)
    assert net[(dp, 0, OP_INDEX["all_gather"])] == pytest.approx(3.694e-3, abs=1e-6)
    assert (dp, 0) not in net and (dp, 0, OP_INDEX["collective"]) not in net
    # each bucket's own, in the order the backward makes them: stage 0's fifth is the small one
    assert [round(net[(dp, 0, OP_INDEX["reduce_scatter"], k)] * 1e3, 3) for k in range(5)] == \
        [1.681, 1.681, 1.681, 1.681, 1.063]


def test_a_healthy_drill_has_no_slow_all_gather(drill):
    """A fault-free drill: 2 stages x 3 iterations x (5 buckets + 1 all-gather) = 36 DP
    collectives, none slow (the 6 all-gathers had been, at 2.2x the bucket's forecast)."""
    design, _, data = drill
    found = diagnose.diagnose(design, write.to_observed(data), job="sharded")
    assert found.instances["dp"] == (36, 0)
    assert found.verdict == "healthy"
    assert "W797" not in {d.code for d in found.diagnostics}


def test_each_bucket_against_its_own_forecast(drill):
    """The buckets differ (stage 0: four of 1.681 ms, then one of 1.063 ms): each reduction is
    compared with its own bucket's forecast where its group runs as many as the forecast.
    Stage 0's last reduce-scatter of iteration 101 made 0.6 ms longer on every member: 1.663 ms
    (+- noise), 1.56x its bucket's 1.063 ms, slow; against the median bucket (1.681 ms) it had
    passed. The other 35 as before."""
    design, _, data = drill
    observed = write.to_observed(data)
    for t in observed.traces:
        if t.rank >= 24:                                  # stage 1
            continue
        rs = np.flatnonzero((t.iteration == 101) & (t.op == OP_INDEX["reduce_scatter"]))
        assert rs.size == 5
        t.duration[rs[-1]] += 0.6e-3
    found = diagnose.diagnose(design, observed, job="sharded")
    assert found.instances["dp"] == (36, 1)


def test_unnamed_dp_collectives_are_said_not_mixed(drill):
    """The same log with every DP collective's `op` a bare `collective` (the data does not say
    which): none is compared with the forecast (nothing slow) and W797 says so, with both
    forecasts."""
    design, _, data = drill
    observed = write.to_observed(data)
    for t in observed.traces:
        named = t.op >= OP_INDEX["all_reduce"]
        t.op[named] = OP_INDEX["collective"]
    found = diagnose.diagnose(design, observed, job="sharded")
    assert found.instances["dp"] == (36, 0)
    said = [d for d in found.diagnostics if d.code == "W797"]
    assert len(said) == 1 and said[0].hint
    assert said[0].message == (
        "36 of the 36 DP collectives are not judged: the data does not say which collective "
        "each is, the forecast's gradient reductions and parameter all-gathers differ (1.681 ms "
        "a bucket, 3.694 ms the gather on stages 0 and 1), and fewer than 3 DP groups of its "
        "stage run each to compare it with")
    # nothing suspect is then no all-clear, as with W795 (exit 2)
    assert final_verdict(found, found.diagnostics) == "unusable"
    assert "not compared: W797" in render(found, verdict="unusable")


def _unname(observed, ranks=range(10 ** 9)):
    """Every DP collective of the given ranks' data a bare `collective`."""
    for t in observed.traces:
        if t.rank in ranks:
            t.op[t.op >= OP_INDEX["all_reduce"]] = OP_INDEX["collective"]
    return observed


@pytest.fixture(scope="module")
def uneven():
    """The sharded job with nine layers: stage 0 has five (and the embedding), stage 1 four
    (and the head), so their parameter all-gathers differ."""
    design = astral_dsl.loads(SHARDED.replace("layers = 8", "layers = 9"), name="moe.astral",
                              root=ROOT)
    fc = seer.forecast(design, job="sharded")
    return design, fc, generate(fc, diagnose.rank_map(design, "sharded"), [], seed=3)


def test_w797_quotes_the_forecasts_of_the_stages_it_counts(uneven):
    """Seer's gathers differ by stage (4.469 ms on stage 0, 3.694 ms on stage 1; the median
    bucket 1.681 ms on both). Every DP collective unnamed: the gather's range over the two
    stages. Only stage 1's unnamed (ranks 24 to 47: 3 iterations x 6 collectives = 18): stage
    1's gather, 3.694 ms (the message had quoted stage 0's 4.469 ms for stage 1's
    collectives)."""
    design, fc, data = uneven
    net = diagnose._forecast_net(fc)
    dp = match.KIND_CODES["dp"]
    assert [round(net[(dp, s, OP_INDEX["all_gather"])] * 1e3, 3) for s in (0, 1)] == \
        [4.469, 3.694]
    assert [round(net[(dp, s, OP_INDEX["all_reduce"])] * 1e3, 3) for s in (0, 1)] == \
        [1.681, 1.681]
    both = diagnose.diagnose(design, _unname(write.to_observed(data)), job="sharded")
    said = [d.message for d in both.diagnostics if d.code == "W797"]
    assert len(said) == 1 and \
        "(1.681 ms a bucket, 3.694 to 4.469 ms the gather on stages 0 and 1)" in said[0]
    one = diagnose.diagnose(design, _unname(write.to_observed(data), range(24, 48)),
                            job="sharded")
    said = [d.message for d in one.diagnostics if d.code == "W797"]
    assert len(said) == 1 and said[0].startswith("18 of the ") and \
        "(1.681 ms a bucket, 3.694 ms the gather on stage 1)" in said[0]


def test_an_all_gather_the_forecast_has_none_of_is_said():
    """A zero-0 job: Seer all-reduces five buckets and gathers no parameters. The data names
    each stage's last DP collective of each iteration an all-gather, 50 ms late on every
    member: there is no forecast of its kind (it had been compared with nothing, silently, and
    the verdict was an all-clear). 2 stages x 3 iterations = 6, said by W797; nothing slow, and
    no all-clear."""
    design = astral_dsl.loads(SHARDED.replace("zero = 1", "zero = 0"), name="moe.astral",
                              root=ROOT)
    fc = seer.forecast(design, job="sharded")
    assert all(r.gather[1] == r.gather[0] and len(r.dp) == 5 for r in fc.runs)
    observed = write.to_observed(generate(fc, diagnose.rank_map(design, "sharded"), [],
                                          seed=3))
    for t in observed.traces:
        for it in np.unique(t.iteration):
            last = np.flatnonzero((t.iteration == it) & (t.op == OP_INDEX["all_reduce"]))[-1]
            t.op[last] = OP_INDEX["all_gather"]
            t.duration[last] += 50e-3
    found = diagnose.diagnose(design, observed, job="sharded")
    assert found.instances["dp"] == (30, 0)
    said = [d for d in found.diagnostics if d.code == "W797"]
    assert len(said) == 1 and "`zero`" in said[0].hint
    assert said[0].message == (
        "6 DP parameter all-gather(s) on stages 0 and 1 are not judged: the forecast of the job "
        "(`zero` 0) gathers no parameters, and fewer than 3 DP groups of its stage run each to "
        "compare it with")
    assert final_verdict(found, found.diagnostics) == "unusable"


@pytest.mark.parametrize("name, op", [
    ("all_gather", "all_gather"), ("params-all-gather", "all_gather"),
    ("_allgather_base", "all_gather"), ("all_gather_into_tensor_coalesced", "all_gather"),
    ("reduce_scatter_tensor", "reduce_scatter"), ("_reduce_scatter_base", "reduce_scatter"),
    ("allreduce", "all_reduce"), ("All-Reduce", "all_reduce"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "all_gather"),
    ("ncclKernel_ReduceScatter_RING_LL_Sum_bfloat16", "reduce_scatter"),
    ("send", "send"), ("RECV", "recv"), ("all_to_all", "collective"), ("barrier", "collective"),
    ("", "")])
def test_op_of_names(name, op):
    # letters and digits alone, lower case: `params-all-gather` is "paramsallgather", which
    # holds "allgather"; "" is no operation (code 0)
    assert op_of(name) == OP_INDEX[op]


def test_a_traces_kernel_names_the_collective():
    """A profiler trace whose NCCL kernels carry no `Collective name`: their kernels' names say
    which (ncclDevKernel_AllGather, _ReduceScatter); a `Collective name` that says is kept."""
    n = 4
    coll = OP_INDEX["collective"]
    t = RankTrace(0, 2, "rank-0.json", "kineto", np.zeros(n, dtype=np.int64),
                  np.full(n, PHASE_INDEX["dp_comm"], dtype=np.int8), np.arange(n, dtype=float),
                  np.ones(n), np.full(n, -1), np.array([coll, coll, coll,
                                                        OP_INDEX["all_reduce"]], dtype=np.int8),
                  np.zeros(n, dtype=np.int64),
                  kernel=np.array([0, 1, 2, 1], dtype=np.int32),
                  kernel_names=("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
                                "ncclDevKernel_AllGather_RING_LL", "ncclDevKernel_SendRecv"))
    assert match._ops(t).tolist() == [OP_INDEX["reduce_scatter"], OP_INDEX["all_gather"], coll,
                                      OP_INDEX["all_reduce"]]


def test_the_drills_traces_name_their_collectives():
    """The drill's trace writer names each DP collective as PyTorch does, by its kernel and its
    `Collective name`."""
    for op, name in write.DP_COLLECTIVE.items():
        assert op_of(name) == op_of(write.DP_KERNELS[op]) == OP_INDEX[op]


def test_suspects_tied_are_in_the_designs_order():
    """Two suspects of one kind and probability: hosts[2] before hosts[10] (a string sort had
    put hosts[10] first)."""
    def host(i):
        return Suspect("host", f"Lab.racks[0].hosts[{i}]", (), 0.25, "")

    got = diagnose.ordered([host(10), host(2), Suspect("gpu", "z", (), 0.5, "")])
    assert [s.path for s in got] == ["z", "Lab.racks[0].hosts[2]", "Lab.racks[0].hosts[10]"]
