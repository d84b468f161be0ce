"""Compute cost of one operator on one GPU: a roofline with size-dependent efficiency, or a time
from a measured operator table the user supplies (read in operator_table.py).

Efficiency curves (docs/seer.md has the derivation and sources). The constants in lower case
are fitted (seer/calibration: the GEMM efficiency per precision, gemm_waves, attn_eff,
attn_seq_half, softmax_eff, permute_eff, power_exponent); the upper-case ones below are not:
each says whether it comes from a data sheet, a published measurement or is an assumption.

- GEMM: t = W / (peak_p x clock x eff_p x k(K) x T / (T + gemm_waves x SMs)) + KERNEL_S,
  bounded below by the HBM time of its operands; W = 2 x ceil(M / TILE_m) TILE_m x ceil(N /
  TILE_n) TILE_n x K: the GPU computes whole output tiles (tile quantisation, NVIDIA's Matrix
  Multiplication Background User's Guide), so a dimension that is not a multiple of the tile
  pays for the padded tile (GPT-OSS's 2,880 columns take 12 tiles of 256: 3,072). The FLOPs a
  GEMM reports (MFU, HFU) stay 2 M N K. peak_p is the data-sheet dense peak of the
  GEMM's precision p (bf16, fp8, the block-scaled MXFP8 and NVFP4), eff_p (fitted, one per
  precision family) the sustained fraction of it that large GEMMs reach; T / (T + gemm_waves x
  SMs) the loss of small GEMMs, T their output tiles (TILE) over the GPU's SMs: a GEMM of one
  wave reaches half of it at gemm_waves waves (fitted), the experts' GEMMs of a MoE layer at
  gemm_waves_expert (fitted apart: per-expert launches and row counts); experts run as one GEMM
  each, GEMM_STREAMS at a time, count one round's tiles;
  k(K) = K / (K + K_HALF): each output tile pays a fixed prologue and epilogue that only a long
  inner dimension amortises. KERNEL_S is the launch and tail cost of one kernel on the device.
  eff_p is fitted per GPU generation too (Ampere, Hopper, Blackwell: eff_name), whose boards
  hold their quoted clocks differently at their power limits; a low-precision family's eff_p is
  the 16-bit one's times a fitted ratio of at most 1 (gemm_efficiency), so a GEMM at twice the
  peak never takes less than half its 16-bit time.
- clock: (P / P0) ^ (1 / power_exponent) for a GPU capped at P below the board power the data
  sheet quotes its peaks at (`flops_power`; fitted exponent), else 1.
- Fused attention (FlashAttention-3 on Hopper, cuDNN's fused attention on Blackwell): forward
  at attn_eff x keys / (keys + attn_seq_half) of the 16-bit peak (both fitted, with a prior from
  the FlashAttention-3 measurements), keys the positions each query attends to (the sequence, or
  a sliding window); the backward at FA_BWD_RATIO of the forward's efficiency; a head narrower
  than 128 loses k(head) / k(128). Causal masking skips half the score blocks. MXFP8 attention
  (`attention_precision = fp8`) at the fp8 peak and attn_fp8_ratio of that efficiency (fitted,
  its prior range between no gain and FlashAttention-3's FP8 forward: calibration/__init__.py).
- Mamba-2's scan: its Triton kernels one after another, each the longer of its bytes' HBM time
  and its matrix products at the 16-bit GEMM efficiency (`kernels`), plus KERNEL_S.
- Element-wise, normalisation and optimizer kernels stream HBM: t = bytes / (HBM * HBM_EFF) +
  KERNEL_S (STREAM-like kernels reach ~85-90% of the data-sheet bandwidth); softmax and
  dropout kernels (the cross-entropy's softmax over the vocabulary on every job, the unfused
  attention's softmax and dropout) at softmax_eff (fitted) of that, MoE token permutation at
  permute_eff (fitted): STREAM_RATE, lower_linear.stream_kind.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

from astral_dsl import records

if TYPE_CHECKING:
    from astral_dsl.seer.calibration import Calibration
    from astral_dsl.seer.operator_table import OperatorTable

K_HALF = 24.0          # ASSUMED (not fitted, not measured): the inner dimension whose main loop
#                        costs as much as a tile's fixed prologue (filling the shared-memory
#                        pipeline) and epilogue (converting and storing the tile), taken to be of
#                        the order of one 32-deep K step of a CUTLASS/cuBLAS tile; it matters for
#                        short inner dimensions only (attention with head dim 128: k = 0.84)
KERNEL_S = 4e-6        # measured: launch + tail per kernel (CUDA launch latency ~3-5 us, Nsight)
HBM_EFF = 0.85         # published: streaming fraction of the HBM data-sheet bandwidth (STREAM-
#                        like kernels reach 85-90 %; Calculon's A100 system file: ~0.9)
# published: FlashAttention-2's best A100 rates (Dao 2023, arXiv 2307.08691, section 4.1): up to
# 73 % of peak forward, 63 % backward; the backward's efficiency relative to the forward's
FA_BWD_RATIO = 0.63 / 0.73
FA_HEAD = 128.0        # the head width of the attention measurements attn_eff is fitted with
# ASSUMED output tile of a large GEMM (M x N elements), by generation: CUTLASS/cuBLAS's common
# 128 x 128 on Ampere, 128 x 256 on Hopper and Blackwell (warp-group MMA); the size of a GEMM is
# counted in these tiles against the SMs (gemm_waves)
TILE = {"ampere": (128, 128), "hopper": (128, 256), "blackwell": (128, 256)}
DEFAULT_SMS = 132      # ASSUMED: a GPU stating no `sms` has an H100's (validate_gpu.py: W752)
# published (Transformer Engine 2.20.2's binary: transformer_engine::detail::
# get_num_compute_streams() returns 4): the streams TE's multi-stream grouped GEMM
# (general_grouped_gemm -> nvte_multi_stream_cublas_gemm) runs one cuBLAS GEMM per expert on,
# when the expert counts are on the host (Megatron-Core 0.16.1's TEGroupedMLP passes
# tokens_per_expert.tolist() to TE's GroupedLinear); a sync-free step (CUDA graphs) keeps them on
# the device and takes TE's grouped-tensor path, one grouped kernel (TE 2.20's
# module/grouped_linear.py: that path "does not inspect split values because they may reside in
# a CUDA tensor")
GEMM_STREAMS = 4
# An eager PyTorch step's HBM bytes over the fused kernel's, and its kernel count, forward and
# backward, by operator: counted from the eager code torchtitan runs (bytes per element of the
# tensor, bf16 = 2, the fp32 intermediates = 4; per-row and broadcast tensors left out).
# - RMSNorm (torch.nn.RMSNorm -> at::rms_norm, PyTorch 2.5/2.6 aten/src/ATen/native/
#   layer_norm.cpp rms_norm_symint: x.to(float), pow(2), mean(-1), add_(eps), rsqrt, mul,
#   type_as, mul(weight)): forward 6 + 8 + 4 + 8 + 6 + 4 = 36 bytes against the fused kernel's 4
#   (read x, write y); its autograd backward (mul(weight): 4 + 6 + 2 for the weight's gradient;
#   type_as: 6; mul: 8 + 16 for the rsqrt's gradient; mean: 4; pow(2): 28, self.pow(1), times 2,
#   times the gradient; the two input gradients summed: 12; to(bf16): 6) 92 against the fused
#   backward's 6 (read x and dy, write dx), in 8 and 13 kernels;
# - SwiGLU (silu(w1 x) * w3 x): forward silu 4 + mul 6 = 10 against 6, backward mul 12 + silu 6 =
#   18 against 10, in 2 and 3 kernels;
# - rotary embeddings (torchtitan's apply_rotary_emb: x.float(), view_as_complex, multiply by
#   freqs_cis, view_as_real, type_as): 6 + 8 + 6 = 20 against 4 both ways, 3 kernels each for the
#   queries and the keys.
EAGER = {"norm": ((36 / 4, 8), (92 / 6, 13)), "swiglu": ((10 / 6, 2), (18 / 10, 3)),
         "rope": ((20 / 4, 6), (20 / 4, 6))}
# GEMM precision families -> the data-sheet peak they run at (spec.JobSpec.gemm_precision)
PEAK_OF = {"fp8": "fp8", "fp8_block": "fp8", "mxfp8": "fp8", "nvfp4": "fp4"}
SIXTEEN = ("bf16", "fp16")      # the 16-bit precisions: one tensor-core rate (GpuSpec._rate)
EFF_OF = {"fp8": "gemm_eff_fp8", "fp8_block": "gemm_eff_fp8_block", "mxfp8": "gemm_eff_mxfp8",
          "nvfp4": "gemm_eff_nvfp4"}


def eff_name(prec: str, arch: str) -> str:
    """The fitted GEMM efficiency of a 16-bit GEMM on a GPU generation, or of a low-precision
    family: its ratio to the 16-bit one (gemm_efficiency)."""
    if prec in ("bf16", "fp16", "fp32"):
        return {"hopper": "gemm_eff_hopper", "blackwell": "gemm_eff_blackwell"}.get(arch,
                                                                                   "gemm_eff")
    if prec == "fp8" and arch == "blackwell":
        return "gemm_eff_fp8_blackwell"
    return EFF_OF[prec]


def attention_rate(framework: str, attention: str, arch: str) -> str:
    """The fitted constant that prices a job's fused attention: FlashAttention-2's kernels for
    torchtitan (PyTorch's scaled-dot-product attention) and for `attention = flash2`
    (attn_eff_sdpa), Transformer Engine's fused attention otherwise (attn_eff, on Blackwell
    attn_eff_blackwell). The fit's Jacobian takes the same (runs/fit.py `uses`)."""
    if framework == "torchtitan" or attention == "flash2":
        return "attn_eff_sdpa"
    return "attn_eff_blackwell" if arch == "blackwell" else "attn_eff"


