"""Expert GEMMs as the frameworks run them (docs/seer.md, "Compute costs"): Megatron-Core hands
the host's token counts to Transformer Engine's GroupedLinear, which runs one cuBLAS GEMM per
local expert on TE's four compute streams (costs.GEMM_STREAMS), each round of four filling and
draining the GPU on its own; a step replayed from CUDA graphs (sync-free dispatch) and PyTorch's
grouped GEMM run the experts as one grouped kernel. Hand computations in the comments."""
from __future__ import annotations

import pytest

from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import GEMM_STREAMS, K_HALF, KERNEL_S, Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

# H100 SXM data sheet: 989 TFLOP/s dense bf16, 3.35 TB/s HBM3, NVLink 450 GB/s each way, 132 SMs
H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9, sms=132, arch="hopper")
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
# a fine-grained MoE: 64 experts of width 2,048, 8 per token
FINE = ModelSpec("fine", 4, 4096, 32, 8, 14336, 32000, 4096, "swiglu", experts=64, top_k=8,
                 moe_ffn=2048)


def fc1(framework="megatron", cuda_graphs=False, ep=4, grouped_gemm=True):
    job = JobSpec("j", FINE, ParallelSpec(dp=ep, ep=ep), 64, 1, 4096, "none", "bf16",
                  framework=framework, cuda_graphs=cuda_graphs, grouped_gemm=grouped_gemm)
    low = Lowering(job, Costs.of(job, H100), NET)
    return low.c.cal, next(o for o in low.template(0, 0, "F").ops if o.name == "expert fc1")


