"""Diagnosing a running job: observed per-rank timelines against Seer's forecast and against the
rank's peers, mapped onto the topology to name the suspect GPU, host, NIC port, switch or tier
(docs/diagnose.md).

    from astral_dsl import diagnose, observe
    result = diagnose.diagnose(design, observe.load(["traces/"]), job="llama70b")
    result.verdict, result.probability          # "suspects", 0.9999...
    result.suspects[0].kind, result.suspects[0].path, result.suspects[0].probability

Steps: check the input against the job (world size, ranks, iterations); match the records of
one collective or transfer across ranks (match.py); fit the hosts' clocks, an offset and a
drift each, on collective ends (clocks.py); time each collective and transfer against its peers
and the forecast (evidence.py); weigh the slow ones against the units they cross (localise.py),
each rank's compute against its stage's (compute.py) and every stage against the forecast's
band, by one likelihood model (likelihood.py); one verdict from all of them (verdict.py); the
per-rank breakdown (breakdown.py)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs
import numpy as np

from astral_dsl.analyses import rankmap as rankmap_mod
from astral_dsl.diagnose import breakdown, checks, clocks, compute, evidence, in_blocks, \
    layout, localise, match, verdict
from astral_dsl.diagnose.checks import diag as _diag
from astral_dsl.diagnose.forecast_net import forecast_net as _forecast_net, uncompared as \
    _uncompared, unforecast_dp as _unforecast_dp, unnamed_dp as _unnamed_dp
from astral_dsl.diagnose.model import ClockFit, Diagnosis, Suspect
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.semantics.overrides import command_line
from astral_dsl.observe.said import ranges
from astral_dsl.observe.records import OP_INDEX, totals



class DiagnoseError(Exception):
    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


def job_and_forecast(design, job: Optional[str], calibration=None, option=command_line):
    """(job instance, forecast or None, JobSpec, diagnostics); forecast with `calibration`
    (default: the shipped fit); an unknown job named by `option` (seer.unknown_job)."""
    from astral_dsl import seer
    from astral_dsl.seer.job import job_spec
    from astral_dsl.analyses.walk import Resolver

    try:
        inst = seer.find_job(design, job, option)
    except seer.ForecastError as exc:       # no job, or an unknown --job (E221)
        raise DiagnoseError(str(exc), exc.diagnostics) from None
    diags: List[Diagnostic] = []
    try:
        fc = seer.forecast(design, job=inst.template, calibration=calibration)
        return inst, fc, fc.job, diags
    except seer.ForecastError as exc:
        diags.extend(exc.diagnostics)
        diags.append(Diagnostic("W791", Severity.WARNING,
                                f"job `{inst.template}` cannot be forecast: ranks are compared "
                                f"with their peers only", inst.span,
                                "fix the job's errors above: its ranks are then compared with "
                                "its forecast too", file=design.file))
    model = Resolver(design)(inst.field("model"))
    if model is None:
        raise DiagnoseError(f"job `{inst.template}` has no model", diags)
    return inst, None, job_spec(inst, model), diags


def rank_map(design, job: Optional[str] = None, order: Optional[str] = None):
    """The rank map of a job (default: the first)."""
    inst, fc, spec, _ = job_and_forecast(design, job)
    p = spec.parallel
    return rankmap_mod.build(design, inst, _sizes(p), order or _order(p))


def _sizes(parallel) -> Dict[str, int]:
    """The rank map's parallel degrees of a job's ParallelSpec."""
    p = parallel
    return {"tp": p.tp, "cp": p.cp, "ep": p.ep, "dp": p.dp, "pp": p.pp, "etp": p.etp}


def _order(parallel) -> Optional[str]:
    """The job's declared rank order (Seer reads `parallel { order = ... }`)."""
    order = getattr(parallel, "order", None)
    return "-".join(order) if order else None


TIMERS = ("auto", "compute", "megatron")
ORDER_HINT = ("name the parallel dimensions tp, cp, ep, dp and pp once each, fastest first, "
              "e.g. tp-cp-ep-dp-pp (Megatron-Core's default) or tp-cp-ep-pp-dp")


