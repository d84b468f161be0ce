"""A multi-token prediction depth stated as a block of hybrid layers (`mtp_pattern`, Megatron's
mtp_hybrid_override_pattern) whose depths may share one set of weights (`mtp_shared`,
Megatron-Core's mtp_use_repeated_layer: one MultiTokenPredictionLayer run once per depth):
each depth's layers lowered and computed, their parameters, gradients and optimizer state held
once when shared; and stdlib.models Nemotron3_5_Lightning, Nemotron 3 Nano with Megatron-Bridge
0.6.0's two shared depths of an attention and a MoE layer (docs/seer.md, stop 65)."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.runs.row_model import stdlib_models
from astral_dsl.runs.score import model_flops_per_token
from astral_dsl.seer.comm import Network, Tier
from astral_dsl.seer.costs import GpuSpec
from astral_dsl.seer.forecast import model_flops, run
from astral_dsl.seer.memory import stage_estimate, state_bytes_per_param
from astral_dsl.seer.model_spec import ModelSpec
from astral_dsl.seer.params import layer_params, stage_params
from astral_dsl.seer.spec import JobSpec, ParallelSpec
from astral_dsl.seer.stages import chunk_layers

H100 = GpuSpec("H100", (("bf16", 989e12),), 80e9, 3350e9, 450e9, sms=132, arch="hopper")
NET = Network(8, 450e9, (50e9,) * 8, (Tier("leaf", 32, True, 1.0), Tier("core", 10**6, False, 1.0)))
# a hybrid of 4 layers (Mamba-2, attention, MoE, Mamba-2): h = 1,024, 8 heads of 128, 8 experts
# of 512, top 2, one shared expert of 512, squared ReLU (2 matrices), vocabulary 32,000
HYBRID = ModelSpec("m", 4, 1024, 8, 8, 4096, 32000, 2048, "relu2", experts=8, top_k=2,
                   shared_experts=1, moe_ffn=512, pattern="M*EM", mamba_heads_stated=32)


def job(mtp: int = 2, shared: bool = True, pattern: str = "*E", dp: int = 1) -> JobSpec:
    model = attrs.evolve(HYBRID, mtp_layers=mtp, mtp_pattern=pattern, mtp_shared=shared)
    return JobSpec("j", model, ParallelSpec(tp=1, pp=1, dp=dp), 8 * dp, 1, 2048, "none", "bf16")


# one depth's weights, by hand: the attention layer's QKV h (h + 2 h) = 3,145,728 and out
# h h = 1,048,576 and its norm h = 1,024 (and Seer's second h: 2 h a hybrid layer), 4,196,352;
# the MoE layer's experts 8 x 2 x h x 512 = 8,388,608, shared expert 2 x h x 512 = 1,048,576,
# router h x 8 = 8,192 and 2 h, 9,447,424; eh_proj 2 h x h = 2,097,152 and the three norms
# 3 h = 3,072
ATTENTION, MOE, PROJ = 4_196_352, 9_447_424, 2_097_152 + 3_072


def test_a_depth_is_its_block_of_layers_after_the_models():
    j = job()
    assert chunk_layers(j) == (((0, 8),),)               # 4 layers, then 2 depths of 2
    m = j.model
    assert [m.layer_kind(L) for L in range(8)] == list("M*EM*E*E")
    assert [m.is_moe(L) for L in range(4, 8)] == [False, True, False, True]
    assert [m.mtp_repeat(L) for L in range(8)] == [False] * 6 + [True, True]
    assert not any(job(shared=False).model.mtp_repeat(L) for L in range(8))
    # without a block, a depth is one layer like the model's last (Mamba-2 here)
    plain = job(pattern="").model
    assert chunk_layers(job(pattern="")) == (((0, 6),),)
    assert [plain.layer_kind(L) for L in (4, 5)] == ["M", "M"]


def test_shared_depths_hold_one_blocks_weights_and_one_projection():
    assert layer_params(job(), 4) == ATTENTION and layer_params(job(), 5) == MOE
    assert layer_params(job(), 6) == layer_params(job(), 7) == 0.0    # the first depth's
    none = stage_params(job(0), chunk_layers(job(0)), 0)
    shared = stage_params(job(), chunk_layers(job()), 0)
    apart = stage_params(job(shared=False), chunk_layers(job(shared=False)), 0)
    assert shared - none == pytest.approx(ATTENTION + MOE + PROJ)
    assert apart - none == pytest.approx(2 * (ATTENTION + MOE + PROJ))


def test_shared_depths_compute_each_depth():
    # per token, forward: the attention layer's GEMMs 2 x 4,194,304 and its scores 2 x 2,048 x 8
    # x (128 + 128) = 8,388,608; the MoE layer's 2 x 2 x h (2 x 512 + 512) + 2 x h x 8 =
    # 6,307,840; eh_proj 4 h^2 = 4,194,304; the logits 2 h V = 65,536,000: 92,815,360 a depth,
    # three times (forward and backward) for 8 x 2,048 tokens, shared or not
    added = 3 * 8 * 2048 * 2 * (2 * 4_194_304 + 8_388_608 + 6_307_840 + 4_194_304 + 65_536_000)
    assert model_flops(job()) - model_flops(job(0)) == pytest.approx(added)
    assert model_flops(job()) == model_flops(job(shared=False))
    assert model_flops_per_token(job(), False) == model_flops_per_token(job(shared=False), False)
    fc = run(job(), H100, NET)
    fwd = fc.lowering.template(0, 0, "F").ops
    # the block's operators for each depth: the same QKV GEMM on layers 4 and 6, the experts'
    # on 5 and 7 (2,048 tokens x h x 3,072)
    qkv = {o.layer: o.flops for o in fwd if o.name == "qkv"}
    assert qkv == {1: pytest.approx(2 * 2048 * 1024 * 3072)} | {
        L: pytest.approx(2 * 2048 * 1024 * 3072) for L in (4, 6)}
    experts = sorted({o.layer for o in fwd if "expert" in o.name and o.layer >= 0})
    assert experts == [2, 5, 7]
    assert fc.iteration_time == pytest.approx(run(job(shared=False), H100, NET).iteration_time,
                                              rel=0.02)


def test_shared_depths_keep_each_depths_activations_and_one_set_of_states():
    shared, apart = job(dp=2), job(shared=False, dp=2)
    one, two = (stage_estimate(j, run(j, H100, NET).lowering.stage_params, 0)
                for j in (shared, apart))
    assert one.activations == pytest.approx(two.activations)
    assert one.logits == pytest.approx(two.logits)
    per = state_bytes_per_param(shared)         # without ZeRO: an expert's as any other's
    assert per == state_bytes_per_param(shared, experts=True)
    held = ATTENTION + MOE + PROJ               # the second depth's, held apart only
    for name, bytes_ in zip(("weights", "gradients", "optimizer", "master_grads"), per):
        assert getattr(two, name) - getattr(one, name) == pytest.approx(held * bytes_), name


def test_the_optimizer_steps_and_the_gradients_reduce_one_set():
    shared, apart = (run(j, H100, NET).lowering for j in (job(dp=2), job(shared=False, dp=2)))
    assert sum(apart.stage_split(0)) - sum(shared.stage_split(0)) == pytest.approx(
        ATTENTION + MOE + PROJ)
    assert shared.optimizer_time(0) < apart.optimizer_time(0)


def test_stdlib_lightning_is_nano_with_two_shared_depths_of_attention_and_moe():
    models = stdlib_models()
    nano, lightning = models["Nemotron3_Nano"], models["Nemotron3_5_Lightning"]
    assert {k: v for k, v in lightning.items() if not k.startswith("mtp_")} == nano
    assert (lightning["mtp_layers"], lightning["mtp_pattern"], lightning["mtp_shared"]) == (
        2, "*E", True)
