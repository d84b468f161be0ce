"""Drills of mixture-of-experts jobs: `astral synth` replays each MoE layer's EP dispatch and
combine all-to-alls where Seer's lowering puts them and for the time it prices them, a fault
slows only the EP groups whose traffic crosses it, and `astral diagnose` maps the observed
all-to-alls onto the rank map's EP groups and their paths (tests/fixtures/diagnose/moe.astral:
four 12-GPU NVLink racks, tp 1, pp 2, dp 24, ep 8: EP groups 0-7, 8-15 (across racks 0 and 1),
16-23, 24-31, 32-39 (across racks 2 and 3), 40-47)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.diagnose import compute as compute_mod
from astral_dsl.diagnose import _forecast_compute
from astral_dsl.seer.calibration import shipped
from astral_dsl.synth import Fault, Noise, experts, generate, write
from astral_dsl.synth.generator import PH
from astral_dsl.synth.network import Net
from astral_dsl.synth.inject import crossing_ranks
from jobtext import job

MOE = Path(__file__).resolve().parent / "fixtures" / "diagnose" / "moe.astral"
QUIET = Noise(kernel=0.0, comm=0.0, iteration=0.0, gpu_spread=0.0, clock=0.0)
# one all-to-all as Seer prices it on job `moe` (every one alike: every EP group is priced as
# the job's slowest, group 1 across racks 0 and 1, seer/comm_groups.groups), from the shipped
# fit's a2a_eff (the `alltoall` dispatcher's) so that a refit moves the expectation with the
# forecast (seer/comm.all_to_all, 8 ranks on 2 NVLink racks, 4 on each):
# BASE_S 7 us + max(inside (4 - 1) / 8 x bytes / (NVLink 900 GB/s x a2a_eff),
#                   outside (8 - 4) / 8 x bytes / (NIC 400 Gb/s = 50 GB/s x NET_EFF 0.9))
# + one network step's latency (5 us + 3 InfiniBand switch hops x 0.15 us) x log2(2 racks),
# bytes = top-2 x 2048 tokens x hidden 4096 x 2 (bf16): 385.3 us, the NIC's share (411.7 us
# with the NIC at a2a_eff 0.8405 until stop 67)
_BYTES, _EFF = 2 * 2048 * 4096 * 2, shipped().a2a_eff
A2A = 7e-6 + max(3 / 8 * _BYTES / (900e9 * _EFF), 4 / 8 * _BYTES / (50e9 * 0.9)) + \
    (5e-6 + 3 * 0.15e-6) * 1


@pytest.fixture(scope="module")
def moe():
    design = astral_dsl.load(str(MOE))
    return design, {job: (seer.forecast(design, job=job), diagnose.rank_map(design, job))
                    for job in ("moe", "wide")}


def _port(rm, rank):
    return rm.ranks[rank].ports[0].name


def test_ep_groups_and_what_crosses_a_nic(moe):
    """The rank map's EP groups are 8 consecutive ranks; only groups 1 and 4 leave a rack, and
    every rank's pipeline transfer (r <-> r + 24) does: every rank sends over its NIC."""
    _, jobs = moe
    fc, rm = jobs["moe"]
    assert [g.ranks for g in rm.groups["ep"]] == [tuple(range(8 * i, 8 * i + 8))
                                                  for i in range(6)]
    net = Net(rm, (), 0)
    crossing = [g.index for g in rm.groups["ep"] if experts.pairs(net, g.ranks)]
    assert crossing == [1, 4]
    # group 1: ranks 8-11 on rack 0's tray 2, 12-15 on rack 1's tray 0: 4 x 4 pairs cross
    assert len(experts.pairs(net, rm.groups["ep"][1].ranks)) == 16
    assert crossing_ranks(rm, fc) == tuple(range(48))


