"""Megatron-Core's alltoall token dispatcher sorts the rows it receives by local expert after the
dispatch all-to-all and restores their order before the combine (0.16.0 transformer/moe/
token_dispatcher.py, MoEAlltoAllTokenDispatcher.dispatch_postprocess "Permutation 2" and
combine_preprocess "Unpermutation 2", sort_chunks_by_idxs): with more than one local expert, a
read and a write of the rank's ETP x routed rows each, forward and (the inverse sort) backward.
The flex dispatcher (DeepEP, HybridEP) delivers rows by expert and has no such pass; nor has a
rank with one local expert, nor a PyTorch framework. Hand-counted in bytes (lower_moe.py,
`_local_sort`)."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_seer_gpt_oss_kernels import GPU, NET, OSS

SORTS = ("sort by local expert", "unsort by local expert")
TOKENS, K, H, ELEM = 4 * 4096, 4, 2880, 2      # micro-batch 4 x 4,096 tokens, top 4, bf16


def ops(phase, ep=64, etp=1, **kw):
    par = ParallelSpec(tp=1, pp=1, dp=64, ep=ep, etp=etp, zero=1)
    job = JobSpec("j", attrs.evolve(OSS, expert_bias=False) if etp > 1 else OSS, par, global_batch=256,
                  micro=4, seq=4096, **kw)
    low = Lowering(job, Costs.of(job, GPU), NET)
    return {op.name: op for op in low.template(0, 0, phase).ops}


def test_two_local_experts_sort_and_unsort_their_routed_rows_forward_and_backward():
    # EP 64 of 128 experts: 2 local experts; the rank's 16,384 tokens x top 4 = 65,536 rows of
    # 2,880 bf16 values, read and written: 2 x 65,536 x 2,880 x 2 = 754,974,720 bytes a sort
    nbytes = 2 * TOKENS * K * H * ELEM
    assert nbytes == 754_974_720
    # on the test GPU's 3,350 GB/s at HBM_EFF 0.85 and the fitted permute_eff (1.0 shipped):
    # 754,974,720 / 2.8475e12 s = 265.1 us, plus one kernel's 4 us
    dur = nbytes / (3350e9 * HBM_EFF * shipped().permute_eff) + KERNEL_S
    fwd, bwd = ops("F"), ops("B")
    for name in SORTS:
        assert fwd[name].nbytes == nbytes and fwd[name].dur == pytest.approx(dur, rel=1e-12)
        assert bwd[name + " bwd"].nbytes == nbytes
        assert bwd[name + " bwd"].dur == pytest.approx(dur, rel=1e-12)


def test_the_sort_sits_between_the_all_to_alls_and_the_experts():
    names = list(ops("F"))
    assert names.index("ep dispatch all-to-all") < names.index("sort by local expert") \
        < names.index("expert fc1")
    assert names.index("expert bias") < names.index("unsort by local expert") \
        < names.index("ep combine all-to-all")
    names = list(ops("B"))
    assert names.index("ep combine all-to-all bwd") < names.index("unsort by local expert bwd") \
        < names.index("expert fc2 dgrad")
    assert names.index("expert fc1 wgrad") < names.index("sort by local expert bwd") \
        < names.index("ep dispatch all-to-all bwd")


def test_expert_tensor_parallelism_sorts_the_gathered_rows():
    # ETP 2 over EP 32: 4 local experts, the expert-TP all-gather's 2 x 65,536 rows sorted
    nbytes = 2 * 2 * TOKENS * K * H * ELEM
    fwd = ops("F", ep=32, etp=2)
    assert all(fwd[name].nbytes == nbytes for name in SORTS)
    names = list(fwd)
    assert names.index("etp all-gather") < names.index("sort by local expert")
    assert names.index("unsort by local expert") < names.index("etp reduce-scatter")


@pytest.mark.parametrize("kw", [{"moe_dispatcher": "deepep"}, {"moe_dispatcher": "hybridep"},
                                {"ep": 128}, {"framework": "torchtitan"}])
def test_no_sort_with_a_flex_dispatcher_one_local_expert_or_a_pytorch_framework(kw):
    names = set(ops("F", **kw)) | set(ops("B", **kw))
    assert not any("sort by local expert" in n for n in names), kw
