"""What GPT-OSS's clamped gated activation (`activation_clamp`) and its experts' biases
(`expert_bias`) cost beyond a plain MoE layer: the unfused passes of Megatron-Core 0.16.1's code
(fusions/fused_bias_geglu.py: each half of fc1's output clamped, then concatenated;
transformer/moe/experts.py `_apply_bias`: each expert's bias added to its rows, concatenated),
and their autograd backward, hand-counted in bytes."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import Costs, GpuSpec
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.activations import layer_activation_bytes
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.spec import JobSpec, ParallelSpec

# GPT-OSS 120B's shape (stdlib/models.astral): 128 experts, top 4, experts 2,880 wide, SwiGLU
OSS = ModelSpec("GPT_OSS_120B", 36, 2880, 64, 8, 2880, 201088, 4096, "swiglu", experts=128,
                top_k=4, moe_ffn=2880, head_size=64, activation_clamp=7.0, expert_bias=True)
GPU = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9)
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0),
                                      Tier("core", 10**6, False, 1.0)))
TOKENS, K, H, F, ELEM = 4 * 4096, 4, 2880, 2880, 2      # micro-batch 4 x 4,096 tokens, bf16
LOCAL = 128 // 64                                         # ep = 64: 2 experts per rank


def ops(model, phase, **kw):
    par = ParallelSpec(tp=1, pp=1, dp=64, ep=64, zero=1)
    job = JobSpec("j", model, par, global_batch=256, micro=4, seq=4096, **kw)
    low = Lowering(job, Costs.of(job, GPU), NET)
    return {op.name: op for op in low.template(0, 0, phase).ops}


def test_the_clamp_reads_and_writes_the_fc1_output_four_times_forward_7_5_backward():
    fc1_out = TOKENS * K * 2 * F                  # routed copies x (gate and linear halves)
    fwd, bwd = ops(OSS, "F")["expert act clamp"], ops(OSS, "B")["expert act clamp bwd"]
    # forward: two clamps (read, write a half each) and their concatenation (read, write all)
    assert fwd.nbytes == 4 * fc1_out * ELEM and fwd.kernels == 3
    # backward, clamp_backward = where(mask, grad, 0): the gate half's one-sided mask (read
    # 2 bytes, write 1) and where (read 1 + 2, write 2) = 8 bytes an element of its half; the
    # linear half's two masks and their logical_and (3 + 3 + 3) and where (5) = 14 bytes;
    # chunk's backward cat of the two halves' gradients (read, write: 4 bytes an element)
    half = fc1_out // 2
    assert bwd.nbytes == 8 * half + 14 * half + 4 * fc1_out and bwd.kernels == 2 + 4 + 1
    assert bwd.nbytes == 15 * 16384 * 4 * 5760 == 5_662_310_400


def test_the_expert_biases_cost_six_passes_forward_eight_backward_over_the_fc2_output():
    fc2_out = TOKENS * K * H
    fwd, bwd = ops(OSS, "F")["expert bias"], ops(OSS, "B")["expert bias bwd"]
    # forward, per local expert: b * p written (1), t + b * p (read 2, write 1); the cat (2)
    assert fwd.nbytes == 6 * fc2_out * ELEM and fwd.kernels == 2 * LOCAL + 1
    # backward: grad * p summed to b's shape and grad * b summed to p's (write, read, plus the
    # gradient's read: 3 each, 2 kernels each per expert), split's backward cat of the rows
    # (2) and of the probabilities' gradients (1 kernel, per-row bytes left out)
    assert bwd.nbytes == 8 * fc2_out * ELEM and bwd.kernels == 4 * LOCAL + 2
    assert fwd.nbytes == 6 * 188_743_680 * 2 and bwd.nbytes == 3_019_898_880


def test_a_model_without_them_has_neither():
    plain = attrs.evolve(OSS, activation_clamp=0.0, expert_bias=False)
    names = set(ops(plain, "F")) | set(ops(plain, "B"))
    assert not any("clamp" in n or "expert bias" in n for n in names)


def test_they_cost_time_and_nothing_else_changes():
    plain = attrs.evolve(OSS, activation_clamp=0.0, expert_bias=False)
    with_them, without = ops(OSS, "F"), ops(plain, "F")
    assert set(with_them) - set(without) == {"expert act clamp", "expert bias"}
    for name, op in without.items():
        assert with_them[name].dur == pytest.approx(op.dur, rel=1e-12), name
    assert all(with_them[n].dur > 0 for n in ("expert act clamp", "expert bias"))


def test_a_clamp_on_an_ungated_activation_does_nothing():
    # Megatron-Core clamps only the gated (GLU) path
    gelu = attrs.evolve(OSS, activation="gelu", expert_bias=False)
    assert not any("clamp" in n for n in ops(gelu, "F"))


def test_the_clamped_copy_of_fc1s_output_is_kept_unless_recomputed():
    par = ParallelSpec(tp=1, pp=1, dp=64, ep=64, zero=1)
    plain = attrs.evolve(OSS, activation_clamp=0.0)

    def kept(model, recompute="none"):
        job = JobSpec("j", model, par, global_batch=256, micro=4, seq=4096, recompute=recompute)
        return layer_activation_bytes(job, 0)
    # one more copy of fc1's two halves for each routed token: 16,384 tokens x 4 x 2 x 2,880
    assert kept(OSS) - kept(plain) == TOKENS * K * 2 * F * ELEM
    assert kept(OSS, "modules") == kept(plain, "modules")     # the activation recomputed


def test_a_gpt_oss_layer_by_hand_with_the_recipes_modules():
    """NeMo 25.11's GPT-OSS 120B on H100 (r137: TP 1, micro-batch 4 x 4,096 tokens, bf16) with
    `layernorm` and `moe_act` recomputed, per token, by hand against Megatron-Core 0.16.1 and
    Transformer Engine 2.9: the two RMSNorms' inputs (2 x 2 h; their outputs recomputed);
    fused attention's Q, K, V (2 (64 x 64 + 2 x 8 x 64)), its output, the projection's input
    (2 x 64 x 64), and fp32 softmax statistics per head (4 x 64); per routed pair (top 4) the
    permuted tokens grouped fc1 keeps (2 h) and fc1's two halves the recomputed clamped
    activation starts from (2 x 2 F); the router's fp32 scores and boolean routing map over
    the 128 experts (TE's fused top-k: 5 x 128). Not kept: the activation's output (moe_act),
    the experts' output (the combine's unpermute has no probabilities: TE's fused unpermute
    saves its row map only)."""
    par = ParallelSpec(tp=1, pp=4, dp=16, ep=8, zero=1)
    job = JobSpec("j", OSS, par, global_batch=512, micro=4, seq=4096, recompute="modules")
    per_token = 2 * 2 * H + 2 * (64 * 64 + 2 * 8 * 64) + 2 * 64 * 64 + 4 * 64 \
        + K * (2 * H + 2 * 2 * F) + 5 * 128   # 11,520 + 10,240 + 8,192 + 256 + 69,120 + 640
    assert layer_activation_bytes(job, 0) == pytest.approx(TOKENS * per_token, rel=1e-12)


def test_a_framework_weighting_after_the_experts_keeps_their_output():
    # torchtitan multiplies the experts' output by the router's scores, a product that keeps it:
    # one more h-wide copy per routed pair (16,384 tokens x 4 x 2,880 x 2 bytes)
    par = ParallelSpec(tp=1, pp=1, dp=8, ep=8, zero=1)
    mega = JobSpec("j", OSS, par, global_batch=32, micro=4, seq=4096, recompute="none")
    titan = attrs.evolve(mega, framework="torchtitan")
    assert layer_activation_bytes(titan, 0) - layer_activation_bytes(mega, 0) \
        == TOKENS * K * H * ELEM
