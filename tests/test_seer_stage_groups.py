"""Each pipeline stage's collectives priced on its own groups (seer/comm_groups.stage_groups).

Seer priced every stage's TP, DP, EP and CP collectives on the job's slowest group of the kind:
a stage whose groups sit inside one host was priced as another stage's that straddles hosts,
and a failure on one stage's hosts slowed every stage. The hosts of QUAD (test_seer_group_span)
hold 4 H100s (NVLink 450 GB/s each way) and one 2 x 200 Gb/s NIC per GPU (50 GB/s); comm's
constants: BASE 7 us, NVLink 0.8 x 450 GB/s and 0.6 us a step, network 0.9 x the NIC and
alpha = 5 us + 1 switch x 0.15 us."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.seer import comm
from astral_dsl.seer.comm_groups import groups, stage_groups
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.ranks import spread
from astral_dsl.seer.schedule import simulate
from test_seer_group_span import QUAD, _hierarchical_1gb

REPO = Path(__file__).resolve().parents[1]

# 16 GPUs on hosts 0-3 (ranks fill them in order): stage 0 on hosts 0-1, stage 1 on hosts 2-3;
# `port2` takes one of the two ports of GPU 0 of host 2 (rank 8, stage 1): 25 GB/s
SRC = QUAD + "".join(
    f"job {name} {{ model = GPT3_5B, placement = S, gpus = 16\n  parallel {{ {par} }}\n"
    f"  batch {{ global_batch = {batch}, micro = 1, seq = 4096 }} }}\n"
    for name, par, batch in (("dp8pp2", "tp = 1, pp = 2, dp = 8, zero = 1", 32),
                             ("tp8pp2", "tp = 8, pp = 2, dp = 1", 8))) + \
    "scenario port2 { fail S.racks[0].hosts[2].nics[0].port[a] }\n"
NVL, STEP, ALPHA = 0.8 * 450e9, 0.6e-6, 5.15e-6


@pytest.fixture(scope="module")
def ws():
    return astral_dsl.compiles(SRC, name="stages.astral", root=REPO)


def _shape(lay):
    return lay.n, lay.per_host, lay.hosts, lay.most


def _old(fc):
    """The forecast's job as Seer priced it before: every stage on the job's slowest groups."""
    low = Lowering(fc.job, fc.lowering.c, fc.net)
    low.stage_groups = (low.groups,) * fc.job.parallel.pp
    return low, simulate(low, fc.job.microbatches)[1]


def _hier_rs_or_ar(nbytes: float, bw: float, reduce: bool) -> float:
    """The cheapest of comm's algorithms for a group of 8, 4 on each of 2 hosts, on NICs of
    `bw` bytes/s: an all-reduce (ring 2 x 7/8 S over min(NVLink, 4 x 0.9 bw) + 14 alpha; tree
    2 S / 4 / (0.9 bw) + 2 alpha + 2 in-host phases; hierarchical 2 in-host phases + 2 x 1/2
    S / 4 / (0.9 bw) + 2 alpha) or (reduce) a reduce-scatter (half: ring or hierarchical); an
    in-host phase among 4: 3/4 S / NVLink + 3 steps."""
    inner = 3 / 4 * nbytes / NVL + 3 * STEP
    bus = min(NVL, 4 * 0.9 * bw)
    if reduce:
        return min(7e-6 + 7 / 8 * nbytes / bus + 7 * ALPHA,
                   7e-6 + inner + 1 / 2 * nbytes / 4 / (0.9 * bw) + ALPHA)
    return min(7e-6 + 2 * 7 / 8 * nbytes / bus + 14 * ALPHA,
               7e-6 + 2 * nbytes / 4 / (0.9 * bw) + 2 * ALPHA + 2 * inner,
               7e-6 + 2 * inner + 2 * 1 / 2 * nbytes / 4 / (0.9 * bw) + 2 * ALPHA)


@pytest.mark.parametrize("base, want", [
    # (fewest on a host, hosts, consecutive hosts, common GPU indices, most on a host) of the
    # group of 3 consecutive ranks from `base` on hosts of 4
    (0, (3, 1, 1, 3, 3)),           # 0-2: one host
    (1, (3, 1, 1, 3, 3)),           # 1-3: one host
    (2, (1, 2, 2, 0, 2)),           # 2, 3 | 4: indices 2, 3 and 0
    (3, (1, 2, 2, 0, 2)),           # 3 | 4, 5: indices 3 and 0, 1
])
def test_spread_from_a_stages_first_rank(base, want):
    assert spread(((1, 3),), (), 4, base) == want


def test_each_stage_has_its_own_slowest_groups(ws):
    """DP 3 x PP 4 on hosts of 4: stage 0's group 0-2 is inside host 0, stage 1's 3 | 4, 5 and
    stage 2's 6, 7 | 8 straddle two hosts (1 on the fewest, 2 on the fullest), stage 3's 9-11
    is inside host 2; the job's slowest is stage 1's. Stages that sit alike share one set."""
    fc = astral_dsl.forecast(ws, job="dp3pp4").detail
    per = stage_groups(fc.job, fc.net)
    assert [_shape(s["dp"]) for s in per] == [(3, 3, 1, 0), (3, 1, 2, 2), (3, 1, 2, 2),
                                              (3, 3, 1, 0)]
    assert _shape(groups(fc.job, fc.net)["dp"]) == (3, 1, 2, 2)
    assert per == fc.lowering.stage_groups
    per = fc.lowering.stage_groups
    assert per[0] is per[3] and per[1] is per[2] and per[1] is fc.lowering.groups
    # an all-reduce of 1 GB: stage 0's on NVLink (ring: 7 us + 2 x 2/3 S / (0.8 x 450 GB/s)
    # + 4 steps = 3.7131 ms), stage 1's hierarchical across 2 hosts (25.0185 ms)
    assert comm.all_reduce(fc.net, per[0]["dp"], 1e9) == pytest.approx(
        7e-6 + 2 * 2 / 3 * 1e9 / NVL + 4 * STEP, rel=1e-12)
    assert comm.all_reduce(fc.net, per[1]["dp"], 1e9) == pytest.approx(_hierarchical_1gb(2),
                                                                      rel=1e-12)
    # the forecast's gradient reduction of each stage on its own group
    for i, run in enumerate(fc.runs):
        for start, end, params in run.dp:
            assert end - start == pytest.approx(fc.lowering.at(i).dp_reduce(params), rel=1e-12)
    assert fc.runs[0].dp[0][1] - fc.runs[0].dp[0][0] < \
        fc.lowering.dp_reduce(fc.runs[0].dp[0][2]) / 2
    assert ("dp groups sit unalike across the pipeline: on stages 0, 3 the slowest sits inside "
            "one host (NVLink domain); on stages 1, 2 the slowest straddles 2 hosts (NVLink "
            "domains) of 4 GPUs with 1 of 3 ranks on the fewest (rank 0's: one host); each "
            "stage's dp collectives are priced by its own slowest group (synchronous training "
            "waits for it), the pipeline paced by its slowest stage") in fc.notes


def test_stages_alike_forecast_as_before(ws):
    """DP 8 x PP 2: both stages' groups sit alike (4 + 4 on two hosts): one set of groups, the
    job's, and the forecast bit for bit as every stage on the job's slowest gave it."""
    fc = astral_dsl.forecast(ws, job="dp8pp2").detail
    assert all(s is fc.lowering.groups for s in fc.lowering.stage_groups)
    assert fc.lowering.at(1) is fc.lowering
    assert _old(fc)[1] == fc.iteration_time
    assert not [n for n in fc.notes if "groups" in n]


def test_a_failure_on_one_stage_slows_only_its_gradient_reduction(ws):
    """`port2` (rank 8, stage 1, at 25 GB/s): stage 1's DP group runs at 25 GB/s, stage 0's at
    50 GB/s; stage 0's gradient reduction and parameter gather as without the failure, stage
    1's a reduce-scatter at 25 GB/s (hierarchical), and the iteration ends with stage 1's
    gather."""
    healthy = astral_dsl.forecast(ws, job="dp8pp2").detail
    fc = astral_dsl.forecast(ws, job="dp8pp2", scenario="port2").detail
    low = fc.lowering
    assert low.groups["dp"].net_bw == 25e9
    assert (low.at(0).groups["dp"].net_bw, low.at(1).groups["dp"].net_bw) == (50e9, 25e9)
    (s0, e0, p0), = fc.runs[0].dp
    (h0, k0, _), = healthy.runs[0].dp
    assert e0 - s0 == k0 - h0
    assert fc.runs[0].gather[1] - fc.runs[0].gather[0] == \
        healthy.runs[0].gather[1] - healthy.runs[0].gather[0]
    (s1, e1, p1), = fc.runs[1].dp
    nbytes = sum(p1) * fc.job.grad_bytes
    assert e1 - s1 == pytest.approx(_hier_rs_or_ar(nbytes, 25e9, reduce=True), rel=1e-12)
    assert e0 - s0 == pytest.approx(_hier_rs_or_ar(sum(p0) * fc.job.grad_bytes, 50e9, True),
                                    rel=1e-12)
    assert fc.iteration_time == fc.runs[1].gather[1] > fc.runs[0].gather[1]
    assert "dp: the slowest group (on stage 1) runs at 25.00 GB/s per GPU instead of 50.00 " \
           "GB/s (`S.racks[0].hosts[2].nics[0].port[a]` failed: 1 of the job's GPUs behind " \
           "it)" in fc.notes


def test_the_slow_stage_paces_the_pipeline(ws):
    """TP 8 x PP 2 (each TP group across 2 hosts, 4 + 4): under `port2` stage 1's TP
    collectives run at 25 GB/s, stage 0's at 50 GB/s. Stage 0's blocks are as without the
    failure, stage 1's as when every stage was priced on the slowest group. With m = 8
    micro-batches and stage 1 the slower, 1F1B on 2 stages ends stage 0's last backward at
    F0 + h + m (F1 + B1 + h) + B0 (its first forward and the send; then stage 1 runs its
    forward, its backward and its synchronous send back per micro-batch; stage 0's last
    backward): between the healthy forecast and the one with every stage slowed."""
    healthy = astral_dsl.forecast(ws, job="tp8pp2").detail
    fc = astral_dsl.forecast(ws, job="tp8pp2", scenario="port2").detail
    low, m = fc.lowering, fc.job.microbatches
    old, before = _old(fc)
    tp = [o for o in low.template(1, 0, "F").ops if o.group == "tp"][0]
    assert tp.dur == pytest.approx(_hier_rs_or_ar(tp.nbytes, 25e9, reduce=False), rel=1e-12)
    f0, b0 = (low.template(0, 0, ph).duration for ph in "FB")
    f1, b1 = (low.template(1, 0, ph).duration for ph in "FB")
    assert (f0, b0) == tuple(healthy.lowering.template(0, 0, ph).duration for ph in "FB")
    assert (f1, b1) == tuple(old.template(1, 0, ph).duration for ph in "FB")
    assert old.template(0, 0, "F").duration > f0
    h = low.p2p_hops()[0]
    assert m == 8 and f1 + b1 > f0 + b0
    assert fc.runs[0].backward_end == pytest.approx(f0 + h + m * (f1 + b1 + h) + b0,
                                                    rel=1e-12)
    assert healthy.iteration_time < fc.iteration_time < before
    assert "tp: the slowest group (on stage 1) runs at 25.00 GB/s per GPU instead of 50.00 " \
           "GB/s (`S.racks[0].hosts[2].nics[0].port[a]` failed: 1 of the job's GPUs behind " \
           "it)" in fc.notes
