"""The releases of the frameworks the published runs ran, as dates and what changed with them: a
row's release (NeMo / Megatron-Bridge container, or the date of a torchtitan commit) and the first
or only releases whose code does a thing the runs table's reading depends on (runs/stacks.py,
runs/express.py). Each constant says what changed and where in that release's source."""
from __future__ import annotations

import re
from typing import Optional, Tuple


def release_of(row) -> Optional[Tuple[int, int]]:
    """(year, month) of a NeMo / Megatron-Bridge container release ("NeMo 26.06 container"), or
    None."""
    m = re.search(r"nemo\s+(\d\d)\.(\d\d)", row.source_version.lower())
    return (int(m.group(1)), int(m.group(2))) if m else None


def dated(row) -> Optional[Tuple[int, int]]:
    """(year, month) a row's `source_version` dates its code by ("torchtitan 9dec370 / torch
    1963fc8 (2024-12)"), or None."""
    m = re.search(r"\((\d{4})-(\d{2})\)", row.source_version)
    return (int(m.group(1)), int(m.group(2))) if m else None


# torchtitan 0.1.0 (2025-06) split the local batch into pipeline micro-batches of
# `pipeline_parallel_microbatch_size` (default 1, config_manager.py); before it,
# `experimental.pipeline_parallel_microbatches` defaulted to the number of pipeline stages. The
# 2024-12 benchmark's 405B rows bear it out: 1F1B and interleaved 1F1B at the same layout ran at
# 100 and 128 tokens/s per GPU, as 8 micro-batches make them differ (with 32, the bubbles would
# differ by a few per cent).
TITAN_MICROBATCH_SIZE_FROM = (2025, 6)
# torchtitan's multi-stage (interleaved) schedules take 2 stages per rank when no split is given
# (torchtitan 0.1.0, distributed/pipeline.py generate_split_points)
TITAN_STAGES_PER_RANK = 2


