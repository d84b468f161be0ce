"""An eager PyTorch step's norms, SwiGLU and rotary embeddings (torchtitan without torch.compile):
the HBM bytes and kernels of the eager code against a fused kernel's (seer/costs.py, EAGER),
hand-counted here from the operators each runs."""
from __future__ import annotations

import pytest

from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs, GpuSpec

H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9, arch="hopper")
BW = 3350e9 * HBM_EFF
N = 16384 * 4096            # elements of one norm's input: 2 x 8192 tokens of Llama 3.1 8B


def _costs(eager: bool) -> Costs:
    return Costs(H100, "bf16").set_framework("torchtitan", compiled=not eager)


def test_compiled_norm_moves_the_fused_kernels_bytes():
    # the fused forward reads x and writes y (2 + 2 bytes an element), the backward reads x
    # and dy and writes dx (6): one kernel each
    c = _costs(eager=False)
    assert c.stream("input norm", 4 * N, kind="norm") == pytest.approx(4 * N / BW + KERNEL_S)
    assert c.stream("input norm bwd", 6 * N, kind="norm") == pytest.approx(6 * N / BW + KERNEL_S)


def test_eager_rms_norm_counts_its_fp32_intermediates():
    # at::rms_norm: x.to(float) 2 + 4, pow(2) 4 + 4, mean 4, mul by the rsqrt 4 + 4, type_as
    # 4 + 2, mul(weight) 2 + 2 = 36 bytes an element in 8 kernels (add_ and rsqrt on a row each)
    c = _costs(eager=True)
    forward = 2 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 2 + 2 + 2
    assert forward == 36
    assert c.stream("input norm", 4 * N, kind="norm") == pytest.approx(
        forward * N / BW + 8 * KERNEL_S)
    # its autograd backward: mul(weight) 4 + 6 + 2, type_as 6, mul 8 + 16, mean 4, pow(2) 28,
    # the two input gradients summed 12, to(bf16) 6 = 92 bytes an element in 13 kernels
    backward = (4 + 6 + 2) + 6 + (8 + 16) + 4 + 28 + 12 + 6
    assert backward == 92
    assert c.stream("input norm bwd", 6 * N, kind="norm") == pytest.approx(
        backward * N / BW + 13 * KERNEL_S)


def test_eager_swiglu_and_rope():
    c = _costs(eager=True)
    F = 16384 * 14336
    # SwiGLU: silu 2 + 2 and the multiply 2 + 2 + 2 against the fused 6; backward 18 against 10
    assert c.stream("swiglu", 6 * F, kind="swiglu") == pytest.approx(10 * F / BW + 2 * KERNEL_S)
    assert c.stream("swiglu bwd", 10 * F, kind="swiglu") == pytest.approx(
        18 * F / BW + 3 * KERNEL_S)
    # RoPE: x.float() 2 + 4, the complex multiply 4 + 4, type_as 4 + 2 = 20 against 4, both
    # ways, 3 kernels each for the queries and the keys
    Q = 16384 * (32 + 8) * 128
    for name in ("rope", "rope bwd"):
        assert c.stream(name, 4 * Q, kind="rope") == pytest.approx(20 * Q / BW + 6 * KERNEL_S)


def test_other_kernels_are_not_eager():
    eager, fused = _costs(eager=True), _costs(eager=False)
    for name, kind in (("residual", "stream"), ("cross entropy", "softmax")):
        assert eager.stream(name, 4 * N, kind=kind) == fused.stream(name, 4 * N, kind=kind)
