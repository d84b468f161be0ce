"""A MoE layer's additions that Megatron-Core runs between its kernels (lower_moe.py): the shared
experts' output added to the combined routed output (0.16.0 transformer/moe/moe_layer.py,
MoELayer.postprocess: `output = output + shared_expert_output`, 3 passes of tokens x hidden),
and in the backward the sum of the data gradients of the layer's input, which feeds the router,
the dispatch and the shared experts (MoELayer.forward): autograd adds them, one addition of two
per extra consumer (3 passes each), or one fused kernel reading them all under torch.compile
(lower_linear.py `_dgrad_sum`). Hand-counted in bytes."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_seer_gpt_oss_kernels import GPU, NET, OSS
from test_seer_moe_sort import ELEM, H, TOKENS

SHARED = attrs.evolve(OSS, shared_experts=1, shared_ffn=5760)
ROW = TOKENS * H * ELEM          # the rank's 16,384 tokens x 2,880 bf16 values: 94,371,840 bytes


def ops(phase, model=OSS, **kw):
    par = ParallelSpec(tp=1, pp=1, dp=64, ep=64, zero=1)
    job = JobSpec("j", model, par, global_batch=256, micro=4, seq=4096, **kw)
    low = Lowering(job, Costs.of(job, GPU), NET)
    return {op.name: op for op in low.template(0, 0, phase).ops}


def test_the_shared_output_is_added_after_the_shared_experts():
    assert ROW == 94_371_840
    fwd = ops("F", model=SHARED)
    add = fwd["shared output add"]
    # read the combined and the shared outputs, write their sum: 3 x 94,371,840 bytes; on the
    # test GPU's 3,350 GB/s at HBM_EFF 0.85: 283,115,520 / 2.8475e12 s = 99.4 us + 4 us
    assert add.nbytes == 3 * ROW == 283_115_520
    assert add.dur == pytest.approx(3 * ROW / (3350e9 * HBM_EFF) + KERNEL_S, rel=1e-12)
    names = list(fwd)
    assert names.index("shared fc2") < names.index("shared output add")


def test_three_input_gradients_are_summed_by_two_additions():
    bwd = ops("B", model=SHARED)
    total = bwd["moe input dgrad sum"]
    # the router's, the dispatch's and the shared experts' gradients: 2 additions of two
    # [16,384 x 2,880] bf16 tensors, 3 passes each: 566,231,040 bytes in 2 kernels
    assert total.nbytes == 2 * 3 * ROW == 566_231_040 and total.kernels == 2
    assert total.dur == pytest.approx(2 * 3 * ROW / (3350e9 * HBM_EFF) + 2 * KERNEL_S,
                                      rel=1e-12)
    names = list(bwd)
    assert names.index("router dgrad") < names.index("moe input dgrad sum")


def test_without_shared_experts_two_gradients_and_no_output_addition():
    fwd, bwd = ops("F"), ops("B")
    assert "shared output add" not in fwd
    assert bwd["moe input dgrad sum"].nbytes == 3 * ROW and bwd["moe input dgrad sum"].kernels == 1


def test_torch_compile_sums_the_gradients_in_one_kernel_and_torchtitan_adds_no_output():
    fwd = ops("F", model=SHARED, framework="torchtitan", torch_compile=True)
    bwd = ops("B", model=SHARED, framework="torchtitan", torch_compile=True)
    assert "shared output add" not in fwd
    # Inductor's one kernel reads the 3 gradients and writes their sum: 4 passes
    assert bwd["moe input dgrad sum"].nbytes == 4 * ROW and bwd["moe input dgrad sum"].kernels == 1
