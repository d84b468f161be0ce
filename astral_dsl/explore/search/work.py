"""The work of a search where a worker runs it: from the design's source text (bundle.py) and
the `--set` overrides, the job as Seer reads it, then `screen` (the lower bound of every
configuration of a family) and `forecast` (Seer's memory estimate, and Seer's full forecast
of what fits). Results are plain data; a process keeps what it priced (profiles, the parameters
a layout holds) for the tasks that follow: the States of the KEEP_STATES searches it served last
(`state_of`), each holding figures and arrays, not Lowerings (every State was kept for as long as
the process lived, each with a Lowering per layout it priced: 2,799 for benchmarks/
gpt3_a100.astral; benchmarks/bench_retention.py measures what is kept)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import attrs

from astral_dsl import records
from astral_dsl.explore.bundle import Bundle, laid_out
from astral_dsl.explore.search.bounds import Profile, Split, Tail, finish, screen_ends
from astral_dsl.explore.search.space import Config, Space
from astral_dsl.kept import Kept
from astral_dsl.semantics.overrides import command_line


class SetupError(Exception):
    """The job cannot be searched: its diagnostics (or a message)."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


@records.frozen
class Setup:
    overrides: Tuple[Tuple[str, str], ...]
    job: Optional[str]
    gpus: Tuple[int, ...] = ()          # () : the job's GPU count
    calibration: Any = None             # seer.calibration.Calibration (None: the shipped fit)


@records.frozen(eq=False)
class Layout:
    """What a search reads of a configuration's Lowering beyond its Tail: its communication
    groups (comm_groups.groups: shared, never changed) and the parameters one rank of each stage
    holds (Lowering.stage_params, which Tail has already computed for every stage). Kept in
    place of the Lowering, with its job, costs, memos and views, and its operator templates
    once anything asks for one."""
    groups: Dict[str, Any]
    params: Tuple[float, ...]

    def stage_params(self, stage: int) -> float:
        return self.params[stage]


class State:
    """The job of one design, as Seer reads it, and what has been priced for it."""

    def __init__(self, design, setup: Setup, option=command_line):
        """`option`: how an unknown job is named (seer.unknown_job; default: `--job NAME`)."""
        from astral_dsl import seer
        from astral_dsl.seer.costs import Costs
        from astral_dsl.seer.job import declared
        from astral_dsl.seer.validate_gpu import gpu_data

        self.design = design
        try:
            self.job = seer.find_job(design, setup.job, option)
        except seer.ForecastError as exc:       # no job, or an unknown --job (E221)
            raise SetupError(str(exc), exc.diagnostics) from None
        diags, spec, cluster = seer.validate_job(design, self.job)
        if spec is None or cluster is None:
            raise SetupError(f"job `{self.job.template}` cannot be forecast",
                             [d for d in diags if d.is_error])
        gpus = setup.gpus or (spec.gpus or cluster.gpus,)
        # what no parallel configuration mends: a figure of the GPU Seer prices every
        # configuration of these GPU counts with (E758; it divided by a missing one)
        hardware = gpu_data(design, self.job, cluster, max(gpus), spec.dtype)
        if hardware:
            raise SetupError(f"job `{self.job.template}` cannot be forecast", hardware)
        self.spec, self.cluster = spec, cluster
        self.space = Space.of(spec, gpus, declared(self.job))
        self.calibration = setup.calibration
        self.costs = Costs.of(spec, cluster.gpu, calibration=setup.calibration)
        self.profiles: Dict[tuple, Profile] = {}
        self.tails: Dict[tuple, Tuple[Any, Tail]] = {}
        self.hops: Dict[tuple, float] = {}
        self.splits: Dict[tuple, tuple] = {}

    def group(self, config: Config) -> Tuple[Layout, Tail]:
        """(the Layout of the configuration's layout, split and ZeRO stage, its Tail): the
        parameters a rank holds and what follows the backward depend on nothing else."""
        from astral_dsl.seer.lower import Lowering

        c = config
        key = (c.gpus, c.tp, c.pp, c.dp, c.cp, c.ep, c.v, c.zero, c.stages)
        hit = self.tails.get(key)
        if hit is None:
            low = Lowering(config.spec(self.space), self.costs, self.cluster.net)
            tail = Tail(low)
            params = tuple(low.stage_params(i) for i in range(c.pp))
            hit = self.tails[key] = (Layout(low.groups, params), tail)
        return hit

    def hop(self, config: Config) -> float:
        """One activation's transfer between neighbouring stages: the fastest boundary's
        (lower_comm.p2p_hops; a lower bound of every transfer, as the bounds need)."""
        from astral_dsl.seer.lower import Lowering

        c = config
        if c.pp == 1:
            return 0.0
        key = (c.gpus, c.tp, c.pp, c.dp, c.cp, c.ep, c.micro, c.stages)
        hit = self.hops.get(key)
        if hit is None:
            one = attrs.evolve(config, v=1, recompute="none", zero=0)
            hit = self.hops[key] = min(Lowering(one.spec(self.space), self.costs,
                                                self.cluster.net).p2p_hops())
        return hit

    def split(self, spec) -> Split:
        """bounds.Split of stages.chunk_layers, once per split."""
        from astral_dsl.seer.stages import chunk_layers

        par = spec.parallel
        key = (par.pp, par.v, par.stages)
        hit = self.splits.get(key)
        if hit is None:
            hit = self.splits[key] = Split(chunk_layers(spec))
        return hit

    def profile(self, config: Config, tp_layout) -> Profile:
        """The compute profile (bounds.Profile), without ZeRO-3's gathers."""
        key = (config.tp, config.cp, config.ep, config.micro, config.recompute)
        hit = self.profiles.get(key)
        if hit is None:
            job = attrs.evolve(config, zero=0).spec(self.space)
            hit = self.profiles[key] = Profile(job, self.costs, self.cluster.net, "tp",
                                               tp_layout, "compute")
        return hit

    def dp_profile(self, config: Config, dp_layout) -> Optional[Profile]:
        """ZeRO-3's data-parallel stream profile (bounds.Profile); None without ZeRO-3."""
        if config.zero < 3 or dp_layout.n <= 1:
            return None
        key = (config.tp, config.cp, config.ep, dp_layout)
        hit = self.profiles.get(key)
        if hit is None:
            job = attrs.evolve(config, micro=1, recompute="none").spec(self.space)
            hit = self.profiles[key] = Profile(job, self.costs, self.cluster.net, "dp",
                                               dp_layout, "dp")
        return hit

