"""`astral search`: the parallel configuration of a job that trains fastest (or cheapest) on
its placement.

    from astral_dsl.explore import search
    result = search.run("examples/explore.astral", job="llama70b", top=5)
    for row in result.rows: row["config"].label(), row["tokens_per_s"], row["breakdown_s"]

Every configuration the job's placement admits (space.py) is enumerated, those a forecast
would reject are counted by rule, the rest get a lower bound of the iteration time from Seer's
operator costs of its blocks without simulating its schedule (bounds.py). Then, best bound first, a
configuration gets Seer's memory estimate (seer/memory.py) and, if it fits in the GPU's
memory, Seer's full forecast (the schedule simulated, no timeline kept). The search stops
when no bound left can beat the k-th best forecast: the top k are those an exhaustive forecast
of every configuration ranks first (tests/explore/test_search.py checks it against brute
force).

Objectives: `tokens_per_s` (the default) and `iteration_time` rank alike (the global batch is
the job's for every configuration); `cost_per_token` is the purchase cost of the GPUs a
configuration uses, with their share of everything else the design prices, written off over
`life`, per token trained: it ranks layouts on different GPU counts (`gpus`)."""
from __future__ import annotations

import heapq
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


from astral_dsl import records
from astral_dsl.model.allows import apart
from astral_dsl.explore.bundle import load_with_bundle
from astral_dsl.explore.engines import REFUSED, chunks, engine as make_engine
from astral_dsl.explore.search import space as _space
from astral_dsl.explore.search.space import Config, Counts, Space, TooLarge, enumerate_space
from astral_dsl.pools import local_workers
from astral_dsl.semantics.overrides import Option, command_line
from astral_dsl.explore.search.work import (Setup, SetupError, State, are_bounds, are_forecasts,
                                           forecast, screen)

OBJECTIVES = ("tokens_per_s", "iteration_time", "cost_per_token")
LIFE_S = 4 * 365 * 86400          # [assumed] 4-year straight-line write-off; `life` to change
# [assumed] plausibility bounds of `life`, as model/kinds.py bounds a design's values: hardware
# written off in less than a day or over more than a century is a typo (1e-300 s priced a token
# at 1.9e305 USD, 1e308 yr overflowed: E000)
LIFE_LOW_S = 86400
LIFE_HIGH_S = 100 * 365 * 86400


def life_refused(seconds: float) -> Optional[str]:
    """Why a write-off period of `seconds` cannot price a token (None: it can)."""
    if seconds <= 0:
        return "a write-off period is positive"
    if not LIFE_LOW_S <= seconds <= LIFE_HIGH_S:
        return ("a write-off period is from a day to a century (the default: 4 yr); beyond, "
                "the cost per token is an artefact of the period, not of the configuration")
    return None
# the most configurations a search ranks (--top): each ranked row is a full forecast, and a
# search forecasts at least as many configurations as it ranks and all that could beat them:
# examples/explore.astral's llama70b (40,088 admitted) ranks 10 in 4.8 s of one core, 100 in
# 9.6 s (431 forecast), 1,000 in 25 s (1,771); --top 10^9 forecast every admitted
# configuration, over 20 minutes there and hours at space.MAX_CONFIGS. A bound of its own
MAX_TOP = 1000
ROUND = 24                        # configurations refined per round (any engine, any workers)
PER_TASK = 3