# From this Megatron-Bridge release on, the MoE recipes of transformer models are taken to replay
# the step from CUDA graphs with sync-free (dropless) token dispatch: they step up on GB200 at an
# unchanged layout between 26.04.01 and 26.06 (Qwen3-30B-A3B +55 %, DeepSeek-V3 +17 %, the dense
# recipes unchanged), the size of what the host synchronisation of the token counts and the
# launches around it cost a small-expert model; the hybrid Mamba MoE recipes do not (Nemotron 3
# Nano +2 %, Nemotron 3 Super +1 %) and are taken to run as before. An assumption read off the
# published tables, stated here and in docs/runs.md: the tables do not publish CUDA graph
# settings. Megatron-Bridge's README (0.6.0 and 0.6.2, news of 2026-06-16) names "full-iteration
# CUDA graphs" among what "the NeMo 26.06 training stack" integrates.
MOE_GRAPHS_FROM = (26, 6)
# From NeMo 25.09 (Megatron-Core 0.14) the MoE performance recipes dispatch tokens with the
# "flex" dispatcher: DeepEP's kernels across nodes, HybridEP's on GB200 NVL72 from
# HYBRIDEP_FROM (Megatron-Core's moe_token_dispatcher_type = flex); before, with NCCL's
# all-to-all. An assumption: the tables do not name the dispatcher.
FLEX_FROM = (25, 9)
# Before this release the flex dispatcher is DeepEP's alone, and only on Ampere and Hopper, so
# a dropless MoE row on Blackwell dispatches with the model's alltoall dispatcher. Megatron-Core
# gained HybridEP and its backend switch in 0.16.0 (transformer/transformer_config.py:682,
# `moe_flex_dispatcher_backend`; 0.15.0 has `moe_enable_deepep` alone, :558), whose wheel, and
# Megatron-Bridge 0.3.0's, were built on 2026-02-26; the Megatron-Bridge of NeMo 25.09 and 25.11
# is taken to be the 0.1/0.2 line (0.1.0rc4 of 2025-10-23 requires megatron-core < 0.15,
# 0.2.0rc6 of 2025-10-06 < 0.16; no 0.2 release came after it, 0.3.0 next), whose
# training/deepep.py (validate_deepep, called by training/config.py: 0.2.0rc6 line 1171)
# refuses DeepEP off compute capability 8 and 9 ("DeepEP is supported for Ampere (SM80) and
# Hopper (SM90) GPUs") and whose DeepSeek-V3 provider keeps `moe_token_dispatcher_type =
# "alltoall"` (0.2.0rc6 models/deepseek/deepseek_provider.py:76, the shared experts overlapped
# with it, :78, which Seer does not price). On GB200 Megatron-Bridge 0.3.x refuses DeepEP as
# well (0.3.0 and 0.3.1 training/flex_dispatcher_backend.py allow Blackwell by the names "NVIDIA
# B200" and "NVIDIA B300" alone), so a GB200 row of 25.11 keeps the alltoall dispatcher whichever
# Megatron-Bridge it ran. NeMo 26.02 is taken to be the first container with Megatron-Core 0.16
# (an ASSUMPTION: its rows are read with HybridEP, as before).
HYBRIDEP_FROM = (26, 2)
# The first container taken to ship Megatron-Bridge 0.3.x: NeMo 26.02, whose Megatron-Core 0.16.0
# was built on the day Megatron-Bridge 0.3.0 and nemo_toolkit 2.7.0 were (2026-02-26; 0.3.0
# requires megatron-core >= 0.15.0a0, < 0.17). The 25.11 container came out before any 0.3
# wheel: its NeMo is nemo_toolkit 2.6.0 (built 2025-12-03), and Megatron-Bridge 0.3.1's README
# announces a custom 25.11 container on 2025-12-15 (nvcr.io/nvidia/nemo:25.11.nemotron_3_nano).
BRIDGE_03_FROM = HYBRIDEP_FROM
# The first release whose published rows ran Megatron-Bridge's own performance scripts, not NeMo
# 2.x's: NeMo 25.11. Its NeMo, nemo_toolkit 2.6.0 (README: NeMo 2.0's LLM support "will be
# deprecated by 25.11, and replaced by ... Megatron-Bridge"), still ships scripts/performance,
# but the 25.11 rows did not run them: its pretrain_qwen3_235b_a22b.py (line 85) adds
# MegatronTokenDropCallback on every GPU and pretrain_deepseek_v3.py (lines 75-89) drops tokens
# on Blackwell, where the table's 25.11 Qwen3 235B-A22B on H100 and DeepSeek-V3 on GB200 are
# token-dropless (its footnote), and it has no GPT-OSS script for the 25.11 GPT-OSS 120B rows;
# NeMo 25.09's MoE rows follow nemo_toolkit 2.5.3's scripts ("(tokendrop)" on Blackwell,
# "(dropless)" DeepEP on H100). 25.11's Megatron-Bridge is of the 0.2 line (HYBRIDEP_FROM):
# later than 0.2.0rc6 (it runs GPT-OSS; 0.2.0rc6 has no models/gpt_oss), earlier than 0.3.0,
# and on no registry, nor are its performance scripts: runs/loss_recipe.py and router_recipe.py
# read its rows as they read 26.02's to 26.06's, from later wheels, an ASSUMPTION each row says.
BRIDGE_SCRIPTS_FROM = (25, 11)
# From this release on the NVIDIA fp8, MXFP8 and current-scaling rows keep their linear weights
# as fp8 parameters (`fp8_params`): Megatron-Bridge's precision configs (training/
# mixed_precision.py, 0.2.0 to 0.6.2, `fp8_param_gather = True`) and NeMo 2.0's (nemo_toolkit
# 2.0.0 collections/llm/recipes/precision/mixed_precision.py, `fp8_params = True`) set it; not
# their 128-block (subchannel) config, nor NVFP4 (`fp4_param_gather`). NeMo 1.x had the same
# switch (nemo_toolkit 2.0.0's megatron_gpt_model.py builds the model under Transformer Engine's
# fp8_model_init with `fp8_params`, and its distributed Adam gathers Float8Tensor parameters),
# off by default. That NeMo 24.07's performance runs set it is an ASSUMPTION, which its
# Nemotron-4 340B row (TP 8, PP 8, 12 virtual stages of one layer, DP 2) argues for: without it
# that run needs 93.8 GB (85.9 GB on the GPU) unless every layer is recomputed (one layer a
# chunk leaves Megatron-Core's `--recompute-num-layers` nothing between none and all), and
# recomputing every layer is 21 % slower than it ran, recomputing none 1 % faster (Seer's
# estimates at stop 64; with them 83.4 GB). The 24.03
# rows keep Transformer Engine's default (16-bit weights and fp8 copies).
FP8_PARAMS_FROM = (24, 7)
# The releases whose performance scripts turn fp8 parameters off under Megatron FSDP: NeMo
# 25.04's (nemo_toolkit 2.3.0 scripts/performance/utils.py, set_primary_perf_configs, lines
# 352-354: "Currently FSDP does not support FP8 param gather. Disabling fp8 param gather.",
# `recipe.trainer.plugins.fp8_param_gather = False`, which MegatronMixedPrecision passes on as
# DtypeConfig's `fp8_param` too: nemo/lightning/pytorch/plugins/mixed_precision.py 148-149).
# NeMo 25.07's (2.4.0 scripts/performance/helpers.py, set_precision_configs and
# set_mcore_fsdp_configs) no longer do; Megatron-Bridge (0.3.0, 0.6.2) never did.
FSDP_NO_FP8_PARAMS = ((25, 4),)
# The releases whose MXFP8 runs gather the updated weights after the optimizer step, not during
# the next forward: NeMo 25.07's performance scripts (nemo_toolkit 2.4.0 scripts/performance/
# helpers.py, set_precision_configs, lines 225-235) set `reuse_grad_buf_for_mxfp8_param_ag` for
# the MXFP8 recipe and turn `overlap_param_gather` off ("Disabling AG overlap because it is not
# supported with reuse_grad_buf_for_mxfp8_param_ag"), as Megatron-Core 0.13.0, built the same day
# as nemo_toolkit 2.4.0 (2025-07-25), requires (distributed/distributed_data_parallel.py 551-554:
# "MXFP8 param currently does not support DP AG overlap"); its distributed optimizer then
# all-gathers the 16-bit weights synchronously after the step (optimizer/distrib_optimizer.py
# step_with_ready_grads). NeMo 25.09's scripts, whose rows ran NeMo 2.x's scripts
# (BRIDGE_SCRIPTS_FROM), do the same: nemo_toolkit 2.5.0 (wheel of 2025-10-07) and 2.5.3
# scripts/performance/helpers.py, set_precision_configs, lines 226-235 and 236-245, turn the
# gather overlap off for every MXFP8 run although Megatron-Core 0.14.0 could overlap it
# (distributed_data_parallel.py 570-573, param_and_grad_buffer.py 304-319), and its
# step_with_ready_grads (distrib_optimizer.py 2285-2291) then gathers synchronously. The
# recommended-config CSV those scripts read is keyed by `dtype` "fp8" for current scaling and
# MXFP8 alike (helpers.py get_csv_configs), so the two differ by this and the precision alone.
# Megatron-Bridge (the 25.11 rows on) keeps the gather overlapped (0.2.0rc6 and 0.3.0
# training/comm_overlap.py, train.py _handle_mxfp8_param_buffer_copy). NeMo 25.04's scripts
# (2.3.0) have no such setting.
MXFP8_GATHER_AFTER_STEP = ((25, 7), (25, 9))
# Before this release the NVIDIA MXFP8 (and NVFP4) rows swizzle each GEMM's block scales before
# it (`scale_swizzle`): Transformer Engine 2.11.0 and earlier quantise into the compact scale
# layout and swizzle both operands' scales into cuBLAS's before every block-scaled GEMM
# (csrc/extensions/gemm.cpp:242-245, util.cpp:12-80; the 2.5.0, 2.9.0 and 2.11.0 Python packages
# have no swizzled-scale option), and 2.12.0, whose quantisers can write them swizzled
# (`optimize_for_gemm`), came out in February 2026 (its wheel built 2026-02-18): no container of
# 2025 ran it. Which Transformer Engine each 26.x container ran is not known, so their rows are
# read without the swizzle (docs/seer.md, stop 63): an ASSUMPTION for 26.02, whose
# Megatron-Bridge 0.3.0 pins a Transformer Engine commit of its own (pyproject.toml
# override-dependencies, 5671fd36) and allows 2.10 to 2.12, while Megatron-Core 0.16.0's and
# 0.16.1's `dev` extras ask for 2.9 to 2.11 (< 2.12.0).
MXFP8_SWIZZLE_BEFORE = (26, 2)
# Before this release the NeMo rows are read with attention on FlashAttention-2's kernels
# (`attention = flash2`, the flash-attn package). Transformer Engine prefers its cuDNN
# FusedAttention on Hopper ("Disabling FlashAttention to give FusedAttention preference on
# Hopper+ for performance reasons": 1.9.0's pytorch/attention.py and 2.9's attention/
# dot_product_attention/utils.py, get_attention_backend) and takes its FlashAttention path
# otherwise. Whether 1.4, which NeMo 24.03 ran, already preferred cuDNN is not known (no registry
# has 1.4-1.8; 1.9.0's wheel was built on 2024-08-15, the day nemo_toolkit 2.0.0rc1's was, the
# NeMo 2.0 of the 24.07 rows' docs; the table has no row between 24.03 and 24.07): that 1.4 did
# not is an ASSUMPTION,
# which the data agree with: NeMo 24.03's Llama 2 7B at 16K, 128K and 512K tokens (attention
# 40-95 % of the step) are forecast +32, +80 and +88 % on the fused kernels' fitted rate
# (attn_eff), +3, +5 and +3 % on FlashAttention-2's published H100 rate (docs/seer.md, stop 54);
# 24.07's rows of 2K-4K tokens fit on the fused ones.
FA2_BEFORE = (24, 7)
# The last release whose rows are read with Megatron-Bridge 0.6.0's performance recipes
# (perf_recipes/, runs/recompute_recipe.py), later ones with 0.6.2's. The container of each
# Megatron-Bridge release is read off the wheels' build dates, one minor release a container:
# 0.3.0 2026-02-26 (NeMo 26.02), 0.4.0 04-16 (26.04), 0.5.0 06-22 (26.06: the README's news of
# 06/16/2026 expects "the NeMo 26.06 release soon"), 0.5.1 07-21, 0.6.0 08-20 (26.08; 0.6.1,
# built 08-19 and yanked as "wrong version", is 0.6.0's code under another number), 0.6.2
# 09-18, after it. An ASSUMPTION: no wheel or README names the container of a release.
# 0.2.0rc6 to 0.5.1 ship no performance recipes, so the rows before 26.08 are read with the
# earliest there are, 0.6.0's.
PERF_RECIPES_060_THROUGH = (26, 8)