# the States of the most recent searches a process served (a worker's tasks of one search
# share one; a long-lived process, an editor's or a design tool's, searches many designs)
KEEP_STATES = 4
_STATES = Kept(KEEP_STATES)


def state_of(bundle: Bundle, setup: Setup) -> State:
    """The State of the bundle's design under `setup`, made once and kept while it is among the
    KEEP_STATES most recently used."""
    from astral_dsl.explore.point import workspace

    key = (bundle.digest, setup)
    hit = _STATES.get(key)
    if hit is None:
        with laid_out(bundle) as (entry, _):
            ws = workspace(str(entry))
            hit = _STATES.put(key, State(ws.sized_of(ws.compile(
                overrides=dict(setup.overrides))), setup))
    return hit


def fitting(state: State, config: Config, low: Layout
            ) -> Tuple[bool, float, Tuple[Any, ...]]:
    """(whether the configuration fits in the GPU's memory, Seer's per-GPU estimate in bytes
    (memory.py), the JobSpecs to forecast: the configuration itself when it fits; otherwise
    the ways to make it fit that the rule weighs, of which the search keeps the faster
    (`forecast`): the fewest offloaded layers, for a job that leaves offloading open (no
    `offload_layers` declared; seer.rule.offloading: one pipeline stage, Megatron-LM, a host
    link, within the host's memory), and for a configuration that recomputes nothing, the
    fewest layers of each chunk recomputed whole (seer.rule.partial_recompute: Megatron-LM)."""
    from astral_dsl.seer import rule
    from astral_dsl.seer.memory import estimate

    spec = config.spec(state.space)
    est = estimate(spec, low.stage_params)
    cap = state.cluster.gpu.memory
    if not cap or est.total <= cap:
        return True, est.total, (spec,)
    gpu, costs, net = state.cluster.gpu, state.costs, state.cluster.net
    found = []
    if not state.space.offload_declared:
        found.append(rule.offloading(spec, gpu, costs, net))
    if spec.recompute == "none":
        found.append(rule.partial_recompute(spec, gpu, costs, net))
    ways = tuple(c for c in found if c is not None)
    if ways:
        return True, min(c.memory.total for c in ways), tuple(c.job for c in ways)
    return False, est.total, (spec,)


