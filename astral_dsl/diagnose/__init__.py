"""Diagnosing a running job: observed per-rank timelines against Seer's forecast and against the
rank's peers, mapped onto the topology to name the suspect GPU, host, NIC port, switch or tier
(docs/diagnose.md).

    from astral_dsl import diagnose, observe
    result = diagnose.diagnose(design, observe.load(["traces/"]), job="llama70b")
    result.suspects[0].kind, result.suspects[0].path, result.suspects[0].confidence

Steps: check the input against the job (world size, ranks, iterations); match the records of
one collective or transfer across ranks (match.py); align the hosts' clocks on collective ends
(clocks.py); compare compute per rank and collective times per instance with peers and the
forecast (evidence.py); intersect the paths of the slow collectives (localise.py)."""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np
from scipy.stats import norm

from astral_dsl.analyses import rankmap as rankmap_mod
from astral_dsl.diagnose import checks, clocks, evidence, localise, match
from astral_dsl.diagnose.checks import diag as _diag
from astral_dsl.diagnose.model import Diagnosis, Evidence, RankComparison, Suspect
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.observe.records import totals

SOFTWARE_SLOW = 0.15       # every stage this much slower than the forecast: not one part
FALSE_ALARM = 0.05         # a GPU suspect in at most one healthy run in twenty


class DiagnoseError(Exception):
    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


def _ranges(ranks: List[int]) -> str:
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ", ".join(out[:12]) + (f" and {len(out) - 12} more ranges" if len(out) > 12 else "")


def job_and_forecast(design, job: Optional[str]):
    """(job instance, forecast or None, JobSpec, diagnostics)."""
    from astral_dsl import seer
    from astral_dsl.seer.job import job_spec
    from astral_dsl.analyses.walk import Resolver

    inst = seer.find_job(design, job)
    diags: List[Diagnostic] = []
    try:
        fc = seer.forecast(design, job=inst.template)
        return inst, fc, fc.job, diags
    except seer.ForecastError as exc:
        diags.extend(exc.diagnostics)
        diags.append(_diag("W791", f"job `{inst.template}` cannot be forecast: ranks are "
                                   f"compared with their peers only", design.file))
    model = Resolver(design)(inst.field("model"))
    if model is None:
        raise DiagnoseError(f"job `{inst.template}` has no model", diags)
    return inst, None, job_spec(inst, model), diags


def rank_map(design, job: Optional[str] = None, order: Optional[str] = None):
    """The rank map of a job (default: the first)."""
    inst, fc, spec, _ = job_and_forecast(design, job)
    p = spec.parallel
    return rankmap_mod.build(design, inst, {"tp": p.tp, "cp": p.cp, "ep": p.ep, "dp": p.dp,
                                            "pp": p.pp}, order or _order(p))


def _order(parallel) -> Optional[str]:
    """The job's declared rank order (Seer reads `parallel { order = ... }`)."""
    order = getattr(parallel, "order", None)
    return "-".join(order) if order else None