def test_the_generated_all_to_alls_are_counted_and_timed_as_seer_prices_them(moe):
    """Per rank and iteration: 2 micro-batches x (a forward block's dispatch and combine + a
    backward block's combine and dispatch) = 8 all-to-alls, its stage's one MoE layer's (2
    layers, 2 stages): 48 ranks x 3 iterations x 8 = 1,152 records, 6 groups x 8 x 3 = 144
    instances. Without noise the first one (stage 0, forward of micro-batch 0) starts ~2.37 ms
    into the block, after the block's compute before it, as in Seer's template, and lasts the
    template's 385.3 us; the block's forward rows are the template's compute alone, in the
    three stretches its all-to-alls leave."""
    design, jobs = moe
    fc, rm = jobs["moe"]
    t = fc.lowering.template(0, 0, "F")
    a2a = [o for o in t.ops if o.stream == "ep"]
    assert [o.name for o in a2a] == ["ep dispatch all-to-all", "ep combine all-to-all"]
    assert [o.dur for o in a2a] == pytest.approx([A2A, A2A], rel=1e-12)
    # it starts when the block's computation before it ends (the template's own timing, which
    # the fitted constants set: 2.374 ms with stop 66's fit (moe_sync_s 1.657 ms), 2.729 ms with
    # stop 65's (1.716 ms), 1.744 ms before stop 62's refit doubled the forward's token-count
    # pause, moe_sync_s)
    before = [o.start + o.dur for o in t.ops if o.stream == "compute" and o.start < a2a[0].start]
    assert a2a[0].start == pytest.approx(max(before), rel=1e-12)
    assert 2.2e-3 < a2a[0].start < 3.0e-3
    # the rest of the block's exposed time is the two all-to-alls: no TP (tp 1)
    assert t.duration - t.compute == pytest.approx(2 * A2A, rel=1e-9)
    data = generate(fc, rm, [], QUIET, seed=1)
    ep = data.phase == PH["ep_comm"]
    assert int(ep.sum()) == 48 * 3 * 8
    assert np.bincount(data.rank[ep], minlength=48).tolist() == [24] * 48
    first = ep & (data.rank == 0) & (data.iteration == 100)
    fwd = (data.phase == PH["forward"]) & (data.rank == 0) & (data.iteration == 100)
    k, f = np.flatnonzero(first)[0], np.flatnonzero(fwd)[:3]
    assert data.start[k] - data.start[f[0]] == pytest.approx(a2a[0].start, abs=1e-6)
    assert data.duration[k] == pytest.approx(A2A, rel=1e-9)
    # the block's compute is three stretches, as a profiler shows its kernels: up to the
    # dispatch (its start), the experts' between the two all-to-alls (fc1, act, fc2: from the
    # dispatch's end to the combine's start), the rest after the combine; they sum to the
    # template's compute
    experts_s = a2a[1].start - (a2a[0].start + A2A)
    assert data.duration[f] == pytest.approx([a2a[0].start, experts_s,
                                              t.compute - a2a[0].start - experts_s], rel=1e-9)
    assert data.start[f[1]] - data.start[k] == pytest.approx(A2A, abs=1e-6)
    assert data.start[f[2]] - data.start[f[0]] == pytest.approx(a2a[1].start + A2A, abs=1e-6)
    found = diagnose.diagnose(design, write.to_observed(data), job="moe")
    assert found.instances["ep"] == (144, 0)
    rows = write.log_rows(data)
    assert rows[2].count("ep_comm") == 1152


def test_a_nic_slows_only_the_ep_groups_that_cross_it(moe):
    """A NIC port at half rate: rank 10's (group 1, across racks 0 and 1) doubles group 1's
    all-to-alls (1 / 0.5) and no other group's; rank 0's (group 0, inside rack 0: NVLink) slows
    none. The first all-to-all of the run, where every rank arrives together (noise off)."""
    _, jobs = moe
    fc, rm = jobs["moe"]

    def first_a2a(fault):
        data = generate(fc, rm, [fault], QUIET, seed=1)
        sel = (data.phase == PH["ep_comm"]) & (data.iteration == 100)
        out = {}
        for k in np.flatnonzero(sel):               # records in emission order: the first
            out.setdefault(int(data.rank[k]), float(data.duration[k]))
        return np.array([out[r] for r in range(24)])  # stage 0's ranks

    slow = first_a2a(Fault("nic_port", _port(rm, 10), 0.5, 10))
    assert slow[8:16] == pytest.approx([2 * A2A] * 8, rel=1e-9)
    assert np.r_[slow[:8], slow[16:]] == pytest.approx([A2A] * 16, rel=1e-9)
    assert first_a2a(Fault("nic_port", _port(rm, 0), 0.5, 0)) == \
        pytest.approx([A2A] * 24, rel=1e-9)


def test_a_nic_drill_is_diagnosed_to_the_nic_and_a_healthy_one_healthy(moe, tmp_path):
    """The end-to-end drill: rank 10's NIC port at half rate is the first suspect, from its EP
    group's slow all-to-alls (8 a2a x 3 iterations = 24 of group 1's) with the pipeline
    transfers and data-parallel rings it carries; from profiler traces too (the EP kernels
    named by their process group, EXPERT_MODEL_PARALLEL_GROUP); a healthy drill is healthy."""
    design, jobs = moe
    fc, rm = jobs["moe"]
    port = _port(rm, 10)
    data = generate(fc, rm, [Fault("nic_port", port, 0.5, 10)], seed=1)
    found = diagnose.diagnose(design, write.to_observed(data), job="moe")
    top = found.suspects[0]
    assert top.kind == "nic port" and top.path == port and top.probability > 0.95
    assert found.instances["ep"] == (144, 24)
    assert "EP collectives" in top.summary or "EP collectives" in str(top.evidence)
    write.write_traces(data, str(tmp_path), compress=False)
    from astral_dsl import observe
    traced = diagnose.diagnose(design, observe.load([str(tmp_path)]), job="moe")
    assert traced.suspects[0].path == port and traced.instances["ep"][1] == 24
    healthy = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=1)),
                                job="moe")
    assert healthy.verdict == "healthy" and not healthy.suspects
    assert healthy.instances["ep"] == (144, 0)


