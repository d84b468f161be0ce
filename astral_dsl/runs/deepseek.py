"""The pipeline layout Megatron-Bridge's DeepSeek-V3 recipes run (docs/runs.md, "What a row is
taken to have run").

set_deepseek_v3_pipeline_model_parallel_layout (Megatron-Bridge 0.6.2 recipes/deepseek/h100/
deepseek_v3.py, the same map in 0.2.0rc6 recipes/deepseek/deepseek_v3.py), which every
DeepSeek-V3 performance recipe of 0.6.2's perf_recipes/deepseek/ calls, puts the embedding and
four decoder layers on the first virtual stage, four on each of the next, and the last layer
with the multi-token prediction depth and the loss on the last, for the (PP, VP) pairs it knows;
the others keep Megatron-Core's split (stages.derived_layout).

The recipes also train one MTP depth (0.2.0rc6 `mtp_num_layers: Optional[int] = 1`; 0.6.2
`cfg.model.mtp_num_layers = 1`), which the tables' TFLOP/s count: Seer can price it
(`mtp_layers`), but the rows are not read with it yet (docs/runs.md says why)."""
from __future__ import annotations

from typing import Optional, Tuple

from astral_dsl.runs.precision import squeezed as _n
from astral_dsl.runs.releases import FLEX_FROM

MODEL = "deepseekv3"          # the row label, as runs.precision.squeezed
# (pp, vp) -> decoder layers per virtual stage, in model order (module docstring)
RECIPE_LAYOUTS = {
    (4, 1): (16, 16, 16, 13),
    (8, 1): (8,) * 7 + (5,),
    (4, 2): (8,) * 7 + (5,),
    (16, 1): (4,) * 15 + (1,),
    (8, 2): (4,) * 15 + (1,),
    (4, 4): (4,) * 15 + (1,),
}


def bridge_deepseek(row, release, framework: str) -> bool:
    """Whether the row is NVIDIA's DeepSeek-V3 on Megatron-Bridge (NeMo 25.09 on:
    releases.FLEX_FROM, the first release the tables run on Megatron-Bridge)."""
    return framework == "megatron" and _n(row.model).startswith(MODEL) and \
        release is not None and release >= FLEX_FROM


def recipe_layout(row, release, framework: str, layers: int, pp: int,
                  vp: int) -> Optional[Tuple[int, ...]]:
    """The recipe's layers per virtual stage for the row's (pp, vp), or None."""
    layout = RECIPE_LAYOUTS.get((pp, vp)) if bridge_deepseek(row, release, framework) else None
    return layout if layout and sum(layout) == layers else None


def mtp_unread(row, release, framework: str) -> Optional[str]:
    """What the row is taken to have run without: the recipe's MTP depth (module docstring),
    for NVIDIA's DeepSeek-V3 rows but the one labelled "w/o MTP"; None otherwise."""
    if not bridge_deepseek(row, release, framework) or "womtp" in _n(row.model):
        return None
    return ("without the recipe's multi-token prediction depth, which the row ran (not read "
            "yet: docs/runs.md, DeepSeek-V3)")