def diagnose(design, observed, job: Optional[str] = None, order: Optional[str] = None,
             timers: str = "auto", streams_idle: Optional[Dict] = None,
             calibration=None, option=command_line) -> Diagnosis:
    """`timers`: what the compute columns measure (compute.py): `auto` reads it from the data
    (Megatron-LM's timer names), `compute` or `megatron` says it. `streams_idle`: per rank,
    HolisticTraceAnalysis's idle time by cause (observe.hta), for the breakdown.
    `calibration`: the fit the forecast is priced with (default: the shipped one); `option`:
    how an unknown `job` is named (semantics/overrides.py: `--job NAME`, the API's `job=`)."""
    if timers not in TIMERS:          # as a field's value none of its options (E311)
        raise DiagnoseError(*_refused("E311", f"timers `{timers}` is none of "
                                      f"{', '.join(TIMERS)}", design.file,
                                      "`auto` reads them from the data (Megatron-LM's timer "
                                      "names); `compute` or `megatron` says it"))
    inst, fc, spec, diags = job_and_forecast(design, job, calibration, option)
    p = spec.parallel
    try:
        rm = rankmap_mod.build(design, inst, _sizes(p), order or _order(p))
    except rankmap_mod.RankMapError as exc:      # as a job's `order` that is not one (E759)
        if any(d.is_error for d in diags):      # the job's own errors say why (E753: an `ep`
            #                                     that does not divide tp x dp x cp, ...)
            raise DiagnoseError(f"job `{inst.template}`: {exc}", diags) from None
        message, said = _refused("E759", f"job `{inst.template}`: {exc}", design.file,
                                 ORDER_HINT)
        raise DiagnoseError(message, diags + said) from None
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
    wrong = layout.layout(traces, rm, observed)
    if wrong is not None:
        raise DiagnoseError("the observed data does not match the job's parallel layout",
                            diags + [wrong])
    iterations = checks.iterations(traces, diags)
    traces = checks.foreign(traces, rm, iterations, diags)
    if not traces:
        raise DiagnoseError("no rank of the observed data can be used", diags)
    unnamed = checks.unnamed_groups(traces)
    if unnamed is not None:
        diags.append(unnamed)
    kept = set(iterations)
    traces = {r: t if kept.issuperset(t.iterations) else
              t.select(np.isin(t.iteration, iterations)) for r, t in traces.items()}
    traces = checks.clipped(traces, rm, diags)
    if not traces:
        raise DiagnoseError("no rank of the observed data can be used", diags)
    stage = np.array([r.stage for r in rm.ranks])
    records, inst_, clk = _aligned(traces, rm)
    if len(clk.bad) > max(1, n_hosts // 4) and checks.order_fit(traces, rm) is None:
        # collectives matched by the wrong groups cannot be aligned: is it the order?
        wrong = checks.rank_order(traces, rm, lambda m: _aligned_share(traces, m, n_hosts))
        if wrong is not None:
            raise DiagnoseError("the observed data does not match the job's rank order",
                                diags + [wrong])
    host_path = {r.host_index: r.host for r in rm.ranks}
    for h in clk.bad:
        files = sorted({traces[r.rank].file for r in rm.ranks if r.host_index == h
                        and r.rank in traces})
        diags.append(_diag("E789", f"the clock of host {host_path[h]} cannot be aligned with "
                                   f"its peers' (collective ends disagree by more than "
                                   f"{clocks.RESIDUAL_S * 1e3:g} ms after fitting its offset "
                                   f"and drift, or it drifts beyond "
                                   f"{clocks.MAX_DRIFT * 1e6:g} ppm): its collectives are left "
                                   f"out", files[0] if files else None,
                           "a clock that jumped, or records from another run"))
    if timers == "megatron" and all(t.source == "kineto" for t in traces.values()):
        # a trace's kernels are compute alone: read per TP group as wall time, a GPU 12 %
        # slow was one eighth of its group's and the job `healthy`
        message, said = _refused(
            "E311", "timers `megatron` do not fit the observed data: profiler traces time each "
                    "kernel, the GPU's compute alone, not Megatron-LM's wall time of each step",
            min(t.file for t in traces.values()),
            "leave --timers to `auto` (or `compute`) for profiler traces")
        raise DiagnoseError(message, diags + said)
    timers = _timers(timers, traces)
    # a trace that shows the experts' gradients on their own group shows the dense ones apart
    apart = bool((inst_.kind == match.KIND_CODES["edp"]).any())
    fc_net = _forecast_net(fc, apart) if fc is not None else {}
    band, band_source = verdict.band_of(fc)
    fc_tp = in_blocks.forecast_tp(fc) if fc is not None else {}
    tm = evidence.timing(records, inst_, clk, stage, fc_net, fc_tp, band,
                         in_blocks.tp_domains(rm))
    files = sorted({t.file for t in traces.values()})
    if tm.unnamed.any():
        diags.append(_unnamed_dp(tm, inst_, fc_net, files, p.zero))
    if tm.unforecast.any():
        diags.append(_unforecast_dp(tm, p.zero, files))
    diags += _uncompared(tm, inst_, files, fc_tp)
    net = localise.localise(rm, inst_, tm, verdict.PRIOR_ODDS)
    tot = totals(list(traces.values()))          # per rank and iteration, counted once
    comp = evidence.compute_per_rank(traces, set(iterations), tot)
    fc_comp = _forecast_compute(fc, timers) if fc is not None else {}
    idle = evidence.idle_per_rank(traces, set(iterations), tot) if timers == "compute" else {}
    gpu = compute.find(rm, comp, iterations, fc_comp, timers, verdict.PRIOR_ODDS, idle)
    ratios = compute.forecast_ratio(evidence.stage_medians(comp, stage, iterations), fc_comp,
                                    iterations)
    slow_bf, fast_bf = compute.forecast_evidence(ratios, band)
    fc_named, fc_bf, fc_rest = [], [], []
    limit = np.log(localise.ALARM_ODDS) + np.log(2) - np.log(verdict.PRIOR_ODDS)
    for bf, faster in ((slow_bf, False), (fast_bf, True)):
        if bf >= limit:
            fc_named.append(compute.forecast_suspect(ratios, fc_comp, band, band_source,
                                                     faster, timers))
            fc_bf.append(bf)
        else:
            fc_rest.append(bf)
    fams = [(list(net.log_bf), net.rest, max(1, net.classes)),
            (list(gpu.log_bf), gpu.rest, gpu.units), (fc_bf, np.array(fc_rest), 2)]
    p_job, post, rest = verdict.weigh(fams)
    suspects = in_turn([list(net.suspects), list(gpu.suspects), fc_named], post, fams,
                       net.rounds, net.others)
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
                                   f"usable observed data: {ranges(missing)} (looked in "
                                   f"{shown or 'nothing'})", where[0] if where else None,
                           "their collectives are incomplete and left out; compute of the "
                           "ranks read is still compared"))
    fit = ClockFit(n_hosts, tuple(host_path[h] for h in clk.aligned),
                   {host_path[h]: float(clk.offsets[h]) for h in clk.aligned},
                   {host_path[h]: float(clk.drifts[h]) for h in clk.aligned},
                   tuple(host_path[h] for h in clk.bad))
    per_rank = breakdown.of_traces(traces, rm, gpu.comparisons, streams_idle)
    unnamed = dict(zip(verdict.FAMILY_NAMES, rest))
    steps = verdict.next_steps(unnamed, len(iterations), per_rank.source, timers, gpu.leading) \
        if verdict.verdict_of(any(not s.alternative for s in suspects), p_job) == \
        "inconclusive" else ""
    return Diagnosis(inst.template, rm.world, tuple(sorted(traces)), tuple(iterations),
                     tuple(suspects), tuple(diags), fc.iteration_time if fc else None, obs_iter,
                     gpu.comparisons, fit, counts, probability=p_job, timers=timers,
                     band=band, band_source=band_source,
                     compute_ratio=float(np.median(list(ratios.values()))) if ratios else None,
                     breakdown=per_rank, unnamed=unnamed, next_steps=steps)


