"""Which of Seer's fitted constants a runs row's forecast can depend on (`uses`: what the fit's
Jacobian re-forecasts for each constant, runs/fit.py Problem.find_depends) and the check that
the list misses none (`unlisted`: tests/accuracy/test_uses.py, `make calibrate`)."""
from __future__ import annotations

from typing import List, Tuple

from astral_dsl.seer.costs import attention_rate


def uses(name: str, spec, gpu) -> bool:
    """Whether the forecast of `spec` on `gpu` can depend on constant `name` (a superset of
    the rows it moves, from what each constant prices: seer/costs.py, lower.py)."""
    m, par = spec.model, spec.parallel
    moe = m.experts > 0
    fused = spec.attention != "unfused"
    if name == "gemm_waves":
        return True
    if name.startswith("gemm_eff"):
        from astral_dsl.seer.costs import eff_name

        base = "bf16" if spec.fp8 else spec.gemm_precision
        return name in (eff_name(base, gpu.arch), eff_name(spec.gemm_precision, gpu.arch))
    if name == "interfere":
        return par.tp > 1 or par.zero >= 3
    if name == "gemm_waves_expert":
        return moe
    # softmax_eff: every job (lower_linear.stream_kind: the cross-entropy of its head is a
    # softmax over the vocabulary), besides the unfused attention's softmax and dropout; it had
    # been listed for the unfused rows alone, so the fused rows' pull never reached the Jacobian
    # the constant that prices the job's attention kernels, as Costs.set_framework takes it
    # (an `attention = flash2` row had been left out of attn_eff_sdpa's column)
    rate = fused and attention_rate(spec.framework, spec.attention, gpu.arch)
    if name == "attn_eff":
        return rate == name or (m.hybrid and gpu.arch != "blackwell")
    if name == "attn_eff_blackwell":
        return rate == name or (m.hybrid and gpu.arch == "blackwell")
    if name == "attn_seq_half":
        return fused or m.hybrid
    if name == "attn_eff_sdpa":
        return rate == name
    if name == "attn_fp8_ratio":          # MXFP8 attention (JobSpec.fp8_attention: fused only)
        return spec.fp8_attention
    if name == "host_layer_s":
        return not spec.cuda_graphs
    if name == "moe_layer_s":
        return moe
    if name == "moe_sync_s":
        return moe and not spec.cuda_graphs
    if name == "ep_hidden":
        return moe and spec.ep_overlap_share > 0 and par.ep > 1
    if name == "a2a_eff":
        return moe and par.ep > 1 and spec.moe_dispatcher == "alltoall"
    if name == "a2a_eff_fused":
        return moe and par.ep > 1 and spec.moe_dispatcher != "alltoall"
    if name == "permute_eff":
        return moe
    if name == "power_exponent":
        return gpu.capped
    return True


def unlisted(prob, cal, idx=None) -> List[Tuple[int, str]]:
    """The (row, constant) pairs of `prob` (rows `idx`, default all) whose forecast a free
    constant moves but uses() does not list: the Jacobian never sees them (stop 54 found one:
    `attention = flash2` under the wrong constant; stop 55 the cross-entropy under softmax_eff).
    Each constant moves halfway to each of its bounds in the fit's variables, the others at
    `cal` and the rule's choices held, as in the fit (Problem.residual); a row moves when its log
    error changes by more than 1e-9. The other direction (listed, never moved) costs only
    forecasts and is not reported."""
    r0 = prob.residuals(cal, idx)
    x = prob.x(cal)
    lo, hi = prob.bounds()
    out = []
    for j, c in enumerate(prob.free):
        trials = [prob.calibration(x[:j] + [(x[j] + float(b)) / 2] + x[j + 1:])
                  for b in (lo[j], hi[j]) if b != x[j]]
        for i in r0:
            if not uses(c.name, prob.specs[i], prob.rows[i].prepared.gpu) and any(
                    abs(prob.residual(i, t) - r0[i]) > 1e-9 for t in trials):
                out.append((i, c.name))
    return out
