"""Which NVIDIA MoE rows ran Megatron-Core's expert-parallel all-to-all overlap
(`overlap_moe_expert_parallel_comm`: `ep_overlap`), read off the performance recipes.

Megatron-Core's default is off (0.16.1 model_parallel_config.py: `overlap_moe_expert_parallel_comm
= False`), and Megatron-Bridge turns it off unless a recipe asks for it (0.6.0 and 0.6.2
training/comm_overlap.py, `_get_model_comm_overlap_cfgs`: "Optimizations disabled by default").
Of the Megatron-Bridge releases unpacked (0.2.0rc6, 0.3.1, 0.4.0, 0.5.0, 0.6.0, 0.6.2), only 0.6.0
and 0.6.2 ship their performance recipes (src/megatron/bridge/perf_recipes/<model>/<gpu>/);
the earlier ones ship the library recipes alone (recipes/<model>/), which leave it off for every
model here (recipes/deepseek/deepseek_v3.py sets it False at line 170 of 0.3.1 and 0.4.0, 214
of 0.5.0; qwen/qwen3_moe.py and gpt_oss/gpt_oss.py never set it). NeMo 2.0's wheel (nemo_toolkit
2.0.0) has no such setting, nor have NeMo 25.04's and 25.07's performance scripts (nemo_toolkit
2.3.0 and 2.4.0, scripts/performance/llm/) or their Megatron-Core (0.12.0 and 0.13.0 have no
such option: it came later). The container of each Megatron-Bridge release is inferred from
the release dates in its README (0.4.0 on 2026-04-16, 0.5.0 on 2026-06-22 as "the NeMo 26.06
training stack"): 0.6.2 was taken to be NeMo 26.08's until stop 64, which found 0.6.0
(built 2026-08-20; 0.6.2 2026-09-18) to be (releases.PERF_RECIPES_060_THROUGH); 0.6.0 sets what
0.6.2 sets for every configuration listed below (the files and lines of 0.6.2 cited there stand
for both), and also turns it on for DeepSeek-V3 on B200 (below), at a layout no row runs. The
rows from NeMo 26.06 on are read with what the performance recipe of their release
(recompute_recipe.recipes_of: 0.6.0's through NeMo 26.08, 0.6.2's after) sets for their model,
GPU and precision, an ASSUMPTION for 26.06's own rows, whose Megatron-Bridge 0.5.x ships none
(each says so in its `assumed` list): where 0.6.0 and 0.6.2 turn the overlap on in MXFP8 on
GB200 and for Qwen3 on B200, they do so in the one function that also turns on the
full-iteration CUDA graphs (deepseek/common.py _enable_deepseek_full_iteration_mxfp8,
qwen/common.py _enable_hybridep_full_iteration_mxfp8, gpt_oss/common.py
_apply_gpt_oss_120b_full_iter_fp8mx_configs), and Seer reads those graphs from NeMo 26.06 on
(releases.MOE_GRAPHS_FROM, read off the tables' step-up between 26.04.01 and 26.06); the tables
bear it out, 26.06's and 26.08's rows of one layout running alike (on GB200 in MXFP8:
DeepSeek-V3 4,969 and 4,912 tokens/s a GPU, GPT-OSS 120B 28,947 and 28,672, Qwen3 30B-A3B
40,706 and 39,936). The rows before 26.06 are read without it (Megatron-Core's default): their
own performance recipes are not available and the library recipes of their time leave it off;
NeMo 2.x's before 25.09 have no such option.

Megatron-Bridge 0.6.2 perf_recipes, 0.6.0's alike but where said (file:line of the setting, all
with delay_wgrad_compute; EP_OVERLAP_ON, and EP_OVERLAP_AT for what one layout alone runs):
- DeepSeek-V3, GB200, MXFP8: deepseek/gb200/deepseek_v3.py:157 calls
  deepseek/common.py:_enable_deepseek_full_iteration_mxfp8 (lines 75-76: on, full-iteration
  CUDA graphs, HybridEP); BF16 (lines 29-77) and FP8-CS (80-128) keep the base recipe's off
  (recipes/deepseek/h100/deepseek_v3.py:215); H100 (deepseek/h100/deepseek_v3.py) never turns
  it on, nor does 0.6.2 on B200 (deepseek/b200/deepseek_v3.py). 0.6.0 on B200 does, with DeepEP
  and the attention and router CUDA graphs (common.py _enable_deepseek_transformer_engine_graph,
  not the full-iteration ones), in MXFP8 and NVFP4 at its layout of those two, PP 8, VP 2, EP
  32 (0.6.0 deepseek/b200/deepseek_v3.py:147 and 155 in the fp8mx config, 190 in the nvfp4
  one), where 0.6.2 runs them at EP 8 without it; 0.6.0's MXFP8 large-scale proxy (PP 16, EP 8,
  lines 214-259) leaves it off, as 0.6.2's: read at that layout alone, with 0.6.0's recipes
  (a NeMo 26.06 row at it too, by the assumption above).
- GPT-OSS 120B, GB200: BF16 gpt_oss/gb200/gpt_oss.py:200-201 on; MXFP8 line 240 calls
  gpt_oss/common.py:_apply_gpt_oss_120b_full_iter_fp8mx_configs (lines 78-79: on); B200
  (gpt_oss/b200/gpt_oss.py) and H100 (gpt_oss/h100/gpt_oss.py) never: off.
- Qwen3 30B-A3B, MXFP8: GB200 qwen/gb200/qwen3_moe.py:329 and B200 qwen/b200/qwen3_moe.py:312
  call qwen/common.py:_enable_hybridep_full_iteration_mxfp8 (lines 58-62: on); BF16 and FP8-CS
  on GB200 and B200 (qwen/gb200/qwen3_moe.py:195-302, qwen/b200/qwen3_moe.py:176-283): off.
- Qwen3 235B-A22B: MXFP8 on GB200 (qwen/gb200/qwen3_moe.py:169, 489) and B200
  (qwen/b200/qwen3_moe.py:461, with 3 virtual stages); BF16 and FP8-CS on H100
  (qwen/h100/qwen3_moe.py:147-148, 199-200, with the alltoall dispatcher); BF16 and FP8-CS on
  GB200 and B200: off.
- Nemotron 3 Nano, GB200: off (the base recipe recipes/nemotronh/h100/nemotron_3_nano.py:212;
  perf_recipes/nemotronh never turns it on).

A recipe's overlap that its row's layout cannot run is not read: Megatron-Core refuses it with
pipeline stages and no virtual stages (transformer_config.py __post_init__; spec.ep_overlap_share),
as NeMo 26.02's and 26.04.01's Qwen3 235B rows on B200 (pp 8, no VP) had."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.runs.recompute_recipe import V060, recipes_of
from astral_dsl.runs.releases import MOE_GRAPHS_FROM

# (model label prefix as stacks._n, GPU, precision families) of the Megatron-Bridge 0.6.0 and
# 0.6.2 performance recipes that turn the overlap on (module docstring, file:line there)
EP_OVERLAP_ON = (
    ("deepseekv3", "gb200", ("mxfp8",)),         # deepseek/common.py:75-76
    ("gptoss120b", "gb200", ("bf16", "mxfp8")),  # gpt_oss/gb200/gpt_oss.py:200; common.py:78
    ("qwen330ba3b", "gb200", ("mxfp8",)),        # qwen/common.py:58-62 via gb200:329
    ("qwen330ba3b", "b200", ("mxfp8",)),         # qwen/common.py:58-62 via b200:312
    ("qwen3235ba22b", "gb200", ("mxfp8",)),      # qwen/common.py:58-62 via gb200:169, 489
    ("qwen3235ba22b", "b200", ("mxfp8",)),       # qwen/common.py:58-62 via b200:461
    ("qwen3235ba22b", "h100", ("bf16", "fp8")),  # qwen/h100/qwen3_moe.py:147, 199
)
# (model label prefix, GPU, precision families, (pp, vp, ep), the recipe releases that set it) of
# the configurations that turn the overlap on at one layout alone (module docstring)
EP_OVERLAP_AT = (
    # 0.6.0 deepseek/b200/deepseek_v3.py: fp8mx config (147, 155), nvfp4 config (190)
    ("deepseekv3", "b200", ("mxfp8", "nvfp4"), (8, 2, 32), V060),
)
# the first release read with the performance recipes (0.6.0's, NeMo 26.08's own, taken to hold
# from 26.06 with the full-iteration CUDA graphs it turns on together: module docstring)
OWN_FROM = MOE_GRAPHS_FROM
# the release taken to ship the performance recipes read (0.6.0, alike 0.6.2 here: module
# docstring)
OWN_RECIPE = (26, 8)
# the first Megatron-Bridge container (releases.FLEX_FROM): NeMo 2.x's before it ran Megatron-Core
# 0.12 (25.04) and 0.13 (25.07), which have no overlap_moe_expert_parallel_comm (module docstring)
NEMO2_BEFORE = (25, 9)


def recipe_ep_overlap(label: str, gpu: str, family: Optional[str],
                      release: Optional[Tuple[int, int]], pp: int, vp: int, ep: int
                      ) -> Tuple[bool, str]:
    """(ep_overlap, what the row is taken to have run) of an NVIDIA MoE row: `label` its
    model as stacks._n, `gpu` gb200 | b200 | h100 | "", `family` its precision's dtype
    (runs/precision.precision_of), `release` (year, month) or None, `pp`, `vp` and `ep` its
    layout. A row of a release before NeMo 26.06 is read without the overlap: its own
    performance recipe is not available, and what is (Megatron-Bridge's library recipes of
    0.2.0rc6 to 0.4.0, NeMo 2.0) leaves it off; the row says whether the earliest performance
    recipe, 0.6.0's, would set it. A row of 26.06 is read with 0.6.0's (module docstring) and
    says so."""
    version = V060[0] if release is None else recipes_of(release)
    on = any(label.startswith(model) and gpu == where and family in families
             for model, where, families in EP_OVERLAP_ON)
    at = any(label.startswith(model) and gpu == where and family in families and
             layout == (pp, vp, ep) and version in versions
             for model, where, families, layout, versions in EP_OVERLAP_AT)
    what = (f"Megatron-Bridge {version}'s performance recipe (perf_recipes/) for the model, GPU"
            + (", precision and layout" if at and not on else " and precision"))
    on = on or at
    if release is not None and release < NEMO2_BEFORE:
        return False, ("no expert all-to-all overlap: NeMo 2.x's Megatron-Core (0.12, 0.13) has "
                       "no such option")
    if release is None or release < OWN_FROM:
        later = f"; {what} sets it" if on else ""
        return False, (f"no expert all-to-all overlap (Megatron-Core's default): this "
                       f"release's performance recipe is not available and the library recipes "
                       f"of its time (Megatron-Bridge 0.2.0rc6 to 0.4.0, NeMo 2.0) leave it "
                       f"off{later}")
    if release < OWN_RECIPE:
        what += (" (NeMo 26.08's, taken to hold from 26.06 with the full-iteration CUDA graphs "
                 "it turns on together)")
    if not on:
        return False, (f"no expert all-to-all overlap (Megatron-Core's default), as {what} "
                       f"leaves it")
    if pp > 1 and vp <= 1:
        return False, (f"no expert all-to-all overlap: {what} sets it, but Megatron-Core runs "
                       f"it only without a pipeline or with virtual stages, and this row has "
                       f"pp = {pp} and none")
    return True, (f"expert all-to-all overlapped across micro-batches with delayed weight "
                  f"gradients, as {what} sets it")
