"""Megatron FSDP's weight gradients copied into the main gradient (docs/seer.md, "Compute
costs"; lower_linear.LinearOps._grad_copy): Megatron-Bridge and NeMo 2.x turn Transformer
Engine's gradient accumulation fusion off under Megatron FSDP, so each weight-gradient GEMM
writes `param.grad` and Megatron-Core's hook copies it into the main gradient. Hand
computations in the comments."""
from __future__ import annotations

import pytest

from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_seer_expert_gemm import FINE, H100, NET

DENSE = ModelSpec("dense", 4, 4096, 32, 8, 14336, 32000, 4096, "swiglu")


def backward(model=DENSE, zero=3, framework="megatron", grad_dtype="bf16"):
    job = JobSpec("j", model, ParallelSpec(dp=8, ep=8 if model.experts else 1, zero=zero), 64,
                  1, 4096, "none", "bf16", framework=framework, grad_dtype=grad_dtype)
    low = Lowering(job, Costs.of(job, H100), NET)
    return {o.name: o for o in low.template(0, 0, "B").ops}


def test_megatron_fsdp_copies_each_weight_gradient_after_its_gemm():
    ops = backward()
    # fc1 of SwiGLU: [4,096 x 2 x 14,336] weights; the copy reads the bf16 gradient (2 bytes)
    # and writes the bf16 main gradient (2 bytes): 4 x 4,096 x 28,672 = 469.8 MB, streamed at
    # HBM_EFF (0.85) of the H100's 3.35 TB/s, plus one launch: 165.0 + 4 us
    copy = ops["fc1 grad copy"]
    assert copy.nbytes == 4 * 4096 * 28672
    assert copy.dur == pytest.approx(4 * 4096 * 28672 / (3350e9 * HBM_EFF) + KERNEL_S)
    # it follows the weight-gradient GEMM on the compute stream
    names = list(ops)
    assert copy.stream == "compute" and names.index("fc1 grad copy") > names.index("fc1 wgrad")
    # qkv: 4,096 x (4,096 + 2 x 8 x 128) = 4,096 x 6,144 weights; fp32 main gradients write 4
    assert ops["qkv grad copy"].nbytes == 4 * 4096 * 6144
    assert backward(grad_dtype="fp32")["qkv grad copy"].nbytes == (2 + 4) * 4096 * 6144


def test_no_copy_with_the_distributed_optimizer_or_pytorch_fsdp():
    # ZeRO-1 fuses the accumulation into the GEMM; PyTorch FSDP2 reduce-scatters param.grad
    for kw in ({"zero": 1}, {"framework": "torchtitan"}):
        assert not any(name.endswith("grad copy") for name in backward(**kw))


def test_experts_copy_every_local_experts_gradient():
    # 64 experts of width 2,048 over EP 8: 8 local experts; fc1 [4,096 x 2 x 2,048] each:
    # 4 x 4,096 x 4,096 x 8 bytes
    ops = backward(model=FINE)
    assert ops["expert fc1 grad copy"].nbytes == 4 * 4096 * 4096 * 8
    assert ops["expert fc2 grad copy"].nbytes == 4 * 2048 * 4096 * 8