def screen(bundle: Bundle, setup: Setup, families: Sequence[Tuple[Config, Sequence[Tuple[int, int]]]]
           ) -> List[List[float]]:
    """For each family (a configuration without its micro-batch and ZeRO stage, and the
    (micro-batch, ZeRO stage) pairs to try): the screening bound of each (bounds.screen_bound),
    in seconds. The pipeline part is priced once per micro-batch: ZeRO changes the tail only."""
    state = state_of(bundle, setup)
    out = []
    for family, members in families:
        rows, ends = [], {}
        f = family
        for micro, zero in members:
            config = Config(f.gpus, f.tp, f.pp, f.dp, f.cp, f.ep, f.v, micro, f.recompute, zero,
                            f.stages)
            low, tail = state.group(config)
            dp = state.dp_profile(config, low.groups["dp"])
            key = (micro, dp is not None)
            if key not in ends:
                spec = config.spec(state.space)
                ends[key] = screen_ends(spec, state.profile(config, low.groups["tp"]),
                                        state.hop(config), state.split(spec), dp)
            rows.append(0.0 if ends[key] is None else finish(ends[key], tail))
        out.append(rows)
    return out


def forecast(bundle: Bundle, setup: Setup, configs: Sequence[Config]
             ) -> List[Tuple[bool, float, Optional[Dict[str, Any]]]]:
    """For each configuration: (fits in memory, Seer's estimate in bytes, its full forecast
    (forecast_row) when it fits, with the layers it offloads to fit: `fitting`)."""
    from astral_dsl import seer

    state = state_of(bundle, setup)
    out = []
    for config in configs:
        low, _ = state.group(config)
        ok, total, specs = fitting(state, config, low)
        row = None
        if ok:
            fc = fastest(seer.run(spec, state.cluster.gpu, state.cluster.net,
                                  calibration=state.calibration) for spec in specs)
            row = forecast_row(fc)
            total = fc.memory.total
        out.append((ok, total, row))
    return out


def fastest(forecasts):
    """The forecast of the shortest iteration (the first of equals)."""
    best = None
    for fc in forecasts:
        if best is None or fc.iteration_time < best.iteration_time:
            best = fc
    return best


def forecast_row(fc) -> Dict[str, Any]:
    """The figures of a full forecast a search reports, with its envelope (seer/envelope.py:
    how far to trust it)."""
    from astral_dsl.outputs.forecast.report import BREAKDOWN_LABELS

    return {"iteration_time_s": fc.iteration_time, "tokens_per_s": fc.tokens_per_s,
            "mfu": fc.mfu, "hfu": fc.hfu, "memory_gb": fc.memory.total / 1e9,
            "memory_uncertainty_gb": fc.memory.uncertainty / 1e9,
            "memory_stage": fc.memory.stage, "breakdown_stage": fc.stage,
            "offload_layers": fc.job.offload_layers or 0,
            "offloaded_gb": fc.memory.offloaded / 1e9,
            "recompute": fc.job.recompute,
            "recompute_layers": fc.job.recompute_layers if fc.job.recompute == "full" else None,
            "breakdown_s": {k: fc.breakdown.get(k, 0.0) for k, _ in BREAKDOWN_LABELS},
            "calibration": fc.envelope().as_json()}


# ---- what the client accepts as a worker's answer (engines.py: a rogue or mismatched worker) ----
_NUMBERS = ("iteration_time_s", "tokens_per_s", "mfu", "hfu", "memory_gb",
            "memory_uncertainty_gb", "offloaded_gb")
_COUNTS = ("memory_stage", "breakdown_stage", "offload_layers")


def is_forecast_row(v: Any) -> bool:
    """Whether `v` has the shape of forecast_row's answers: what the search and its outputs
    read."""
    from astral_dsl.explore.point import is_envelope, number

    return (type(v) is dict and set(v) == set(_NUMBERS + _COUNTS) | {
        "recompute", "recompute_layers", "breakdown_s", "calibration"}
            and all(number(v[k]) for k in _NUMBERS) and all(type(v[k]) is int for k in _COUNTS)
            and type(v["recompute"]) is str
            and (v["recompute_layers"] is None or type(v["recompute_layers"]) is int)
            and type(v["breakdown_s"]) is dict
            and all(type(k) is str and number(x) for k, x in v["breakdown_s"].items())
            and is_envelope(v["calibration"]))


def are_bounds(v: Any, sizes: Sequence[int]) -> bool:
    """Whether a screening chunk's answer is a list of bounds (numbers) per family, each family
    of the size given."""
    from astral_dsl.explore.point import number

    return (type(v) is list and len(v) == len(sizes) and all(
        type(b) is list and len(b) == n and all(number(x) for x in b) for b, n in zip(v, sizes)))


def are_forecasts(v: Any, n: int) -> bool:
    """Whether a forecasting chunk's answer is n triples (fits, bytes, row or None)."""
    from astral_dsl.explore.point import number

    return type(v) is list and len(v) == n and all(
        type(t) in (list, tuple) and len(t) == 3 and type(t[0]) is bool and number(t[1])
        and (t[2] is None if not t[0] else is_forecast_row(t[2])) for t in v)
