"""What Transformer Engine and Megatron-Core run for MXFP8 beyond its GEMMs and casts
(docs/seer.md, "Low precision"): the swizzle of each block-scaled GEMM's scales before it
(`scale_swizzle`, TE before 2.12) and the copy of every gathered parameter out of the gradient
buffer into the MXFP8 weights, with the buffer zeroed (Megatron-Core's
reuse_grad_buf_for_mxfp8_param_ag). Hand computations in the comments."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.runs.releases import MXFP8_SWIZZLE_BEFORE
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from tests.test_seer_fp8_blackwell import B200, LLAMA_8B, NET


def job(dtype="mxfp8", recipe="delayed", zero=1, swizzle=True, fp8_params=True,
        framework="megatron"):
    """Llama 3 8B on 8 B200s, DP 8, micro-batch 2 x 8,192 tokens (NeMo 25.09 / 25.11's rows)."""
    return JobSpec("j", LLAMA_8B, ParallelSpec(tp=1, dp=8, zero=zero), 128, 2, 8192, "none",
                   dtype, fp8_recipe=recipe, framework=framework, fp8_params=fp8_params,
                   scale_swizzle=swizzle)


def ops(j, phase):
    low = Lowering(j, Costs.of(j, B200), NET)
    return low, {o.name: o for o in low.template(0, 0, phase).ops}


def test_swizzle_reads_and_writes_both_operands_scales_before_each_gemm():
    m = 2 * 8192
    _, f = ops(job(), "F")
    # QKV [16,384 x 4,096] x [4,096 x 6,144]: (67,108,864 + 25,165,824) / 32 scales, read and
    # written: 5,767,168 bytes, one kernel per operand
    assert f["qkv swizzle"].nbytes == pytest.approx(2 * (m * 4096 + 4096 * 6144) / 32)
    assert f["qkv swizzle"].nbytes == pytest.approx(5_767_168)
    assert f["qkv swizzle"].kernels == 2
    # fc1 [16,384 x 4,096] x [4,096 x 28,672]: 2 x 184,549,376 / 32 = 11,534,336
    assert f["fc1 swizzle"].nbytes == pytest.approx(11_534_336)
    _, b = ops(job(), "B")
    # fc2's weight gradient [14,336 x 16,384] x [16,384 x 4,096]: 2 x 301,989,888 / 32
    assert b["fc2 wgrad swizzle"].nbytes == pytest.approx(18_874_368)
    # QKV's data gradient [16,384 x 6,144] x [6,144 x 4,096]: 2 x 125,829,120 / 32
    assert b["qkv dgrad swizzle"].nbytes == pytest.approx(7_864_320)
    # eight GEMMs a layer's backward, four its forward, each with its swizzle
    assert sum("swizzle" in k for k in b) == 8 and sum("swizzle" in k for k in f) == 4


def test_swizzle_by_format_and_only_when_stated():
    # NVFP4: one scale per 16 elements
    _, f = ops(job("nvfp4"), "F")
    assert f["qkv swizzle"].nbytes == pytest.approx(2 * (2 * 8192 * 4096 + 4096 * 6144) / 16)
    for j in (job(swizzle=False), job("fp8", "current"), job(framework="torchtitan"),
              job("bf16", fp8_params=False)):
        assert not any("swizzle" in k for k in ops(j, "F")[1]), j


def test_the_swizzle_lengthens_the_step():
    slow = Lowering(job(), Costs.of(job(), B200), NET).template(0, 0, "F")
    fast = Lowering(job(swizzle=False), Costs.of(job(swizzle=False), B200), NET).template(0, 0, "F")
    swz = sum(o.dur for o in slow.ops if "swizzle" in o.name)
    assert swz > 0
    assert sum(o.dur for o in slow.ops) == pytest.approx(sum(o.dur for o in fast.ops) + swz)


def test_mxfp8_parameter_copy_out_of_the_gradient_buffer():
    low, _ = ops(job(), "F")
    # 1e9 parameters held, 0.8e9 of them MXFP8 weights (their quantisation is the weight cast
    # counted already): the buffer zeroed, 2 bytes each (2e9), the 0.2e9 16-bit ones copied,
    # read 2 and write 2 (0.8e9): 2.8e9 bytes
    assert low.mxfp8_param_copy(1e9, 0.8e9) == pytest.approx(2.8e9)
    # not for per-tensor fp8 (its fp8 weights gathered straight into place), without fp8
    # parameters, without the distributed optimizer or under FSDP
    for j in (job("fp8", "current"), job(fp8_params=False), job(zero=0), job(zero=3)):
        assert Lowering(j, Costs.of(j, B200), NET).mxfp8_param_copy(1e9, 0.8e9) == 0.0, j


def test_the_copy_lengthens_the_optimizer_step():
    """Counted with the weight casts (params.Params._optimizer_time): with fp8 parameters the
    step streams 2 held + 4 (held - MXFP8 weights) bytes more than without."""
    on, off = job(), job(fp8_params=False)
    low = Lowering(on, Costs.of(on, B200), NET)
    held, quant = sum(low.stage_split(0)), low.stage_linear(0)
    extra = 2 * held + 4 * (held - quant)
    assert low.mxfp8_param_copy(held, quant) == pytest.approx(extra)
    t_off = Lowering(off, Costs.of(off, B200), NET).optimizer_time(0)
    assert low.optimizer_time(0) - t_off == pytest.approx(extra / low.c.bw)


def test_the_runs_table_reads_the_swizzle_for_2025s_releases():
    """NeMo 25.11's MXFP8 row swizzles, its FP8-CS twin and a 26.02 MXFP8 row do not."""
    from pathlib import Path

    from astral_dsl.runs.express import express
    from astral_dsl.runs.table import read_table

    assert MXFP8_SWIZZLE_BEFORE == (26, 2)
    table = read_table(Path(__file__).parents[1] / "astral_dsl/seer/calibration/modern.csv")
    rows = {r.id: r for r in table.runs}
    assert "scale_swizzle = true" in express(rows["r118"]).source
    for rid in ("r117", "r111"):
        assert "scale_swizzle" not in express(rows[rid]).source, rid


def test_per_tensor_fp8_parameters_cast_on_the_optimizers_shard():
    """Per-tensor fp8 parameters: the optimizer casts its 1/8 of the fp32 master weights
    (current scaling: amax read 4, cast read 4, write 1; delayed: read 4, write 1) and, before
    Blackwell, the gathered weights' transposes are written (read 1, write 1 of all of them).
    Llama 3 8B's linear weights: 32 x (4,096 x 6,144 + 4,096 x 4,096 + 4,096 x 28,672 +
    14,336 x 4,096) = 32 x 218,103,808 = 6,979,321,856; the shard 872,415,232."""
    from tests.test_seer_fp8 import H100

    def cast(j, gpu=B200):
        low = Lowering(j, Costs.of(j, gpu), NET)
        return low.fp8_param_cast(low.stage_linear(0), low.stage_linear(0))

    assert cast(job("fp8", "current")) == pytest.approx(9 * 872_415_232)
    assert cast(job("fp8", "delayed")) == pytest.approx(5 * 872_415_232)
    assert cast(job("fp8", "current"), H100) == pytest.approx(
        9 * 872_415_232 + 2 * 6_979_321_856)
    # without the distributed optimizer the whole of the weights; none for MXFP8, without fp8
    # parameters or under FSDP (CAST_BYTES on every weight held)
    assert cast(job("fp8", "current", zero=0)) == pytest.approx(9 * 6_979_321_856)
    for j in (job(), job("fp8", "current", fp8_params=False), job("fp8", "current", zero=3)):
        assert cast(j) is None, j
