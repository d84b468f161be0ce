"""Collectives compared with nothing are said (W797), never silently passed: where fewer than
3 groups of a stage run a kind of collective and Seer has no forecast of that kind alone (TP
collectives that leave their NVLink domain: Seer prices them inside their blocks), nothing
suspect is no all-clear. And the drill of such a job writes each TP collective as a row of its
own: summed per iteration, their rows' ends were no collective's, and a healthy drill's clocks
could not be aligned (E789 on 5 of 8 hosts)."""
from __future__ import annotations

import pytest

from astral_dsl import diagnose, seer
from astral_dsl.outputs.diagnosis import final_verdict
from astral_dsl.synth import generate, write
from jobtext import job
from test_diagnose_groups import moe_with

# moe.astral's racks of 12 GPUs (one NVLink domain each): a TP group of 16 ranks spans rack 0
# (ranks 0-11) and rack 1's first tray (12-15); dp 2: two TP groups, fewer than 3
TP16 = job("tp16", "TinyMoE", 32, "tp = 16, pp = 1, dp = 2",
           "global_batch = 32, micro = 1, seq = 2048")


@pytest.fixture(scope="module")
def tp16():
    design = moe_with(TP16)
    fc, rm = seer.forecast(design, job="tp16"), diagnose.rank_map(design, "tp16")
    return design, fc, rm, generate(fc, rm, [], seed=3)


def test_tp_collectives_with_too_few_groups_are_said(tp16):
    """16 micro-batches (32 / dp 2), a forward and a backward block each: 32 TP collectives a
    rank and iteration in the drill, one per block; 2 TP groups x 32 x 3 iterations = 192
    instances, every one across two racks. Two groups a stage: no peers to compare with, and no
    TP forecast: W797 counts the 192, and the healthy drill's verdict is `unusable` (exit 2),
    not `healthy`. Every host's clock aligns on the collectives (the TP rows apart)."""
    design, fc, rm, data = tp16
    assert data.tp_apart
    found = diagnose.diagnose(design, write.to_observed(data), job="tp16")
    assert found.instances["tp"] == (192, 0)
    said = [d for d in found.diagnostics if d.code == "W797"]
    assert [d.message for d in said] == [
        "192 of the 192 TP collectives on stage 0 are not judged: fewer than 3 TP groups of "
        "their stage run each to compare it with, and the forecast has no time of their own "
        "for them"]
    assert said[0].hint
    assert not found.clocks.unaligned and len(found.clocks.aligned) == 8
    assert "E789" not in {d.code for d in found.diagnostics}
    assert found.verdict == "healthy" and final_verdict(found, found.diagnostics) == "unusable"


def test_megatron_timers_keep_the_tp_collectives_in_the_blocks(tp16):
    """Megatron-LM's forward-compute / backward-compute time the blocks with their TP
    collectives inside: no tp_comm row, with or without `tp_apart`."""
    _, _, _, data = tp16
    rows = write.log_rows(data, "megatron")
    assert "tp_comm" not in set(rows[2])
    assert rows[2].count("tp_comm") == 0 and "forward-compute" in rows[2]