class SearchError(Exception):
    """The search cannot start (a usage error), or the job cannot be searched
    (`diagnostics`)."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


@records.frozen
class SearchResult:
    file: str
    job: str
    objective: str
    space: Space
    counts: Counts
    screened: int                     # configurations with a screening bound
    memory_checked: int               # of which Seer's memory estimate was needed
    fit: int                          # of which fit in the GPU's memory: forecast fully
    rows: List[Dict[str, Any]]        # the top k, ranked: config, forecast figures, cost
    declared: Optional[Dict[str, Any]]          # the job as declared: its forecast figures
    declared_errors: Tuple[str, ...]            # or the codes that stop its forecast
    diagnostics: tuple                # W800 (cost of unpriced equipment), E800 (lost work)
    gpu: str
    gpu_memory_gb: Optional[float]
    placement: str
    placement_gpus: int
    engine: str = ""
    life_s: float = LIFE_S
    life_default: bool = True         # the life is LIFE_S, not the user's
    top: int = 10
    host_memory_gb: Optional[float] = None    # per GPU (None: the host declares none)
    # sure_fit: only configurations that fit with the memory estimate's uncertainty were ranked;
    # `unsure` of those forecast fully were left out for it (may_not_fit)
    sure_fit: bool = False
    unsure: int = 0


def refused(objective: str, top: int, option: Callable[[str], str] = "--{}".format
            ) -> Optional[str]:
    """Why `objective` or `top` cannot be searched (None: they can), naming the arguments by
    `option` (the command's `--top`; the API's `top`)."""
    if objective not in OBJECTIVES:
        return f"{option('objective')} {objective}: one of {', '.join(OBJECTIVES)}"
    if top < 1:
        return f"{option('top')} must be at least 1"
    if top > MAX_TOP:
        return (f"{option('top')} {top:,}: a search ranks at most {MAX_TOP:,} configurations "
                f"(each a full forecast, and all that could beat them forecast too): give at "
                f"most {MAX_TOP:,}, or narrow the space with {option('gpus')}")
    return None


def run(path: str, job: Optional[str] = None, objective: str = "tokens_per_s", top: int = 10,
        gpus: Sequence[int] = (), sets: Optional[Dict[str, str]] = None,
        cluster=None, workers: Optional[int] = None,
        progress: Optional[Callable[[str, int, Optional[int]], None]] = None, engine=None,
        life_s: float = LIFE_S, calibration=None, sure_fit: bool = False,
        option: Callable[[str], str] = "--{}".format,
        set_option: Option = command_line) -> SearchResult:
    """The top `top` configurations (module docstring). `option` names an argument in the
    caller's words, as for `refused` (the command's `--gpus`; the API's `gpus`), and
    `set_option` an override of `sets` (semantics/overrides.py: `--set NAME`; from_python's
    `overrides['NAME']`).
    `calibration`: Seer's constants (a seer.calibration.Calibration; default: the shipped
    fit), for the bounds and the forecasts alike. `workers`: None or 1 to 1,024 (pools.local_workers: ValueError past it,
    before any work). `sure_fit`: rank only the configurations whose memory estimate plus its
    uncertainty fits in the GPU (none that `may_not_fit`): the top k of those."""
    local_workers("workers", workers)
    why = refused(objective, top, option)
    if why is not None:
        raise SearchError(why)
    sets = dict(sets or {})
    ws, bundle = load_with_bundle(path, sets, set_option=set_option)
    base = ws.sized
    # the design's diagnostics, warnings too (W100 of an empty file), before the job's: what
    # `astral forecast` says of the same design
    # (but those its `allow`s accept, which a search's result never lists)
    said = apart(base.diagnostics, base.allows)[0]
    if not base.valid:
        raise SearchError("the design has errors", said)
    setup = Setup(tuple(sorted(sets.items())), job, tuple(sorted(set(gpus))), calibration)
    try:
        state = State(base, setup, set_option)           # an unknown job in the caller's words
    except SetupError as exc:
        raise SearchError(str(exc), said + exc.diagnostics) from None
    too_many = [n for n in setup.gpus if n > state.cluster.gpus or n < 1]
    if too_many:
        raise SearchError(f"{option('gpus')} {too_many[0]}: the placement `{state.cluster.placement}` "
                          f"holds {state.cluster.gpus:,} GPUs")
    diagnostics: List[Any] = []
    weight = _weights(objective, ws, state, life_s, diagnostics, option)
    try:
        configs, counts = enumerate_space(state.space)
    except TooLarge as exc:
        raise SearchError(str(exc), [_too_large(exc, state, bundle, option)]) from None
    eng = engine or make_engine(cluster, workers)
    cap = state.cluster.gpu.memory / 1e9 if state.cluster.gpu.memory else None
    try:
        handle = eng.scatter(bundle) if hasattr(eng, "scatter") else bundle
        screened = _screen(eng, handle, setup, configs, progress, diagnostics, bundle)
        found, tally = _best_first(eng, handle, setup, configs, screened, weight, top,
                                   progress, diagnostics, bundle, cap if sure_fit else None)
    finally:
        if engine is None and hasattr(eng, "close"):
            eng.close()
    rows = []
    for rank, (score, i, row) in enumerate(found[:top], 1):
        c = configs[i]
        out = {"rank": rank, "config": c, **row}
        out["may_not_fit"] = may_not_fit(row, cap)
        if objective == "cost_per_token" or weight.priced:
            out["cost_per_token_usd"] = weight.cost_per_token(c.gpus, row["iteration_time_s"])
        rows.append(out)
    declared, declared_errors = _declared(state, weight)
    diagnostics += _outside(state)
    return SearchResult(
        base.file, state.job.template, objective, state.space, counts, len(screened),
        tally.memory_checked, tally.fit, rows, declared, declared_errors, tuple(diagnostics),
        state.cluster.gpu.name,
        state.cluster.gpu.memory / 1e9 if state.cluster.gpu.memory else None,
        state.cluster.placement, state.cluster.gpus, eng.description, life_s,
        life_s == LIFE_S, top,
        None if state.cluster.gpu.host_memory is None else state.cluster.gpu.host_memory / 1e9,
        sure_fit, tally.unsure)


@records.frozen
class _Weight:
    """score = weight(config) x iteration time; lower is better."""
    per_gpu_usd: Optional[float] = None     # cost_per_token: the design's cost per GPU
    tokens: float = 1.0                     # per iteration
    life_s: float = LIFE_S
    by_cost: bool = False

    @property
    def priced(self) -> bool:
        return self.per_gpu_usd is not None

    def __call__(self, c: Config) -> float:
        return c.gpus * self.per_gpu_usd if self.by_cost else 1.0

    def cost_per_token(self, gpus: int, seconds: float) -> Optional[float]:
        """USD per token: the GPUs' share of the priced equipment over its life."""
        if self.per_gpu_usd is None:
            return None
        return gpus * self.per_gpu_usd * seconds / self.life_s / self.tokens


