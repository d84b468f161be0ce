"""MXFP8 attention (`attention_precision = fp8`): Transformer Engine's fused attention under an
MXFP8 recipe's `fp8_dpa` (2.16-2.20.2 pytorch/attention/dot_product_attention), priced at the fp8
peak and a fitted ratio of the 16-bit attention's efficiency (attn_fp8_ratio, whose prior range
runs from no gain to FlashAttention-3's FP8 forward), with the casts of the queries, keys, values and output gradient (lower_attention.FP8_ATTENTION); and
which NVIDIA rows ran it (runs/attention_recipe.py). Hand computations in the comments."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.runs.attention_recipe import recipe_attention_precision
from astral_dsl.runs.uses import uses
from astral_dsl.seer.calibration import BY_NAME, centre, shipped
from astral_dsl.seer.costs import Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_seer_fp8_blackwell import B200, LLAMA_8B, NET

TOKENS = 2 * 8192


def _job(dtype="mxfp8", attention_precision="fp8", framework="megatron", attention="flash"):
    """Llama 3 8B on 8 B200s, DP 8, micro-batch 2 of 8,192 tokens."""
    return JobSpec("j", LLAMA_8B, ParallelSpec(tp=1, dp=8, zero=1), 128, 2, 8192, "none", dtype,
                   framework=framework, attention=attention,
                   attention_precision=attention_precision)


def _ops(job, phase, ratio=None):
    cal = shipped() if ratio is None else shipped().with_(attn_fp8_ratio=ratio)
    low = Lowering(job, Costs.of(job, B200, calibration=cal), NET)
    return {o.name: o for o in low.template(0, 0, phase).ops}


def test_the_ratio_is_a_fitted_constant_between_its_sourced_limits():
    """No rate is published for cuDNN's MXFP8 attention on Blackwell: the prior range runs from
    no gain, 0.5 (the fp8 dense peak twice the 16-bit one: B200 4,500 / 2,250, GB200 5,000 /
    2,500 TFLOP/s), to FlashAttention-3's FP8 forward on an H100, 1.2 PFLOP/s of 1,979 against
    its FP16's 740 TFLOP/s of 989: 0.606 / 0.748 = 0.810; its centre 0.655."""
    c = BY_NAME["attn_fp8_ratio"]
    assert c.prior == (0.50, 0.81) and c.bounds == (0.25, 1.0) and not c.log
    assert c.prior[1] == pytest.approx((1200 / 1979) / (740 / 989), abs=5e-4)
    assert centre(c) == pytest.approx(0.655)
    assert "Shah et al. 2024" in c.source and "no rate is published" in c.source


@pytest.mark.parametrize("ratio", [0.5, 0.6, 0.81])
def test_fp8_attention_runs_at_the_fp8_peak_times_the_ratio(ratio):
    """Attention is compute-bound here: the time scales by 2,250 / (4,500 x ratio) less the
    launch, forward and backward alike (0.5: 1, no gain; 0.6: 0.8333; 0.81: 0.6173)."""
    bf, fp = _ops(_job(attention_precision="bf16"), "F"), _ops(_job(), "F", ratio)
    bb, fb = _ops(_job(attention_precision="bf16"), "B"), _ops(_job(), "B", ratio)
    scale = {0.5: 1.0, 0.6: 0.833333333, 0.81: 0.617283951}[ratio]
    kernel = 4e-6
    for b, f, name in ((bf, fp, "flash attention"), (bb, fb, "flash attention bwd")):
        assert f[name].flops == b[name].flops
        assert f[name].dur - kernel == pytest.approx((b[name].dur - kernel) * scale, rel=1e-8)


def test_the_fit_moves_the_ratio_by_the_fp8_attention_rows_alone():
    """runs/fit.py uses(): the Jacobian's column of attn_fp8_ratio holds the rows that run MXFP8
    attention (JobSpec.fp8_attention), no other."""
    assert uses("attn_fp8_ratio", _job(), B200)
    for change in (dict(attention_precision="bf16"), dict(attention="unfused"),
                   dict(dtype="fp8")):
        assert not uses("attn_fp8_ratio", _job(**change), B200)