def test_one_ep_group_a_stage_is_judged_against_the_forecast(moe):
    """Job `wide`: EP 24, one EP group a stage (as DeepSeek-V3's EP 64 on GB200): no peers to
    compare an all-to-all with, so it is compared with Seer's price. Rank 10's NIC at half
    rate slows stage 0's group: its 8 x 3 all-to-alls are slow (the forecast had no EP
    time: 0 of the 48 judged slow)."""
    design, jobs = moe
    fc, rm = jobs["wide"]
    assert len(rm.groups["ep"]) == 2
    data = generate(fc, rm, [Fault("nic_port", _port(rm, 10), 0.5, 10)], seed=1)
    found = diagnose.diagnose(design, write.to_observed(data), job="wide")
    assert found.instances["ep"] == (48, 24)
    assert found.suspects[0].path == _port(rm, 10)


def test_a_slow_all_to_all_inside_a_rack_names_the_racks_hosts(moe, monkeypatch):
    """The generator has no NVLink fault: EP group 0 (ranks 0-7, rack 0's trays 0 and 1) made
    2x slow by hand. The suspect is those trays (the rank map's path of a group inside one
    NVLink domain), no NIC."""
    design, jobs = moe
    fc, rm = jobs["moe"]
    factors = experts.factors

    def slow_group0(net, ranks, members):
        static, flap = factors(net, ranks, members)
        if int(ranks[0, 0]) == 0:                   # stage 0: its group 0 is ranks 0-7
            static = static.copy()
            static[0] = 2.0
        return static, flap

    monkeypatch.setattr(experts, "factors", slow_group0)
    found = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=1)),
                              job="moe")
    top = found.suspects[0]
    assert top.kind == "host" and top.parts == ("Lab.racks[0].hosts[0]", "Lab.racks[0].hosts[1]")
    assert found.instances["ep"] == (144, 24)


TP2 = job("tp2", "TinyMoE", 16, "tp = 2, pp = 1, dp = 8, ep = 8",
          "global_batch = 16, micro = 1, seq = 2048")


def test_a_tp_2_drill_exchanges_over_seers_ep_groups():
    """tp 2, dp 8, ep 8 (16 ranks): Megatron-Core's expert numbering (TP folded in, Seer's and
    the rank map's) makes ranks 0-7 (rack 0) and 8-15 (racks 0 and 1) the EP groups; the drill
    ends each all-to-all on all 8 members together (it had exchanged over every other rank, 0,
    2, .., 14, so the diagnosis's groups ended apart: 7 of a healthy drill's 96 slow). 16
    all-to-alls a rank and iteration (2 micro-batches x 2 MoE layers x 4) x 2 groups x 3
    iterations = 96 instances, none slow."""
    design = astral_dsl.loads(MOE.read_text() + TP2, name="moe.astral", root=MOE.parent)
    fc, rm = seer.forecast(design, job="tp2"), diagnose.rank_map(design, "tp2")
    assert [g.ranks for g in rm.groups["ep"]] == [tuple(range(8)), tuple(range(8, 16))]
    data = generate(fc, rm, [], Noise(clock=0.0, drift=0.0), seed=1)
    ep = (data.phase == PH["ep_comm"]) & (data.iteration == 100)
    ends = np.array([(data.start + data.duration)[ep & (data.rank == r)] for r in range(16)])
    assert ends.shape == (16, 16)
    assert np.ptp(ends[:8], axis=0).max() < 1e-6 and np.ptp(ends[8:], axis=0).max() < 1e-6
    found = diagnose.diagnose(design, write.to_observed(data), job="tp2")
    assert found.instances["ep"] == (96, 0)


def test_megatron_wall_time_leaves_the_all_to_alls_to_their_rows(moe):
    """With Megatron-LM's timers a block's forecast is its wall time less its all-to-alls (a
    log gives them rows of their own): with tp 1 that is its compute, 2 x 47.8 us a block less
    than the block's duration (it had counted them: 4 blocks x 95.6 us = 0.38 ms a stage)."""
    _, jobs = moe
    fc, _ = jobs["moe"]
    wall, comp = _forecast_compute(fc, "megatron"), _forecast_compute(fc, "compute")
    assert wall[0] == pytest.approx(comp[0], rel=1e-9)
    assert wall[1] == pytest.approx(comp[1], rel=1e-9)


def test_hosts_are_taken_in_the_designs_order():
    """compute._by_host: hosts[2] before hosts[10] (a string sort put hosts[10] first)."""
    class Info:
        def __init__(self, host):
            self.host = host

    class Map:
        ranks = [Info("Lab.racks[0].hosts[10]"), Info("Lab.racks[0].hosts[2]")]

    units = [compute_mod.Unit((0,), 0), compute_mod.Unit((1,), 0)]
    assert list(compute_mod._by_host(Map(), units)) == ["Lab.racks[0].hosts[2]",
                                                        "Lab.racks[0].hosts[10]"]