def diagnose(design, observed, job: Optional[str] = None, order: Optional[str] = None
             ) -> Diagnosis:
    inst, fc, spec, diags = job_and_forecast(design, job)
    p = spec.parallel
    try:
        rm = rankmap_mod.build(design, inst, {"tp": p.tp, "cp": p.cp, "ep": p.ep, "dp": p.dp,
                                              "pp": p.pp}, order or _order(p))
    except rankmap_mod.RankMapError as exc:
        raise DiagnoseError(f"job `{inst.template}`: {exc}", diags) from None
    diags = list(observed.diagnostics) + diags
    traces = checks.usable(observed, rm, diags)
    if not traces:
        raise DiagnoseError("no rank of the observed data can be used", diags)
    n_hosts = max(r.host_index for r in rm.ranks) + 1
    wrong = checks.rank_order(traces, rm,
                              tiebreak=lambda m: _aligned_share(traces, m, n_hosts))
    if wrong is not None:
        raise DiagnoseError("the observed data does not match the job's rank order",
                            diags + [wrong])
    iterations = checks.iterations(traces, diags)
    traces = checks.foreign(traces, rm, iterations, diags)
    if not traces:
        raise DiagnoseError("no rank of the observed data can be used", diags)
    kept = set(iterations)
    traces = {r: t if kept.issuperset(t.iterations) else
              t.select(np.isin(t.iteration, iterations)) for r, t in traces.items()}
    stage = np.array([r.stage for r in rm.ranks])
    records, inst_, offsets, bad_hosts = _aligned(traces, rm)
    if len(bad_hosts) > max(1, n_hosts // 4) and checks.order_fit(traces, rm) is None:
        # collectives matched by the wrong groups cannot be aligned: is it the order?
        wrong = checks.rank_order(traces, rm, lambda m: _aligned_share(traces, m, n_hosts))
        if wrong is not None:
            raise DiagnoseError("the observed data does not match the job's rank order",
                                diags + [wrong])
    host_path = {r.host_index: r.host for r in rm.ranks}
    for h in bad_hosts:
        files = sorted({traces[r.rank].file for r in rm.ranks if r.host_index == h
                        and r.rank in traces})
        diags.append(_diag("E789", f"the clock of host {host_path[h]} cannot be aligned with "
                                   f"its peers' (collective ends disagree by more than "
                                   f"{clocks.RESIDUAL_S * 1e3:g} ms): its collectives are left "
                                   f"out", files[0] if files else None,
                           "a drifting clock, or records from another run"))
    fc_net = _forecast_net(fc) if fc is not None else {}
    tm = evidence.timing(records, inst_, offsets, bad_hosts, stage, fc_net)
    suspects = localise.localise(rm, inst_, tm)
    tot = totals(list(traces.values()))          # per rank and iteration, counted once
    comp = evidence.compute_per_rank(traces, set(iterations), tot)
    medians = evidence.stage_medians(comp, stage, iterations)
    fc_comp = _forecast_compute(fc) if fc is not None else {}
    comparisons, compute_suspects = _compute(rm, comp, medians, fc_comp, stage)
    suspects = compute_suspects + suspects
    soft = _software(medians, fc_comp, iterations)
    if soft is not None:
        suspects.insert(0, soft)
    suspects.sort(key=lambda s: (s.alternative, -round(s.confidence, 6), s.kind, s.path))
    obs_iter = _observed_iteration(tot)
    counts = {}
    for code, name in match.KIND_NAMES.items():
        sel = tm.usable & (inst_.kind == code)
        if sel.any():
            counts[name] = (int(sel.sum()), int((tm.slow & sel).sum()))
    sel = tm.usable & (inst_.kind == match.P2P)
    if sel.any():
        counts["pp p2p"] = (int(sel.sum()), int((tm.slow & sel).sum()))
    missing = [r for r in range(rm.world) if r not in traces]
    if missing:
        where = list(observed.sources) or list(observed.files)
        shown = ", ".join(where[:4]) + (f" and {len(where) - 4} more" if len(where) > 4 else "")
        diags.append(_diag("W787", f"{len(missing)} of the job's {rm.world} ranks have no "
                                   f"usable observed data: {_ranges(missing)} (looked in "
                                   f"{shown or 'nothing'})", where[0] if where else None,
                           "their collectives are incomplete and left out; compute of the "
                           "ranks read is still compared"))
    return Diagnosis(inst.template, rm.world, tuple(sorted(traces)), tuple(iterations),
                     tuple(suspects), tuple(diags), fc.iteration_time if fc else None, obs_iter,
                     tuple(comparisons), {host_path[h]: float(offsets[h]) for h in
                                          sorted(host_path)}, counts)


def _aligned(traces, rm):
    """Records matched into instances, and the hosts' clock offsets fitted on them."""
    records, inst = match.collect(traces, rm)
    n_hosts = max(r.host_index for r in rm.ranks) + 1
    ok = records.instance >= 0
    offsets, _, bad_hosts, _ = clocks.align(records.host[ok], records.instance[ok],
                                            records.end[ok], n_hosts)
    return records, inst, offsets, bad_hosts


def _aligned_share(traces, rm, n_hosts) -> float:
    """Share of the hosts whose clocks align when collectives are matched by `rm`'s groups."""
    return 1.0 - len(_aligned(traces, rm)[3]) / max(1, n_hosts)


def _forecast_net(fc) -> Dict:
    out = {}
    low = fc.lowering
    for s, run in enumerate(fc.runs):
        if run.dp:
            out[(match.KIND_CODES["dp"], s)] = float(np.median([e - a for a, e, _ in run.dp]))
        if fc.job.parallel.pp > 1:
            out[(match.P2P, s)] = float(low.p2p_time())
    return out


def _forecast_compute(fc) -> Dict[int, float]:
    low = fc.lowering
    return {s: sum(low.template(s, b.chunk, b.phase).compute for b in run.blocks)
            + low.optimizer_time(s) for s, run in enumerate(fc.runs)}


def _compute(rm, comp, medians, fc_comp, stage):
    """GPU and host suspects: a rank whose compute is above its stage's median by
    COMPUTE_SLOW, and by more than the ranks' own spread allows: ln(ratio) beyond z sigma, sigma
    the ranks' robust spread (median absolute deviation) and z the one-sided normal quantile of
    FALSE_ALARM / ranks (one false alarm in twenty runs, Bonferroni over the ranks)."""
    comparisons, suspects = [], []
    slow_by_host: Dict[str, List] = {}
    ratios = {}
    for rank, per in sorted(comp.items()):
        ratio = evidence.median_ratio(per, medians, int(stage[rank]))
        if ratio is not None and ratio > 0:
            ratios[rank] = ratio
    logs = np.log(np.array(list(ratios.values()))) if ratios else np.zeros(0)
    spread = 1.4826 * float(np.median(np.abs(logs - np.median(logs)))) if logs.size else 0.0
    limit = max(np.log1p(evidence.COMPUTE_SLOW),
                float(norm.isf(FALSE_ALARM / max(1, logs.size))) * spread)
    for rank, ratio in ratios.items():
        per = comp[rank]
        s = int(stage[rank])
        own = evidence.median(per.values())
        peers = own / ratio
        comparisons.append(RankComparison(rank, s, own, peers, fc_comp.get(s)))
        if np.log(ratio) >= limit:
            its = tuple(it for it, v in sorted(per.items())
                        if v >= medians[(s, it)] * (1 + evidence.COMPUTE_SLOW))
            slow_by_host.setdefault(rm.ranks[rank].host, []).append((rank, ratio, own, peers,
                                                                     its))
    for host, items in sorted(slow_by_host.items()):
        gpus = [r for r in rm.ranks if r.host == host]
        if len(items) >= max(2, (len(gpus) + 1) // 2):
            ratio = float(np.median([x[1] for x in items]))
            suspects.append(Suspect(
                "host", host, (host,) + tuple(rm.ranks[x[0]].gpu for x in items),
                _conf(ratio), f"host {host}: {len(items)} of its {len(gpus)} GPUs compute "
                              f"{ratio - 1:.0%} slower than their stage's other ranks",
                tuple(_ev(rm, x, fc_comp) for x in items),
                "several GPUs of one host: power or cooling of the host, its CPU or PCIe, "
                "before the GPUs themselves"))
            continue
        for x in items:
            rank, ratio = x[0], x[1]
            gpu = rm.ranks[rank].gpu
            suspects.append(Suspect("gpu", gpu, (gpu,), _conf(ratio),
                                    f"GPU {gpu} (rank {rank}) computes {ratio - 1:.0%} slower "
                                    f"than the other ranks of stage {int(stage[rank])}",
                                    (_ev(rm, x, fc_comp),)))
    return comparisons, suspects


def _ev(rm, x, fc_comp) -> Evidence:
    rank, ratio, own, peers, its = x
    return Evidence("compute per iteration", peers, own, fc_comp.get(rm.ranks[rank].stage),
                    (rank,), its)


def _conf(ratio: float) -> float:
    return float(min(1.0, (ratio - 1) / (2 * evidence.COMPUTE_SLOW)))


def _software(medians, fc_comp, iterations) -> Optional[Suspect]:
    if not fc_comp or not medians:
        return None
    ratios = {}
    for s, f in fc_comp.items():
        vals = [medians[(s, it)] for it in iterations if (s, it) in medians]
        if vals and f > 0:
            ratios[s] = float(np.median(vals)) / f
    if not ratios or min(ratios.values()) < 1 + SOFTWARE_SLOW:
        return None
    ratio = float(np.median(list(ratios.values())))
    return Suspect("software", "forecast or software", (), min(1.0, (ratio - 1) / 0.3),
                   f"every stage computes {ratio - 1:.0%} slower than the forecast: the forecast "
                   f"or the software (kernels, clocks, versions), not one part",
                   tuple(Evidence(f"compute per iteration, stage {s}",
                                  fc_comp[s], fc_comp[s] * r, fc_comp[s])
                         for s, r in sorted(ratios.items())),
                   "compare the framework, kernels and GPU clocks with the forecast's "
                   "assumptions before suspecting hardware")


def _observed_iteration(tot) -> Optional[float]:
    """Median over ranks and iterations of the iteration's span (summary()'s span_s)."""
    spans = (tot.last - tot.first).tolist()
    return float(np.median(spans)) if spans else None


__all__ = ["DiagnoseError", "Diagnosis", "Suspect", "diagnose", "rank_map"]
