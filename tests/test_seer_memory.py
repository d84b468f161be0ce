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

from pathlib import Path

import pytest

from astral_dsl.seer import memory
from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.memory import MemoryEstimate, estimate, in_flight, state_bytes_per_param
from astral_dsl.seer.pipeline import order
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

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


def _moe(ep, recompute="none"):
    m = ModelSpec("M", 4, 4096, 32, 8, 14336, 32000, 4096, "swiglu", experts=64, top_k=4,
                  shared_experts=1, moe_ffn=1024)
    return JobSpec("j", m, ParallelSpec(tp=1, dp=ep, ep=ep), ep, 1, 4096, recompute, "bf16")


@pytest.mark.parametrize("ep", [1, 8, 64])
def test_moe_layer_keeps_its_routed_tokens_whatever_ep(ep):
    """A mixture-of-experts layer at TP 1 (bf16, fused attention, no dropout), by hand: the
    rank's experts take top_k = 4 expert-token pairs for each of its 4,096 tokens whatever EP is
    (balanced routing: the all-to-all brings back as many as it sends), so EP does not divide
    them. Per token: two norm inputs, the QKV and fc1 inputs (4 x 2 h); Q, K, V and the context
    (2 (q + 2 kv) + 2 q); the log-sum-exp (4 a); per routed pair the fc1's two outputs and the
    fc2 input (3 x 2 moe_ffn) and the permuted input (2 h), not the experts' output (Megatron-
    Core weights the pairs in the activation and unpermutes without probabilities: nothing keeps
    it); the shared expert's (3 x 2 moe_ffn); the router's fp32 scores and boolean routing map
    over the 64 experts (5 x 64)."""
    h, q, kv, a, f, k = 4096, 4096, 8 * 128, 32, 1024, 4
    per_token = 4 * 2 * h + 2 * (q + 2 * kv) + 2 * q + 4 * a + k * (6 * f + 2 * h) + 6 * f \
        + 5 * 64
    assert layer_activation_bytes(_moe(ep), 0) == pytest.approx(4096 * per_token, rel=1e-12)


def test_operator_level_recompute_drops_the_experts_activation_outputs():
    """`recompute = modules` re-runs the norms and the activation functions (Megatron-Core's
    `layernorm` and `moe_act` modules): the norms' outputs (the QKV and fc1 inputs) and every
    expert's fc2 input (its activation's output), routed and shared, are not kept."""
    h, f, k = 4096, 1024, 4
    dropped = 2 * 2 * h + k * 2 * f + 2 * f
    assert layer_activation_bytes(_moe(8), 0) - layer_activation_bytes(_moe(8, "modules"), 0) \
        == pytest.approx(4096 * dropped, rel=1e-12)


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


