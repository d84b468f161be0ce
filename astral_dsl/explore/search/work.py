"""The work of a search where a worker runs it: from the design's source text (bundle.py) and
the `--set` overrides, the job as Seer reads it, then `screen` (the profile bound of every
configuration of a group) and `refine` (Seer's memory estimate, the template bound, and the
full forecast when that bound cannot rule it out). Results are plain data; a process keeps what it priced
(templates, profiles) for the tasks that follow."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import attrs

from astral_dsl.explore.bundle import Bundle, lay_out
from astral_dsl.explore.search.bounds import (Profile, Tail, refine_bound, screen_bound,
                                              template_key)
from astral_dsl.explore.search.space import Config, Space


class SetupError(Exception):
    """The job cannot be searched: its diagnostics (or a message)."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


@attrs.frozen
class Setup:
    overrides: Tuple[Tuple[str, str], ...]
    job: Optional[str]
    gpus: Tuple[int, ...] = ()          # () : the job's GPU count


class State:
    """The job of one design, as Seer reads it, and what has been priced for it."""

    def __init__(self, design, setup: Setup):
        from astral_dsl import seer
        from astral_dsl.seer.costs import Costs
        from astral_dsl.seer.job import declared

        self.design = design
        try:
            self.job = seer.find_job(design, setup.job)
        except seer.ForecastError as exc:
            raise SetupError(str(exc)) from None
        diags, spec, cluster = seer.validate_job(design, self.job)
        self.declared_diagnostics = diags
        if spec is None or cluster is None:
            raise SetupError(f"job `{self.job.template}` cannot be forecast",
                             [d for d in diags if d.is_error])
        self.spec, self.cluster = spec, cluster
        gpus = setup.gpus or (spec.gpus or cluster.gpus,)
        self.space = Space.of(spec, gpus, declared(self.job))
        self.costs = Costs(cluster.gpu, spec.dtype)
        self.profiles: Dict[tuple, Profile] = {}
        self.tails: Dict[Config, Tuple[Any, Tail]] = {}
        self.templates: Dict[tuple, dict] = {}
        self.hops: Dict[Config, float] = {}
        self.splits: Dict[tuple, tuple] = {}

    def group(self, config: Config):
        """(a Lowering of the configuration's layout, split and ZeRO stage, its Tail): the
        parameters a rank holds and what follows the backward depend on nothing else."""
        from astral_dsl.seer.lower import Lowering

        key = attrs.evolve(config.group(), recompute="none")
        hit = self.tails.get(key)
        if hit is None:
            low = Lowering(config.spec(self.space), self.costs, self.cluster.net)
            hit = self.tails[key] = (low, Tail(low))
        return hit

    def hop(self, config: Config) -> float:
        """One activation's transfer between neighbouring stages (lower.p2p_time)."""
        from astral_dsl.seer.lower import Lowering

        if config.pp == 1:
            return 0.0
        key = attrs.evolve(config, v=1, recompute="none", zero=0)
        hit = self.hops.get(key)
        if hit is None:
            hit = self.hops[key] = Lowering(key.spec(self.space), self.costs,
                                            self.cluster.net).p2p_time()
        return hit

    def chunks(self, spec):
        """spec.chunk_layers, once per split."""
        from astral_dsl.seer.spec import chunk_layers

        par = spec.parallel
        key = (par.pp, par.v, par.stages)
        hit = self.splits.get(key)
        if hit is None:
            hit = self.splits[key] = chunk_layers(spec)
        return hit

    def profile(self, config: Config, tp_layout) -> Profile:
        key = (config.tp, config.cp, config.ep, config.micro, config.recompute)
        hit = self.profiles.get(key)
        if hit is None:
            hit = self.profiles[key] = Profile(config.spec(self.space), self.costs,
                                               self.cluster.net, tp_layout)
        return hit

    def lowering(self, config: Config):
        """A Lowering of the configuration whose templates are shared with every other one
        of equal template key (bounds.template_key)."""
        from astral_dsl.seer.lower import Lowering

        low = Lowering(config.spec(self.space), self.costs, self.cluster.net)
        low._cache = self.templates.setdefault(template_key(low), {})
        return low


_STATES: Dict[tuple, State] = {}


def state_of(bundle: Bundle, setup: Setup) -> State:
    from astral_dsl.explore.point import compiled

    key = (bundle.digest, setup)
    hit = _STATES.get(key)
    if hit is None:
        entry, _ = lay_out(bundle)
        hit = _STATES[key] = State(compiled(str(entry), dict(setup.overrides)), setup)
    return hit


def memory_fits(state: State, config: Config, low) -> Tuple[bool, float]:
    """Seer's per-GPU estimate (memory.py) against the GPU's memory."""
    from astral_dsl.seer.memory import estimate

    est = estimate(config.spec(state.space), low.stage_params)
    cap = state.cluster.gpu.memory
    return (not cap or est.total <= cap), est.total


def screen(bundle: Bundle, setup: Setup, groups: Sequence[Tuple[Config, Sequence[int]]]
           ) -> List[List[float]]:
    """For each group (a configuration without its micro-batch, and the micro-batches to
    try): the screening bound of each (bounds.screen_bound), in seconds."""
    state = state_of(bundle, setup)
    out = []
    for group, micros in groups:
        rows = []
        for b in micros:
            config = attrs.evolve(group, micro=b)
            low, tail = state.group(config)
            spec = config.spec(state.space)
            rows.append(screen_bound(spec, state.profile(config, low.groups["tp"]), tail,
                                     state.hop(config), state.chunks(spec)))
        out.append(rows)
    return out


def refine(bundle: Bundle, setup: Setup, items: Sequence[Tuple[Config, float]]
           ) -> List[Tuple[bool, float, Optional[float], Optional[Dict[str, Any]]]]:
    """For each (configuration, time threshold): (fits in memory, the estimate in bytes, the
    template bound when it fits, its full forecast (forecast_row) when that bound is not
    above the threshold)."""
    from astral_dsl import seer

    state = state_of(bundle, setup)
    out = []
    for config, threshold in items:
        low, tail = state.group(config)
        ok, total = memory_fits(state, config, low)
        if not ok:
            out.append((False, total, None, None))
            continue
        b = refine_bound(state.lowering(config), tail)
        row = None
        if b <= threshold:
            fc = seer.run(config.spec(state.space), state.cluster.gpu, state.cluster.net)
            row = forecast_row(fc)
        out.append((True, total, b, row))
    return out


def forecast_row(fc) -> Dict[str, Any]:
    """The figures of a full forecast a search reports."""
    from astral_dsl.outputs.forecast.report import BREAKDOWN_LABELS

    return {"iteration_time_s": fc.iteration_time, "tokens_per_s": fc.tokens_per_s,
            "mfu": fc.mfu, "hfu": fc.hfu, "memory_gb": fc.memory.total / 1e9,
            "memory_uncertainty_gb": fc.memory.uncertainty / 1e9,
            "memory_stage": fc.memory.stage, "breakdown_stage": fc.stage,
            "breakdown_s": {k: fc.breakdown.get(k, 0.0) for k, _ in BREAKDOWN_LABELS}}
