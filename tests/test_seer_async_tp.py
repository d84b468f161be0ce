"""torchtitan's TP collectives as torch runs them (seer/lower_comm.py, _tp_gather, _tp_out,
_overlap, _ring_sum, _dim_copy; lower_linear.py, _linear_bwd). Async TP: torch.compile's
micro-pipelined TP pass fuses an all-gather only with the matmuls that read the gathered tensor
and a reduce-scatter only of one matmul's output (torch 2.8.0 _inductor/fx_passes/
micro_pipeline_tp.py); the fused ops copy the rank's shard into symmetric memory first, leave
one GEMM chunk beside no transfer and sum the reduce-scatter's TP partials in a kernel of their
own (distributed/_symmetric_memory/__init__.py). Unfused, DTensor's sequence-parallel
collectives on dim 1 copy their data to and from dim 0 (distributed/_functional_collectives.py).
Llama 3 8B, TP 8, a micro-batch of 2 x 8,192 tokens: hand-computed."""
from __future__ import annotations

import pytest

from astral_dsl.seer import comm
from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from tests.test_seer_torchtitan import GPU, NET, TOKENS, job

ACT = TOKENS * 4096 * 2             # a whole bf16 activation, 16,384 x 4,096 x 2 bytes
FP8 = TOKENS * 4096 * 1             # its fp8 copy


def ops(j, phase, layer=0):
    low = Lowering(j, Costs(GPU, "fp8" if j.dtype == "fp8" else "bf16",
                            calibration=shipped()), NET)
    return low, {o.name: o for o in low.template(0, 0, phase).ops if o.layer == layer}


def asynctp(**kw):
    return job(tp=8, recompute="none", **kw).with_(tp_overlap="full")


def vanilla(**kw):
    return job(tp=8, recompute="none", **kw).with_(tp_overlap="none")


def test_the_fused_all_gather_copies_the_shard_into_symmetric_memory_first():
    """Before the first GEMM chunk the rank's 2,048 x 4,096 bf16 shard is read and written
    once (2 x 16,777,216 bytes), on the compute stream; the all-gather starts after it."""
    low, fwd = ops(asynctp(), "F")
    copy = fwd["attn all-gather symmetric copy"]
    assert copy.nbytes == pytest.approx(2 * ACT / 8) == 2 * 16_777_216
    assert fwd["attn all-gather"].start == pytest.approx(copy.end)
    assert fwd["qkv"].start == pytest.approx(copy.end)


def test_the_fused_pair_takes_one_gemm_chunk_more_than_its_transfer():
    """max(GEMM, transfer + GEMM / 8): the reduce-scatter's operator is its transfer plus one
    eighth of out proj's GEMM (the first chunk, produced before any copy)."""
    low, fwd = ops(asynctp(), "F")
    rs = comm.reduce_scatter(NET, low.groups["tp"], ACT)
    assert fwd["attn reduce-scatter"].dur == pytest.approx(rs + fwd["out proj"].dur / 8)
    ag = comm.all_gather(NET, low.groups["tp"], ACT)
    assert fwd["attn all-gather"].dur == pytest.approx(ag + fwd["qkv"].dur / 8)


def test_the_fused_reduce_scatter_sums_its_partials_after_the_pipeline():
    """One kernel reads the 8 partials of the rank's 2,048 rows (16,384 x 4,096 bf16) and
    writes its 2,048 x 4,096: (16,384 + 2,048) x 4,096 x 2 = 150,994,944 bytes, after both
    the GEMM and the transfer."""
    low, fwd = ops(asynctp(), "F")
    s = fwd["attn reduce-scatter sum"]
    assert s.nbytes == pytest.approx((TOKENS + TOKENS / 8) * 4096 * 2) == 150_994_944
    assert s.start == pytest.approx(max(fwd["attn reduce-scatter"].end, fwd["out proj"].end))
    assert "mlp reduce-scatter sum" in fwd
    assert not [n for n in fwd if "layout copy" in n]


def test_summed_data_gradients_are_not_fused_with_their_reduce_scatter():
    """wq, wk, wv's input gradients are summed before the reduce-scatter, which the pass does
    not fuse (its input is no matmul's output): the dgrad GEMMs are whole (512, 128 and 128
    inner columns on all 16,384 rows), the reduce-scatter waits for the weight gradient and
    nothing is summed after it."""
    low, bwd = ops(asynctp(), "B")
    c = low.c
    assert bwd["qkv dgrad"].dur == pytest.approx(
        sum(c.gemm("qkv", TOKENS, 4096, n)[0] for n in (512, 128, 128)))
    assert bwd["qkv grad reduce-scatter"].start >= bwd["qkv wgrad"].end - 1e-12
    assert bwd["qkv grad reduce-scatter"].dur == pytest.approx(
        comm.reduce_scatter(NET, low.groups["tp"], ACT))
    assert "qkv grad reduce-scatter sum" not in bwd
    # compiled, the dim-1 copy is fused into the sum's kernel
    assert "qkv grad reduce-scatter layout copy" not in bwd
    # the row-parallel layer's output-gradient all-gather still feeds its dgrad: fused
    assert "attn grad all-gather symmetric copy" in bwd


