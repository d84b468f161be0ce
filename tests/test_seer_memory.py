"""Seer's memory estimate, term by term, against hand computations from the papers
(docs/seer.md, "Memory"):

- activations per layer: Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
  Transformer Models", arXiv 2205.05198), section 4 and Table 2, for a GPT layer in 16-bit with
  s = 2048, b = 1, h = 12288, a = 96 (GPT-3 175B) and t = 8;
- the activations a pipeline stage holds: section 4.2.3 (the first stage of 1F1B holds L layers'
  worth, the interleaved schedule L (1 + (p - 1)/(p v)));
- model states: Rajbhandari et al. 2020 ("ZeRO", arXiv 1910.02054), section 3 and Figure 1
  (Psi = 7.5 B parameters, N_d = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB), and Megatron-LM's
  table of bytes per parameter (docs/source/api-guide/dist_optimizer.md: fp16 parameters and
  gradients 20 non-distributed, 4 + 16/d distributed; bf16 parameters with fp32 gradients 18,
  6 + 12/d; fp32 16, 8 + 8/d), whose fp16 rows count the fp32 copy of the gradients that the
  ZeRO paper's 2 + 2 + 12 leaves out;
- the uncertainty, and the warning a few percent over capacity gets (W750, not E757)."""
from __future__ import annotations

import pytest

from astral_dsl.seer import memory
from astral_dsl.seer.memory import (MemoryEstimate, estimate, in_flight, layer_activation_bytes,
                                    state_bytes_per_param)
from astral_dsl.seer.pipeline import order
from astral_dsl.seer.spec import JobSpec, ModelSpec, ParallelSpec

S, B, H, A, T = 2048, 1, 12288, 96, 8
GPT3 = ModelSpec("GPT3_175B", 96, H, A, A, 4 * H, 51200, S, "gelu")


def gpt3(tp=T, sp=False, recompute="none", attention="unfused", pp=1, v=1, m=1, dp=1,
         schedule="1f1b", zero=0, dtype="fp16", grad_dtype=None):
    par = ParallelSpec(tp=tp, pp=pp, dp=dp, sp=sp, v=v, schedule=schedule, zero=zero)
    return JobSpec("gpt3", GPT3, par, m * dp * B, B, S, recompute, dtype,
                   attention=attention, grad_dtype=grad_dtype)


SBH = S * B * H
SCORES = 5 * A * S / H          # the 5 a s / h of Table 2


# ---- Korthikanti et al. 2022, Table 2 ---------------------------------------------------------------
@pytest.mark.parametrize("label,job,expected", [
    ("no parallelism", gpt3(tp=1), SBH * (34 + SCORES)),
    ("tensor parallel (baseline)", gpt3(), SBH * (10 + 24 / T + SCORES / T)),
    ("tensor + sequence parallel", gpt3(sp=True), SBH * (34 / T + SCORES / T)),
    ("tensor parallel + selective recompute", gpt3(recompute="selective"), SBH * (10 + 24 / T)),
    ("tensor + sequence parallel + selective recompute",
     gpt3(sp=True, recompute="selective"), SBH * 34 / T),
    ("full recompute", gpt3(recompute="full"), SBH * 2),
    ("full recompute, sequence parallel", gpt3(sp=True, recompute="full"), SBH * 2 / T),
])
def test_activation_memory_per_layer_table2(label, job, expected):
    assert layer_activation_bytes(job, 0) == pytest.approx(expected, rel=1e-12), label


def test_fused_attention_keeps_its_output_and_log_sum_exp_not_the_scores():
    fused = layer_activation_bytes(gpt3(attention="flash"), 0)
    # the selective-recompute footprint (no scores) plus an fp32 log-sum-exp per head and token
    assert fused == pytest.approx(SBH * (10 + 24 / T) + S * B * 4 * A / T, rel=1e-12)


def test_grouped_query_swiglu_layer():
    """Llama 3 70B (h 8192, 64 heads, 8 key/value heads, FFN 28672, no dropout), t = 8, SP,
    selective: per token 2 norm inputs + QKV and fc1 inputs (8 h bytes) / t; Q, K, V (2 (q + 2 kv))
    and the context (2 q); fc1's two outputs and fc2's input (3 x 2 FFN); all / t; plus the
    fused attention's log-sum-exp (4 a / t)."""
    m = ModelSpec("L70", 80, 8192, 64, 8, 28672, 128256, 8192, "swiglu")
    job = JobSpec("j", m, ParallelSpec(tp=8, sp=True), 8, 1, 8192, "selective", "bf16")
    h, kv, f = 8192, 8 * 128, 28672
    per_token = (8 * h + 2 * (h + 2 * kv) + 2 * h + 6 * f + 4 * 64) / 8
    assert layer_activation_bytes(job, 0) == pytest.approx(8192 * per_token, rel=1e-12)


# ---- what the pipeline keeps in flight (section 4.2.3) ---------------------------------------------
def _walked(p, v, m, stage, schedule):
    live = peak = 0
    for ph, _, _ in order(p, v, m, stage, schedule):
        live += 1 if ph == "F" else -1
        peak = max(peak, live)
    return peak


