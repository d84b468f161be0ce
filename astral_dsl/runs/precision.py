"""The precision recipe a published run's `precision` cell names (BF16, FP8 with delayed,
current, block or row-wise scales, MXFP8, NVFP4), read as Seer's dtype and fp8 recipe with how it
was read (runs/stacks.py, docs/runs.md "What a row is taken to have run")."""
from __future__ import annotations

import re
from typing import Optional, Tuple


def squeezed(text: str) -> str:
    """The text lower-cased with every character but letters and digits dropped (row labels and
    GPU names compared as `gb200`, `deepseekv3`)."""
    return re.sub(r"[^a-z0-9]+", "", text.lower())


# From this NeMo release on an unlabelled "FP8" is per-tensor current scaling (the tables'
# FP8-CS); before it, delayed scaling: Transformer Engine 1.x (NeMo 24.03 ran 1.4) has no other
# per-tensor recipe (Float8CurrentScaling is of the 2.x series), and NeMo 2.0.0's fp8 precision
# config is DelayedScaling's (nemo_toolkit 2.0.0 collections/llm/recipes/precision/
# mixed_precision.py: fp8 = 'hybrid', amax_history_len = 1024, amax_compute_algo = 'max'). The
# table has no NeMo row between 24.07 and 25.04.
CURRENT_SCALING_FROM = (25, 4)


def precision_of(precision: str, gpu: str,
                 release: Optional[Tuple[int, int]] = None
                 ) -> Tuple[Optional[Tuple[str, str]], str]:
    """((dtype, fp8 recipe), how it was read) of the `precision` cell, or (None, why);
    `release`: the NeMo container's (release_of), whose unlabelled FP8 before
    CURRENT_SCALING_FROM is delayed scaling."""
    p, g = precision.lower(), squeezed(gpu)
    blackwell = "b200" in g or "b300" in g
    if "nvfp4" in p:
        return ("nvfp4", "delayed"), "NVFP4"
    if "mxfp8" in p or "fp8-mx" in p or "fp8 mx" in p:
        return ("mxfp8", "delayed"), "MXFP8"
    if "alt" in p and "fp8" in p:
        # 25.09's footnote: the alternative granularity is 32x32 blocks on Blackwell (MXFP8),
        # 128x128 weights / 1x128 activations on H100 (fp8 with 128-blocks). NeMo 25.07's
        # stored copy lost its footnote; its scripts' recipes are ds, cs, mxfp8 and ss
        # (nemo_toolkit 2.4.0 scripts/performance/argument_parser.py), and TE 2.4.0 / 2.5.0
        # run 128-block scaling (ss) on Hopper only (pytorch/fp8.py,
        # check_fp8_block_scaling_support), so its Blackwell alternative is MXFP8 too
        return (("mxfp8", "delayed"), "FP8 alt granularity on Blackwell: MXFP8") if blackwell \
            else (("fp8", "blockwise"), "FP8 alt granularity on Hopper: 128-block scales")
    if "rowwise" in p:
        return ("fp8", "rowwise"), "fp8 with row-wise scales (torchao)"
    if "fp8" in p and "delayed" in p:
        # Transformer Engine's DelayedScaling recipe: scales from an amax history
        return ("fp8", "delayed"), "fp8 with per-tensor delayed scaling (the label's)"
    if "fp8" in p and release is not None and release < CURRENT_SCALING_FROM:
        return ("fp8", "delayed"), ("fp8 with per-tensor delayed scaling (Transformer Engine 1.x's "
                                    "only recipe)")
    if "fp8" in p:
        return ("fp8", "current"), "fp8 with per-tensor current scaling (the tables' FP8 / FP8-CS)"
    if "bf16" in p or "bfloat16" in p:
        return ("bf16", "delayed"), "BF16"
    if "fp16" in p:
        return ("fp16", "delayed"), "FP16"
    return None, f"unknown precision `{precision}`"
