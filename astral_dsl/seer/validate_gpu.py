"""The job checks of its GPU (validate.py runs them): the data sheet figures Seer's operator
times need (E758), the figures it has to guess (W752), and the tensor cores a quantised dtype
needs (E765)."""
from __future__ import annotations

from typing import List

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.seer.cluster import Cluster
from astral_dsl.seer.costs import DEFAULT_SMS, SIXTEEN
from astral_dsl.seer.diag import err as _err, warn as _warn
from astral_dsl.seer.spec import JobSpec
from astral_dsl.units.readable import count as _n


def gpu_data(design, job, cluster: Cluster, ranks: int = 1, dtype: str = "bf16"
             ) -> List[Diagnostic]:
    """E758 for a GPU without the data sheet figures Seer's operator times need (a missing
    figure must not count as zero, nor as an assumed value, nor as another precision's peak:
    `dtype`'s GEMMs need its own, a quantised job's other GEMMs the 16-bit one; the quantised
    rate itself is E765's), without the NVLink bandwidth
    its transfers between the GPUs of a host (or NVLink domain) are priced on, when the job
    has such transfers (several GPUs per host and more than one rank), and for hosts without a
    network bandwidth when the job spans several of them (comm divided by both)."""
    gpu = cluster.gpu
    nvlink = ranks <= 1 or cluster.net.gpus_per_host <= 1 or gpu.nvlink_bw > 0
    missing = [(what, field, note) for what, field, have, note in (
        ("`memory_bandwidth`", "memory_bandwidth", gpu.hbm_bw > 0, _TIMES),
        _peak_missing(gpu, dtype),
        ("`nvlink_bandwidth` (nor does its host)", "nvlink_bandwidth", nvlink,
         f"its {cluster.net.gpus_per_host} GPUs per host exchange activations and gradients "
         "over NVLink, which Seer prices by that bandwidth (per GPU and direction: half of "
         "NVIDIA's bidirectional total, e.g. 450 GB/s for NVLink 4); a GPU without NVLink "
         "(PCIe only) is not modelled")) if not have]
    span = _gpu_span(design, job, gpu)
    out = [_err("E758", f"job `{job.template}` cannot be forecast: GPU `{gpu.name}` declares no "
                        f"{what}", span, f"declare `{field}` on `{gpu.name}` (its data sheet)",
                (note,)) for what, field, note in missing]
    if ranks > cluster.net.gpus_per_host and cluster.net.nic_bw <= 0:
        out.append(_err("E758", f"job `{job.template}` cannot be forecast: its {_n(ranks)} GPUs "
                                f"span hosts of {_n(cluster.net.gpus_per_host)}, which declare "
                                f"no network bandwidth", job.span_of("placement") or job.span,
                        "declare the hosts' `nics`, each with its `ports` and `port_speed` "
                        "(its data sheet), or place the job on one host",
                        ("Seer prices the traffic between hosts (pipeline transfers, "
                         "data-parallel reductions) on the NICs of each GPU's rail",)))
    return out


_TIMES = ("Seer times memory-bound operators by the memory bandwidth and GEMMs by the peak "
          "FLOP/s of the job's precision")


def _peak_missing(gpu, dtype: str):
    """(what, field, has it, note) of the peak FLOP/s a `dtype` job's GEMMs run at."""
    if dtype == "fp32":
        return ("fp32 peak FLOP/s (`flops_fp32`)", "flops_fp32", gpu.has_peak("fp32"),
                _TIMES + "; it prices no GEMM at another precision's peak")
    what = "16-bit peak FLOP/s (`flops_bf16` or `flops_fp16`)"
    if dtype not in SIXTEEN:
        what += f", which the GEMMs outside a {dtype} job's linear layers run at"
    return (what, "flops_bf16", gpu.has_peak("bf16"),
            _TIMES + "; bf16 and fp16 share one tensor-core rate, and it prices no GEMM at "
            "another precision's peak (fp8, fp32)")


def _gpu_span(design, job, gpu):
    """The GPU's declaration, else the job's."""
    inst = next((i for i in design.instances if i.kind == "gpu" and i.template == gpu.name), None)
    return inst.span if inst is not None and inst.span is not None else job.span


def gpu_guesses(design, job, cluster: Cluster) -> List[Diagnostic]:
    """W752 for a GPU figure Seer has to guess: the SMs a GEMM's tiles spread over, and the
    generation whose fitted GEMM efficiency it takes (costs.eff_name: Ampere's `gemm_eff`)."""
    gpu, out = cluster.gpu, []
    if gpu.sms <= 0:
        out.append(_warn("W752", f"GPU `{gpu.name}` declares no `sms`: Seer takes {DEFAULT_SMS} "
                                 f"(an H100 SXM's), which sets how well small GEMMs fill the GPU",
                         _gpu_span(design, job, gpu),
                         "state its streaming multiprocessors from its data sheet: `sms = ...`"))
    if not gpu.arch:
        out.append(_warn("W752", f"GPU `{gpu.name}` declares no `architecture`: Seer takes "
                                 f"Ampere's fitted GEMM efficiency (`gemm_eff`), which sets the "
                                 f"rate of every GEMM", _gpu_span(design, job, gpu),
                         "state its generation: `architecture = hopper` (or `ampere`, "
                         "`blackwell`, `other`)"))
    return out


