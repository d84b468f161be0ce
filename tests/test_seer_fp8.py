"""fp8 training as Transformer Engine runs it under Megatron-Core (docs/seer.md, "Low
precision"): the linear layers' GEMMs (QKV, out-projection, MLP, experts) in fp8, forward and both
backward GEMMs, at the fp8 peak with fp8's own fitted efficiency; attention, the logits and every
other kernel on the bf16 base; the casts to fp8 (with the transpose the weight gradient needs) and
the amax all-reduce of delayed scaling; the bf16 weights kept, plus an fp8 copy of each linear
weight and its transpose; the linear layers' saved inputs in fp8. Hand computations in the
comments."""
from __future__ import annotations

import pytest

from astral_dsl import seer
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import K_HALF, KERNEL_S, Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.lower_linear import CAST_BYTES
from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.memory import stage_estimate
from astral_dsl.seer.params import layer_linear_params
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

# H100 SXM data sheet: 989 TFLOP/s dense bf16, 1,979 fp8, 3.35 TB/s HBM3, NVLink 450 GB/s each way
H100 = GpuSpec("H100", (("bf16", 989e12), ("fp8", 1979e12)), 80e9, 3350e9, 450e9, sms=132,
               arch="hopper")
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
LLAMA_8B = ModelSpec("Llama3_8B", 32, 4096, 32, 8, 14336, 128256, 8192, "swiglu")


def job(dtype, tp=2, dp=4, recompute="selective"):
    return JobSpec("j", LLAMA_8B, ParallelSpec(tp=tp, dp=dp, sp=True, zero=1), 64, 1, 8192,
                   recompute, dtype)


def ops(j, phase):
    low = Lowering(j, Costs.of(j, H100), NET)
    return low, {o.name: o for o in low.template(0, 0, phase).ops}


