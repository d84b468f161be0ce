"""ZeRO-3 / FSDP: each layer's parameter all-gathers and gradient reduce-scatters, judged
against Seer's forecast where a stage has fewer than 3 DP groups to compare them with (they had
been compared with nothing: a DP link at half rate was given an all-clear), and drilled by
`astral synth` (synth/sharded.py), with expert parallelism too."""
from __future__ import annotations

import re

import attrs
import numpy as np
import pytest

import astral_dsl
from astral_dsl import diagnose, seer
from astral_dsl.diagnose import match
from astral_dsl.observe.records import OP_INDEX, PHASE_INDEX, ProcessGroup
from astral_dsl.outputs.diagnosis import render, to_json
from astral_dsl.synth import Fault, generate, write
from jobtext import job
from test_diagnose_ops import ROOT, SHARDED

# moe.astral's four racks, the eight-layer dense model, one DP group of all 48 ranks (fewer
# than evidence.MIN_PEERS: every DP collective is compared with the forecast); global batch 96:
# 2 micro-batches a rank
FSDP = SHARDED + job("fsdp", "Wide", 48, "tp = 1, pp = 1, dp = 48, zero = 3",
                     "global_batch = 96, micro = 1, seq = 2048") + \
    job("fsdp_moe", "TinyMoE", 48, "tp = 1, pp = 2, dp = 24, ep = 8, zero = 3",
        "global_batch = 48, micro = 1, seq = 2048")
DP = match.KIND_CODES["dp"]


@pytest.fixture(scope="module")
def fsdp():
    design = astral_dsl.loads(FSDP, name="moe.astral", root=ROOT)
    fc = seer.forecast(design, job="fsdp")
    return design, fc, diagnose.rank_map(design, "fsdp")


def _port(rm, rank):
    return rm.ranks[rank].ports[0].name


def test_the_forecast_has_each_layers_gathers_and_reduce_scatters(fsdp):
    """Seer's ZeRO-3 operators on the DP stream: per micro-batch each of the 8 layers' weights
    gathered before its forward and again (resharded) before its backward, its gradients
    reduce-scattered after it: 2 x (8 + 8) = 32 all-gathers and 2 x 8 = 16 reduce-scatters an
    iteration, each keyed in that order with its own time (the templates' operators), the
    median per collective; a bare `collective` has no forecast (the two differ)."""
    _, fc, _ = fsdp
    net = diagnose._forecast_net(fc)
    ops = {name: [o.dur for b in fc.runs[0].blocks
                  for o in sorted(fc.lowering.template(0, b.chunk, b.phase).ops,
                                  key=lambda o: (o.start, o.layer))
                  if o.stream == "dp" and o.name == name]
           for name in ("param all-gather", "grad reduce-scatter")}
    assert len(ops["param all-gather"]) == 32 and len(ops["grad reduce-scatter"]) == 16
    for op, name in (("all_gather", "param all-gather"),
                     ("reduce_scatter", "grad reduce-scatter"),
                     ("all_reduce", "grad reduce-scatter")):
        assert [net[(DP, 0, OP_INDEX[op], k)] for k in range(len(ops[name]))] == ops[name]
        assert net[(DP, 0, OP_INDEX[op])] == pytest.approx(float(np.median(ops[name])))
    assert net[(DP, 0, OP_INDEX["all_gather"])] < net[(DP, 0, OP_INDEX["reduce_scatter"])]
    assert (DP, 0) not in net and (DP, 0, OP_INDEX["collective"]) not in net


