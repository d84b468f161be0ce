"""The families and regimes forecasts are calibrated, checked and summarised by.

- family: GPU x precision family (16-bit, FP8 with any scaling, MXFP8, NVFP4), the rows the
  accuracy targets are stated over; a row is also dense or MoE.
- regime: {gpu, precision, attention, moe, framework}, what a forecast's error band is kept per
  (seer/calibration `bands`): the leave-one-group-out errors of the runs of that regime. Its
  precision tells fp8 with row or 128-block scales (`FP8-block`: torchao's rowwise, Transformer
  Engine's Float8BlockScaling) from per-tensor fp8: their GEMMs have an efficiency of their own
  (gemm_eff_fp8_block), fitted on Hopper runs only, so a Blackwell job in them is outside the
  envelope rather than inside GB200/FP8's; the family counts both as FP8."""
from __future__ import annotations

from typing import Dict, Tuple

GPU_FAMILY = {"A100_80GB": "A100", "H100_SXM": "H100", "H100_SXM_96GB_500W": "H100",
              "H800": "H800", "H200": "H200", "B200": "B200", "GB200": "GB200", "B300": "B300",
              "GB300": "GB300"}
PRECISION_FAMILY = {"bf16": "BF16", "fp16": "BF16", "fp32": "FP32", "fp8": "FP8",
                    "fp8_block": "FP8-block", "mxfp8": "MXFP8", "nvfp4": "NVFP4"}
FAMILY_OF_PRECISION = {"FP8-block": "FP8"}     # the accuracy families: FP8 with any scaling


def gpu_family(gpu_name: str) -> str:
    return GPU_FAMILY.get(gpu_name, gpu_name)


def regime(spec, gpu_name: str) -> Dict[str, str]:
    return {"gpu": gpu_family(gpu_name),
            "precision": PRECISION_FAMILY.get(spec.gemm_precision, spec.gemm_precision.upper()),
            "attention": spec.attention, "moe": "moe" if spec.model.experts else "dense",
            "framework": spec.framework}


def family(reg: Dict[str, str]) -> Tuple[str, str]:
    return reg["gpu"], FAMILY_OF_PRECISION.get(reg["precision"], reg["precision"])


def regime_key(reg: Dict[str, str]) -> str:
    return "/".join(reg[k] for k in ("gpu", "precision", "attention", "moe", "framework"))


REGIME_PARTS = ("gpu", "precision", "attention", "moe", "framework")


def parse_key(key: str) -> Dict[str, str]:
    return dict(zip(REGIME_PARTS, key.split("/")))