@pytest.mark.parametrize("p,v,m,schedule", [(8, 1, 64, "1f1b"), (8, 3, 64, "interleaved"),
                                            (4, 2, 3, "interleaved"), (8, 1, 4, "1f1b"),
                                            (4, 1, 6, "gpipe"), (35, 3, 280, "interleaved")])
def test_in_flight_matches_the_schedule(p, v, m, schedule):
    for stage in range(p):
        assert in_flight(p, v, m, stage, schedule) == _walked(p, v, m, stage, schedule)


def test_first_stage_holds_the_whole_models_activations_1f1b_and_more_interleaved():
    p, m = 8, 64
    per_layer = layer_activation_bytes(gpt3(), 0)
    plain = estimate(gpt3(pp=p, m=m), lambda i: 0.0)
    assert plain.stage == 0
    assert plain.activations == pytest.approx(96 * per_layer, rel=1e-12)      # L layers' worth
    v = 3
    inter = estimate(gpt3(pp=p, m=m, v=v, schedule="interleaved"), lambda i: 0.0)
    assert inter.activations == pytest.approx(96 * per_layer * (1 + (p - 1) / (p * v)),
                                              rel=1e-12)


def test_full_recompute_adds_one_layer_rebuilt():
    p, m = 8, 64
    est = estimate(gpt3(pp=p, m=m, recompute="full"), lambda i: 0.0)
    assert est.activations == pytest.approx(96 * 2 * SBH + SBH * (10 + 24 / T + SCORES / T),
                                            rel=1e-12)


def test_last_stage_holds_the_logits_and_the_fp32_softmax():
    est = memory.estimate(gpt3(pp=1), lambda i: 0.0)
    assert est.logits == pytest.approx(S * B * 51200 / T * (2 + 4), rel=1e-12)


# ---- model states: the ZeRO paper and Megatron-LM's distributed optimizer -------------------------
PSI, ND = 7.5e9, 64


def _states(zero, dtype="fp16", grad_dtype="fp16"):
    job = gpt3(tp=1, dp=ND, zero=zero, dtype=dtype, grad_dtype=grad_dtype)
    return tuple(PSI * x / 1e9 for x in state_bytes_per_param(job))


@pytest.mark.parametrize("zero,expected_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_figure_1(zero, expected_gb):
    """(2 + 2 + K) Psi, 2 Psi + 2 Psi + K Psi / N_d, 2 Psi + (2 + K) Psi / N_d,
    (2 + 2 + K) Psi / N_d with K = 12 (Figure 1 rounds to 0.1 GB)."""
    weights, grads, optimizer, _ = _states(zero)
    assert weights + grads + optimizer == pytest.approx(expected_gb, abs=0.05)


def test_megatron_distributed_optimizer_bytes_per_parameter():
    """Megatron-LM's table row by row: fp16 = 2 (param) + 2 (grad) + 4 (fp32 main param) + 4
    (fp32 main grad, `main_grad.float()`) + 4 + 4 (Adam m, v) = 20, of which the last 16 are
    sharded by the distributed optimizer; bf16 with fp32 grads = 2 + 4 + 4 + 4 + 4 = 18 (the fp32
    buffer is the main grad), 12 sharded; fp32 = 4 + 4 + 4 + 4 = 16 (no master copy), 8 sharded."""
    one = lambda **kw: sum(_states(**kw)) * 1e9 / PSI  # noqa: E731
    assert one(zero=0, dtype="fp16", grad_dtype="fp16") == pytest.approx(20)
    assert one(zero=1, dtype="fp16", grad_dtype="fp16") == pytest.approx(4 + 16 / ND)
    assert one(zero=0, dtype="bf16", grad_dtype="fp32") == pytest.approx(18)
    assert one(zero=1, dtype="bf16", grad_dtype="fp32") == pytest.approx(6 + 12 / ND)
    assert one(zero=0, dtype="fp32", grad_dtype="fp32") == pytest.approx(16)
    assert one(zero=1, dtype="fp32", grad_dtype="fp32") == pytest.approx(8 + 8 / ND)


def test_fp16_gradient_copy_is_its_own_term():
    """The 4 bytes of fp32 gradients fp16 adds are reported as a part (`fp32_grads`), and the
    non-distributed optimizer's copy is not sharded."""
    w, g, o, master = state_bytes_per_param(gpt3(tp=1, dp=ND, zero=0, dtype="fp16"))
    assert (w, g, o, master) == (2.0, 2.0, 12.0, 4.0)
    w, g, o, master = state_bytes_per_param(gpt3(tp=1, dp=ND, zero=2, dtype="fp16"))
    assert (w, g, o, master) == pytest.approx((2.0, 2.0 / ND, 12.0 / ND, 4.0 / ND))
    est = estimate(gpt3(tp=1, dp=ND, zero=0, dtype="fp16"), lambda i: PSI)
    assert dict(est.parts())["fp32_grads"] == pytest.approx(4 * PSI)


# ---- the uncertainty ---------------------------------------------------------------------------------
def test_uncertainty_is_the_stated_tolerances():
    est = MemoryEstimate(0, 10e9, 20e9, 5e9, 40e9, 1e9, memory.RESERVED)
    assert est.uncertainty == pytest.approx(0.10 * 41e9 + 1.5e9)
    assert est.uncertainty_pct == pytest.approx(100 * est.uncertainty / est.total)
