"""An MoE router's kernels after its GEMM (seer/router_kernels.py): Megatron-Core 0.16.0's PyTorch
path (the default) or Transformer Engine's fused one (`router_fusion`), counted from the code,
priced as one element-wise op of (passes x tokens x experts x 4) bytes plus KERNEL_S a kernel;
and which NVIDIA rows are read with the fused router (runs/router_recipe.py)."""
from __future__ import annotations

import attrs
import pytest

from astral_dsl.runs.router_recipe import recipe_router_fusion
from astral_dsl.seer.costs import HBM_EFF, KERNEL_S, Costs
from astral_dsl.seer.lower import Lowering
from astral_dsl.seer.router_kernels import router_kernels
from astral_dsl.seer.spec import JobSpec, ParallelSpec

from test_seer_gpt_oss_kernels import GPU, NET, OSS

TOKENS, EXPERTS = 4 * 4096, 128


@pytest.mark.parametrize("score, aux, fused, fwd, bwd", [
    # Qwen3 (softmax over the top k, aux_loss): forward 2 random + 2 top-k/softmax + 6 scatters
    # + 6 loss scores (softmax, top-k, 4 map) + 6 loss (tokens, probs sum, 3, tracker) = 22;
    # passes 3 + 1 + 5.25 + 7.25 + 1.25 = 17.75. Backward 3 + 1 + 1 + 6 = 11; 1 + 1 + 3 + 4 = 9
    ("softmax", "aux_loss", False, (22, 17.75), (11, 9.0)),
    # DeepSeek-V3 / Nemotron 3 Nano (sigmoid, expert bias, group top-k, seq_aux_loss):
    # 2 + 17 + 6 + 9 + 6 + 1 + 2 = 43 kernels, 3 + 11 + 5.25 + 10.25 + 1.25 + 0.25 = 31 passes;
    # backward 8 + 1 + 5 + 6 + 1 = 21, 4 + 1 + 10 + 4 = 19
    ("sigmoid", "seq_aux_loss", False, (43, 31.0), (21, 19.0)),
    # fused: 2 random + 1 top-k + 1 loss scores + 3 (tokens, fused loss, tracker) = 7 kernels,
    # 3 + 3.25 + 3.25 + 1.25 = 10.75 passes; backward 1 + 1 + 4 = 6, 3.25 + 3 + 4 = 10.25
    ("softmax", "aux_loss", True, (7, 10.75), (6, 10.25)),
    # + the batch division (1 each way) and the expert bias's count (2, 0.25 pass)
    ("sigmoid", "seq_aux_loss", True, (10, 11.0), (7, 10.25)),
    # GPT-OSS (no load-balancing loss): 2 + 2 + 6 = 10, 9.25; backward 3 + 1 = 4, 2
    ("softmax", "none", False, (10, 9.25), (4, 2.0)),
    ("softmax", "none", True, (3, 6.25), (1, 3.25)),
    # global_aux_loss: 3 kernels more forward than aux_loss (the counts accumulated)
    ("softmax", "global_aux_loss", False, (25, 17.75), (11, 9.0)),
])
def test_router_kernel_counts(score, aux, fused, fwd, bwd):
    assert router_kernels(score, aux, fused, False) == fwd
    assert router_kernels(score, aux, fused, True) == bwd


def ops(phase, model=OSS, framework="megatron", **kw):
    par = ParallelSpec(tp=1, pp=1, dp=64, ep=64, zero=1)
    job = JobSpec("j", model, par, global_batch=256, micro=4, seq=4096, framework=framework,
                  **kw)
    low = Lowering(job, Costs.of(job, GPU), NET)
    return {op.name: op for op in low.template(0, 0, phase).ops}


@pytest.mark.parametrize("fused, fwd, bwd", [(False, (43, 31.0), (21, 19.0)),
                                             (True, (10, 11.0), (7, 10.25))])
