"""What a run published and what Seer forecasts for it, on the same metric.

The metric is the row's tokens per second per GPU when it publishes one, else its step time,
else its model TFLOP/s per GPU, recomputed with one FLOP formula and the release's attention
accounting (the column is not comparable across releases: NeMo up to 25.07 counts attention as
non-causal, 12 L h s FLOPs per token, Megatron-Bridge from 25.09 and NeMo AutoModel as causal,
half of it; sliding windows count their window, ModelSpec.attended). The
error is forecast / published - 1 on that metric: on tokens/s and TFLOP/s a positive error is an
optimistic forecast, on a step time a pessimistic one."""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

TOKENS, STEP, TFLOPS = "tokens_per_s_per_gpu", "step_time_s", "model_tflops_per_gpu"


def published(row) -> Tuple[Optional[str], Optional[float]]:
    for metric in (TOKENS, STEP, TFLOPS):
        v = getattr(row, metric)
        if v is not None:
            return metric, float(v)
    return None, None


def causal_accounting(row) -> bool:
    """Whether the row's release counts attention FLOPs as causal (module docstring). NeMo
    AutoModel does: its published TFLOP/s over its tokens/s (modern.csv r206, r208, r209, r212:
    DeepSeek-V3, Kimi K2, Qwen3 30B, Llama 3 70B) is 0.996-0.999 of model_flops_per_token
    counted causal and 0.82-0.93 of it counted in full. Any other release (torchtitan, the
    papers, a user's own runs) counts attention in full (12 L h s per token), as Megatron-LM's
    papers and torchtitan's get_nparams_and_flops do."""
    from astral_dsl.runs.stacks import framework_of

    m = re.search(r"(\d\d)\.(\d\d)", row.source_version)
    if "megatron-bridge" in row.source_version.lower() or framework_of(row) == "automodel":
        return True
    if m and "nemo" in row.source_version.lower():
        return (int(m.group(1)), int(m.group(2))) >= (25, 9)
    return False


def model_flops_per_token(spec, causal: bool) -> float:
    """Training FLOPs per token: 3 x (2 x the linear layers' active weights + the logits) plus
    the attention's 3 x 2 x 2 s h_attn per layer (half of it counted causal)."""
    from astral_dsl.seer.forecast import layer_flops_per_token

    m = spec.model
    total = 0.0
    for L, count in m.kinds(0, m.layers + m.mtp_block):
        lin, attn = layer_flops_per_token(spec, L)
        total += count * (lin + (attn / 2 if causal else attn))
    # each MTP depth's eh_proj and logits besides its layer (Megatron-Bridge 0.6.2
    # training/utils/flop_utils.py; its norms' 3 h are left out here)
    total += 2 * m.hidden * m.vocab * (1 + m.mtp_layers) + m.mtp_layers * 4 * m.hidden ** 2
    return 3 * total


def forecast_metric(metric: str, row, spec, iteration_time: float) -> float:
    gpus = spec.parallel.gpus
    tokens = spec.global_batch * spec.seq
    if metric == TOKENS:
        return tokens / (iteration_time * gpus)
    if metric == STEP:
        return iteration_time
    return model_flops_per_token(spec, causal_accounting(row)) * tokens / (
        iteration_time * gpus) / 1e12


def beyond_peak(row, spec, gpu) -> Optional[str]:
    """Why the row's published figure cannot be, or None: the model FLOP/s per GPU it implies
    (as forecast_metric counts them) above the GPU's highest dense peak, of any precision: no
    run computes faster than its GPUs (`model_tflops_per_gpu` 1,000,000 on an A100 was scored,
    -100 %, and fitted on). The shipped tables' rows reach at most 56 % of it."""
    metric, value = published(row)
    peak = max((f for _, f in gpu.flops), default=0.0)
    if metric is None or not value or peak <= 0:
        return None
    per_token = model_flops_per_token(spec, causal_accounting(row))
    if metric == TFLOPS:
        achieved = value * 1e12
    elif metric == TOKENS:
        achieved = value * per_token
    else:
        achieved = per_token * spec.global_batch * spec.seq / (value * spec.parallel.gpus)
    if achieved <= peak:
        return None
    return (f"{metric} {value:,.6g} implies {achieved / 1e12:,.4g} model TFLOP/s per GPU, "
            f"{achieved / peak * 100:,.0f} % of the {gpu.name}'s highest dense peak "
            f"({peak / 1e12:,.4g} TFLOP/s): no run computes faster than its GPUs")


def signed_error(metric: str, forecast: float, value: float) -> float:
    return forecast / value - 1.0


def time_error(metric: str, error: float) -> float:
    """The error as forecast time / true time - 1 (negative: the forecast is too fast)."""
    if metric == STEP:
        return error
    return 1.0 / (1.0 + error) - 1.0


def family_summary(pairs: Iterable[Tuple[Dict[str, str], float]]) -> Dict[str, dict]:
    """Per GPU x precision family, per GPU x precision x dense / MoE, and overall ("all"): rows,
    mean |error|, max |error| and mean signed error (%) of (regime, error) pairs."""
    from astral_dsl.seer.regime import family

    fams: Dict[str, List[float]] = {}
    for reg, err in pairs:
        g, p = family(reg)
        for key in (f"{g} {p}", f"{g} {p} {reg['moe']}", "all"):
            fams.setdefault(key, []).append(err)
    return {key: error_stats(es) for key, es in sorted(fams.items())}


def error_stats(errors: Sequence[float]) -> dict:
    """rows, mean |error|, max |error| and mean signed error (%) of some (non-empty) errors."""
    return {"rows": len(errors),
            "mean_abs_pct": round(100 * sum(abs(e) for e in errors) / len(errors), 2),
            "max_abs_pct": round(100 * max(abs(e) for e in errors), 2),
            "mean_pct": round(100 * sum(errors) / len(errors), 2)}
