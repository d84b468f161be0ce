"""Full recomputation of a torch.compile'd torchtitan block re-runs only what the backward reads:
AOT Autograd's partitioner extracts the backward graph from the saved values to the gradients
(torch 2.6.0 _functorch/partitioners.py, `_extract_graph_with_inputs_outputs`, dead code
eliminated), and no gradient reads fc2's output, its TP reduction or the block's last residual
sum; fc2's quantised input is re-cast (torchao 0.7.0 saves it for fc2's weight gradient). Eager
checkpointing and Megatron-LM's re-run the whole forward. Hand-computed against
seer/lower_dense.py."""
from __future__ import annotations

import pytest

from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from tests.test_seer_torchtitan import GPU, LLAMA, NET, TOKENS, job

H, F = 4096, 14336 // 8              # Llama 3 8B under TP 8: 1,792 FFN columns a rank


def recompute_ops(j):
    """{name: op} of the first layer's recomputation in its backward."""
    low = Lowering(j, Costs(GPU, j.dtype, calibration=shipped()), NET)
    return {o.name: o for o in low.template(0, 0, "B").ops
            if o.layer == 0 and o.name.startswith("recompute ")}


def test_compiled_full_recompute_runs_no_fc2_nor_its_reduction():
    """TP 8, fp8: wq, wk, wv (512 + 2 x 128 columns), wo (4,096 of 512) and w1, w3 (2 x 1,792
    of 4,096) are re-run, 2 x tokens x n x k each; fc2 (4,096 of 1,792) is not."""
    ops = recompute_ops(job(tp=8, recompute="full", dtype="fp8"))
    gemms = {n: o.flops for n, o in ops.items() if o.flops and "attention" not in n}
    assert gemms == pytest.approx({"recompute qkv": 2 * TOKENS * (512 + 2 * 128) * H,
                                   "recompute out proj": 2 * TOKENS * H * 512,
                                   "recompute fc1": 2 * TOKENS * 2 * F * H})
    assert not {n for n in ops if "mlp reduce-scatter" in n}
    assert [n for n in ops if n.endswith("residual")] == ["recompute residual"]   # wo's


def test_fc2s_input_is_cast_again_as_in_the_forward():
    """torchao's current scaling casts at 6 bytes an element (amax read 2, cast read 2, both
    copies written): 6 x tokens x 1,792, as the forward's cast."""
    ops = recompute_ops(job(tp=8, recompute="full", dtype="fp8"))
    assert ops["recompute fc2 quantise"].nbytes == pytest.approx(6 * TOKENS * F)


@pytest.mark.parametrize("framework,compiled", [("torchtitan", False), ("megatron", True)])
def test_eager_and_megatron_recompute_the_whole_forward(framework, compiled):
    """fc2 (2 x tokens x 4,096 x 1,792), its reduce-scatter and both residual sums re-run."""
    low = Lowering(job(framework=framework, tp=8, recompute="full", dtype="fp8",
                       compiled=compiled), Costs(GPU, "fp8", calibration=shipped()), NET)
    names = [o.name for o in low.template(0, 0, "B").ops if o.layer == 0]
    fc2 = [o.flops for o in low.template(0, 0, "B").ops
           if o.layer == 0 and o.name == "recompute fc2"]
    assert fc2 == [pytest.approx(2 * TOKENS * H * F)]
    assert names.count("recompute residual") == 2
    assert "recompute mlp reduce-scatter" in names


def test_a_compiled_16_bit_block_re_runs_its_activation_but_casts_nothing():
    ops = recompute_ops(job(tp=8, recompute="full"))
    assert "recompute swiglu" in ops and "recompute fc2" not in ops
    assert not [n for n in ops if "quantise" in n]


def test_the_backward_is_shorter_by_at_least_the_fc2_gemm_it_drops():
    """Of the compute stream's busy time: the eager block's less the compiled one's is fc2's
    GEMM, its reduce-scatter's sum kernel and a residual sum, all positive."""
    def backward(compiled):
        j = job(tp=8, recompute="full", dtype="fp8", compiled=compiled)
        return Lowering(j, Costs(GPU, "fp8", calibration=shipped()), NET).template(0, 0, "B")
    eager, compiled = backward(False), backward(True)
    fc2 = [o.dur for o in eager.ops if o.name == "recompute fc2"]
    assert len(fc2) == LLAMA.layers
    assert eager.compute - compiled.compute > sum(fc2)


def test_hardware_flops_leave_the_dropped_fc2_out():
    """HFU's recomputed FLOPs: the eager block's less the compiled one's are fc2's multiply-adds,
    2 x 4,096 x 14,336 a token of each of the 2 layers."""
    from astral_dsl.seer.forecast import hardware_flops
    eager = job(tp=8, recompute="full", compiled=False)
    compiled = job(tp=8, recompute="full")
    tokens = eager.global_batch * eager.seq
    assert hardware_flops(eager) - hardware_flops(compiled) == pytest.approx(
        tokens * 2 * 2 * 4096 * 14336)