def test_the_casts_bytes_and_kernels():
    """Forward: Q (32 heads x 128), K and V (8 x 128 each) a token, read in bf16 (2), written
    row-wise and column-wise with an 8-bit scale per 32 each (2 + 2/32), the scales then
    permuted and swizzled, read and written, both ways (4 x 2/32): 4.3125 bytes an element, 3
    casts and 4 scale kernels. Backward: the output gradient (32 x 128), 1 cast and 4."""
    f, b = _ops(_job(), "F")["attn qkv quantize"], _ops(_job(), "B")["attn dO quantize"]
    assert f.nbytes == pytest.approx(TOKENS * (32 * 128 + 8 * 256) * 4.3125)
    assert b.nbytes == pytest.approx(TOKENS * 32 * 128 * 4.3125)
    assert (f.kernels, b.kernels) == (7, 5)


@pytest.mark.parametrize("change", [
    dict(dtype="fp8"), dict(dtype="bf16"), dict(framework="torchtitan"),
    dict(attention="unfused"), dict(attention_precision="bf16")])
def test_no_fp8_attention_outside_an_mxfp8_megatron_fused_job(change):
    """Seer prices fp8 attention as TE's MXFP8 attention alone (W751 says so of the field)."""
    job = _job(**change)
    assert not job.fp8_attention
    names = set(_ops(job, "F")) | set(_ops(job, "B"))
    assert "attn qkv quantize" not in names and "attn dO quantize" not in names


@pytest.mark.parametrize("label, gpu, family, gpus, release, precision", [
    # Megatron-Bridge 0.6.0 (through NeMo 26.08; 26.06's own 0.5.x ships no recipes)
    ("qwen330ba3b", "gb200", "mxfp8", 8, (26, 8), "fp8"),     # qwen/common.py:55
    ("qwen330ba3b", "gb200", "mxfp8", 8, (26, 6), "fp8"),
    ("gptoss120b", "gb200", "mxfp8", 64, (26, 6), "fp8"),     # gpt_oss/common.py:44
    ("qwen3235ba22b", "b200", "mxfp8", 256, (26, 8), "fp8"),  # b200/qwen3_moe.py:463
    ("qwen3235ba22b", "b200", "mxfp8", 64, (26, 8), "bf16"),  # :130 does not call it
    ("gptoss120b", "b200", "mxfp8", 8, (26, 8), "bf16"),      # only GB200's fp8mx config
    ("qwen330ba3b", "gb200", "fp8", 8, (26, 8), "bf16"),      # FP8-CS configs: off
    ("deepseekv3", "gb200", "mxfp8", 256, (26, 8), "bf16"),   # deepseek/common.py default off
    ("nemotron3nano", "gb200", "mxfp8", 8, (26, 8), "bf16"),  # 0.6.0's nemotronh: never
    ("nemotron3nano", "gb200", "mxfp8", 8, (26, 10), "fp8"),  # 0.6.2 nemotronh.py:484
    ("qwen330ba3b", "gb200", "mxfp8", 8, (26, 4), "bf16"),    # before NeMo 26.06: not read
    ("qwen330ba3b", "gb200", "mxfp8", 8, None, "bf16"),
])
def test_which_rows_ran_mxfp8_attention(label, gpu, family, gpus, release, precision):
    assert recipe_attention_precision(label, gpu, family, gpus, release)[0] == precision


def test_the_nvidia_rows_read_it_and_say_so():
    """NeMo 26.06's and 26.08's Qwen3 30B-A3B and GPT-OSS 120B in MXFP8 on GB200 (r023, r004,
    r022) run MXFP8 attention; 26.04.01's (r043) and Nemotron 3 Nano's of 26.06 (r026) do not."""
    from astral_dsl.runs.stacks import stack_of
    from astral_dsl.runs.table import parse_table

    from test_runs import _csv, _row

    rows = [_row(i) for i in ("r023", "r004", "r022", "r043", "r026")]
    stacks = {r.id: stack_of(r, True, 1, 1, 8) for r in parse_table(_csv(rows), "t.csv").runs}
    got = {k: dict(s.fields).get("attention_precision") for k, s in stacks.items()}
    assert got == {"r023": "fp8", "r004": "fp8", "r022": "fp8", "r043": None, "r026": None}
    said = [a for a in stacks["r004"].assumed if "attention in MXFP8" in a]
    assert said and "Megatron-Bridge 0.6.0" in said[0]


def test_fp8_attention_shortens_the_step_only_with_a_gain_over_its_casts():
    """At FlashAttention-3's ratio the faster attention outweighs the casts; at 0.5 (no gain)
    the casts alone remain and the step is longer."""
    job = _job()
    bf = attrs.evolve(job, attention_precision="bf16")

    def step(j, ratio):
        return sum(o.dur for p in "FB" for o in _ops(j, p, ratio).values())

    assert step(job, 0.81) < step(bf, 0.81)
    assert step(job, 0.5) > step(bf, 0.5)
