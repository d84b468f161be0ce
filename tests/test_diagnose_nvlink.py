"""Collectives inside one host (its NVLink, no NIC) are judged: compared with their peer groups'
or the forecast like every other, and a slow one names the host (its NVLink or NVSwitch).
They had been left out of every comparison (an instance had to span hosts), silently: an EP
group of 8 GPUs on one host was never judged, and the text said every collective was within
the noise.

Job `ep` of tests/test_synth_context.py: tiny.astral's two hosts of 8 H100, tp 1, dp 16, ep 8:
the EP groups are the hosts (ranks 0-7, 8-15), two a stage, so each all-to-all is compared
with the forecast's (Seer's median dispatch or combine)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.outputs import diagnosis as diagnosis_out
from astral_dsl.synth import Fault, generate, write
from astral_dsl.synth.generator import PH
from test_synth_context import ROOT, TEXT

SMALL = Path(__file__).resolve().parent / "fixtures" / "diagnose" / "small.astral"
HOST1 = "Tiny.racks[0].hosts[1]"


@pytest.fixture(scope="module")
def design():
    return astral_dsl.loads(TEXT, name="tiny.astral", root=ROOT)


@pytest.fixture(scope="module")
def ep(design):
    return design, seer.forecast(design, job="ep"), diagnose.rank_map(design, "ep")


def _slow_nvlink(data, ranks, factor):
    """The drill with the NVLink of the host of `ranks` (one EP group) at 1 / `factor` of its
    rate: each of the group's all-to-alls lasts `factor` times as long once its last member has
    arrived (its records end at begin + factor x (end - begin), begin the latest start): the
    records stretched here, as an NVSwitch fault of the host would (the drill's `nvlink` fault
    is one GPU's port)."""
    start, dur = data.start.copy(), data.duration.copy()
    sel = (data.phase == PH["ep_comm"]) & np.isin(data.rank, ranks)
    per_rank = [np.flatnonzero(sel & (data.rank == r)) for r in ranks]
    per_rank = [k[np.argsort(start[k], kind="stable")] for k in per_rank]
    idx = np.stack(per_rank)                        # (members, exchanges): one clock (a host)
    begin = start[idx].max(axis=0)
    end = (start[idx] + dur[idx]).max(axis=0)
    dur[idx] = begin + factor * (end - begin) - start[idx]
    from attrs import evolve
    return evolve(data, start=start, duration=dur)


def test_a_slow_nvlink_inside_a_host_names_the_host(ep):
    """Host 1's NVLink at half rate: its EP group's 16 all-to-alls an iteration (2 MoE layers x
    2 micro-batches x dispatch and combine, forward and backward: 96 instances over the 2
    groups and 3 iterations) run twice the forecast's time: 48 slow, host 0's 48 not. The host
    is named, alone, with the NVLink note. They had not been compared at all: `healthy`. Its
    GPUs' NVLink ports follow as an alternative: they carry the same 48 all-to-alls and also
    the DP group's 3 reductions (all 16 ranks, 8 on each host: NVLink inside each), which ran
    at their time (48 of 54 slow)."""
    design, fc, rm = ep
    assert [g.ranks for g in rm.groups["ep"]] == [tuple(range(8)), tuple(range(8, 16))]
    data = _slow_nvlink(generate(fc, rm, [], seed=1), list(range(8, 16)), 2.0)
    found = diagnose.diagnose(design, write.to_observed(data), job="ep")
    assert found.instances["ep"] == (96, 48)
    assert found.verdict == "suspects"
    assert [(s.kind, s.path, s.alternative) for s in found.suspects] == [
        ("host", HOST1, False), ("nvlink", HOST1 + ".gpus[0|1|2|3|4|5|6|7]", True)]
    assert found.suspects[1].summary.startswith(f"NVLink ports of GPUs {HOST1}.gpus[0|1|2|3|4|"
                                                f"5|6|7]: 48 of the 54 collectives")
    top = found.suspects[0]
    assert top.probability > 0.95 and "NVLink" in top.note and "48 of the" in top.summary
    text = diagnosis_out.render(found)
    assert f"host     {HOST1}" in text and "NVSwitch" in text


def test_a_healthy_run_and_a_slow_gpu_inside_a_host_do_not_name_the_nvlink(ep):
    """Healthy: the 96 all-to-alls judged, none slow, `healthy` at the floor (0.045: three
    iterations, docs/diagnose.md step 7), no warning. Rank 3's GPU 20 % slow: its EP peers
    wait for it inside every all-to-all, but an instance inside a host is timed by its last
    member's record (nobody waited for): none slow, the GPU named alone."""
    design, fc, rm = ep
    healthy = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=1)),
                                job="ep")
    assert healthy.instances["ep"] == (96, 0) and healthy.verdict == "healthy"
    assert healthy.probability < 0.05 and not healthy.diagnostics
    slow = diagnose.diagnose(design, write.to_observed(
        generate(fc, rm, [Fault("gpu", rm.ranks[3].gpu, 0.2, 3)], seed=1)), job="ep")
    assert slow.instances["ep"] == (96, 0)
    assert [s.path for s in slow.suspects] == [rm.ranks[3].gpu]


