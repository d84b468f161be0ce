"""The routed experts' weights are reduced, sharded and stepped over the expert-data-parallel
group, not the data-parallel one (Megatron-Core 0.16.1: distributed_data_parallel.py keeps them in
`expert_parallel_buffers` over `intra_expt_dp_group`; optimizer/__init__.py builds their
distributed optimizer over the same group), and Megatron-Core's precision-aware optimizer keeps
Adam's moments and the main gradients in bf16 (`optimizer_dtype = bf16`, DeepSeek-V3's
Megatron-Bridge 0.3.1 recipe). Hand-computed against seer/params.py and seer/memory.py."""
from __future__ import annotations

import pytest

from astral_dsl.seer import comm, memory
from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.params import layer_expert_params, layer_params
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

H, F, E, K = 2880, 2880, 128, 4          # GPT-OSS 120B's widths: hidden, expert FFN, experts, top-k
MOE = ModelSpec("M", 4, H, 64, 8, F, 201088, 4096, "swiglu", experts=E, top_k=K, moe_ffn=F)
GPU = GpuSpec("B200", (("bf16", 2.25e15),), 180e9, 8e12, 900e9, 1000.0, 1000.0, 148, "blackwell")
NET = comm.Network(8, 900e9, (50e9,) * 8, (comm.Tier("leaf", 32, True, 1.0),
                                         comm.Tier("core", 10**6, False, 1.0)))


def job(tp=1, dp=64, ep=8, optimizer_dtype="fp32", zero=1):
    par = ParallelSpec(tp=tp, dp=dp, ep=ep, zero=zero)
    return JobSpec("j", MOE, par, 2 * dp, 1, 4096, "none", "bf16", grad_dtype="bf16",
                   optimizer_dtype=optimizer_dtype)


def test_expert_parameters_per_rank():
    """E experts x 3 matrices (SwiGLU) x h x F / EP: 128 x 3 x 2,880 x 2,880 / 8."""
    assert layer_expert_params(job(), 0) == 128 * 3 * 2880 * 2880 / 8
    assert layer_expert_params(job(ep=64), 0) == 128 * 3 * 2880 * 2880 / 64


@pytest.mark.parametrize("tp,dp,ep,edp", [(1, 64, 8, 8), (1, 64, 64, 1), (2, 32, 8, 8),
                                          (8, 1, 2, 4)])
def test_the_expert_data_parallel_group(tp, dp, ep, edp):
    """TP x DP x CP / EP ranks (expert tensor parallelism 1): with EP 8 inside a host of 8 and
    64 ranks, 8 ranks one per host; with EP 64, none to reduce over; with TP 8, EP 2 and no DP,
    4 (the TP ranks hold the same experts)."""
    low = Lowering(job(tp=tp, dp=dp, ep=ep), Costs(GPU, "bf16", calibration=shipped()), NET)
    lay = low.groups["edp"]
    assert lay.n == edp
    if (tp, dp, ep) == (1, 64, 8):
        assert (lay.per_host, lay.hosts) == (1, 8)
    assert low.synced                      # something to reduce: dense weights or experts


def test_gradient_reduction_prices_the_experts_over_their_own_group():
    """A layer's gradients (bf16): the dense part reduce-scattered over DP 64 (8 per host:
    hierarchical), the experts' over the 8 ranks of the expert-data-parallel group, one per
    host: all of it crosses the network, 7/8 of 2 bytes a parameter at the NIC's bandwidth."""
    low = Lowering(job(), Costs(GPU, "bf16", calibration=shipped()), NET)
    dense, expert = low.layer_split(0)
    assert expert == layer_expert_params(low.job, 0)
    assert dense + expert == layer_params(low.job, 0)
    t = low.dp_reduce((dense, expert))
    alone = comm.reduce_scatter(NET, low.groups["dp"], 2 * dense)
    edp = low.groups["edp"]
    assert t == pytest.approx(alone + comm.reduce_scatter(NET, edp, 2 * expert))
    # by hand: the experts' share is at least 7/8 of their bytes over one NIC each
    assert t - alone >= 7 / 8 * 2 * expert / NET.nic_bw
    # and more than the same bytes would cost over DP 64's hierarchical reduction
    assert t > low.weights_coll("rs", (dense + expert, 0.0), (2.0, 2.0))