# ---- the two peaks -----------------------------------------------------------------------------------
def test_forward_backward_and_optimizer_step_peaks_by_hand():
    """Llama 3.1 405B in fp8 (current scaling) on H100 80 GB as NVIDIA's recipe runs it: TP 8,
    PP 8 with 8 virtual stages, CP 2, DP 8, micro-batch 1 of 8,192 tokens, bf16 gradients, the
    distributed optimizer, no recomputation. By hand, for a middle stage (stage 1: 8 chunks of 2
    layers; 126 + embedding + loss = 128 units on 64 virtual stages):
    - parameters per layer and rank: attention (16,384 x 18,432 + 16,384^2) / 8 = 71,303,168,
      MLP 3 x 16,384 x 53,248 / 8 = 327,155,712, norms 4 x 16,384 = 65,536: 398,524,416; 16
      layers: 6,376,390,656 = P;
    - weights 2 P = 12.75 GB; fp8 copies and transposes 2 x 16 x 398,458,880 = 12.75 GB; bf16
      gradients 2 P = 12.75 GB; Adam 12 P / 16 (DP x CP) = 4.78 GB; reserved 3 GB;
    - activations per layer and micro-batch: 8,192 / 2 = 4,096 tokens x (6 h / 8 + (2 (q + kv)
      + q + 2 q + 4 a + 53,248 x 5) / 8) with h = q = 16,384, kv = 2 x 8 x 128 = 2,048 (both K
      and V), a = 128 (the out-projection's fp8 input q besides the fused attention's bf16
      output 2 q): 4,096 x (12,288 + 44,096) = 230,948,864 bytes; a chunk of 2 layers:
      461,897,728; the interleaved schedule keeps (8 - 1 - 1) x 2 + 7 x 8 + 1 = 69 chunks in
      flight on stage 1: 31.87 GB;
    - forward/backward peak: 12.75 x 3 + 4.78 + 3 + 31.87 = 77.91 GB, under 80;
    - optimizer step: 12.75 x 2 + 4.78 + 3 + the fp32 copy of the bf16 gradient shard, 4 P / 16
      = 1.59 GB: 34.88 GB. The activations are freed by then: the peaks do not add."""
    llama = ModelSpec("Llama3_405B", 126, 16384, 128, 8, 53248, 128256, 8192, "swiglu")
    par = ParallelSpec(tp=8, pp=8, dp=8, cp=2, sp=True, v=8, schedule="interleaved", zero=1)
    job = JobSpec("j", llama, par, 1536, 1, 8192, "none", "fp8", grad_dtype="bf16",
                  fp8_recipe="current")
    P = 16 * (71_303_168 + 327_155_712 + 65_536)
    from astral_dsl.seer.params import layer_params
    est = memory.stage_estimate(job, lambda i: 16 * layer_params(job, 10), 1)
    assert est.weights == pytest.approx(2 * P) and est.gradients == pytest.approx(2 * P)
    assert est.fp8_weights == pytest.approx(2 * 16 * 398_458_880)
    assert est.optimizer == pytest.approx(12 * P / 16)
    assert est.master_grads == pytest.approx(4 * P / 16)
    assert layer_activation_bytes(job, 10) == pytest.approx(230_948_864)
    assert est.activations == pytest.approx(69 * 2 * 230_948_864)
    fwd = 2 * P + 2 * 16 * 398_458_880 + 2 * P + 12 * P / 16 + 3e9 + 69 * 2 * 230_948_864
    step = 2 * P + 2 * P + 12 * P / 16 + 3e9 + 4 * P / 16
    assert est.activation_peak == pytest.approx(fwd) and fwd / 1e9 == pytest.approx(77.91, abs=0.01)
    assert est.step_peak == pytest.approx(step) and step / 1e9 == pytest.approx(34.88, abs=0.01)
    assert est.total == est.activation_peak and est.peak_phase == "forward/backward"
    assert est.total < 80e9                       # it ran in 80 GB: no E757


def test_the_step_peak_rules_when_activations_are_small():
    """With full recomputation and fp16 gradients the optimizer step's fp32 copy can make the
    step the peak: the estimate is then the step's, with the reserved memory's tolerance only."""
    est = MemoryEstimate(0, 10e9, 10e9, 20e9, 1e9, 0.0, memory.RESERVED, master_grads=20e9)
    assert est.step_peak == pytest.approx(10e9 + 10e9 + 20e9 + memory.RESERVED + 20e9)
    assert est.activation_peak == pytest.approx(10e9 + 10e9 + 20e9 + memory.RESERVED + 1e9)
    assert est.total == est.step_peak and est.peak_phase == "optimizer step"
    assert est.uncertainty == pytest.approx(memory.RESERVED_TOLERANCE)


def test_stdlib_gpu_memory_is_the_binary_capacity_and_said_so():
    """stdlib/hardware.astral states HBM in GiB (JEDEC's binary prefixes for memory): an H100's
    80 GiB are 80 x 2^30 = 85,899,345,920 bytes, shown as 85.9 GB beside its 80 GiB; the two
    published runs that read as 80e9 / 180e9 bytes were said not to fit now fit."""
    from astral_dsl.runs.evaluate import prepare_row
    from astral_dsl.runs.table import read_table
    from astral_dsl.units.readable import memory_capacity

    assert memory_capacity(80 * 2**30) == "85.9 GB (80 GiB)"
    assert memory_capacity(80e9) == "80 GB"                       # not a whole number of GiB
    assert memory_capacity(85.89934592 * 1e9) == "85.9 GB (80 GiB)"   # GB -> bytes round trip
    rows = read_table(Path(__file__).parents[1] / "astral_dsl/seer/calibration/a100.csv").runs
    gpu = prepare_row(rows[0]).gpu
    assert gpu.memory == 80 * 2**30                              # A100 80GB: HBM2e, 80 GiB