# The fitted constant that prices a memory-bound kernel of each kind below HBM_EFF (the other
# kinds stream at HBM_EFF; lower_linear.stream_kind); the fit's Jacobian takes the same
# (runs/fit.py `uses`).
STREAM_RATE = {"softmax": "softmax_eff", "dropout": "softmax_eff", "permute": "permute_eff"}


def gemm_efficiency(cal, prec: str, arch: str) -> float:
    """The large-GEMM efficiency of precision family `prec` on generation `arch`: the 16-bit
    one's, times the family's ratio to it (at most 1) for fp8, MXFP8 and NVFP4."""
    base = getattr(cal, eff_name("bf16", arch))
    if prec in ("bf16", "fp16", "fp32"):
        return base
    return base * getattr(cal, eff_name(prec, arch))


@records.frozen(slots=False)
class GpuSpec:
    name: str
    flops: Tuple[Tuple[str, float], ...]    # dtype -> dense FLOP/s
    memory: float                            # bytes
    hbm_bw: float                            # bytes/s
    nvlink_bw: float                         # bytes/s per GPU, each direction
    power: float = 0.0                       # W: the board's power limit as configured
    flops_power: float = 0.0                 # W: the board power the peaks are quoted at
    sms: int = 0                             # streaming multiprocessors (0: not declared)
    arch: str = ""                           # ampere | hopper | blackwell | other
    host_bw: float = 0.0                     # bytes/s to host memory, each direction (0: not
    #                                          declared; activation offloading needs it)
    host_memory: Optional[float] = None      # bytes of host memory per GPU: the host's `memory`
    #                                          over its GPUs (None: not declared)

    def peak(self, dtype: str) -> float:
        """The dense peak GEMMs of `dtype` run at (a quantised format: its own precision's);
        ValueError if the GPU declares none (validate_gpu.py reports it first: E758, E765)."""
        rate = self._rate(dtype)
        if rate is None:
            raise ValueError(f"GPU `{self.name}` declares no {PEAK_OF.get(dtype, dtype)} peak")
        return rate

    def has_peak(self, dtype: str) -> bool:
        return self._rate(dtype) is not None

    def _rate(self, dtype: str) -> Optional[float]:
        """The declared peak of `dtype`'s precision; bf16 and fp16 stand in for each other
        (the same tensor-core rate on every NVIDIA data sheet since Ampere: A100 312, H100
        989, B200 2,250 TFLOP/s dense), no other precision does."""
        table = dict(self.flops)
        want = PEAK_OF.get(dtype, dtype)
        for alt in (want,) + (SIXTEEN if want in SIXTEEN else ()):
            if alt in table:
                return table[alt]
        return None

    @property
    def capped(self) -> bool:
        return 0 < self.power < self.flops_power


