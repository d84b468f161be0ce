"""Seer's fitted constants: one table, the runs they are fitted on, and the fits.

Four constants of Seer's cost model are fitted here, and only here; the shipped values are the
output of `python -m astral_dsl.seer.calibrate` (written to fit.json), never hand edits. Each
constant has a meaning, a unit, bounds and a prior range (`compare`), which serves as a weak
prior of the fit (calibrate.py) and is compared with the fitted value: from the literature where
a source gives one (gemm_eff, f_half), an assumption where none does (interfere, softmax_eff),
as `source` says. fit.json also holds how well the runs determine each constant (`spread`) and
which fitted values fall outside their prior range (`outside_prior`). The other constants of
costs.py, comm.py and memory.py are not fitted: each says whether it is a data-sheet value, a
published measurement or an assumption (K_HALF, FA_FWD / FA_BWD, RESERVED and the memory
tolerances are assumptions), where it is defined.

The calibration runs are published Megatron-LM iteration times on Selene (selene.astral declares
the cluster and the runs as jobs, forecast as `astral forecast` forecasts them):

- "korthikanti2022": Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models" (arXiv 2205.05198), Table 5: measured seconds per iteration, DP = 1;
- "narayanan2021": Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM" (arXiv 2104.04473), Table 1 rows with DP = 32: achieved TFLOP/s per
  GPU, turned into seconds as F / (GPUs x TFLOP/s) with F the FLOPs of an iteration with full
  recomputation, 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)).

fit.json holds three fits: on both sets (shipped: what every forecast uses), and on each set
alone (to measure each set's error when it is left out of the fit)."""
from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Dict, Tuple

HERE = Path(__file__).resolve().parent
DESIGN = HERE / "selene.astral"
FIT_FILE = HERE / "fit.json"


@dataclass(frozen=True)
class Constant:
    name: str
    meaning: str
    unit: str
    bounds: Tuple[float, float]
    compare: Tuple[float, float]      # the prior range (+/- 1 sigma of the prior), see `source`
    source: str
    log: bool = False                 # fitted on a log scale


CONSTANTS: Tuple[Constant, ...] = (
    Constant("gemm_eff", "sustained fraction of the dense data-sheet peak that large "
             "half-precision GEMMs reach (cuBLAS, at the clocks the board's power limit allows)",
             "", (0.5, 1.0), (0.70, 0.90),
             "NVIDIA, Matrix Multiplication Background User's Guide (large GEMMs at 80-90 % of "
             "peak at base clocks); Calculon's A100 system file (matrix efficiency up to 0.95)"),
    Constant("f_half", "GEMM size at which a GEMM reaches half of gemm_eff (wave quantisation, "
             "fill and drain that a large GEMM amortises)", "FLOP", (1e8, 1e12), (3e9, 3e10),
             "Calculon's A100 system file: matrix efficiency by size, ~0.9 for large GEMMs to "
             "~0.1 for tiny ones", log=True),
    Constant("interfere", "share of an overlapped in-host (NVLink) collective's time that the "
             "GEMM it overlaps loses (NCCL kernels take SMs and HBM bandwidth)", "",
             (0.0, 1.0), (0.25, 0.75),
             "an assumed range: overlapped communication slows the computation it overlaps "
             "(Rashidi et al. 2021, ISCA; Wang et al. 2023, ASPLOS) by an amount that depends "
             "on the kernels"),
    Constant("softmax_eff", "fraction of the streaming HBM bandwidth that the unfused "
             "attention's softmax and dropout kernels reach (row reductions, random numbers)",
             "", (0.3, 1.0), (0.6, 0.9),
             "an assumed range: memory-bound kernels that reduce rows or draw random numbers "
             "run below the bandwidth of plain streaming kernels"),
)


@dataclass(frozen=True)
class Calibration:
    gemm_eff: float
    f_half: float
    interfere: float
    softmax_eff: float
    fitted_on: Tuple[str, ...] = ()

    def values(self) -> Dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "fitted_on"}


@dataclass(frozen=True)
class Run:
    job: str                # the job in selene.astral
    label: str
    measured_s: float


def _narayanan(job, label, batch, layers, hidden, gpus, tflops, s=2048, vocab=51200) -> Run:
    flops = 96 * batch * s * layers * hidden ** 2 * (1 + s / (6 * hidden)
                                                    + vocab / (16 * layers * hidden))
    return Run(job, label, flops / (gpus * tflops * 1e12))


SETS: Dict[str, Tuple[str, Tuple[Run, ...]]] = {
    "korthikanti2022": ("Korthikanti et al. 2022, Table 5 (A100, DP = 1)", (
        Run("k22b_full", "22B  TP8 PP1  full recompute", 1.42),
        Run("k22b_sel", "22B  TP8 PP1  SP + selective", 1.10),
        Run("k175b_full", "175B TP8 PP8 v3  full recompute", 18.13),
        Run("k175b_sel", "175B TP8 PP8 v3  SP + selective", 13.75),
        Run("k530b_full", "530B TP8 PP35 v3  full recompute", 49.05),
        Run("k530b_sel", "530B TP8 PP35 v3  SP + selective", 37.83),
        Run("k1t_full", "1T   TP8 PP64  full recompute", 94.42),
        Run("k1t_sel", "1T   TP8 PP64  SP + selective", 71.49),
    )),
    "narayanan2021": ("Narayanan et al. 2021, Table 1 (A100, DP = 32)", (
        _narayanan("n1_7b", "1.7B  TP1 PP1 DP32", 512, 24, 2304, 32, 137),
        _narayanan("n3_6b", "3.6B  TP2 PP1 DP32", 512, 30, 3072, 64, 138),
        _narayanan("n7_5b", "7.5B  TP4 PP1 DP32", 512, 36, 4096, 128, 142),
        _narayanan("n18_4b", "18.4B TP8 PP1 DP32", 1024, 40, 6144, 256, 135),
        _narayanan("n39_1b", "39.1B TP8 PP2 DP32", 1536, 48, 8192, 512, 138),
        _narayanan("n76_1b", "76.1B TP8 PP4 DP32", 1792, 60, 10240, 1024, 140),
    )),
}
ALL = tuple(SETS)


def fits() -> Dict[str, dict]:
    """fit.json's fits: key "+".join(sets) -> {"sets", "constants", "errors"}."""
    return json.loads(FIT_FILE.read_text(encoding="utf-8"))["fits"]


def key(sets) -> str:
    return "+".join(sets)


def calibration(sets=ALL) -> Calibration:
    """The constants fitted on `sets` (default: every set, the shipped values)."""
    return _load(key(tuple(sets)))


@lru_cache(maxsize=8)
def _load(name: str) -> Calibration:
    fit = fits()[name]
    return Calibration(**fit["constants"], fitted_on=tuple(fit["sets"]))


def shipped() -> Calibration:
    return calibration(ALL)


def read_calibration(path) -> Calibration:
    """The fit on every set in a fit file written by calibrate.py --out (ValueError if not)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        fit = doc["fits"][key(ALL)]
        values = {c.name: float(fit["constants"][c.name]) for c in CONSTANTS}
        sets = tuple(str(x) for x in fit["sets"])
    except (KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a calibration fit ({exc})") from None
    for c in CONSTANTS:
        lo, hi = c.bounds
        if not lo <= values[c.name] <= hi:     # also NaN
            raise ValueError(f"{path}: {c.name} = {values[c.name]} is outside [{lo:g}, {hi:g}]")
    return Calibration(**values, fitted_on=sets)
