"""Which NVIDIA MoE rows ran Transformer Engine's fused router (`moe_router_fusion`:
`router_fusion`), read off the recipes.

Megatron-Core's default is the unfused PyTorch path (0.14.0 transformer_config.py:540 and
0.16.0 :711, `moe_router_fusion = False`); 0.12.0 and 0.13.0, the Megatron-Core of NeMo 25.04
and 25.07 (runs/moe_recipe.py), have no fused router, and NeMo 2.x's performance scripts and
recipes (nemo_toolkit 2.3.0, 2.4.0 and 2.6.2, scripts/performance/ and collections/llm/) never
name it. Megatron-Bridge's library recipes set it False for every MoE model (0.3.1, 0.4.2 and
0.5.1 recipes/: deepseek/deepseek_v3.py:281, qwen/qwen3_moe.py:76-747, gpt_oss/gpt_oss.py:91-737,
nemotronh/nemotron_3_nano.py:86-369 of 0.3.1; 0.6.2 recipes/nemotronh/gb200/nemotron_3_nano.py:94).

Megatron-Bridge's performance recipes (perf_recipes/: 0.6.0 and 0.6.2, the only releases that
ship them, runs/recompute_recipe.py) turn it on for every configuration of the table's rows but
Nemotron 3 Nano's, the two alike (compared config by config; file:line of 0.6.2, 0.6.0's in
brackets where it differs): DeepSeek-V3 through deepseek/common.py:33 [:34]
`_deepseek_v3_common` ("perf defaults shared by the legacy workload configs"), which every
GB200, B200 and 1,024-H100 recipe calls; GPT-OSS 120B on every GPU (gpt_oss/gb200/gpt_oss.py:
186, 226 [185, 225]; b200/gpt_oss.py:29, 65; h100/gpt_oss.py:29, 65); Qwen3 30B-A3B's 8-GPU
GB200 and B200 recipes (qwen/gb200/qwen3_moe.py:203-311 [202-310], qwen/b200/qwen3_moe.py:
184-292 [185-293]) and its 16-H100 FP8 one (qwen/h100/qwen3_moe.py:74 [75], not its BF16 one;
nor the 32- and 64-GPU "legacy-scaled" ones, a layout no row runs), Qwen3 235B-A22B's 64- and
256-GPU GB200 and B200 recipes and 256-H100 ones (qwen/gb200:43-151, 363-471 [42-150,
362-470]; qwen/b200:43-137, 346-440 [43-138, 347-442]; qwen/h100:126, 178 [127, 180]). The
Nemotron 3 Nano recipes never do (nemotronh/common.py `_apply_nemotron_3_nano_perf_defaults`;
its base recipe sets False), only Nemotron 3 Ultra's (common.py:159 [:113]).

Earlier releases' own performance scripts are not on the package index (the Megatron-Bridge
wheels and sdists of 0.3.1 to 0.5.1 ship no scripts/). The rows from NeMo 25.11 on, the first
release run on Megatron-Bridge's own performance scripts (releases.BRIDGE_SCRIPTS_FROM), are read
with the performance recipe for their model, GPU and precision of 0.6.0 through NeMo 26.08
(the container's own by the wheels' dates, releases.PERF_RECIPES_060_THROUGH, and the earliest
there are for the releases before it) and of 0.6.2 after (recompute_recipe.recipes_of), each
row naming the one it is read with in its `assumed` list, as runs/stacks.py reads the
recomputation and HybridEP of those releases: an ASSUMPTION before 26.08 (both releases call
their DeepSeek-V3 settings those of "the legacy workload configs"). 25.11's own
Megatron-Bridge is of the 0.2 line (before 0.3.0: releases.BRIDGE_03_FROM), on no registry; its
last wheel, 0.2.0rc6, names no `moe_router_fusion`, as the library recipes of 0.3.1 on set it
False: what its performance scripts set is not known, as for 26.02 to 26.06. NeMo 2.x's rows
run the unfused path, and so do NeMo 25.09's (Megatron-Core 0.14, the first with the fused
router, off by default: transformer_config.py:540): the code of their time never turns it on.
Their MoE rows
ran what NeMo 2.5.3's performance scripts set, whose choices their labels follow
(scripts/performance/llm/pretrain_deepseek_v3.py: the alltoall dispatcher with
MegatronTokenDropCallback on Blackwell, "(tokendrop)", DeepEP with the force-balanced router on
H100, "(dropless)"; pretrain_qwen3_30b_a3b.py and pretrain_qwen3_235b_a22b.py: the token-drop
callback on every GPU), and neither those scripts, nor NeMo 2.5.3's recipes and model configs,
nor Megatron-Bridge 0.1.0rc4's and 0.2.0rc6's recipes and providers name `moe_router_fusion`."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.runs.recompute_recipe import recipes_of
from astral_dsl.runs.releases import BRIDGE_SCRIPTS_FROM

# (model label prefix as stacks._n, GPU directory, precision families) of the Megatron-Bridge
# performance recipes, 0.6.0's and 0.6.2's alike, that set `moe_router_fusion = True` (module
# docstring)
FUSED = (
    ("deepseekv3", ("gb200", "b200", "h100"), ("bf16", "fp8", "mxfp8")),
    ("gptoss120b", ("gb200", "b200", "h100"), ("bf16", "fp8", "mxfp8")),
    ("qwen330ba3b", ("gb200", "b200"), ("bf16", "fp8", "mxfp8")),
    ("qwen330ba3b", ("h100",), ("fp8",)),
    ("qwen3235ba22b", ("gb200", "b200", "h100"), ("bf16", "fp8", "mxfp8")),
)
# the first release read with the fused router: NeMo 25.11, the first run on Megatron-Bridge's
# own performance scripts (module docstring; NeMo 25.09's Megatron-Core 0.14 has it, off, and
# the NeMo 2.5.3 scripts its rows ran never turn it on)
FUSION_FROM = BRIDGE_SCRIPTS_FROM


def recipe_router_fusion(label: str, gpu: str, family: Optional[str],
                         release: Optional[Tuple[int, int]]) -> Tuple[bool, str]:
    """(router_fusion, what the row is taken to have run) of an NVIDIA MoE row: `label` its
    model as stacks._n, `gpu` gb200 | b200 | h100 | "", `family` its precision's dtype, `release`
    (year, month) of its NeMo container or None (module docstring)."""
    if release is None or release < FUSION_FROM:
        return False, ("the router's PyTorch kernels: NeMo 2.x's Megatron-Core (0.12, 0.13) has "
                       "no fused router, and NeMo 25.09's code leaves Megatron-Core 0.14's off")
    on = any(label.startswith(model) and gpu in gpus and family in families
             for model, gpus, families in FUSED)
    source = f"Megatron-Bridge {recipes_of(release)}'s performance recipe (perf_recipes/)"
    if on:
        return True, (f"Transformer Engine's fused router kernels (moe_router_fusion), as "
                      f"{source} for the model, GPU and precision sets")
    return False, (f"the router's PyTorch kernels (Megatron-Core's default), as {source} and "
                   f"the library recipes leave them")
