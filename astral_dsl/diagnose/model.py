"""What a diagnosis says: ranked suspects with their evidence, per-rank comparisons and the
diagnostics of the input."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.analyses.rankmap import natural
from astral_dsl.diagnose.verdict import FAMILY_NAMES, verdict_of
from astral_dsl.diagnostics import Diagnostic


@records.frozen
class Evidence:
    what: str                          # e.g. "compute per iteration", "DP all-reduce"
    expected_s: Optional[float]        # peers' median (or the forecast when peers are few)
    observed_s: Optional[float]
    forecast_s: Optional[float] = None
    ranks: Tuple[int, ...] = ()
    iterations: Tuple[int, ...] = ()
    slow: int = 0                      # instances observed slow
    total: int = 0                     # instances that cross the part

    def to_json(self) -> Dict:
        return {"what": self.what, "expected_s": self.expected_s, "observed_s": self.observed_s,
                "forecast_s": self.forecast_s, "ranks": list(self.ranks),
                "iterations": list(self.iterations), "slow": self.slow, "total": self.total}


@records.frozen
class Observation:
    """One slow collective or transfer a suspect explains: who took part, when, how long."""
    what: str                          # "pipeline transfer", "DP collective", ...
    ranks: Tuple[int, ...]             # a transfer: (sender, receiver); a collective: members
    iteration: int
    expected_s: float
    observed_s: float
    occurrence: int = 0                # the k-th of its kind between these ranks in the iteration

    def to_json(self) -> Dict:
        return {"what": self.what, "ranks": list(self.ranks), "iteration": self.iteration,
                "occurrence": self.occurrence, "expected_s": self.expected_s,
                "observed_s": self.observed_s}


@records.frozen
class Suspect:
    kind: str                          # gpu, host, nic port, link, switch, tier, software,
    #                                    forecast
    path: str                          # the stable name of the part; a tie of several:
    #                                    their names joined by " or " (`tied` lists them)
    # every part the evidence cannot tell apart, in the design's order (rankmap.natural:
    # hosts[2] before hosts[10]), as paths and groups list them
    parts: Tuple[str, ...] = attrs.field(converter=lambda ps: tuple(sorted(ps, key=natural)))
    probability: float                 # 0..1, posterior; one named suspect and the
    #                                    alternatives compete; several named: each is given
    #                                    `given`, the others
    summary: str
    evidence: Tuple[Evidence, ...] = ()
    note: str = ""
    alternative: bool = False          # explains less than the suspects before it
    supports: str = ""                 # the observations that support it
    contradicts: str = ""              # ... and those that speak against it
    slow: Tuple[Observation, ...] = ()  # a network suspect: the slowest instances it explains
    tied: Tuple[str, ...] = ()         # a tie: the name of each part the evidence cannot tell
    #                                    apart from the others (localise.py, TIE), by name
    # with several named: the paths of the other named suspects, in the order named; its
    # probability is that of a round of its own, given that they are real and explain what
    # they do (verdict.given_the_others); empty with one named and for the alternatives
    given: Tuple[str, ...] = ()

    def covers(self, part: str) -> bool:
        """Whether `part` (a switch, port, link or GPU name) is one of this suspect's parts, or
        a switch of one of its tier groups."""
        if part in self.parts:
            return True
        return any(part.startswith(p + "[") for p in self.parts) or any(
            part.startswith(p + " -- ") or part.endswith(" -- " + p) for p in self.parts)

    def to_json(self) -> Dict:
        return {"kind": self.kind, "path": self.path, "parts": list(self.parts),
                "probability": round(self.probability, 4),
                **({"given": list(self.given)} if self.given else {}),
                "summary": self.summary,
                "evidence": [e.to_json() for e in self.evidence],
                "supports": self.supports, "contradicts": self.contradicts,
                "slow": [o.to_json() for o in self.slow],
                **({"tied": list(self.tied)} if self.tied else {}),
                **({"note": self.note} if self.note else {}),
                **({"alternative": True} if self.alternative else {})}


@records.frozen
class RankComparison:
    rank: int
    stage: int
    compute_s: float                   # median per iteration
    peers_s: float                     # median of its stage's ranks
    forecast_s: Optional[float]

    @property
    def ratio(self) -> float:
        return self.compute_s / self.peers_s if self.peers_s > 0 else 1.0


@records.frozen(eq=False)
class ClockFit:
    """The hosts' fitted clocks, by name: offset (seconds) and drift (1e-6: 1 ppm)."""
    hosts: int                         # hosts of the job
    aligned: Tuple[str, ...]           # hosts whose clocks the collectives fitted
    offsets_s: Dict[str, float] = attrs.field(factory=dict)
    drifts: Dict[str, float] = attrs.field(factory=dict)
    unaligned: Tuple[str, ...] = ()    # hosts that cannot be aligned (E789)

    def to_json(self) -> Dict:
        return {"hosts": self.hosts, "aligned": len(self.aligned),
                "unaligned": list(self.unaligned), "offsets_s": self.offsets_s,
                "drift_ppm": {h: round(d * 1e6, 4) for h, d in self.drifts.items()}}


@records.frozen(eq=False)
class Diagnosis:
    job: str
    world: int
    ranks_read: Tuple[int, ...]
    iterations: Tuple[int, ...]
    suspects: Tuple[Suspect, ...]
    diagnostics: Tuple[Diagnostic, ...]
    forecast_iteration_s: Optional[float]
    observed_iteration_s: Optional[float]
    compute: Tuple[RankComparison, ...] = ()
    clocks: Optional[ClockFit] = None
    instances: Dict[str, Tuple[int, int]] = attrs.field(factory=dict)   # kind -> (total, slow)
    notes: Tuple[str, ...] = ()
    probability: float = 0.0           # that something is wrong with the job (verdict.py)
    timers: str = "compute"            # what the compute columns measured (RankTrace.timers)
    band: Tuple[float, float] = (1.0, 1.0)   # observed / forecast ratios a healthy run keeps
    band_source: str = ""
    compute_ratio: Optional[float] = None    # median over stages of compute / forecast
    breakdown: Optional[object] = None       # per-rank breakdown (breakdown.Breakdown)
    unnamed: Dict[str, float] = attrs.field(factory=lambda: dict.fromkeys(FAMILY_NAMES, 0.0))
    #                                  family -> the probability of its faults no suspect names
    next_steps: str = ""               # inconclusive: where the probability sits, what to collect

    @property
    def verdict(self) -> str:
        """`suspects`, or without one `healthy` / `inconclusive` by the job's probability
        (verdict.verdict_of)."""
        return verdict_of(any(not s.alternative for s in self.suspects), self.probability)

    @property
    def missing_ranks(self) -> List[int]:
        have = set(self.ranks_read)
        return [r for r in range(self.world) if r not in have]