def in_turn(found: List[List[Suspect]], post: List[List[float]], fams, net_rounds,
            net_others=()) -> List[Suspect]:
    """The suspects of each family (network, compute, forecast; `post`: their posteriors of
    the first round, `fams`: that round's factors, verdict.weigh's input), the named ones in
    the order verdict.in_turn names them; one named: with the first round's posterior, as the
    one fault; several: each with the posterior of its own round, every other named suspect
    taken as real (verdict.given_the_others; `net_others`: the network's factors with every
    other of its named suspects explained, localise.Found.others), and their paths (`given`);
    then the alternatives, with the first round's posterior (they compete with the named as
    the one fault: "explains less of it")."""
    named = [sum(not s.alternative for s in f) for f in found]
    rounds = [[fams[0][:2], *net_rounds], [fams[1][:2]], [fams[2][:2]]]
    picks = verdict.in_turn([(r, fam[2], n, f == 0) for f, (r, fam, n) in
                             enumerate(zip(rounds, fams, named))],
                            lambda f, i: (found[f][i].kind, rankmap_mod.natural(found[f][i].path)))
    if len(picks) > 1:
        each = [list(net_others) if named[0] > 1 else rounds[0][:named[0]],
                [rounds[1][0]] * named[1], [rounds[2][0]] * named[2]]
        every = [r[min(n, len(r) - 1)] if f == 0 else r[0]
                 for f, (r, n) in enumerate(zip(rounds, named))]
        picks = verdict.given_the_others([(every[f], each[f], fam[2])
                                          for f, fam in enumerate(fams)], picks)
    out = [attrs.evolve(found[f][i], probability=p,
                        given=tuple(found[g][j].path for g, j, _ in picks if (g, j) != (f, i)))
           for f, i, p in picks]
    rest = [attrs.evolve(s, probability=p) for f, ps in zip(found, post)
            for s, p in zip(f, ps) if s.alternative]
    return out + ordered(rest)


