"""Collectives compared with nothing are said (W797), never silently passed: where fewer than
3 groups of a stage run a kind of collective and Seer has no forecast of it, nothing suspect is
no all-clear. TP collectives that leave their NVLink domain, two groups a stage, had been such
(Seer prices them inside its blocks); they are now judged against that price (in_blocks.py:
one a block here). And the drill of such a job writes each TP collective as a row of its
own: summed per iteration, their rows' ends were no collective's, and a healthy drill's clocks
could not be aligned (E789 on 5 of 8 hosts). Two groups a stage compared with the forecast,
one of them slow: half the instances slowed, the spread of all of them (their MAD) was the
fault's own size and hid it (a NIC at half rate given an all-clear); the lower half's spread is
the healthy one's."""
from __future__ import annotations

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.diagnose import in_blocks
from astral_dsl.diagnose.likelihood import lower_spread, robust_spread
from astral_dsl.outputs.diagnosis import final_verdict
from astral_dsl.synth import Fault, generate, write
from jobtext import job
from test_diagnose_groups import ROOT, moe_with
from test_diagnose_ops import SHARDED

# moe.astral's racks of 12 GPUs (one NVLink domain each): a TP group of 16 ranks spans rack 0
# (ranks 0-11) and rack 1's first tray (12-15); dp 2: two TP groups, fewer than 3
TP16 = job("tp16", "TinyMoE", 32, "tp = 16, pp = 1, dp = 2",
           "global_batch = 32, micro = 1, seq = 2048")


@pytest.fixture(scope="module")
def tp16():
    design = moe_with(TP16)
    fc, rm = seer.forecast(design, job="tp16"), diagnose.rank_map(design, "tp16")
    return design, fc, rm, generate(fc, rm, [], seed=3)


def test_tp_collectives_with_too_few_groups_are_judged_against_seer(tp16):
    """16 micro-batches (32 / dp 2), a forward and a backward block each: 32 TP collectives a
    rank and iteration in the drill, one per block; 2 TP groups x 32 x 3 iterations = 192
    instances, every one across two racks. Two groups a stage: no peers to compare with, so
    each is compared with Seer's price of its block's TP (in_blocks.forecast_tp: 112 a
    collective, 32 a block, 1 their sum; the data's 32 a block), at the level of the faster
    half (the groups sit in two sets of racks' domains): none slow, no W797, `healthy` (it had
    been W797 and `unusable`, exit 2). Every host's clock aligns on the collectives (the TP
    rows apart). Rank 0's NIC port at half rate slows TP group 0's ring: its 96 instances
    slow, and the port is named."""
    design, fc, rm, data = tp16
    assert data.tp_apart
    assert sorted(in_blocks.forecast_tp(fc)) == [(0, 1), (0, 32), (0, 112)]
    found = diagnose.diagnose(design, write.to_observed(data), job="tp16")
    assert found.instances["tp"] == (192, 0)
    assert "W797" not in {d.code for d in found.diagnostics}
    assert not found.clocks.unaligned and len(found.clocks.aligned) == 8
    assert "E789" not in {d.code for d in found.diagnostics}
    assert found.verdict == "healthy" and final_verdict(found, found.diagnostics) == "healthy"
    port = rm.ranks[0].ports[0].name
    slow = diagnose.diagnose(design, write.to_observed(
        generate(fc, rm, [Fault("nic_port", port, 0.5, 0)], seed=3)), job="tp16")
    assert slow.instances["tp"] == (192, 96) and slow.verdict == "suspects"
    assert slow.suspects[0].covers(port) and slow.suspects[0].probability > 0.95


def test_megatron_timers_keep_the_tp_collectives_in_the_blocks(tp16):
    """Megatron-LM's forward-compute / backward-compute time the blocks with their TP
    collectives inside: no tp_comm row, with or without `tp_apart`."""
    _, _, _, data = tp16
    rows = write.log_rows(data, "megatron")
    assert "tp_comm" not in set(rows[2])
    assert rows[2].count("tp_comm") == 0 and "forward-compute" in rows[2]


