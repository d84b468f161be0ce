"""Compute cost of one operator on one GPU: a roofline with size-dependent efficiency, or a time
from a measured operator table the user supplies.

Efficiency curves (docs/seer.md has the derivation and sources). The constants in lower case
are fitted (the calibration table, seer/calibration: gemm_eff, f_half, interfere, softmax_eff);
the upper-case ones below are not: each says whether it comes from a data sheet, a published
measurement or is an assumption, and on what basis.

- GEMM: t = F / (peak * gemm_eff * k(K) * F / (F + f_half)) + KERNEL_S, bounded below by the HBM
  time of its operands. gemm_eff (fitted) is the sustained fraction of the data-sheet peak that
  cuBLAS reaches on large half-precision GEMMs; F / (F + f_half) (fitted) the loss of small ones;
  k(K) = K / (K + K_HALF): each output tile pays a fixed prologue and epilogue that only a long
  inner dimension amortises. KERNEL_S is the launch and tail cost of one kernel.
- fp8 (Transformer Engine): the linear layers' GEMMs at the data-sheet fp8 rate with the same
  efficiency curve, an assumption (no fp8 run is in the calibration set).
- Fused attention (FlashAttention-2, Dao 2023): forward FA_FWD and backward FA_BWD of the GEMM
  efficiency, causal masking skips half the score blocks.
- Element-wise, normalisation and optimizer kernels stream HBM: t = bytes / (HBM * HBM_EFF) +
  KERNEL_S (STREAM-like kernels reach ~85-90% of the data-sheet bandwidth); the unfused
  attention's softmax and dropout at softmax_eff (fitted) of that.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from astral_dsl.seer.calibration import Calibration, shipped

K_HALF = 24.0          # ASSUMED (not fitted, not measured): the inner dimension whose main loop
#                        costs as much as a tile's fixed prologue (filling the shared-memory
#                        pipeline) and epilogue (converting and storing the tile), taken to be of
#                        the order of one 32-deep K step of a CUTLASS/cuBLAS tile; it matters for
#                        short inner dimensions only (attention with head dim 128: k = 0.84)
KERNEL_S = 4e-6        # measured: launch + tail per kernel (CUDA launch latency ~3-5 us, Nsight)
HBM_EFF = 0.85         # published: streaming fraction of the HBM data-sheet bandwidth (STREAM-
#                        like kernels reach 85-90 %; Calculon's A100 system file: ~0.9)
# ASSUMED ratios of fused attention's efficiency to a large GEMM's, from FlashAttention-2's best
# A100 rates (Dao 2023, arXiv 2307.08691, section 4.1: up to 73 % of peak forward, 63 %
# backward) over the 80-90 % that large GEMMs reach (ibid., section 1); applied with gemm_eff and
# k(head_dim), which stand in for the shorter sequences of real runs. Not fitted: no calibration
# run uses fused attention.
GEMM_PEAK_FRACTION = 0.85
FA_FWD = 0.73 / GEMM_PEAK_FRACTION     # 0.86
FA_BWD = 0.63 / GEMM_PEAK_FRACTION     # 0.74


@dataclass(frozen=True)
class GpuSpec:
    name: str
    flops: Tuple[Tuple[str, float], ...]    # dtype -> dense FLOP/s
    memory: float                            # bytes
    hbm_bw: float                            # bytes/s
    nvlink_bw: float                         # bytes/s per GPU, each direction

    def peak(self, dtype: str) -> float:
        table = dict(self.flops)
        if dtype in table:
            return table[dtype]
        for alt in ("bf16", "fp16"):
            if alt in table:
                return table[alt]
        return max(table.values()) if table else 1e14


class OperatorTable:
    """Measured times: CSV with columns operator, shape, dtype and time (seconds), or time_ms /
    time_us. `shape` is `MxNxK` for GEMMs (any text for other operators: it must match the
    shape string Seer prints in the trace's args). An operator named `gemm` matches every GEMM of
    that shape."""

    def __init__(self, rows: Dict[Tuple[str, str, str], float]):
        self.rows = rows
        self.hits = 0

    @classmethod
    def read(cls, path: str) -> "OperatorTable":
        rows = {}
        with open(path, newline="", encoding="utf-8") as fh:
            for rec in csv.DictReader(fh):
                rec = {(k or "").strip().lower(): (v or "").strip() for k, v in rec.items()}
                if "time" in rec and rec["time"]:
                    t = float(rec["time"])
                elif rec.get("time_ms"):
                    t = float(rec["time_ms"]) * 1e-3
                elif rec.get("time_us"):
                    t = float(rec["time_us"]) * 1e-6
                else:
                    raise ValueError(f"{path}: a row has no time, time_ms or time_us")
                key = (rec.get("operator", ""), rec.get("shape", "").replace(" ", ""),
                       rec.get("dtype", "bf16") or "bf16")
                rows[key] = t
        return cls(rows)

    def lookup(self, op: str, shape: str, dtype: str) -> Optional[float]:
        for key in ((op, shape, dtype), ("gemm", shape, dtype)):
            t = self.rows.get(key)
            if t is not None:
                self.hits += 1
                return t
        return None


class Costs:
    """Prices compute operators for one GPU and dtype. An fp8 job (Transformer Engine) runs its
    transformer layers' linear GEMMs at the fp8 rate (`gemm(..., fp8=True)`: 1-byte operands,
    16-bit output) and everything else on its bf16 base (`base_peak`); `peak` is the job's
    dtype's rate (what its MFU is measured against)."""

    def __init__(self, gpu: GpuSpec, dtype: str, table: Optional[OperatorTable] = None,
                 calibration: Optional[Calibration] = None):
        self.gpu = gpu
        self.dtype = dtype
        self.base = "bf16" if dtype == "fp8" else dtype
        self.peak = gpu.peak(dtype)
        self.base_peak = gpu.peak(self.base)
        self.bw = gpu.hbm_bw * HBM_EFF
        self.table = table
        self.cal = calibration or shipped()
        self.kernel_hbm = {"softmax": self.cal.softmax_eff, "dropout": self.cal.softmax_eff}
        self.esize = 2 if self.base in ("bf16", "fp16") else 4

    def _measured(self, op: str, shape: str, dtype: Optional[str] = None) -> Optional[float]:
        if self.table is None:
            return None
        return self.table.lookup(op, shape, dtype or self.base)

    def gemm(self, op: str, m: float, n: float, k: float, batch: float = 1.0,
             fp8: bool = False) -> Tuple[float, float, float]:
        """(seconds, flops, bytes) of `batch` GEMMs [m, k] x [k, n]; `fp8`: at the fp8 rate with
        fp8 operands (Transformer Engine's linear layers)."""
        flops = 2.0 * m * n * k * batch
        operand = 1 if fp8 else self.esize
        nbytes = batch * (operand * (m * k + k * n) + self.esize * m * n)
        if flops <= 0:
            return 0.0, 0.0, 0.0
        shape = f"{int(m)}x{int(n)}x{int(k)}" + (f"x{int(batch)}" if batch != 1 else "")
        t = self._measured(op, shape, "fp8" if fp8 else None)
        if t is None:
            cal = self.cal
            eff = cal.gemm_eff * k / (k + K_HALF) * flops / (flops + cal.f_half)
            peak = self.gpu.peak("fp8") if fp8 else self.base_peak
            t = max(flops / (peak * eff), nbytes / self.bw) + KERNEL_S
        return t, flops, nbytes

    def flash(self, op: str, flops: float, nbytes: float, backward: bool, head_dim: float) -> float:
        shape = f"flops{int(flops)}"
        t = self._measured(op, shape)
        if t is not None:
            return t
        eff = (self.cal.gemm_eff * head_dim / (head_dim + K_HALF)
               * (FA_BWD if backward else FA_FWD))
        return max(flops / (self.base_peak * eff), nbytes / self.bw) + KERNEL_S

    def stream(self, op: str, nbytes: float, kernels: int = 1, kind: str = "stream") -> float:
        """A memory-bound kernel (or `kernels` fused ones) moving `nbytes`."""
        if nbytes <= 0:
            return 0.0
        t = self._measured(op, f"bytes{int(nbytes)}")
        if t is not None:
            return t
        return nbytes / (self.bw * self.kernel_hbm.get(kind, 1.0)) + KERNEL_S * kernels