def test_a_slow_dp_nic_under_fsdp_is_not_an_all_clear(fsdp):
    """A healthy FSDP drill: 3 iterations x (32 + 16) = 144 DP collectives, none slow. Rank 5's
    NIC port at half rate: every one of them crosses it and runs ~2x its forecast, all 144
    slow, and the suspect's parts (the group's path: the data cannot tell its 48 NICs apart)
    hold the port. Compared with nothing, as before, the drill was `healthy`."""
    design, fc, rm = fsdp
    healthy = diagnose.diagnose(design, write.to_observed(generate(fc, rm, [], seed=3)),
                                job="fsdp")
    assert healthy.verdict == "healthy" and healthy.instances["dp"] == (144, 0)
    assert "W797" not in {d.code for d in healthy.diagnostics}
    data = generate(fc, rm, [Fault("nic_port", _port(rm, 5), 0.5, 5)], seed=3)
    found = diagnose.diagnose(design, write.to_observed(data), job="fsdp")
    assert found.verdict != "healthy" and found.instances["dp"] == (144, 144)
    assert _port(rm, 5) in found.suspects[0].parts
    # one DP group: no peers, the forecast is what they ran slower than (not "their peers'")
    assert re.search(r"ran 2\.\d\dx their forecast time \(too few peers to compare with\)",
                     found.suspects[0].summary)
    # every member's NIC carries each collective of the one group: the suspect says so (4
    # racks x 3 trays x 4 NICs = 48 NICs of 12 hosts, and the switches between them), not its
    # first NIC at 100 %; its parts list every one
    said = ("one of the 48 NICs of the 12 hosts Lab.racks[0].hosts[0] to "
            "Lab.racks[3].hosts[2], or the switches between them")
    top = found.suspects[0]
    assert top.kind == "nic port" and top.path == said and not top.tied
    assert top.summary.startswith("One of the 48 NICs of the 12 hosts") and \
        "crossing them ran" in top.summary
    assert sum(".port[a]" in p and " -- " not in p for p in top.parts) == 48
    assert to_json(found)["suspects"][0]["path"] == said
    assert f"1. nic port {said}   probability" in render(found)


def test_unnamed_fsdp_collectives_are_said(fsdp):
    """The drill with every DP collective a bare `collective`: none compared (the layer's
    gather and reduce-scatter differ), W797 with the median layer's of each."""
    design, fc, rm = fsdp
    observed = write.to_observed(generate(fc, rm, [], seed=3))
    for t in observed.traces:
        t.op[t.op >= OP_INDEX["all_reduce"]] = OP_INDEX["collective"]
    found = diagnose.diagnose(design, observed, job="fsdp")
    said = [d for d in found.diagnostics if d.code == "W797"]
    net = diagnose._forecast_net(fc)
    rs, ag = (net[(DP, 0, OP_INDEX[op])] * 1e3 for op in ("reduce_scatter", "all_gather"))
    assert len(said) == 1 and said[0].message == (
        f"144 of the 144 DP collectives are not judged: the data does not say which collective "
        f"each is, the forecast's gradient reductions and parameter all-gathers differ "
        f"({rs:.3f} ms a layer, {ag:.3f} ms a layer on stage 0), and fewer than 3 DP groups of "
        f"its stage run each to compare it with")


def test_zero_3_with_experts_is_drilled():
    """ZeRO-3 with expert parallelism (E798 had refused it): each layer's collectives run as
    two, the routed experts' over the expert-data-parallel groups (EDP = 24 / 8 = 3: ranks r,
    r + 8, r + 16 of a stage, across its two racks): one layer a stage, 2 micro-batches (48 /
    24), a gather before the forward and the backward and a reduce-scatter after it: 3 x 2 x 3
    iterations x 48 ranks = 864 expert collectives (tests/test_synth_context.py drills it)."""
    design = astral_dsl.loads(FSDP, name="moe.astral", root=ROOT)
    data = generate(seer.forecast(design, job="fsdp_moe"), diagnose.rank_map(design, "fsdp_moe"))
    assert int((data.phase == write.PHASE_NAMES.index("edp_comm")).sum()) == 864
    assert data.groups["edp"][0] == (0, 8, 16)


def test_a_dp_group_of_every_rank_in_a_trace_is_the_dp_group(fsdp):
    """tp 1, pp 1: the DP group is every rank. A profiler trace names its kernels' process
    group, DATA_PARALLEL_GROUP of ranks 0-47: matched as DP collectives (144, all slow with
    rank 5's NIC at half rate), not as the world's end-of-iteration sync, which is not judged
    (the traces' drill had matched none and given an all-clear)."""
    design, fc, rm = fsdp
    data = generate(fc, rm, [Fault("nic_port", _port(rm, 5), 0.5, 5)], seed=3)
    observed = write.to_observed(data)
    pg = (ProcessGroup("dp-0", "DATA_PARALLEL_GROUP", tuple(range(48))),)
    observed = attrs.evolve(observed, traces=tuple(
        attrs.evolve(t, groups=pg, group=np.where(t.phase == PHASE_INDEX["dp_comm"], 0, -1))
        for t in observed.traces))
    found = diagnose.diagnose(design, observed, job="fsdp")
    assert found.instances["dp"] == (144, 144) and found.verdict != "healthy"
