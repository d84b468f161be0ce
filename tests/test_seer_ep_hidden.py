"""The expert-parallel all-to-all's hidden share (`ep_overlap`, the fitted `ep_hidden`): the
share another micro-batch's computation hides occupies the EP stream after the exposed rest,
and only the rest stands between the permutation and the experts (docs/seer.md, "Lowering").
A small MoE on 16 GPUs (2 hosts of 8), EP 4, 4 micro-batches a step, the same job with and
without the overlap: Megatron-Core's combined 1F1B pairs all passes but the first forward and
the last backward (spec.ep_overlap_share: (4 - 1) / 4), so 0.25 x 3/4 = 0.1875 of an
all-to-all is hidden."""
from __future__ import annotations

import pytest

from astral_dsl.seer import comm
from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

MOE = ModelSpec("M", 4, 1024, 16, 8, 2048, 32000, 2048, "swiglu", experts=8, top_k=2,
                moe_ffn=1024)
GPU = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3.35e12, 450e9, 700.0, 700.0, 132, "hopper")
NET = comm.Network(8, 450e9, (50e9,) * 8, (comm.Tier("leaf", 32, True, 1.0),
                                          comm.Tier("core", 10**6, False, 1.0)))
HIDDEN = 0.25
SHARE = HIDDEN * 3 / 4          # ep_hidden on the paired passes: 0.1875


@pytest.fixture(scope="module")
def ops():
    costs = Costs(GPU, "bf16", calibration=shipped().with_(ep_hidden=HIDDEN))
    out = {}
    for overlap in (False, True):
        job = JobSpec("j", MOE, ParallelSpec(dp=16, ep=4, zero=1), 64, 1, 2048, "none", "bf16",
                      ep_overlap=overlap)
        out[overlap] = {o.name: o for o in Lowering(job, costs, NET).template(0, 0, "F").ops
                        if o.layer == 0}
    return out


def test_only_the_exposed_share_delays_the_experts(ops):
    """Without the overlap the dispatch takes t and the sort of the received rows by local
    expert (the alltoall dispatcher's, 2 local experts), then the experts, start when it ends.
    With it, the exposed 1 - 0.1875 of t runs first and the sort starts when it ends, 0.1875 t
    earlier; the hidden 0.1875 t follows on the EP stream, beside the sort and fc1."""
    plain, over = ops[False], ops[True]
    t = plain["ep dispatch all-to-all"].dur
    assert t > 0
    sent = over["permute"].end
    exposed, hidden = over["ep dispatch all-to-all"], over["ep dispatch all-to-all (overlapped)"]
    assert exposed.start == pytest.approx(sent)
    assert exposed.dur == pytest.approx((1 - SHARE) * t)
    assert hidden.start == pytest.approx(exposed.end) and hidden.dur == pytest.approx(SHARE * t)
    sort = over["sort by local expert"]
    assert sort.start == pytest.approx(sent + (1 - SHARE) * t)
    assert over["expert fc1"].start == pytest.approx(sort.end)
    # the same layer without the overlap: the sort waits for the whole t after the permutation
    assert plain["sort by local expert"].start == pytest.approx(plain["permute"].end + t)
    assert plain["expert fc1"].start == pytest.approx(plain["sort by local expert"].end)
    # the combine after fc2 and the restoring sort waits for the stream: the hidden share
    # ended long before
    assert over["unsort by local expert"].start == pytest.approx(over["expert fc2"].end)
    assert over["ep combine all-to-all"].start == pytest.approx(
        over["unsort by local expert"].end)


def _segments(template, layer):
    """(all-to-all seconds, compute seconds before, between and after the layer's two
    all-to-alls) of one MoE layer of a block template."""
    ops = sorted((o for o in template.ops if o.layer == layer), key=lambda o: o.start)
    parts, t, a2a = [0.0], 0.0, 0
    for o in ops:
        if "all-to-all" in o.name:
            t += o.dur
            if "(overlapped)" not in o.name:
                a2a += 1
                parts.append(0.0)
        elif o.stream == "compute":
            parts[-1] += o.dur
    assert a2a == 2
    return t / 2, parts


def test_the_prior_is_the_schedule_plans_reading():
    """`ep_hidden`'s prior (docs/seer.md, stop 67): Megatron-Core 0.16.0's
    TransformerLayerSchedulePlan.run puts each all-to-all beside a computation of the other
    micro-batch, which hides all of it when longer (1), less the SMs HybridEP takes from that
    computation, 32 of 148 (0.78). It was 0 - 0.8, an assumed range."""
    from astral_dsl.seer.calibration import BY_NAME

    lo, hi = BY_NAME["ep_hidden"].prior
    assert lo == pytest.approx(1 - 32 / 148, abs=0.005) and hi == 1.0


def test_the_paired_computations_outlast_the_all_to_alls():
    """What the prior rests on, on an overlapped row of the tables: NeMo 26.06's DeepSeek-V3 in
    MXFP8 on 256 GB200s (r021, EP 64, Megatron-Core's combined 1F1B). Each all-to-all's pair
    (model_chunk_schedule_plan.py): the backward's combine | the forward's attention, the
    forward's dispatch | the backward's experts, the backward's dispatch | the forward's
    experts, the forward's combine | the backward's attention; each computation is over twice
    as long (3.5 to 7 times here)."""
    from astral_dsl.runs.evaluate import prepare_row
    from astral_dsl.runs.table import read_table
    from astral_dsl.seer.calibration import RUN_FILES
    from astral_dsl.seer.forecast import run

    row = next(r for r in read_table(RUN_FILES["modern"]).runs if r.id == "r021")
    p = prepare_row(row)
    assert p.spec.ep_overlap
    fc = run(p.spec, p.gpu, p.net, calibration=shipped())
    low = fc.lowering
    fwd, bwd = (low.template(fc.stage, 0, ph) for ph in "FB")
    layer = next(o.layer for o in fwd.ops if o.name == "ep dispatch all-to-all")
    t_f, (attn_f, mlp_f, _) = _segments(fwd, layer)
    t_b, (_, mlp_b, attn_b) = _segments(bwd, layer)
    assert min(attn_f, mlp_b, mlp_f, attn_b) > 2 * max(t_f, t_b) > 0