def test_only_the_linear_layers_run_at_the_fp8_rate():
    low8, f8 = ops(job("fp8"), "F")
    _, f16 = ops(job("bf16"), "F")
    c = low8.c
    # QKV per rank: m = 8,192 tokens, n = (4,096 + 2 x 1,024) / 2 = 3,072, k = 4,096
    m, n, k = 8192, 3072, 4096
    flops = 2 * m * n * k
    cal = c.cal
    clock = 1.0                                          # no power cap

    def size(m_, n_):          # output tiles of 128 x 256 against 132 SMs
        tiles = -(-m_ // 128) * -(-n_ // 256)
        return tiles / (tiles + cal.gemm_waves * 132)

    eff8 = cal.gemm_eff_hopper * cal.gemm_eff_fp8 * k / (k + K_HALF) * size(m, n)   # 768 tiles
    eff16 = cal.gemm_eff_hopper * k / (k + K_HALF) * size(m, n)   # 16-bit on Hopper
    nbytes = 1 * (m * k + k * n) + 2 * m * n             # fp8 operands, bf16 output
    assert f8["qkv"].dur == pytest.approx(
        max(flops / (1979e12 * clock * eff8), nbytes / c.bw) + KERNEL_S)
    assert f16["qkv"].dur == pytest.approx(flops / (989e12 * clock * eff16) + KERNEL_S)
    assert f8["qkv"].nbytes == nbytes
    for name in ("out proj", "fc1", "fc2"):     # each at its precision's peak and efficiency
        m_, n_, k_ = (int(x) for x in f8[name].shape.split("x"))
        F = 2 * m_ * n_ * k_
        e8 = cal.gemm_eff_hopper * cal.gemm_eff_fp8 * k_ / (k_ + K_HALF) * size(m_, n_)
        e16 = cal.gemm_eff_hopper * k_ / (k_ + K_HALF) * size(m_, n_)
        assert f8[name].dur == pytest.approx(max(F / (1979e12 * clock * e8),
                                                 f8[name].nbytes / c.bw) + KERNEL_S), name
        assert f16[name].dur == pytest.approx(F / (989e12 * clock * e16) + KERNEL_S), name
        assert f8[name].dur < f16[name].dur, name
    # attention and the logits stay in bf16: the same time as the bf16 job's
    assert f8["flash attention"].dur == f16["flash attention"].dur
    assert f8["logits"].dur == f16["logits"].dur        # pp = 1: stage 0 holds the head


def test_casts_and_amax_reduction():
    low, f = ops(job("fp8"), "F")
    _, b = ops(job("fp8"), "B")
    # the out-projection's input (8,192 tokens x 4,096 / 2 per rank) is cast with its transpose:
    # 4 bytes per element (read 2, write 1 + 1); QKV's and fc1's casts are fused into the norm
    assert f["out proj quantise"].nbytes == CAST_BYTES["delayed"][1] * 8192 * 2048 \
        == 4 * 8192 * 2048
    assert CAST_BYTES["delayed"] == (0.0, 4.0)
    assert "qkv quantise" not in f and "fc1 quantise" not in f
    # backward: each linear layer casts its output gradient (QKV: 8,192 x 3,072)
    assert b["qkv grad quantise"].nbytes == 4 * 8192 * 3072
    assert "logits grad quantise" not in b
    # delayed scaling: one amax all-reduce per chunk forward over TP x DP (2 x 4 = 8 ranks, one
    # host), 8 bytes (input and weight amax) per fp8 GEMM: 4 per layer x 32 layers
    amax = f["fp8 amax all-reduce"]
    assert amax.nbytes == 8 * 4 * 32 and amax.stream == "dp"
    assert low.groups["amax"].n == 8
    assert "fp8 amax all-reduce" not in b
    bf16 = ops(job("bf16"), "F")[1]
    assert not [n for n in bf16 if "fp8" in n or "quantise" in n]


def test_current_scaling_reads_the_tensor_once_more_unless_the_norm_gave_its_amax():
    """Per-tensor current scaling needs the tensor's amax before the cast: the norm-fed QKV and
    fc1 inputs get a cast of their own, whose amax the norm kernel computed (Transformer Engine
    2.7+, FUSED_NORM_AMAX_FP8: read 2 and write 1 + 1 for the cast and its transpose on an H100:
    4 bytes per element), the others an amax pass too (read 2, then read 2 and write 1 + 1: 6
    instead of delayed scaling's 4), and no delayed-scaling amax all-reduce runs."""
    j = JobSpec("j", LLAMA_8B, ParallelSpec(tp=2, dp=4, sp=True, zero=1), 64, 1, 8192,
                "selective", "fp8", fp8_recipe="current")
    _, f = ops(j, "F")
    # QKV's input is the norm's output, the rank's sequence-parallel shard (8,192 / 2 tokens x
    # 4,096), cast before it is gathered; the out-projection's is its own 8,192 x 4,096 / 2
    assert f["qkv quantise"].nbytes == 4 * 4096 * 4096
    assert f["out proj quantise"].nbytes == 6 * 8192 * 2048
    assert "fp8 amax all-reduce" not in f


@pytest.mark.parametrize("overlap", ["none", "full"])
def test_tp_gathers_move_the_quantised_shard_after_its_cast(overlap):
    """Transformer Engine casts a rank's sequence-parallel shard and all-gathers the quantised
    data (module/layernorm_linear.py forward: `gather_along_first_dim(ln_out, tp_group,
    quantizer=input_quantizer)`; module/linear.py backward: the output gradient likewise): the
    gathers of a quantised job move 1 byte per element (MXFP8 1 + 1/32 with its scales), after
    the cast, blocking or split with the GEMM (`tp_overlap = full`)."""
    tokens, h = 8192, 4096
    for dtype, size in (("fp8", 1.0), ("mxfp8", 1 + 1 / 32), ("bf16", 2.0)):
        j = JobSpec("j", LLAMA_8B, ParallelSpec(tp=2, dp=4, sp=True, zero=1), 64, 1, 8192,
                    "selective", dtype, fp8_recipe="current", tp_overlap=overlap)
        for phase, names in (("F", ("attn all-gather", "mlp all-gather")),
                             ("B", ("attn grad all-gather", "mlp grad all-gather",
                                    "qkv input all-gather", "fc1 input all-gather"))):
            low = Lowering(j, Costs.of(j, H100), NET)
            t = low.template(0, 0, phase).ops
            at = {o.name: i for i, o in enumerate(t)}
            for name in names:
                assert t[at[name]].nbytes == size * tokens * h
            if dtype == "bf16":
                continue
            if phase == "F":       # each gather waits for its cast, the GEMM for the gather
                for gather, cast, gemm in (("attn all-gather", "qkv quantise", "qkv"),
                                           ("mlp all-gather", "fc1 quantise", "fc1")):
                    g, c, m = t[at[gather]], t[at[cast]], t[at[gemm]]
                    assert at[cast] < at[gather] < at[gemm] and g.start >= c.end
                    if overlap == "full":
                        assert g.deps == m.deps
                    else:
                        assert m.start >= g.end
            else:                  # the row-parallel layers' output gradients: the shard's cast
                # on an H100: current scaling's amax pass (read 2) then read 2, write 1 + 1 (6);
                # MXFP8 read 2, write 1 + 1 and a scale per 32 elements with each (4.0625)
                cast = {"fp8": 6.0, "mxfp8": 4.0625}[dtype]
                assert t[at["fc2 grad quantise"]].nbytes == pytest.approx(
                    cast * (tokens / 2) * h)
                assert t[at["fc2 grad quantise"]].end <= t[at["mlp grad all-gather"]].start
                assert t[at["qkv grad quantise"]].nbytes == pytest.approx(
                    cast * tokens * 3072)      # column-parallel: its own gradient


def test_torchao_rowwise_gathers_bf16_and_casts_the_gathered_input():
    """torchtitan's float8 TP (Float8ColwiseParallel, an fp8 all-gather) is for tensorwise
    scaling only (`enable_float8_tensorwise_tp`): with rowwise scales the TP all-gathers move
    bf16 and the cast is of the gathered 8,192 x 4,096 input (6 bytes per element)."""
    j = JobSpec("j", LLAMA_8B, ParallelSpec(tp=2, dp=4, sp=True, zero=1), 64, 1, 8192,
                "selective", "fp8", fp8_recipe="rowwise", framework="torchtitan")
    _, f = ops(j, "F")
    assert f["attn all-gather"].nbytes == 2 * 8192 * 4096
    assert f["qkv quantise"].nbytes == 6 * 8192 * 4096
    _, b = ops(j, "B")
    assert b["mlp grad all-gather"].nbytes == 2 * 8192 * 4096
    assert b["fc2 grad quantise"].nbytes == 6 * 8192 * 4096


def test_every_operator_follows_what_it_waits_for():
    """A template is built in order: every dependency is an earlier operator (its end is known
    when the operator is placed), also where a TP collective is split with a GEMM."""
    for dtype in ("bf16", "fp8", "mxfp8"):
        for overlap in ("none", "backward", "full"):
            j = JobSpec("j", LLAMA_8B, ParallelSpec(tp=2, dp=4, sp=True, zero=1), 64, 1, 8192,
                        "selective", dtype, fp8_recipe="current", tp_overlap=overlap)
            low = Lowering(j, Costs.of(j, H100), NET)
            for phase in "FB":
                for i, op in enumerate(low.template(0, 0, phase).ops):
                    assert all(d < i for d in op.deps), (dtype, overlap, phase, op.name)


def test_fp8_memory_keeps_bf16_weights_adds_fp8_copies_and_saves_fp8_inputs():
    j8, j16 = job("fp8", recompute="none"), job("bf16", recompute="none")
    low = Lowering(j8, Costs.of(j8, H100), NET)
    e8 = stage_estimate(j8, low.stage_params, 0)
    e16 = stage_estimate(j16, low.stage_params, 0)
    assert e8.weights == e16.weights                     # bf16 weights: 2 bytes per parameter
    linear = sum(layer_linear_params(j8, L) for L in range(32))
    # per rank: attention (4,096 x 6,144 + 4,096^2) / 2 + MLP 3 x 4,096 x 14,336 / 2 per layer
    assert linear == pytest.approx(32 * ((4096 * 6144 + 4096 ** 2) / 2 + 3 * 4096 * 14336 / 2))
    assert e8.fp8_weights == pytest.approx(2 * linear)  # fp8 copy + transpose
    # the block-scaled formats' copies at their own bytes, scales included: MXFP8 one byte and
    # a one-byte scale per 32, NVFP4 half a byte and a one-byte scale per 16
    for dtype, per_param in (("mxfp8", 1 + 1 / 32), ("nvfp4", 0.5 + 1 / 16)):
        jq = job(dtype, recompute="none")
        # (memory only: a GPU with an fp4 rate, which Seer needs to price NVFP4 at all)
        gpu = GpuSpec("G", H100.flops + (("fp4", 3958e12),), 80e9, 3350e9, 450e9, sms=132,
                      arch="blackwell")
        eq = stage_estimate(jq, Lowering(jq, Costs.of(jq, gpu), NET).stage_params, 0)
        assert eq.fp8_weights == pytest.approx(2 * per_param * linear), dtype
    assert dict(e8.parts())["fp8_weights"] == e8.fp8_weights
    # per token and layer, SP with t = 2: the QKV and fc1 inputs (2 h), the out-projection's
    # input (q) and fc2's input (FFN) are saved in 1 byte instead of 2; the rest (norm inputs
    # 4 h, Q K V 2 (q + 2 kv), fc1's two outputs 4 FFN, log-sum-exp 4 a) as in bf16, and the
    # fused attention's own 16-bit output (2 q) besides the projection's fp8 copy of it
    h, q, kv, f, a = 4096, 4096, 1024, 14336, 32
    per_token = (4 * h + 2 * h) / 2 + (2 * (q + 2 * kv) + q + 2 * q + 4 * f + f + 4 * a) / 2
    assert layer_activation_bytes(j8, 0) == pytest.approx(8192 * per_token)
    # in bf16 the projection keeps the attention's output itself: one byte less per element
    # for the QKV, fc1 and fc2 inputs, two more for the context
    saved = (2 * h) / 2 + (f - 2 * q + q) / 2
    assert layer_activation_bytes(j16, 0) - layer_activation_bytes(j8, 0) == pytest.approx(
        8192 * saved)


def test_fp8_params_hold_the_linear_weights_quantised_only():
    """`fp8_params` (Megatron-Core's --fp8-param-gather): the quantised copies are the linear
    weights, so their 2 bytes of bf16 go; the norms' and the embedding's stay. Llama 3 8B on
    TP 2, one stage: 2 x linear bytes less, the copies as they were."""
    for dtype in ("fp8", "mxfp8"):
        base = job(dtype, recompute="none")
        own = base.with_(fp8_params=True)
        low = Lowering(own, Costs.of(own, H100), NET)
        e, e0 = (stage_estimate(j, low.stage_params, 0) for j in (own, base))
        linear = sum(layer_linear_params(own, L) for L in range(32))
        assert e0.weights - e.weights == pytest.approx(2 * linear), dtype
        # what stays: per rank, the embedding and the logits (128,256 x 4,096 / 2 each: one
        # stage, untied) and the norms (4 x 4,096 per layer, whole), in bf16
        assert e.weights == pytest.approx(2 * (2 * 128256 * 4096 / 2 + 32 * 4 * 4096))
        assert e.fp8_weights == e0.fp8_weights
    # with a 16-bit dtype or outside Megatron-Core the field does nothing
    for j in (job("bf16", recompute="none"), job("fp8", recompute="none").with_(
            framework="torchtitan")):
        low = Lowering(j, Costs.of(j, H100), NET)
        assert stage_estimate(j.with_(fp8_params=True), low.stage_params, 0) == \
            stage_estimate(j, low.stage_params, 0)


def test_fp8_params_gather_fp8_weights_and_mxfp8_ones_in_bf16():
    """The distributed optimizer's parameter all-gather: with fp8_params and fp8 the linear
    weights move 1 byte each, the rest 2 (Float8Tensor data); MXFP8 gathers bf16 through the
    gradient buffer (reuse_grad_buf_for_mxfp8_param_ag). One layer of Llama 3 8B on TP 2: its
    dense parameters are its linear ones and its norms."""
    from astral_dsl.seer import comm

    for dtype, per_linear in (("fp8", 1.0), ("mxfp8", 2.0)):
        j = job(dtype).with_(fp8_params=True)
        low = Lowering(j, Costs.of(j, H100), NET)
        dense, expert = low.layer_split(0)
        linear = layer_linear_params(j, 0)
        assert expert == 0 and dense == pytest.approx(linear + 4 * 4096)
        want = comm.all_gather(NET, low.groups["dp"], 2 * (dense - linear) + per_linear * linear)
        assert low.param_gather((dense, expert), linear) == pytest.approx(want), dtype
        plain = Lowering(job(dtype), Costs.of(job(dtype), H100), NET)
        assert plain.param_gather((dense, expert), linear) == pytest.approx(
            comm.all_gather(NET, plain.groups["dp"], 2 * dense))


def test_speed_up_is_bounded_by_the_linear_gemms():
    """fp8 halves at most the linear GEMMs' time (Amdahl): the fp8 iteration cannot be shorter
    than the bf16 one minus half of the bf16 linear GEMMs' time of the busiest stage, and it
    is well below the 2x of pricing every matmul at the fp8 peak."""
    j16, j8 = job("bf16"), job("fp8")
    f16, f8 = seer.run(j16, H100, NET), seer.run(j8, H100, NET)
    linear = ("qkv", "out proj", "fc1", "fc2")
    m = j16.microbatches
    low = f16.lowering
    gemm = m * sum(o.dur for ph in ("F", "B") for o in low.template(0, 0, ph).ops
                   if o.name.split(" dgrad")[0].split(" wgrad")[0] in linear)
    assert f8.iteration_time >= f16.iteration_time - 0.5 * gemm
    speedup = f16.iteration_time / f8.iteration_time
    assert 1.15 < speedup < 1.6
    assert f8.job.gemm_precision == "fp8"             # priced with fp8's own efficiency
    assert f8.mfu == pytest.approx(f16.mfu * speedup * 989 / 1979)   # MFU vs the fp8 peak


def test_a_quantised_job_that_does_not_fit_is_told_about_fp8_params():
    """E757's hint names `fp8_params` for a Megatron-LM job with a quantised dtype that does not
    hold its weights in fp8 already, and only then."""
    from astral_dsl.seer.validate_memory import _memory_hint

    assert "`fp8_params = true`" in _memory_hint(job("fp8"), 64e9)
    for j in (job("fp8").with_(fp8_params=True), job("bf16"),
              job("fp8").with_(framework="torchtitan")):
        assert "fp8_params" not in _memory_hint(j, 64e9)


def test_torchao_rowwise_keeps_the_16_bit_inputs():
    """torchao's row-wise float8 saves each linear's 16-bit input and quantises it again in the
    backward (float8_linear.py, manual_float8_matmul_with_args_in_hp), so a layer keeps what it
    keeps in bf16; Transformer Engine's current scaling keeps the 1-byte copies, and its fused
    attention's bf16 output besides the out-projection's: by hand, per token with TP 2 and SP,
    (2 h + f + q) / 2 bytes less than bf16 for the QKV, fc1, fc2 and out-projection inputs,
    2 q / 2 more for the attention's own output."""
    bf16 = job("bf16", recompute="none").with_(framework="torchtitan")
    rowwise = job("fp8", recompute="none").with_(framework="torchtitan", fp8_recipe="rowwise")
    current = job("fp8", recompute="none").with_(fp8_recipe="current")
    assert layer_activation_bytes(rowwise, 0) == layer_activation_bytes(bf16, 0)
    h, q, f = 4096, 4096, 14336
    te16 = job("bf16", recompute="none")
    assert layer_activation_bytes(te16, 0) - layer_activation_bytes(current, 0) == \
        pytest.approx(8192 * ((2 * h + f + q) / 2 - 2 * q / 2))