def test_rowwise_fp8_gathers_are_not_fused():
    """torchao's rowwise fp8 casts the gathered bf16 row by row: no matmul reads the
    all-gather's result, so it stays a blocking all-gather (no symmetric copy), while the
    reduce-scatter after out proj is still fused. Tensorwise gathers fp8 data the matmuls
    read: fused."""
    j = asynctp(dtype="fp8").with_(fp8_recipe="rowwise")
    low, fwd = ops(j, "F")
    assert not low.gather_fused
    assert "attn all-gather symmetric copy" not in fwd
    assert fwd["qkv"].start >= fwd["attn all-gather"].end - 1e-12
    assert fwd["attn all-gather"].dur == pytest.approx(
        comm.all_gather(NET, low.groups["tp"], ACT))
    assert "attn reduce-scatter sum" in fwd
    # the cast reads the gathered tensor: the dim-1 copy is fused into it
    assert "attn all-gather layout copy" not in fwd
    tensorwise, twf = ops(asynctp(dtype="fp8"), "F")
    assert tensorwise.gather_fused
    assert twf["attn all-gather symmetric copy"].nbytes == pytest.approx(2 * FP8 / 8)


@pytest.mark.parametrize("compiled", [True, False])
def test_vanilla_sequence_parallel_collectives_copy_to_and_from_dim_1(compiled):
    """Without async TP the all-gather's result (read by wq, wk, wv: extern GEMMs) and the
    reduce-scatter's input (out proj's output) are copied whole, 2 x 16,384 x 4,096 x 2 bytes
    each; the reduce-scatter of the summed data gradients only when eager (compiled, the
    sum's kernel writes it). Megatron-Core's collectives gather on dim 0: none."""
    _, fwd = ops(vanilla(compiled=compiled), "F")
    assert fwd["attn all-gather layout copy"].nbytes == pytest.approx(2 * ACT)
    assert fwd["attn reduce-scatter layout copy"].nbytes == pytest.approx(2 * ACT)
    assert fwd["qkv"].start == pytest.approx(fwd["attn all-gather layout copy"].end)
    _, bwd = ops(vanilla(compiled=compiled), "B")
    assert ("qkv grad reduce-scatter layout copy" in bwd) == (not compiled)
    assert bwd["qkv input all-gather layout copy"].nbytes == pytest.approx(2 * ACT)
    _, mega = ops(vanilla(framework="megatron"), "F")
    assert not [n for n in mega if "layout copy" in n]


def test_rowwise_vanilla_gathers_fuse_their_copy_into_the_cast():
    """Rowwise, compiled: the all-gathers' copies go into the casts that read them, the
    reduce-scatters' (out proj's output) stay."""
    _, fwd = ops(vanilla(dtype="fp8").with_(fp8_recipe="rowwise"), "F")
    assert "attn all-gather layout copy" not in fwd
    assert fwd["attn reduce-scatter layout copy"].nbytes == pytest.approx(2 * ACT)


def test_the_embeddings_reduce_scatter_is_not_split():
    """The embedding's lookup is no GEMM: its reduce-scatter blocks the next operator under
    `tp_overlap = full` too (Megatron-LM's userbuffers and torch's pass split GEMMs only)."""
    for framework in ("megatron", "torchtitan"):
        _, emb = ops(job(framework=framework, tp=8, recompute="none")
                     .with_(tp_overlap="full"), "F", layer=-1)
        rs = emb["embedding reduce-scatter"]
        assert rs.start >= emb["embedding"].end - 1e-12


def test_two_tp_steps_share_the_gpu_at_a_time():
    """torch runs the steps' GEMMs on two streams alternately ("computation/computation
    overlapping, greatly reducing quantization inefficiency": _symmetric_memory/__init__.py),
    so out proj's 8 steps of 2,048 x 4,096 x 512 count the tiles of two at a time: 2 x 16 x 16
    = 512 tiles of 128 x 256 against 132 SMs, four rounds of two launches' cost each."""
    from astral_dsl.seer.costs import K_HALF, KERNEL_S
    low, fwd = ops(asynctp(), "F")
    cal = low.c.cal
    eff = cal.gemm_eff_hopper * 512 / (512 + K_HALF) * 512 / (512 + cal.gemm_waves * 132)
    want = 2 * TOKENS * 4096 * 512 / (989e12 * eff) + 4 * KERNEL_S
    rs = comm.reduce_scatter(NET, low.groups["tp"], ACT)
    assert fwd["out proj"].dur == pytest.approx(want + cal.interfere * rs)
    one = eff / (512 / (512 + cal.gemm_waves * 132)) * 256 / (256 + cal.gemm_waves * 132)
    assert want < 2 * TOKENS * 4096 * 512 / (989e12 * one) + 8 * KERNEL_S   # one at a time