def expected(cal, experts_at_once: int, rounds: int, waves=None) -> float:
    # a rank routes 4,096 tokens x 8 = 32,768 rows; balanced over EP 4, its 64 / 4 = 16 local
    # experts receive as many rows in all: 2,048 each;
    # fc1 [2,048 x 4,096] x [4,096 x 2 x 2,048]: 2 x 2,048 x 4,096 x 4,096 FLOPs per expert
    m, n, k, local = 2048, 4096, 4096, 16
    flops = 2.0 * m * n * k * local
    tiles = (m // 128) * (n // 256) * experts_at_once          # 256 tiles of 128 x 256 each
    waves = cal.gemm_waves_expert if waves is None else waves
    eff = cal.gemm_eff_hopper * k / (k + K_HALF) * tiles / (tiles + waves * 132)
    return flops / (989e12 * eff) + KERNEL_S * rounds


def test_megatron_runs_one_gemm_per_expert_four_at_a_time():
    cal, op = fc1()
    assert GEMM_STREAMS == 4
    # 16 local experts: four rounds of four GEMMs, each round 4 x 256 = 1,024 tiles
    assert op.dur == pytest.approx(expected(cal, 4, 4))


def test_cuda_graphs_and_pytorch_run_one_grouped_kernel():
    for kw in ({"cuda_graphs": True}, {"framework": "torchtitan"}):
        cal, op = fc1(**kw)
        assert op.dur == pytest.approx(expected(cal, 16, 1))       # 4,096 tiles at once


def test_sequential_experts_run_one_plain_gemm_after_another():
    """Without a grouped GEMM (`grouped_gemm = false`: Megatron-Core's SequentialMLP, NeMo 2.x's
    Mixtral) each of the 16 local experts runs its own GEMM of 256 tiles on the compute stream,
    16 rounds of one at the dense tile-wave half point (gemm_waves), whatever the CUDA graphs."""
    for graphs in (False, True):
        cal, op = fc1(cuda_graphs=graphs, grouped_gemm=False)
        assert op.dur == pytest.approx(expected(cal, 1, 16, cal.gemm_waves))


def test_one_sequential_expert_is_a_dense_gemm():
    """With one local expert (EP = experts, as Mixtral's 8 over EP 8) SequentialMLP runs the
    rank's whole input through one MLP: expert fc1 costs what a dense GEMM of its shape does,
    [32,768 x 4,096] x [4,096 x 4,096] (the rank's 4,096 tokens x top 8 rows, fc1's two
    halves of 2,048)."""
    job = JobSpec("j", FINE, ParallelSpec(dp=64, ep=64), 64, 1, 4096, "none", "bf16",
                  grouped_gemm=False)
    low = Lowering(job, Costs.of(job, H100), NET)
    op = next(o for o in low.template(0, 0, "F").ops if o.name == "expert fc1")
    assert op.dur == pytest.approx(low.c.gemm("x", 32768, 4096, 4096)[0])
    cal, m, n, k = low.c.cal, 32768, 4096, 4096
    tiles = (m // 128) * (n // 256)                              # 4,096 tiles of 128 x 256
    eff = cal.gemm_eff_hopper * k / (k + K_HALF) * tiles / (tiles + cal.gemm_waves * 132)
    assert op.dur == pytest.approx(2.0 * m * n * k / (989e12 * eff) + KERNEL_S)


def test_rounds_cost_more_than_one_grouped_kernel():
    _, multi = fc1()
    _, grouped = fc1(cuda_graphs=True)
    assert multi.flops == grouped.flops
    assert multi.dur > grouped.dur


# ---- the fused dispatcher (DeepEP, HybridEP) sends a token once to each rank of its experts ----
def test_fused_dispatch_sends_a_token_once_per_rank_holding_its_experts():
    from astral_dsl.seer.comm import BASE_S, NVLINK_STEP_S, Layout, dispatch

    copy, eff = 64e6, 0.9
    one_host = Layout("ep", 8, 8, 1, 0, 0.0, 0.0)
    # 8 ranks, top-8 (routing.spread: 8 p ranks hold one of a token's experts): a given other
    # rank holds one with probability p = 1 - (7/8)^8 = 0.6564; the token goes to 7 p = 4.59
    # other ranks, not to 8 x 7/8 = 7
    p = 1 - (7 / 8) ** 8
    assert dispatch(NET, one_host, copy, (8 * p, 1.0), eff) == pytest.approx(
        BASE_S + copy * 7 * p / (450e9 * eff) + 7 * NVLINK_STEP_S / 4)
    # 32 ranks on 4 hosts of 8, top-8 over 50 GB/s NICs (32 q ranks and 4 (1 - (3/4)^8) hosts
    # hold one of a token's experts): a token crosses the network once per other host holding
    # one of its experts, 3 (1 - (3/4)^8) = 2.70 times; over NVLink it goes
    # to 7 p' of its own host's ranks and is forwarded to 24 p' x 7/8 in the others,
    # p' = 1 - (31/32)^8
    four = Layout("ep", 32, 8, 4, 1, 50e9, 5e-6)
    q = 1 - (31 / 32) ** 8
    nvlink = copy * q * (7 + 24 * 7 / 8) / (450e9 * eff)
    network = copy * 3 * (1 - 0.75 ** 8) / (50e9 * eff)
    assert dispatch(NET, four, copy, (32 * q, 4 * (1 - 0.75 ** 8)), eff) == pytest.approx(
        BASE_S + max(nvlink, network) + 5e-6 * 2)


def test_a_gemm_pays_for_its_padded_tiles():
    # tile quantisation (costs.py): the GPU computes whole 128 x 256 tiles on Hopper. A GEMM
    # [4,096 x 2,880] x [2,880 x 2,880] (GPT-OSS's hidden width) has 2,880 / 256 = 11.25 column
    # tiles: it runs 12, the work of 3,072 columns, 32 x 12 = 384 tiles; its FLOPs stay 2 m n k
    c = Costs.of(JobSpec("j", FINE, ParallelSpec(), 8, 1, 4096, "none", "bf16"), H100)
    cal = c.cal
    t, flops, _ = c.gemm("fc2", 4096, 2880, 2880)
    assert flops == 2.0 * 4096 * 2880 * 2880
    tiles = 32 * 12
    eff = cal.gemm_eff_hopper * 2880 / (2880 + K_HALF) * tiles / (tiles + cal.gemm_waves * 132)
    assert t == pytest.approx(2.0 * 4096 * 3072 * 2880 / (989e12 * eff) + KERNEL_S)
    # a multiple of the tile pays nothing more: 3,072 columns cost what the padded 2,880 did
    assert c.gemm("fc2", 4096, 3072, 2880)[0] == pytest.approx(t)