def _weights(objective: str, ws, state, life_s: float, diagnostics,
             option: Callable[[str], str]) -> _Weight:
    """Prices, when the design declares any (W800 names what has none); `option` as run's."""
    from astral_dsl.pipeline import check
    from astral_dsl.explore.cost import priced, priced_cost
    from astral_dsl.model.rollup import count_of

    tokens = float(state.space.batch * state.spec.seq)
    cost, unpriced = (None, None)
    base = ws.sized
    if priced(base):
        checked = check(ws)
        if checked.engineering is not None:
            cost, unpriced = priced_cost(checked.design, checked.engineering)
    if cost is None:
        if objective == "cost_per_token":
            raise SearchError(f"{option('objective')} cost_per_token needs prices: declare a "
                              f"`price` on the hosts (or the GPUs) and the other equipment")
        return _Weight(tokens=tokens, life_s=life_s)
    if unpriced is not None:
        diagnostics.append(unpriced)
    cache: dict = {}
    design_gpus = sum(count_of(r, ("gpu",), cache) for r in base.roots) or 1
    return _Weight(cost / design_gpus, tokens, life_s, objective == "cost_per_token")


def _screen(eng, handle, setup, configs, progress, diagnostics, bundle) -> Dict[int, float]:
    """config index -> its screening bound (seconds); lost ones are left out (E800)."""
    families: Dict[Config, List[int]] = {}
    for i, c in enumerate(configs):
        families.setdefault(c.family(), []).append(i)
    order = list(families.items())
    parts = chunks(len(order), getattr(eng, "workers", 1), largest=64)
    tasks = [(screen, (handle, setup, [(order[k][0], [(configs[i].micro, configs[i].zero)
                                                      for i in order[k][1]])
                                       for k in part])) for part in parts]
    finished = [0]

    def done(k: int) -> None:
        finished[0] += len(parts[k])
        if progress is not None:
            progress("screening", finished[0], len(order))

    gone: List[Tuple[int, str]] = []
    results = eng.run(tasks, done, lambda k, why: gone.append((k, why)))
    out: Dict[int, float] = {}
    for t, (part, result) in enumerate(zip(parts, results)):
        if not are_bounds(result, [len(order[k][1]) for k in part]):
            if t not in dict(gone):                  # from another version, or a rogue
                gone.append((t, REFUSED))
            continue
        for k, bounds in zip(part, result):
            out.update(zip(order[k][1], bounds))
    if gone:
        diagnostics.append(_lost(len(configs) - len(out), gone[0][1], bundle))
    return out


@records.define
class _Tally:
    memory_checked: int = 0
    fit: int = 0
    unsure: int = 0               # of `fit`: left out, they may not fit (sure_fit)
    lost: int = 0
    why: str = ""