def test_optimizer_states_shard_over_the_expert_group():
    """ZeRO-1 (the distributed optimizer): bf16 weights and gradients whole; 12 bytes of Adam
    (fp32 master, m, v) and the 4-byte fp32 copy of the bf16 gradients over DP x CP = 64 for
    the dense weights, over EDP = 8 for the experts."""
    j = job()
    P = layer_params(j, 0)
    X = layer_expert_params(j, 0)
    D = P - X
    est = memory.stage_estimate(j, lambda i: 4 * P, 0)
    assert est.weights == pytest.approx(2 * 4 * P)
    assert est.gradients == pytest.approx(2 * 4 * P)
    assert est.optimizer == pytest.approx(4 * (12 * D / 64 + 12 * X / 8))
    assert est.master_grads == pytest.approx(4 * (4 * D / 64 + 4 * X / 8))


def test_bf16_moments_and_main_gradients():
    """`optimizer_dtype = bf16`: fp32 master (4) + bf16 m and v (2 + 2) = 8 bytes of optimizer
    state a parameter, no fp32 gradient copy; the step reads and writes 10 bytes fewer a
    parameter (28 against 38)."""
    j = job(optimizer_dtype="bf16")
    w, g, o, master = memory.state_bytes_per_param(j)
    assert (w, g, o, master) == pytest.approx((2.0, 2.0, 8.0 / 64, 0.0))
    w, g, o, master = memory.state_bytes_per_param(j, experts=True)
    assert (o, master) == pytest.approx((8.0 / 8, 0.0))
    costs = Costs(GPU, "bf16", calibration=shipped())
    fp32, bf16 = Lowering(job(), costs, NET), Lowering(j, costs, NET)
    dense, expert = fp32.stage_split(0)
    per = dense / 64 + expert / 8
    assert fp32.optimizer_time(0) == pytest.approx(costs.stream("optimizer", 38 * per, kernels=20))
    assert bf16.optimizer_time(0) == pytest.approx(costs.stream("optimizer", 28 * per, kernels=20))


def test_a_dense_model_is_unchanged():
    """No routed experts: everything over DP x CP, as before."""
    m = ModelSpec("D", 4, 4096, 32, 8, 14336, 32000, 4096, "swiglu")
    j = JobSpec("j", m, ParallelSpec(tp=2, dp=8, zero=1), 16, 1, 4096, "none", "bf16")
    low = Lowering(j, Costs(GPU, "bf16", calibration=shipped()), NET)
    dense, expert = low.stage_split(0)
    assert expert == 0 and dense == low.stage_params(0)
    assert low.dp_reduce((dense, 0.0)) == comm.reduce_scatter(NET, low.groups["dp"], 4 * dense)
    one = JobSpec("j", m, ParallelSpec(tp=8, dp=1), 1, 1, 4096, "none", "bf16")
    assert not Lowering(one, Costs(GPU, "bf16", calibration=shipped()), NET).synced


def test_the_stage_parameters_without_a_lowering_are_the_lowerings():
    """`astral check` counts a stage's parameters for its memory check with params.stage_params,
    without building the lowering: the same numbers, bit for bit."""
    from astral_dsl.seer.params import stage_params
    from astral_dsl.seer.stages import chunk_layers
    m = ModelSpec("D", 10, 4096, 32, 8, 14336, 32000, 4096, "swiglu")
    for j in (job(), JobSpec("j", m, ParallelSpec(tp=2, pp=4, dp=2, zero=1), 8, 1, 4096, "none",
                             "bf16"),
              JobSpec("g", ModelSpec("G", 6, 1024, 16, 16, 4096, 50000, 2048), ParallelSpec(),
                      1, 1, 2048, "none", "bf16")):
        low = Lowering(j, Costs(GPU, "bf16", calibration=shipped()), NET)
        chunks = chunk_layers(j)
        assert [stage_params(j, chunks, i) for i in range(j.parallel.pp)] == \
            [low.stage_params(i) for i in range(j.parallel.pp)]
