"""The output layer in MXFP8 (`head_precision = fp8`): Megatron-Core 0.18.0's `fp8_output_proj`
builds the logits layer as Transformer Engine's linear layer under the MXFP8 autocast
(extensions/transformer_engine.py TELMHeadColumnParallelLinear), priced as a quantised linear
layer (lower_dense.DenseOps._head_fwd, _head_bwd); and which NVIDIA rows ran it
(runs/head_recipe.py). Hand computations in the comments."""
from __future__ import annotations

import pytest

from astral_dsl.runs.head_recipe import recipe_head_precision
from astral_dsl.seer.calibration import shipped
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_seer_fp8_blackwell import B200, LLAMA_8B, NET

TOKENS = 2 * 8192


def _job(dtype="mxfp8", head_precision="fp8", framework="megatron"):
    """Llama 3 8B on 8 B200s, DP 8, micro-batch 2 of 8,192 tokens."""
    return JobSpec("j", LLAMA_8B, ParallelSpec(tp=1, dp=8, zero=1), 128, 2, 8192, "none", dtype,
                   framework=framework, head_precision=head_precision)


def _ops(job, phase):
    low = Lowering(job, Costs.of(job, B200, calibration=shipped()), NET)
    return {o.name: o for o in low.template(0, 0, phase).ops}


def test_the_switch_needs_mxfp8_under_megatron():
    """Megatron-Core refuses fp8_output_proj without the MXFP8 recipe (transformer_config.py
    `__post_init__`); other frameworks have no such switch."""
    assert _job().fp8_head
    assert not _job(head_precision="bf16").fp8_head
    assert not _job(dtype="fp8").fp8_head
    assert not _job(framework="torchtitan").fp8_head


def test_an_fp8_head_casts_its_input_and_runs_its_gemm_quantised():
    """Forward: the final norm's output (16,384 x 4,096) cast as any unfused MXFP8 input, 4.0625
    bytes an element (read 2, write both copies and their scales); the GEMM at the fp8 rate, so
    shorter than the 16-bit one at the same FLOPs."""
    bf, fp = _ops(_job(head_precision="bf16"), "F"), _ops(_job(), "F")
    assert "logits quantise" not in bf
    assert fp["logits quantise"].nbytes == pytest.approx(4.0625 * TOKENS * 4096)
    assert fp["logits"].flops == bf["logits"].flops == pytest.approx(2 * TOKENS * 128256 * 4096)
    assert fp["logits"].dur < 0.75 * bf["logits"].dur


def test_an_fp8_head_casts_its_output_gradient_and_runs_both_gradients_quantised():
    """Backward: the logits' gradient (16,384 x 128,256) cast with its column-wise copy, 4.0625
    bytes an element; the data and weight gradients at the fp8 rate."""
    bf, fp = _ops(_job(head_precision="bf16"), "B"), _ops(_job(), "B")
    assert "logits grad quantise" not in bf
    assert fp["logits grad quantise"].nbytes == pytest.approx(4.0625 * TOKENS * 128256)
    for name in ("logits dgrad", "logits wgrad"):
        assert fp[name].flops == bf[name].flops
        assert fp[name].dur < 0.75 * bf[name].dur


@pytest.mark.parametrize("label, gpu, family, release, head", [
    ("gptoss120b", "gb200", "mxfp8", (26, 6), "fp8"),     # gpt_oss/common.py:28
    ("gptoss120b", "gb200", "mxfp8", (26, 8), "fp8"),
    ("deepseekv3", "gb200", "mxfp8", (26, 6), "fp8"),     # deepseek/gb200/deepseek_v3.py:160
    ("gptoss120b", "gb200", "mxfp8", (26, 4), "bf16"),    # before the full-iteration stack
    ("gptoss120b", "gb200", "bf16", (26, 8), "bf16"),     # the BF16 recipe does not set it
    ("deepseekv3", "b200", "mxfp8", (26, 8), "bf16"),     # B200's DeepSeek-V3 config does not
    ("qwen330ba3b", "gb200", "mxfp8", (26, 8), "bf16"),   # qwen/common.py does not
    ("nemotron3nano", "gb200", "mxfp8", (26, 8), "bf16"),
])
def test_which_rows_ran_the_head_in_mxfp8(label, gpu, family, release, head):
    got, how = recipe_head_precision(label, gpu, family, release)
    assert got == head
    assert bool(how) == (head == "fp8")
    if how:
        assert "fp8_output_proj" in how and "0.6.0" in how


def test_an_fp8_head_holds_its_weight_as_the_layers_do():
    """Memory: the output weight (128,256 x 4,096 = 525.3 M elements) quantised as the layers'
    linear weights (memory.COPIES x MXFP8's 1.03125 bytes, its row- and column-wise data with a
    scale per 32), and with fp8 parameters its 16-bit copy not held (2 bytes): a net 0.0329 GB."""
    from astral_dsl.seer.memory import of_job
    import attrs
    bf = of_job(attrs.evolve(_job(head_precision="bf16"), fp8_params=True))
    fp = of_job(attrs.evolve(_job(), fp8_params=True))
    table = 128256 * 4096
    assert fp.fp8_weights - bf.fp8_weights == pytest.approx(2 * 1.03125 * table)
    assert bf.weights - fp.weights == pytest.approx(2 * table, rel=1e-9)
    assert fp.total - bf.total == pytest.approx((2 * 1.03125 - 2) * table, rel=1e-6)