def ordered(suspects) -> List[Suspect]:
    """Suspects most likely first (the alternatives after); a tie by kind, then by path in the
    design's order (rankmap.natural: hosts[2] before hosts[10])."""
    return sorted(suspects, key=lambda s: (s.alternative, -round(s.probability, 6), s.kind,
                                           rankmap_mod.natural(s.path)))


def _refused(code: str, message: str, file, hint: str):
    """(message, [diagnostic]) of a DiagnoseError for an argument that cannot be used: a tool
    reads its code (the language's for the same mistake), a person its message."""
    return message, [_diag(code, message, file, hint)]


def _timers(timers: str, traces) -> str:
    if timers not in TIMERS:
        raise DiagnoseError(f"--timers: `{timers}` is none of {', '.join(TIMERS)}")
    if timers != "auto":
        return timers
    seen = {t.timers for t in traces.values()}
    return "megatron" if "megatron" in seen else "compute"


def _aligned(traces, rm):
    """Records matched into instances, and the hosts' clocks fitted on them."""
    records, inst = match.collect(traces, rm)
    n_hosts = max(r.host_index for r in rm.ranks) + 1
    ok = records.instance >= 0
    clk = clocks.align(records.host[ok], records.instance[ok], records.end[ok], n_hosts)
    return records, inst, clk


def _aligned_share(traces, rm, n_hosts) -> float:
    """Share of the hosts whose clocks align when collectives are matched by `rm`'s groups."""
    return 1.0 - len(_aligned(traces, rm)[2].bad) / max(1, n_hosts)


def _forecast_compute(fc, timers: str = "compute") -> Dict[int, float]:
    """Per stage: the forecast's compute per iteration (its blocks' compute operators and the
    optimizer step); with wall-time timers (`megatron`) each block's whole duration, its exposed
    TP collectives included (not its EP all-to-alls: a log gives them rows of their own)."""
    low = fc.lowering
    wall = timers == "megatron"

    def block(s, b):
        t = low.template(s, b.chunk, b.phase)
        if not wall:
            return t.compute
        # the compute stream waits for each all-to-all's operator (the hidden share aside)
        return t.duration - sum(o.dur for o in t.ops if o.stream == "ep"
                                and not o.name.endswith(" (overlapped)"))

    return {s: sum(block(s, b) for b in run.blocks) + low.optimizer_time(s)
            for s, run in enumerate(fc.runs)}


def _observed_iteration(tot) -> Optional[float]:
    """Median over ranks and iterations of the iteration's span (summary()'s span_s)."""
    spans = (tot.last - tot.first).tolist()
    return float(np.median(spans)) if spans else None


__all__ = ["DiagnoseError", "Diagnosis", "Suspect", "diagnose", "rank_map"]