# the tensor cores a quantised dtype's GEMMs need: (the GPU's rate field, the generations that
# have them). MXFP8 and NVFP4 are block-scaled formats (OCP Microscaling Formats (MX) v1.0, 2023;
# NVIDIA's NVFP4: fp4 values, one fp8 scale per 16) that Blackwell's fifth-generation tensor cores
# run natively (NVIDIA Blackwell architecture technical brief); Hopper has per-tensor fp8 only
# (Transformer Engine's MXFP8 and NVFP4 recipes require compute capability 10.0), Ampere no fp8.
NEEDS = {"fp8": ("fp8", ("hopper", "blackwell")), "mxfp8": ("fp8", ("blackwell",)),
         "nvfp4": ("fp4", ("blackwell",))}
KNOWN = ("ampere", "hopper", "blackwell")     # generations whose tensor cores are known here


def precision(spec: JobSpec, cluster, name: str, where) -> List[Diagnostic]:
    """E765 for a quantised dtype the job's GPU cannot run: no rate for it declared, or a GPU of
    a declared generation without the tensor cores its format needs. (Seer never prices a GEMM
    at another precision's rate.)"""
    if spec.dtype not in NEEDS:
        return []
    field, generations = NEEDS[spec.dtype]
    gpu = cluster.gpu
    if not gpu.has_peak(spec.dtype):
        return [_err("E765", f"{name}: dtype = {spec.dtype} but `{gpu.name}` declares no "
                             f"{field} rate (`flops_{field}`)", where("dtype", ""),
                     f"{spec.dtype} GEMMs need {field} tensor cores ("
                     f"{', '.join(g.capitalize() for g in generations)}): `dtype = bf16`, or "
                     f"declare the GPU's `flops_{field}`")]
    if gpu.arch in KNOWN and gpu.arch not in generations:
        return [_err("E765", f"{name}: dtype = {spec.dtype} but `{gpu.name}` is a "
                             f"{gpu.arch.capitalize()} GPU: its tensor cores do not run "
                             f"{spec.dtype} GEMMs (only "
                             f"{', '.join(g.capitalize() for g in generations)} do)",
                     where("dtype", ""),
                     "on Hopper, `dtype = fp8` (per-tensor scales, or `fp8_recipe = blockwise` "
                     "for DeepSeek-style block scales); on Ampere, `dtype = bf16`")]
    return []


# what a GpuSpec holds, as a message names it (unlike)
_FIGURES = (("flops", "peak FLOP/s"), ("memory", "memory"), ("hbm_bw", "memory bandwidth"),
            ("nvlink_bw", "NVLink bandwidth"), ("power", "power"),
            ("flops_power", "power of its quoted peaks"), ("sms", "SMs"),
            ("arch", "architecture"), ("host_bw", "host bandwidth"))


def _kind(count: int, gpu, nics: str, first, first_nics: str) -> str:
    """`8 `B200``, `8 `H100_SXM` with another power`, `8 `H100_SXM` on hosts whose NICs are
    4 x 200 Gb/s, not the first's 8 x 400 Gb/s`: what differs of `count` GPUs (unlike)."""
    other = [w for f, w in _FIGURES if getattr(gpu, f) != getattr(first, f)] \
        if gpu.name == first.name else []
    said = f"{_n(count)} `{gpu.name}`" + (" with another " + " and ".join(other) if other else "")
    if nics:
        said += f"{',' if other else ''} on hosts whose NICs are {nics}, not the first's " \
                f"{first_nics}"
    return said


def unlike(design, job, cluster: Cluster, ranks: int) -> List[Diagnostic]:
    """W773 when the job's GPUs are not all alike (cluster.unlike): Seer prices every rank as
    the first GPU of its placement, and its host's NICs, so the others' figures change nothing
    in the forecast (a slower kind, a scenario's power cap on some of them, hosts of other
    NICs)."""
    if not cluster.unlike:
        return []
    first, others = cluster.gpu, sum(c for c, _, _ in cluster.unlike)
    kinds = ", ".join(_kind(c, g, nics, first, cluster.nics) for c, g, nics in cluster.unlike)
    return [_warn("W773", f"job `{job.template}`: Seer prices all {_n(ranks)} of its GPUs as the "
                          f"first, `{first.name}`, and {_n(others)} differ: {kinds}; the forecast "
                          f"does not see them",
                  job.span_of("placement") or job.span,
                  "place the job on GPUs of one kind (each kind's forecast apart), or give "
                  "them all the same figures",
                  ("Seer simulates one representative rank per pipeline stage, on one GPU's "
                   "figures; synchronous training is paced by its slowest GPU",))]
