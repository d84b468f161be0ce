"""Seer's fitted constants: one table, the runs they are fitted on, and the shipped fit.

The constants below are the only fitted numbers of Seer's cost model; their shipped values are
the output of `astral calibrate` (`make calibrate`: astral_dsl/runs/fit.py) written to fit.json,
never hand edits. Each has a meaning, a unit, bounds and a prior range (`prior`), which serves
as a weak prior of the fit and is compared with the fitted value: from the literature where a
source gives one, an assumption where none does, as `source` says. fit.json also holds how well
the runs determine each constant (`spread`), the fitted values outside their prior range, the
leave-one-group-out error of every run, and per regime the error band every forecast carries.
The other constants of costs.py, comm.py and memory.py are not fitted: each says whether it is a
data-sheet value, a published measurement or an assumption, where it is defined.

The calibration runs are runs tables with the columns of astral_dsl/runs/table.py, forecast as
`astral runs` forecasts them:

- a100.csv: published Megatron-LM iteration times on Selene (DGX A100), the sets
  "korthikanti2022" (Korthikanti et al. 2022, arXiv 2205.05198, Table 5: measured seconds, DP =
  1) and "narayanan2021" (Narayanan et al. 2021, arXiv 2104.04473, Table 1 rows with DP = 32:
  achieved TFLOP/s per GPU, turned into seconds with the paper's own FLOP count);
- modern.csv: 125 published pre-training rows on H100, H200, B200 and GB200 (NVIDIA
  Megatron-Bridge / NeMo performance summaries, NeMo AutoModel, torchtitan), each row citing its
  page and release in `source_url` / `source_version`."""
from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple

from astral_dsl import jsonin, records
from astral_dsl.seer.checked import check_ranges

HERE = Path(__file__).resolve().parent
FIT_FILE = HERE / "fit.json"
# the same fit with every leave-out refit exact (`make calibrate-exact`; docs/seer.md)
FIT_EXACT_FILE = HERE / "fit-exact.json"
RUN_FILES = {"a100": HERE / "a100.csv", "modern": HERE / "modern.csv"}
FIT_FORMAT = 2


@records.frozen
class Constant:
    name: str
    meaning: str
    unit: str
    bounds: Tuple[float, float]
    prior: Tuple[float, float]        # the prior range (+/- 1 sigma of the prior), see `source`
    source: str
    log: bool = False                 # fitted on a log scale
    start: Optional[float] = None     # the fit's starting point (default: the prior's centre)
    weight: float = 1.0               # the prior's strength: x3 for a range a measurement gives


_NVIDIA_GEMM = ("NVIDIA, Matrix Multiplication Background User's Guide (large GEMMs at 80-90 % of "
                "peak at base clocks); Calculon's A100 system file (matrix efficiency up to 0.95)")
_QUANT = ("an assumed range: low-precision and block-scaled GEMMs reach at most the share of "
          "their (two or four times higher) data-sheet peak that 16-bit ones reach (scale loads "
          "and conversions in the main loop), so the ratio is at most 1; no publication "
          "measures it per format")