def test_a_sigmoid_router_priced_by_its_bytes_and_kernels(fused, fwd, bwd):
    model = attrs.evolve(OSS, router_score="sigmoid", aux_loss="seq_aux_loss")
    f = ops("F", model, router_fusion=fused)["router scores and top-k"]
    b = ops("B", model, router_fusion=fused)["router scores and top-k bwd"]
    # unfused forward: 31 passes x 16,384 tokens x 128 experts x 4 bytes = 260,046,848 bytes,
    # on 3,350 GB/s at HBM_EFF 0.85: 91.3 us, plus 43 x 4 us = 172 us
    for op, (kernels, passes) in ((f, fwd), (b, bwd)):
        nbytes = passes * TOKENS * EXPERTS * 4
        assert op.nbytes == nbytes and op.kernels == kernels
        assert op.dur == pytest.approx(nbytes / (3350e9 * HBM_EFF) + kernels * KERNEL_S,
                                       rel=1e-12)
    if not fused:
        assert f.nbytes == 260_046_848
        assert f.dur == pytest.approx(91.325e-6 + 172e-6, rel=1e-4)


def test_the_router_kernels_sit_between_the_gemm_and_the_dispatch():
    names = list(ops("F"))
    assert names.index("router") + 1 == names.index("router scores and top-k") \
        < names.index("permute")
    names = list(ops("B"))
    assert names.index("router scores and top-k bwd") + 1 == names.index("router dgrad")


def test_no_router_kernels_counted_outside_megatron():
    assert "router scores and top-k" not in ops("F", framework="automodel")
    assert "router scores and top-k bwd" not in ops("B", framework="automodel")


@pytest.mark.parametrize("label, gpu, family, release, fused", [
    ("deepseekv3", "gb200", "mxfp8", (26, 6), True),      # perf_recipes/deepseek/common.py:33
    ("gptoss120b", "b200", "bf16", (25, 11), True),       # gpt_oss/b200/gpt_oss.py:29
    ("qwen330ba3btokendrop", "b200", "fp8", (25, 11), True),  # qwen/b200/qwen3_moe.py:238
    # NeMo 25.09: Megatron-Core 0.14's default (off); NeMo 2.5.3's performance scripts and
    # Megatron-Bridge 0.1.0rc4 / 0.2.0rc6 never set it
    ("qwen330ba3btokendrop", "b200", "fp8", (25, 9), False),
    ("deepseekv3tokendrop", "gb200", "fp8", (25, 9), False),
    ("qwen330ba3b", "h100", "bf16", (26, 2), False),      # qwen/h100: its BF16 recipe does not
    ("nemotron3nano", "gb200", "mxfp8", (26, 4), False),  # never in Nano's recipes
    ("qwen3235ba22b", "h100", "fp8", (25, 7), False),     # NeMo 2.x: Megatron-Core 0.13
    ("deepseekv3", "gb200", "mxfp8", None, False),
])
def test_which_rows_ran_the_fused_router(label, gpu, family, release, fused):
    assert recipe_router_fusion(label, gpu, family, release)[0] is fused


def test_a_row_names_the_recipe_release_its_router_is_read_with():
    """Megatron-Bridge 0.6.0 and 0.6.2 set the router fusion alike (runs/router_recipe.py); a row
    names the one it is read with: 0.6.0's through NeMo 26.08 (the container's own, and the
    earliest recipes for the releases before: releases.PERF_RECIPES_060_THROUGH), 0.6.2's after
    (it said 0.6.2's for every row)."""
    for release, version in (((25, 11), "0.6.0"), ((26, 8), "0.6.0"), ((26, 10), "0.6.2")):
        on, said = recipe_router_fusion("deepseekv3", "gb200", "mxfp8", release)
        assert on and said == (f"Transformer Engine's fused router kernels (moe_router_fusion), "
                               f"as Megatron-Bridge {version}'s performance recipe "
                               f"(perf_recipes/) for the model, GPU and precision sets")
        off, said = recipe_router_fusion("nemotron3nano", "gb200", "mxfp8", release)
        assert not off and f"Megatron-Bridge {version}'s performance recipe" in said
