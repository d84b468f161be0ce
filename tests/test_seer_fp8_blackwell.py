"""The casts of Transformer Engine's recipes as TE 2.8-2.10 runs them (docs/seer.md, "Low
precision"): on Blackwell per-tensor fp8 writes the row-wise copy alone (its GEMMs take any
layout), current scaling's cast of a norm's output takes the amax the norm computed; MXFP8 and
NVFP4 are not fused into the norm unless cuDNN's norms run (the recipes' Megatron FSDP). Hand
computations in the comments."""
from __future__ import annotations

import pytest

from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.lower_linear import cast_bytes
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

# HGX B200 data sheet: 2,250 TFLOP/s dense bf16, 4,500 fp8, 8 TB/s HBM3e, NVLink 900 GB/s a way
B200 = GpuSpec("B200", (("bf16", 2250e12), ("fp8", 4500e12), ("fp4", 9000e12)), 180e9, 8e12,
               900e9, sms=148, arch="blackwell")
NET = Network(8, 900e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
LLAMA_8B = ModelSpec("Llama3_8B", 32, 4096, 32, 8, 14336, 128256, 8192, "swiglu")


def job(dtype, recipe="current", zero=1, framework="megatron"):
    """Llama 3 8B on 8 GPUs, DP 8 (the NeMo 25.09 / 25.11 tables' layout), micro-batch 2."""
    return JobSpec("j", LLAMA_8B, ParallelSpec(tp=1, dp=8, zero=zero), 128, 2, 8192, "none",
                   dtype, fp8_recipe=recipe, framework=framework)


def test_cast_bytes_by_recipe_generation_and_norm():
    # Hopper (and any GPU but Blackwell): the transpose written too; current scaling fed by a
    # norm: read 2, write 1 + 1 (the norm's amax), otherwise its amax pass: read 2 more
    assert cast_bytes(job("fp8"), "hopper") == (4.0, 6.0)
    assert cast_bytes(job("fp8", zero=3), "hopper") == (6.0, 6.0)
    assert cast_bytes(job("fp8", "delayed"), "hopper") == (0.0, 4.0)
    # Blackwell: one copy. Current scaling fed by a norm: read 2, write 1 (the norm's amax);
    # otherwise amax read 2 + read 2 + write 1; delayed: read 2 + write 1
    assert cast_bytes(job("fp8"), "blackwell") == (3.0, 5.0)
    assert cast_bytes(job("fp8", "delayed"), "blackwell") == (0.0, 3.0)
    # MXFP8 and NVFP4 never fused into TE's own norm: read 2, both copies with their scales
    assert cast_bytes(job("mxfp8"), "blackwell") == (2 + 2 + 2 / 32, 2 + 2 + 2 / 32)
    assert cast_bytes(job("nvfp4"), "blackwell") == (2 + 1 + 2 / 16, 2 + 1 + 2 / 16)
    # Megatron FSDP (the recipes' cuDNN norms): MXFP8 fused (its scales alone), current
    # scaling's norm output quantised unfused; NVFP4 as without
    assert cast_bytes(job("mxfp8", zero=3), "blackwell") == (2 / 32, 4.0625)
    assert cast_bytes(job("fp8", zero=3), "blackwell") == (5.0, 5.0)
    assert cast_bytes(job("nvfp4", zero=3), "blackwell") == (3.125, 3.125)
    # torchao's float8 (torchtitan) is not Transformer Engine: the table's figures
    assert cast_bytes(job("fp8", framework="torchtitan"), "blackwell") == (6.0, 6.0)


def ops(j, phase):
    low = Lowering(j, Costs.of(j, B200), NET)
    return low, {o.name: o for o in low.template(0, 0, phase).ops}


def test_llama_8b_casts_on_b200():
    """Per micro-batch of 2 x 8,192 tokens: QKV's input (4,096 wide, fed by the norm), the
    out-projection's (4,096), fc2's (14,336) and fc1's output gradient (2 x 14,336)."""
    m = 2 * 8192
    for dtype, fed, other in (("fp8", 3.0, 5.0), ("mxfp8", 4.0625, 4.0625)):
        _, f = ops(job(dtype), "F")
        assert f["qkv quantise"].nbytes == pytest.approx(fed * m * 4096), dtype
        assert f["out proj quantise"].nbytes == pytest.approx(other * m * 4096), dtype
        assert f["fc2 quantise"].nbytes == pytest.approx(other * m * 14336), dtype
        _, b = ops(job(dtype), "B")
        assert b["fc1 grad quantise"].nbytes == pytest.approx(other * m * 2 * 14336), dtype


def test_current_scaling_all_reduces_the_gathered_operands_amax_over_tp():
    """Under sequence parallelism current scaling's quantisers of the gathered operands (QKV's
    and fc1's inputs, the out-projection's and fc2's output gradients) all-reduce their amax,
    one fp32, over the TP group, blocking; no other recipe, and nothing without SP."""
    from astral_dsl.seer import comm

    def sp_job(dtype, recipe="current", framework="megatron"):
        return JobSpec("j", LLAMA_8B, ParallelSpec(tp=2, dp=4, sp=True, zero=1), 128, 2, 8192,
                       "none", dtype, fp8_recipe=recipe, framework=framework)

    low, f = ops(sp_job("fp8"), "F")
    _, b = ops(sp_job("fp8"), "B")
    want = comm.all_reduce(NET, low.groups["tp"], 4.0)
    assert want > 0
    for name in ("qkv", "fc1"):
        assert f[name + " amax all-reduce"].dur == pytest.approx(want)
        assert f[name + " amax all-reduce"].nbytes == 4.0
    for name in ("out proj", "fc2"):
        assert b[name + " grad amax all-reduce"].dur == pytest.approx(want)
    assert not [n for n in f if "amax" in n and n.startswith(("out proj", "fc2"))]
    # torchao's tensorwise float8 under torchtitan's sequence parallelism is not Transformer
    # Engine's quantiser: no amax all-reduce of its own
    for j in (sp_job("fp8", "delayed"), sp_job("mxfp8"), job("fp8"),
              sp_job("fp8", framework="torchtitan")):
        for phase in ("F", "B"):
            assert not [n for n in ops(j, phase)[1] if "amax all-reduce" in n and
                        n != "fp8 amax all-reduce"]


def test_a_weight_cast_per_iteration_at_the_unfused_rate():
    """The optimizer step carries the next iteration's fp8 weight casts (params.py): each linear
    parameter at the rate of a cast no norm feeds, on a B200 3 bytes for delayed scaling (read
    2, write 1: no transpose), 5 for current scaling (amax read 2, read 2, write 1), 4.0625 for
    MXFP8 (read 2, both copies and their scales); bf16 casts nothing."""
    steps = {}
    for dtype, recipe in (("bf16", "current"), ("fp8", "delayed"), ("fp8", "current"),
                          ("mxfp8", "current")):
        low, _ = ops(job(dtype, recipe), "F")
        steps[dtype, recipe] = low.optimizer_time(0)
    base = steps["bf16", "current"]
    casts = {k: v - base for k, v in steps.items() if k != ("bf16", "current")}
    # the step is memory-bound (one stream rate): the casts' times go as their bytes
    assert casts["fp8", "current"] / casts["fp8", "delayed"] == pytest.approx(5 / 3, rel=1e-6)
    assert casts["mxfp8", "current"] / casts["fp8", "delayed"] == pytest.approx(4.0625 / 3,
                                                                                rel=1e-6)