CONSTANTS: Tuple[Constant, ...] = (
    Constant("gemm_eff", "sustained fraction of the dense data-sheet peak that large 16-bit "
             "GEMMs reach (cuBLAS, at the clocks the board's power limit allows), on Ampere and "
             "GPUs of no declared generation", "",
             (0.3, 1.0), (0.70, 0.90), _NVIDIA_GEMM),
    Constant("gemm_eff_hopper", "the same on Hopper (H100, H200), whose peaks are quoted at "
             "the 1.83 GHz boost clock it does not hold at its power limit", "", (0.3, 1.0),
             (0.60, 0.85), _NVIDIA_GEMM + "; NVIDIA H100 data sheet (peaks at the boost clock)"),
    Constant("gemm_eff_blackwell", "the same on Blackwell (B200, GB200, B300)", "", (0.3, 1.0),
             (0.60, 0.85), _NVIDIA_GEMM),
    # the low-precision GEMMs: a ratio to the 16-bit GEMMs' efficiency on the same generation,
    # at most 1 (a GEMM at twice the peak saves at most half its 16-bit time)
    Constant("gemm_eff_fp8", "ratio of the fp8 GEMMs' efficiency (per-tensor scales: Transformer "
             "Engine's delayed and current scaling, torchao's tensorwise) to the 16-bit GEMMs' "
             "on Hopper", "", (0.3, 1.0), (0.80, 1.0), _QUANT),
    Constant("gemm_eff_fp8_blackwell", "the same on Blackwell", "", (0.3, 1.0), (0.80, 1.0),
             _QUANT),
    Constant("gemm_eff_fp8_block", "the same for fp8 GEMMs with row or 128-block scales "
             "(torchao rowwise, DeepSeek-style 1x128 / 128x128 blocks on Hopper)", "",
             (0.2, 1.0), (0.60, 0.95), _QUANT),
    Constant("gemm_eff_mxfp8", "the same for MXFP8 GEMMs (one scale per 32 elements, Blackwell)",
             "", (0.3, 1.0), (0.80, 1.0), _QUANT),
    Constant("gemm_eff_nvfp4", "the same for NVFP4 GEMMs (fp4 with a scale per 16 elements, "
             "Blackwell)", "", (0.2, 1.0), (0.60, 0.95), _QUANT),
    Constant("gemm_waves", "output tiles per SM at which a GEMM reaches half of its large-GEMM "
             "efficiency: a GEMM (or a grouped GEMM) of T output tiles on S SMs runs at T / (T + "
             "gemm_waves x S) of it (wave quantisation, fill and drain that many waves of tiles "
             "amortise)", "waves", (0.01, 10.0), (0.2, 1.0),
             "NVIDIA, Matrix Multiplication Background User's Guide (wave quantisation: a GEMM "
             "of about one wave of tiles loses a large share to the partial last wave); an "
             "assumed range", log=True),
    Constant("gemm_waves_expert", "the same for the experts' GEMMs of a mixture-of-experts "
             "layer (one GEMM per local expert on Transformer Engine's streams, or one grouped "
             "kernel), whose per-expert row counts and concurrent launches differ from a dense "
             "GEMM's", "waves", (0.01, 10.0), (0.2, 1.0),
             "as gemm_waves: an assumed range", log=True),
    Constant("interfere", "share of an overlapped in-host (NVLink) collective's time that the "
             "GEMM it overlaps loses (NCCL kernels take SMs and HBM bandwidth)", "",
             (0.0, 1.0), (0.25, 0.75),
             "an assumed range: overlapped communication slows the computation it overlaps "
             "(Rashidi et al. 2021, ISCA; Wang et al. 2023, ASPLOS) by an amount that depends "
             "on the kernels"),
    Constant("softmax_eff", "fraction of the streaming HBM bandwidth that softmax and dropout "
             "kernels reach (row reductions, random numbers): every job's cross-entropy (a "
             "softmax over the vocabulary), the unfused attention's softmax and dropout",
             "", (0.3, 1.0), (0.6, 0.9),
             "an assumed range: memory-bound kernels that reduce rows or draw random numbers "
             "run below the bandwidth of plain streaming kernels"),
    Constant("attn_eff", "fraction of the 16-bit dense peak that fused attention's forward "
             "reaches on long sequences (FlashAttention-3 on Hopper, cuDNN on Blackwell)", "",
             (0.2, 1.0), (0.55, 0.75),
             "Shah et al. 2024, FlashAttention-3 (arXiv 2407.08608): up to 740 TFLOP/s, 75 % of "
             "an H100's 989, in FP16; pytorch/benchmark ff65cb6: 63 % at 16K tokens", weight=3.0),
    Constant("attn_seq_half", "keys per query at which fused attention reaches half of "
             "attn_eff (short sequences leave the tiles part empty)", "tokens", (8.0, 8192.0),
             (150.0, 400.0), "pytorch/benchmark ff65cb6 (H100, head dim 128): FA3 at 43 % of "
             "peak with 512 tokens, 57 % with 2K, 63 % with 16K: a half point of ~250 tokens",
             log=True, weight=3.0),
    Constant("attn_eff_blackwell", "the same on Blackwell (cuDNN's fused attention)", "",
             (0.2, 1.0), (0.50, 0.75), "an assumed range, about Hopper's: no measurement per "
             "head width and sequence was found for Blackwell", weight=3.0),
    Constant("attn_eff_sdpa", "the same for FlashAttention-2's kernels on Hopper: PyTorch's "
             "scaled-dot-product attention as torchtitan runs it, and `attention = flash2` "
             "(Transformer Engine before its cuDNN preference, AutoModel's FlexAttention)", "",
             (0.1, 1.0),
             (0.30, 0.50),
             "Shah et al. 2024, FlashAttention-3 (arXiv 2407.08608): FlashAttention-2 reaches "
             "about 35 % of an H100's peak", weight=3.0),
    Constant("attn_fp8_ratio", "ratio of MXFP8 fused attention's efficiency, a fraction of "
             "the fp8 dense peak, to the 16-bit fused attention's, of the 16-bit peak, forward "
             "and backward alike (`attention_precision = fp8`: Transformer Engine's MXFP8 "
             "attention through cuDNN on Blackwell)", "", (0.25, 1.0), (0.50, 0.81),
             "sourced ends, an assumed range between them: no rate is published for cuDNN's "
             "MXFP8 attention on Blackwell, forward or backward. 0.5: no gain over 16-bit "
             "attention (the fp8 dense peak is twice the 16-bit one: stdlib/hardware.astral's "
             "B200 and GB200 data sheets); 0.81: FlashAttention-3's FP8 forward on an H100, "
             "1.2 of 1.979 PFLOP/s against its FP16's 740 of 989 TFLOP/s (Shah et al. 2024, "
             "arXiv 2407.08608, abstract; it has no FP8 backward)"),
    Constant("host_layer_s", "host time an eager framework takes to issue one layer's pass "
             "(its Python, the dispatcher and its kernels' launches): a block without CUDA "
             "graphs takes at least its layers times this, however fast the GPU runs them", "s",
             (1e-6, 1e-2), (1e-4, 1e-3),
             "an assumed range: PyTorch eager dispatch costs ~5-20 us per operator (PyTorch "
             "dev-discuss 'Overheads in PyTorch', 2021) and a transformer layer's pass issues "
             "tens of them", log=True),
    Constant("moe_layer_s", "device time of an MoE layer's routing kernels per pass beyond "
             "what Seer prices by bytes and FLOPs and the router's counted kernels "
             "(router_kernels.py): the dispatcher's index, histogram and map kernels, "
             "latency-bound kernels of a few microseconds each",
             "s", (1e-7, 5e-3), (3e-5, 3e-4),
             "an assumed range: ten to twenty such kernels of 3-15 us each", log=True),
    Constant("moe_sync_s", "time an MoE layer's pass loses to the device-to-host "
             "synchronisation of its dropless token counts (the host waits for the GPU, then "
             "the GPU waits for the host's next launches)", "s", (1e-7, 5e-3), (2e-5, 1e-3),
             "an assumed range: one synchronisation drains the launch queue, costing a few "
             "kernels' launch latency (Megatron-Core's alltoall dispatcher synchronises on "
             "tokens_per_expert; its sync-free modes exist to remove it)", log=True),
    Constant("ep_hidden", "share of the expert-parallel all-to-all time the MoE recipes hide "
             "behind computation (Megatron-Core's overlap of one micro-batch's dispatch and "
             "combine with another's computation; DeepEP's overlap)", "", (0.0, 1.0),
             (0.78, 1.0), "Megatron-Core 0.16.0 models/common/model_chunk_schedule_plan.py, "
             "TransformerLayerSchedulePlan.run: each dispatch and combine runs on the comm "
             "stream beside a paired computation of the other micro-batch (combine bwd | attn "
             "fwd, dispatch fwd and bwd | mlp bwd, dw and fwd, combine fwd | attn bwd), longer "
             "than the all-to-all on every overlapped row of the tables, so all of it is hidden "
             "(1) but for the SMs HybridEP's kernels take from that computation, 32 of a "
             "Blackwell GPU's 148 (Megatron-Bridge 0.6.0 perf_recipes/_common.py "
             "`_benchmark_common`: moe_hybridep_num_sms = 32): 1 - 32/148 = 0.78"),
    Constant("a2a_eff", "fraction of NVLink's bandwidth an expert-parallel all-to-all reaches "
             "with NCCL's all-to-all (many small messages, no in-network reduction; its sends "
             "between hosts at NET_EFF, seer/comm.py all_to_all)", "",
             (0.05, 1.0), (0.4, 0.8),
             "an assumed range: nccl-tests alltoall reaches about half to three quarters of the "
             "bus bandwidth of all-reduce on DGX H100 (NVIDIA nccl-tests performance notes)"),
    Constant("a2a_eff_fused", "the same with a fused expert-parallel dispatcher (DeepEP, "
             "HybridEP: TMA/NVSHMEM kernels that send tokens straight to their experts)", "",
             (0.05, 1.0), (0.6, 0.95),
             "DeepSeek's DeepEP README: intranode dispatch at ~150 of NVLink's 160 GB/s, "
             "internode at ~40-46 of 50 GB/s RDMA"),
    Constant("permute_eff", "fraction of the streaming HBM bandwidth that MoE token "
             "permutation and unpermutation reach (gathers and scatters of rows)", "",
             (0.05, 1.0), (0.3, 0.8),
             "an assumed range: row gathers and scatters run below contiguous streaming"),
    Constant("power_exponent", "exponent of a GPU's power against its clock under a power "
             "cap: at a cap P below the board power P0 the clocks, and the compute rates, scale "
             "by (P / P0)^(1 / power_exponent)", "", (1.0, 5.0), (2.0, 3.0),
             "dynamic power ~ f V^2 with the voltage falling with the clock: power ~ f^2 - f^3 "
             "near the top of the voltage-frequency curve (an assumed range)"),
)
NAMES = tuple(c.name for c in CONSTANTS)
BY_NAME = {c.name: c for c in CONSTANTS}


