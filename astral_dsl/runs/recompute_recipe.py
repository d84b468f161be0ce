"""What Megatron-Bridge's performance recipes (perf_recipes/<model>/<gpu>/*.py) recompute, per
release of the recipes, and which release a row is read with.

Two releases ship them: 0.6.0 (wheel built 2026-08-20; 0.6.1, built 2026-08-19 and yanked as
"wrong version", is 0.6.0's code under another number) and 0.6.2 (2026-09-18); 0.2.0rc6 to 0.5.1
ship none. A row (NeMo 25.09 on) that states no recomputation and runs a recipe's model, GPU,
precision family (precision_of) and layout (tp, pp, ep, micro-batch) is taken to have run its
`recompute_modules` (`recompute = modules`): the rows through NeMo 26.08 with 0.6.0's, the
container's own by the wheels' dates (releases.PERF_RECIPES_060_THROUGH), and, for the releases
before it, whose own recipes no wheel ships, the earliest there are; later rows with 0.6.2's.
Left to Seer's rule: other layouts, what the recipes do not recompute (the rule finds the same
when it fits), and what Seer does not express (Megatron-Core's `moe` module, a whole MoE layer).

The two releases agree on every layout but DeepSeek-V3's on B200 (deepseek/b200/
deepseek_v3.py): 0.6.0 runs BF16 and FP8 current scaling at PP 16, EP 8 (0.6.2 at PP 8) with
MLA's up-projections recomputed, MXFP8 at PP 8, VP 2, EP 32 with `mla_up_proj` and `mlp` (0.6.2
at EP 8 with `mla_up_proj` alone), NVFP4 at PP 8, VP 2, EP 32 (0.6.2 at EP 8); its MXFP8
large-scale proxy (PP 16, EP 8, `mla_up_proj`) is the same in both. DeepSeek-V3's `mlp`
recomputes the MLPs of its three dense layers alone (Megatron-Core 0.16.1 transformer_layer.py:
`recompute_mlp` where `not is_moe_layer`). On GB200 in FP8 current scaling it is NeMo 25.09's
row (r146), whose own release's recipe no wheel ships (nemo_toolkit 2.5.3's scripts/performance
ship without their recommended_model_configs); until stop 64 it was not taken, for a memory
estimate (206 of 186 GB with `mlp` alone) that Seer no longer makes: 170.6 GB without it."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.runs.precision import precision_of
from astral_dsl.runs.precision import squeezed as _n
from astral_dsl.runs.releases import FLEX_FROM, PERF_RECIPES_060_THROUGH

V060, V062, BOTH = ("0.6.0",), ("0.6.2",), ("0.6.0", "0.6.2")
LAYERNORM_MOE_ACT, MLA_UP = ("layernorm", "moe_act"), ("mla_up_proj",)
MLA_UP_NORM_ACT = ("mla_up_proj", "layernorm", "moe_act")
# (model label as _n, GPU directory, precision families, (tp, pp, ep, micro-batch), modules,
# the recipe releases that set it): file and config beside each
RECIPE_RECOMPUTE = (
    # deepseek/gb200/deepseek_v3.py: bf16 and fp8mx configs; fp8cs and nvfp4 configs
    ("deepseekv3", "gb200", ("bf16", "mxfp8"), (1, 4, 64, 1), MLA_UP, BOTH),
    ("deepseekv3", "gb200", ("fp8", "nvfp4"), (1, 4, 64, 1), ("mlp",), BOTH),
    # deepseek/h100/deepseek_v3.py: the 1,024-GPU bf16 and fp8cs configs
    ("deepseekv3", "h100", ("bf16", "fp8"), (2, 8, 64, 1), ("mla_up_proj", "mlp"), BOTH),
    # deepseek/b200/deepseek_v3.py, 0.6.0: bf16 and fp8cs (lines 35-43, 83-91), fp8mx (131-139),
    # nvfp4 (183-186); 0.6.2: bf16, fp8cs, fp8mx (35-43, 83-91, 131-139: PP 8, EP 8), nvfp4
    # (179-181, bf16's EP 8); the fp8mx large-scale proxy (0.6.0 221-229, 0.6.2 217-225)
    ("deepseekv3", "b200", ("bf16", "fp8"), (1, 16, 8, 1), MLA_UP, V060),
    ("deepseekv3", "b200", ("mxfp8",), (1, 8, 32, 1), ("mla_up_proj", "mlp"), V060),
    ("deepseekv3", "b200", ("nvfp4",), (1, 8, 32, 1), MLA_UP_NORM_ACT, V060),
    ("deepseekv3", "b200", ("bf16", "fp8", "mxfp8"), (1, 8, 8, 1), MLA_UP, V062),
    ("deepseekv3", "b200", ("nvfp4",), (1, 8, 8, 1), MLA_UP_NORM_ACT, V062),
    ("deepseekv3", "b200", ("mxfp8",), (1, 16, 8, 1), MLA_UP, BOTH),
    # gpt_oss/<gpu>/gpt_oss.py: GB200 bf16, B200 bf16 and fp8mx, H100 bf16 and fp8cs
    ("gptoss120b", "gb200", ("bf16",), (1, 1, 64, 4), LAYERNORM_MOE_ACT, BOTH),
    ("gptoss120b", "b200", ("bf16", "mxfp8"), (1, 1, 8, 4), LAYERNORM_MOE_ACT, BOTH),
    ("gptoss120b", "h100", ("bf16", "fp8"), (1, 4, 8, 1), LAYERNORM_MOE_ACT, BOTH),
)


def recipes_of(release: Tuple[int, int]) -> str:
    """The Megatron-Bridge release whose performance recipes a row of the NeMo container
    `release` is read with (module docstring)."""
    return V060[0] if release <= PERF_RECIPES_060_THROUGH else V062[0]


def gpu_key(gpu: str) -> str:
    """gb200 | b200 | h100 | "": the GPU directory of the performance recipes."""
    g = _n(gpu)
    return "gb200" if "gb200" in g else "b200" if "b200" in g else "h100" if "h100" in g else ""


def recipe_recompute(row, release) -> Optional[Tuple[Tuple[str, ...], str]]:
    """(`recompute_modules`, the Megatron-Bridge release read) of a Megatron-Bridge row (NeMo
    25.09 on) that states no recomputation and runs a layout of RECIPE_RECOMPUTE in the recipes
    it is read with; None otherwise."""
    if row.recompute.strip() or release is None or release < FLEX_FROM:
        return None
    if row.count("mbs") is None:          # the micro-batch is part of the recipe's layout
        return None
    gpu, version = gpu_key(row.gpu), recipes_of(release)
    prec = precision_of(row.precision, row.gpu, release)[0]
    layout = (row.count("tp", 1), row.count("pp", 1), row.count("ep", 1), row.count("mbs"))
    label = _n(row.model)
    for model, where, families, shape, modules, versions in RECIPE_RECOMPUTE:
        if label.startswith(model) and where == gpu and prec is not None and \
                prec[0] in families and shape == layout and version in versions:
            return modules, version
    return None
