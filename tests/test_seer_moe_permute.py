"""A MoE layer's token permutation and unpermutation move the bytes Transformer Engine's fused
kernels move (lower_moe.py, `_permute`): TE 2.11 common/triton/permutation.py, _permute_kernel
loads each source row once and stores it once per routed copy, _unpermute_kernel loads every
routed copy and stores one row per token, each one's backward is the other: (source rows +
routed copies) x hidden elements. Megatron-Core's alltoall dispatcher permutes the rank's own
tokens (0.16.0 token_dispatcher.py, dispatch_preprocess "Permutation 1"); the flex dispatcher
the rows its dispatch delivered, each token once to each EP rank holding one of its experts
(_DeepepManager.get_permuted_hidden_states_by_experts; routing.spread's expected ranks).
Outside Megatron-Core, 2 x routed rows (a gather and a scatter by copy). Hand-counted in
bytes."""
from __future__ import annotations

import pytest

from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import HBM_EFF, KERNEL_S

from test_seer_moe_sort import ELEM, H, K, TOKENS, ops

NAMES = (("F", "permute"), ("F", "unpermute"), ("B", "permute bwd"), ("B", "unpermute bwd"))


def nbytes_of(**kw):
    fwd, bwd = ops("F", **kw), ops("B", **kw)
    return [(fwd if phase == "F" else bwd)[name] for phase, name in NAMES]


def test_the_alltoall_dispatcher_permutes_the_ranks_tokens_into_their_routed_copies():
    # the rank's 16,384 tokens read once, 16,384 x top 4 = 65,536 copies written (and back):
    # (16,384 + 65,536) x 2,880 bf16 values = 471,859,200 bytes each way
    nbytes = (TOKENS + TOKENS * K) * H * ELEM
    assert nbytes == 471_859_200
    # on the test GPU's 3,350 GB/s at HBM_EFF 0.85 and the fitted permute_eff (1.0 shipped):
    # 471,859,200 / 2.8475e12 s = 165.7 us, plus one kernel's 4 us
    dur = nbytes / (3350e9 * HBM_EFF * shipped().permute_eff) + KERNEL_S
    for op in nbytes_of():
        assert op.nbytes == nbytes and op.dur == pytest.approx(dur, rel=1e-12), op.name


@pytest.mark.parametrize("dispatcher", ["deepep", "hybridep"])
def test_the_flex_dispatcher_permutes_the_rows_its_dispatch_delivered(dispatcher):
    # EP 8: a token's 4 experts on 8 (1 - (7/8)^4) = 8 x 1,695 / 4,096 = 3.310546875 ranks on
    # average, so a rank receives 16,384 x 3.310546875 = 54,240 rows and writes their 65,536
    # routed copies: (54,240 + 65,536) x 2,880 x 2 = 689,909,760 bytes each way
    nbytes = (54_240 + TOKENS * K) * H * ELEM
    assert nbytes == 689_909_760
    for op in nbytes_of(ep=8, moe_dispatcher=dispatcher):
        assert op.nbytes == pytest.approx(nbytes, rel=1e-12), op.name


def test_outside_megatron_core_the_rows_are_gathered_and_scattered_by_copy():
    # torchtitan: the 65,536 routed rows read and written, 2 x 65,536 x 2,880 x 2 bytes
    nbytes = 2 * TOKENS * K * H * ELEM
    assert nbytes == 754_974_720
    for op in nbytes_of(framework="torchtitan"):
        assert op.nbytes == nbytes, op.name