class Costs:
    """Prices compute operators for one GPU and GEMM precision (spec.JobSpec.gemm_precision). A
    quantised job (fp8, MXFP8, NVFP4) runs its transformer layers' linear GEMMs at its
    precision's rate (`gemm(..., fp8=True)`: quantised operands, 16-bit output) and everything
    else on its bf16 base (`base_peak`); `peak` is the job's precision's rate (what its MFU is
    measured against)."""

    def __init__(self, gpu: GpuSpec, dtype: str, table: Optional[OperatorTable] = None,
                 calibration: Optional[Calibration] = None, quant_bytes: float = 1.0):
        self.gpu = gpu
        self.dtype = dtype
        self.quantised = dtype in PEAK_OF
        self.base = "bf16" if self.quantised else dtype
        if not calibration:
            # here: a check's job validation prices nothing (for start-up)
            from astral_dsl.seer.calibration import shipped

            calibration = shipped()
        self.cal = cal = calibration
        self.clock = (gpu.power / gpu.flops_power) ** (1.0 / cal.power_exponent) \
            if gpu.capped else 1.0
        self.sms = gpu.sms or DEFAULT_SMS
        self.tile = TILE.get(gpu.arch, TILE["hopper"])
        self.peak = gpu.peak(dtype)
        self.base_peak = gpu.peak(self.base)
        self.bw = gpu.hbm_bw * HBM_EFF
        self.table = table
        self.kernel_hbm = {k: getattr(cal, c) for k, c in STREAM_RATE.items()}
        self.esize = 2 if self.base in ("bf16", "fp16") else 4
        self.qsize = quant_bytes
        self.eff = {self.base: gemm_efficiency(cal, self.base, gpu.arch)}
        if self.quantised:
            self.eff[dtype] = gemm_efficiency(cal, dtype, gpu.arch)
        self.head_ref = FA_HEAD / (FA_HEAD + K_HALF)
        self.attn_eff = cal.attn_eff             # set_framework: the framework's kernels
        self.eager = False

    def set_framework(self, framework: str, compiled: bool, attention: str = "flash") -> "Costs":
        """The framework's attention kernels (attention_rate); an eager PyTorch step
        (torchtitan without torch.compile) runs its norms, activation functions and rotary
        embeddings as several unfused kernels (EAGER)."""
        self.attn_eff = getattr(self.cal, attention_rate(framework, attention, self.gpu.arch))
        self.eager = framework == "torchtitan" and not compiled
        return self

    @classmethod
    def of(cls, job, gpu: GpuSpec, table: Optional[OperatorTable] = None,
           calibration: Optional[Calibration] = None) -> "Costs":
        """The costs of `job` (a spec.JobSpec) on `gpu`."""
        return cls(gpu, job.gemm_precision, table, calibration, job.quant_bytes).set_framework(
            job.framework, job.torch_compile, job.attention)

    def _measured(self, op: str, shape: str, dtype: Optional[str] = None) -> Optional[float]:
        if self.table is None:
            return None
        return self.table.lookup(op, shape, dtype or self.base)

    def measured(self, op: str, shape: str, fp8: bool = False) -> Optional[float]:
        """The table's time of a whole operator as the trace names it and shows its shape
        (`MxNxK`; `flopsN`, `bytesN` for the others): None without a table or a row."""
        if self.table is None:
            return None
        return self.table.lookup(op, shape, self.dtype if fp8 and self.quantised else self.base)

    def gemm(self, op: str, m: float, n: float, k: float, batch: float = 1.0,
             fp8: bool = False, streams: Optional[int] = None,
             expert: bool = False) -> Tuple[float, float, float]:
        """(seconds, flops, bytes) of `batch` GEMMs [m, k] x [k, n]; `fp8`: at the fp8 rate with
        fp8 operands (Transformer Engine's linear layers). The batch is one grouped kernel, or
        with `streams` separate GEMMs run `streams` at a time (Transformer Engine's multi-stream
        grouped GEMM, GEMM_STREAMS), each round filling and draining the GPU on its own."""
        flops = 2.0 * m * n * k * batch
        fp8 = fp8 and self.quantised
        operand = self.qsize if fp8 else self.esize
        nbytes = batch * (operand * (m * k + k * n) + self.esize * m * n)
        if flops <= 0:
            return 0.0, 0.0, 0.0
        # the table's key is made only where there is a table (a forecast without one makes
        # hundreds of thousands of these calls)
        t = None if self.table is None else self._measured(
            op, f"{int(m)}x{int(n)}x{int(k)}" + (f"x{int(batch)}" if batch != 1 else ""),
            self.dtype if fp8 else None)
        if t is None:
            prec = self.dtype if fp8 else self.base
            peak = (self.peak if fp8 else self.base_peak) * self.clock
            tm, tn = self.tile
            together = batch if streams is None else min(batch, streams)
            rows, cols = -(-m // tm), -(-n // tn)
            tiles = rows * cols * together
            # the GPU computes whole tiles (tile quantisation): a GEMM's work is its tiles'
            work = 2.0 * rows * tm * cols * tn * k * batch
            eff = (self.eff[prec] * k / (k + K_HALF)
                   * tiles / (tiles + (self.cal.gemm_waves_expert if expert
                                       else self.cal.gemm_waves) * self.sms))
            t = max(work / (peak * eff), nbytes / self.bw) + KERNEL_S * -(-batch // together)
        return t, flops, nbytes

    def flash(self, op: str, flops: float, nbytes: float, backward: bool, head_dim: float,
              keys: float, fp8: bool = False) -> float:
        """Fused attention of `flops` FLOPs whose queries each see `keys` positions; `fp8`:
        MXFP8 attention, at the job's fp8 peak and attn_fp8_ratio of the efficiency."""
        t = None if self.table is None else self._measured(op, f"flops{int(flops)}")
        if t is not None:
            return t
        cal = self.cal
        eff = (self.attn_eff * (head_dim / (head_dim + K_HALF)) / self.head_ref
               * keys / (keys + cal.attn_seq_half) * (FA_BWD_RATIO if backward else 1.0))
        peak = self.base_peak
        if fp8:
            peak, eff = self.peak, eff * cal.attn_fp8_ratio
        return max(flops / (peak * self.clock * min(eff, 1.0)), nbytes / self.bw) + KERNEL_S

    def kernels(self, op: str, flops: float, parts) -> float:
        """A sequence of kernels of one operator (Mamba-2's Triton scan: lower_mamba.py), each
        `(name, bytes, ((flops, inner dimension), ...))`, one after another: each takes the
        longer of its HBM time and its matrix products' time at the 16-bit GEMM efficiency of
        the GPU's generation (eff_p x k/(k + K_HALF): a tl.dot is a GEMM tile), plus KERNEL_S.
        A measured table prices the whole operator by its `flops` (`flopsN`)."""
        t = None if self.table is None else self._measured(op, f"flops{int(flops)}")
        if t is not None:
            return t
        rate = self.base_peak * self.clock * self.eff[self.base]
        return sum(max(sum(f * (k + K_HALF) / k for f, k in dots) / rate, nb / self.bw)
                   + KERNEL_S for _, nb, dots in parts)

    def stream(self, op: str, nbytes: float, kernels: int = 1, kind: str = "stream") -> float:
        """A memory-bound kernel (or `kernels` fused ones) moving `nbytes`."""
        if nbytes <= 0:
            return 0.0
        t = None if self.table is None else self._measured(op, f"bytes{int(nbytes)}")
        if t is not None:
            return t
        if self.eager and kind in EAGER:
            ratio, count = EAGER[kind][1 if op.endswith(" bwd") else 0]
            nbytes, kernels = nbytes * ratio, kernels * count
        return nbytes / (self.bw * self.kernel_hbm.get(kind, 1.0)) + KERNEL_S * kernels