def test_a_slow_gpu_does_not_make_its_hosts_tp_sums_slow():
    """tests/fixtures/diagnose/small.astral's `small` (tp 8 inside each host, 8 TP groups a
    stage), a rank log (kernel timers: each rank's TP collectives one row an iteration, their
    sum), rank 3's GPU 20 % slow. Its 7 TP peers wait for it in every collective and their sums
    hold the waits; the group's instance takes its shortest member's sum (rank 3's, the last to
    arrive: no wait), so none of the 48 is slow and the GPU is named alone. Timed as the mean
    end less the latest start (as across hosts), 3 were slow and the host was named beside the
    GPU (0.07)."""
    design = astral_dsl.load(str(SMALL))
    fc, rm = seer.forecast(design, job="small"), diagnose.rank_map(design, "small")
    found = diagnose.diagnose(design, write.to_observed(
        generate(fc, rm, [Fault("gpu", rm.ranks[3].gpu, 0.2, 3)], seed=1)), job="small")
    assert found.instances["tp"] == (48, 0)
    assert [s.path for s in found.suspects] == [rm.ranks[3].gpu]


def test_collectives_inside_hosts_with_too_few_groups_are_judged_against_seer(design):
    """Job `ctx` (tp 8 on each host, cp 2): its two TP groups (the hosts, one stage) give one
    row of summed TP collectives a rank and iteration: 2 groups x 3 iterations = 6 instances,
    fewer than 3 groups to compare each with. Seer prices TP inside its blocks; each sum is
    compared with the blocks' exposed TP summed (in_blocks.py), at the level of the faster
    half: none slow, no W797, `healthy`, exit 0 (it had been W797 and `unusable`, exit 2, on a
    healthy run). Host 1's GPU 0 NVLink port at half rate (`nvlink`): its TP group's 3 sums
    slow, the host named."""
    fc, rm = seer.forecast(design, job="ctx"), diagnose.rank_map(design, "ctx")
    found = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=3)),
                              job="ctx")
    assert found.instances["tp"] == (6, 0) and not found.suspects
    assert "W797" not in {d.code for d in found.diagnostics}
    verdict = diagnosis_out.final_verdict(found, found.diagnostics)
    assert verdict == "healthy" and diagnosis_out.EXIT_CODES[verdict] == 0
    slow = diagnose.diagnose(design, write.to_observed(generate(
        fc, rm, [Fault("nvlink", rm.ranks[8].gpu, 0.5, 8)], seed=3)), job="ctx")
    assert slow.instances["tp"] == (6, 3)
    assert [(s.kind, s.path) for s in slow.suspects] == [("host", HOST1)]
    assert diagnosis_out.EXIT_CODES[diagnosis_out.final_verdict(slow, slow.diagnostics)] == 1