def centre(c: Constant) -> float:
    lo, hi = c.prior
    return math.sqrt(lo * hi) if c.log else (lo + hi) / 2


class Calibration:
    """The fitted constants (attribute access: `cal.gemm_eff`), the runs they were fitted on,
    per regime the error band of the forecasts (seer/envelope.py), and `ranges`: per dimension
    of scale and layout the [lowest, highest] of the runs fitted (seer/checked.py; None:
    unknown, a fit document that records none)."""

    __slots__ = ("_values", "fitted_on", "bands", "source", "ranges")

    def __init__(self, values: Mapping[str, float], fitted_on: Tuple[str, ...] = (),
                 bands: Optional[Mapping[str, dict]] = None, source: str = "shipped",
                 ranges: Optional[Mapping[str, Tuple[float, float]]] = None):
        missing = [n for n in NAMES if n not in values]
        if missing:
            raise ValueError("a calibration needs " + ", ".join(missing))
        object.__setattr__(self, "_values", {n: float(values[n]) for n in NAMES})
        object.__setattr__(self, "fitted_on", tuple(fitted_on))
        object.__setattr__(self, "bands", dict(bands or {}))
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "ranges", None if ranges is None else dict(ranges))

    def __getattr__(self, name: str) -> float:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("a Calibration is immutable")

    def _forecasts(self) -> tuple:
        """What the forecasts made with it depend on: the constants (their numbers), the runs
        fitted on, the bands (their trust band and regime) and the ranges (W759): two
        calibrations alike in these forecast alike, whatever file (`source`) each came from."""
        ranges = None if self.ranges is None else \
            {k: tuple(float(x) for x in r) for k, r in self.ranges.items()}
        return self._values, self.fitted_on, self.bands, ranges

    def __eq__(self, other) -> bool:
        # also what calls a fit "the shipped fit" (seer._own): a copy of fit.json with a band or
        # a range removed or changed is not it
        return isinstance(other, Calibration) and self._forecasts() == other._forecasts()

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __reduce__(self):
        # pickled by its arguments (the default would set the slots through __setattr__): a
        # search or a sweep sends it to its worker processes
        return (Calibration, (self._values, self.fitted_on, self.bands, self.source,
                              self.ranges))

    def values(self) -> Dict[str, float]:
        return dict(self._values)

    def with_(self, **values: float) -> "Calibration":
        merged = dict(self._values)
        merged.update(values)
        return Calibration(merged, self.fitted_on, self.bands, self.source, self.ranges)