def test_the_lower_half_spread_is_the_healthy_ones():
    """Three healthy instances (x = -0.01, 0, 0.01) and three at twice their time (x about
    ln 2): the MAD of all six about their median 0.35 is 0.35 (1.4826 x 0.35 = 0.5189: a
    slowed x of 0.69 is 1.3 spreads out, nothing); the lower half's MAD about its median 0 is
    0.01, over the half-normal's 0.3993: 0.02504 (0.69 is 28 spreads out)."""
    x = np.array([0.0, 0.01, -0.01, 0.69, 0.70, 0.71])
    assert robust_spread(x, 0.01) == pytest.approx(1.4826 * 0.35)
    assert lower_spread(x, 0.01) == pytest.approx(0.01 / 0.3993)
    assert lower_spread(np.array([0.3]), 0.01) == 0.01       # one value: the MAD's, floored


TP2 = job("tp2dp", "Wide", 48, "tp = 2, pp = 1, dp = 24",
          "global_batch = 96, micro = 1, seq = 2048")


def test_one_slow_group_of_two_is_found():
    """tp 2, dp 24 on moe.astral's racks: two DP groups (tp 0, tp 1), each with its one
    gradient bucket an iteration compared with the forecast: 6 instances over 3 iterations.
    Rank 24's NIC port (rack 2, tp 0) at half rate slows group 0's 3, ~2x: the job is
    `suspects` and the first suspect holds the port (the 24 NICs of the group cannot be told
    apart). The healthy drill stays healthy. It had been `healthy` with the fault."""
    design = astral_dsl.loads(SHARDED + TP2, name="moe.astral", root=ROOT)
    fc, rm = seer.forecast(design, job="tp2dp"), diagnose.rank_map(design, "tp2dp")
    port = rm.ranks[24].ports[0].name
    healthy = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=0)),
                                job="tp2dp")
    assert healthy.verdict == "healthy" and healthy.instances["dp"] == (6, 0)
    found = diagnose.diagnose(design, write.to_observed(
        generate(fc, rm, [Fault("nic_port", port, 0.5, 24)], seed=0)), job="tp2dp")
    assert found.instances["dp"] == (6, 3) and found.verdict == "suspects"
    assert found.suspects[0].covers(port) and found.suspects[0].probability > 0.5


TP8 = job("tp8", "TinyMoE", 48, "tp = 8, pp = 1, dp = 6",
          "global_batch = 96, micro = 1, seq = 2048")


def test_a_tp_group_across_racks_is_slowed_by_its_ring():
    """tp 8, dp 6 on moe.astral's racks of 12 GPUs: TP group 1 (ranks 8-15) joins rack 0's last
    tray to rack 1's first; rank 8 is GPU 0 of rack 0's tray 2, on rail 0's leaf of rack 0. That
    leaf at half rate slows group 1's TP collectives (one a block: 96 / 6 = 16 micro-batches x
    2 blocks x 3 iterations = 96), compared with the other 5 groups', and the first suspect holds
    the leaf. The drill had left every TP collective at its forecast time whatever the fault
    (the tor drill named the spine, from the DP rings alone)."""
    design = moe_with(TP8)
    fc, rm = seer.forecast(design, job="tp8"), diagnose.rank_map(design, "tp8")
    leaf = "Lab.fabric.rack[0].rail[0].leaf[0]"
    assert rm.group("tp", 8).ranks == tuple(range(8, 16)) and rm.ranks[8].ports[0].switch == leaf
    data = generate(fc, rm, [Fault("tor", leaf, 0.5)], seed=0)
    found = diagnose.diagnose(design, write.to_observed(data), job="tp8")
    assert found.instances["tp"] == (576, 96)
    assert found.suspects[0].covers(leaf) and not found.suspects[0].alternative