def _best_first(eng, handle, setup, configs, screened, weight, top, progress, diagnostics,
                bundle, sure_cap: Optional[float] = None):
    """The top configurations by their full forecasts, (score, index, forecast row) sorted,
    and the tally of the work done: best bound first, until no bound left can beat the k-th
    best forecast. `sure_cap`: the GPU's memory in GB, when only the configurations that fit
    with the estimate's uncertainty are ranked (a bound stays a bound of those: the k-th best
    of fewer is no better, so the search goes on at least as far)."""
    heap = [(b * weight(configs[i]), i) for i, b in screened.items()]
    heapq.heapify(heap)
    found: List[Tuple[float, int, Dict[str, Any]]] = []
    tally = _Tally()
    while heap:
        threshold = found[top - 1][0] if len(found) >= top else float("inf")
        batch = []
        while heap and len(batch) < ROUND and heap[0][0] <= threshold:
            batch.append(heapq.heappop(heap)[1])
        if not batch:
            break
        parts = [batch[k:k + PER_TASK] for k in range(0, len(batch), PER_TASK)]
        tasks = [(forecast, (handle, setup, [configs[i] for i in part])) for part in parts]
        gone: List[Tuple[int, str]] = []
        results = eng.run(tasks, lambda k: None, lambda k, why: gone.append((k, why)))
        for t, (part, result) in enumerate(zip(parts, results)):
            if not are_forecasts(result, len(part)):   # lost, or another version's, a rogue's
                tally.lost += len(part)
                tally.why = dict(gone).get(t, REFUSED)
                continue
            for i, (fits, _, row) in zip(part, result):
                tally.memory_checked += 1
                if fits:
                    tally.fit += 1
                    if sure_cap is not None and may_not_fit(row, sure_cap):
                        tally.unsure += 1
                        continue
                    found.append((row["iteration_time_s"] * weight(configs[i]), i, row))
        found.sort(key=lambda t: (t[0], configs[t[1]]))
        del found[top:]               # only the top k are kept (each row holds its breakdown)
        if progress is not None:
            progress("forecasting", tally.fit, None)
    if tally.lost:
        diagnostics.append(_lost(tally.lost, tally.why, bundle))
    return found, tally


def may_not_fit(row: Dict[str, Any], cap_gb: Optional[float]) -> bool:
    """Whether a configuration that fits by Seer's memory estimate may not fit by its stated
    uncertainty: the estimate plus its uncertainty exceeds the GPU (W750 tests the estimate
    alone; `astral forecast` says "may not fit" beside its memory by this test)."""
    from astral_dsl.seer.memory import may_not_fit as exceeds

    return exceeds(row["memory_gb"], row["memory_uncertainty_gb"], cap_gb)


def _lost(n: int, why: str, bundle):
    from astral_dsl.diagnostics import Diagnostic, Severity

    return Diagnostic("E800", Severity.ERROR, f"{n:,} configurations were not evaluated: {why}",
                      None, "run the search again: the ranking may miss them",
                      file=bundle.entry_name)


def _too_large(exc: TooLarge, state, bundle, option: Callable[[str], str]):
    """E803: the space beyond the search's budget (space.MAX_CONFIGS), said before any work;
    `option` as run's (the hints name `--gpus`, from the API `gpus`)."""
    from astral_dsl.diagnostics import Diagnostic, Severity

    gpus, k = state.space.gpus, exc.counts
    micro = ("the micro-batches searched are the divisors of the global batch: a batch with "
             f"fewer divisors, or a smaller GPU count ({option('gpus')})")
    if len(gpus) == 1:
        where, hint = f"{gpus[0]:,} GPUs", micro
    elif k == 1:
        where, hint = f"{gpus[0]:,} GPUs, the first of the {len(gpus):,} GPU counts,", micro
    else:
        counts = f"the first {k:,} of the {len(gpus):,}" if k < len(gpus) else f"the {k:,}"
        where = f"{counts} GPU counts from {gpus[0]:,} to {gpus[-1]:,}"
        hint = (f"search fewer GPU counts at a time ({option('gpus')} with a larger step, or "
                f"a list)")
    return Diagnostic("E803", Severity.ERROR,
                      f"job `{state.job.template}`: {where} admit more than {_space.MAX_CONFIGS:,} "
                      f"parallel configurations, beyond what a search takes (README, Limits)",
                      None, hint, file=bundle.entry_name)


def _outside(state) -> list:
    """W753 when the job's regime (its GPU, precision, attention, MoE, framework: what every
    configuration searched shares) is outside the calibrated envelope, as `forecast` says it."""
    from astral_dsl.seer.calibration import shipped
    from astral_dsl.seer.envelope import envelope, outside_warning

    cal = state.calibration if state.calibration is not None else shipped()
    env = envelope(state.spec, state.cluster.gpu.name, cal)
    return outside_warning(state.job, env, None if cal == shipped() else cal)


def _declared(state, weight):
    """The job as declared: its forecast figures, or the codes of what stops it."""
    from astral_dsl import seer
    from astral_dsl.explore.search.work import forecast_row

    try:
        fc = seer.forecast(state.design, job=state.job.template, calibration=state.calibration)
    except seer.ForecastError as exc:
        codes = sorted({d.code for d in exc.diagnostics if d.is_error}) or ["E758"]
        return None, tuple(codes)
    row = forecast_row(fc)
    p = fc.job.parallel
    row["label"] = Config(p.gpus, p.tp, p.pp, p.dp, p.cp, p.ep, p.v, fc.job.micro,
                          fc.job.recompute, p.zero, p.stages).label()
    row["cost_per_token_usd"] = weight.cost_per_token(p.gpus, fc.iteration_time)
    return row, ()


__all__ = ["MAX_TOP", "OBJECTIVES", "SearchError", "SearchResult", "run"]