def _check_values(values: Mapping[str, float], where: str) -> Dict[str, float]:
    unknown = sorted(set(values) - set(NAMES))       # a hand edit's typo would be ignored
    if unknown:
        raise ValueError(f"{where}: `constants` has no constant `{unknown[0]}` (Seer's fitted "
                         "constants: docs/seer.md, \"Calibration\")")
    out = {}
    for c in CONSTANTS:
        if c.name not in values:
            raise ValueError(f"{where}: no value for `{c.name}`")
        v = values[c.name]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{where}: `{c.name}` is not a number")
        lo, hi = c.bounds
        if not lo <= float(v) <= hi:          # also NaN
            raise ValueError(f"{where}: {c.name} = {v} is outside [{lo:g}, {hi:g}]")
        out[c.name] = float(v)
    return out


# a band is true time / forecast - 1 (seer/envelope.py): above -1 (a time is positive); a
# band reaching past +1000 % (the true time 11x the forecast) forecasts nothing
BAND_BOUNDS = (-1.0, 10.0)


def _check_bands(bands) -> Dict[str, dict]:
    """The `bands` of a fit document, each {low, high, rows} with BAND_BOUNDS[0] < low <= high
    <= BAND_BOUNDS[1] (finite) and a whole number 0 <= rows <= 2^53 (a shipped band may lie
    wholly above or below 0: B200/BF16's is +17/+65 %); ValueError naming the key otherwise."""
    if not isinstance(bands, dict):
        raise ValueError("`bands` is not an object")
    lo, hi = BAND_BOUNDS
    for key, entry in bands.items():
        where = f"bands[{json.dumps(key)}]"
        # every run ("*"), a precision, GPU/precision or a whole regime (seer/regime.py): a key
        # of no other form names no forecast's regime, and its band would go unused
        if key != "*" and (key.count("/") not in (0, 1, 4)
                           or not all(re.fullmatch(r"[\w.+-]+", k) for k in key.split("/"))):
            raise ValueError(f"{where} is not a regime (GPU/precision/attention/moe/framework), "
                             "a GPU/precision, a precision or `*`")
        if not isinstance(entry, dict):
            raise ValueError(f"{where} is not an object with `low`, `high` and `rows`")
        for name in ("low", "high", "rows"):
            v = entry.get(name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"{where}: `{name}` is not a number")
        low, high, rows = entry["low"], entry["high"], entry["rows"]
        if not (lo < low <= high <= hi):          # also NaN and infinities
            raise ValueError(f"{where}: low = {low}, high = {high} is not a band with "
                             f"{lo:g} < low <= high <= {hi:g}")
        # (0 <= rows <= 2^53 first: int() of an infinity raised OverflowError, E000)
        if not 0 <= rows <= 2 ** 53 or rows != int(rows):
            raise ValueError(f"{where}: rows = {rows} is not a whole number from 0 to 2^53 "
                             f"(a count of runs)")
    return dict(bands)


def from_document(doc, where: str) -> Calibration:
    """The calibration of a fit document (fit.json's form, FIT_FORMAT); ValueError if not one."""
    try:
        if doc.get("format") != FIT_FORMAT:
            raise ValueError(f"format {doc.get('format')!r}, expected {FIT_FORMAT}: fit its runs "
                             "again with this version's `astral calibrate`")
        values = _check_values(doc["constants"], where)
        sets = doc.get("fitted_on", [])
        if not isinstance(sets, list) or not all(isinstance(x, str) for x in sets):
            raise ValueError("`fitted_on` is not a list of table names")
        sets = tuple(sets)
        bands = _check_bands(doc.get("bands", {}))
        # a fit written before they were recorded has none: unknown, never taken as inside
        ranges = check_ranges(doc["ranges"]) if "ranges" in doc else None
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where}: not a calibration fit ({exc})") from None
    except ValueError as exc:       # the checks name the file too: once is enough
        said = str(exc).removeprefix(f"{where}: ")
        raise ValueError(f"{where}: not a calibration fit ({said})") from None
    return Calibration(values, sets, bands, where, ranges)


def read_calibration(path) -> Calibration:
    """A fit file written by `astral calibrate -o FILE` (ValueError if it is not one)."""
    try:
        doc = jsonin.load_path(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read a calibration fit ({exc})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a calibration fit (not a JSON object)")
    return from_document(doc, str(path))


@lru_cache(maxsize=1)
def shipped() -> Calibration:
    """The shipped fit: fit.json's constants, with the error bands of fit-exact.json (the same
    fit, its runs left out by exact refits: `make calibrate-exact`) where that file is of this
    fit, else fit.json's (the one-step estimate, between a `make calibrate` and its exact
    refits; tests/accuracy checks that a release ships both of one fit); before any fit
    exists, the prior centres (never in a release)."""
    if not FIT_FILE.exists():
        return priors()
    return from_document(shipped_exact_document() or shipped_document(), "shipped")


def priors() -> Calibration:
    return Calibration({c.name: (c.start if c.start is not None else centre(c))
                        for c in CONSTANTS}, (), {}, "priors")


def shipped_document() -> dict:
    return json.loads(FIT_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def shipped_exact_document() -> Optional[dict]:
    """fit-exact.json when it is the shipped fit's (the same constants, tables and ranges as
    fit.json: its runs left out by exact refits), else None (a `make calibrate` not yet followed
    by its `make calibrate-exact`, or no fit shipped). Not to be changed by its callers."""
    if not (FIT_FILE.exists() and FIT_EXACT_FILE.exists()):
        return None
    doc = shipped_document()
    exact = json.loads(FIT_EXACT_FILE.read_text(encoding="utf-8"))
    if all(exact.get(k) == doc.get(k) for k in ("constants", "tables", "ranges")):
        return exact
    return None
