"""What a diagnosis says: ranked suspects with their evidence, per-rank comparisons and the
diagnostics of the input."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic

@attrs.frozen
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


@attrs.frozen
class Suspect:
    kind: str                          # gpu, host, nic port, link, switch, tier, software
    path: str                          # the stable name of the part (or the first of several)
    parts: Tuple[str, ...]             # every part the evidence cannot tell apart
    confidence: float                  # 0..1
    summary: str
    evidence: Tuple[Evidence, ...] = ()
    note: str = ""
    alternative: bool = False          # explains less than the suspects before it

    def covers(self, part: str) -> bool:
        """Whether `part` (a switch, port, link or GPU name) is one of this suspect's parts, or
        a switch of one of its tier groups."""
        if part in self.parts:
            return True
        return any(part.startswith(p + "[") for p in self.parts) or any(
            part.startswith(p + " -- ") or part.endswith(" -- " + p) for p in self.parts)

    def to_json(self) -> Dict:
        return {"kind": self.kind, "path": self.path, "parts": list(self.parts),
                "confidence": round(self.confidence, 4), "summary": self.summary,
                "evidence": [e.to_json() for e in self.evidence],
                **({"note": self.note} if self.note else {}),
                **({"alternative": True} if self.alternative else {})}


@attrs.frozen
class RankComparison:
    rank: int
    stage: int
    compute_s: float                   # median per iteration
    peers_s: float                     # median of its stage's ranks
    forecast_s: Optional[float]

    @property
    def ratio(self) -> float:
        return self.compute_s / self.peers_s if self.peers_s > 0 else 1.0


@attrs.frozen(eq=False)
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
    clock_offsets_s: Dict[str, float] = attrs.field(factory=dict)
    instances: Dict[str, Tuple[int, int]] = attrs.field(factory=dict)   # kind -> (total, slow)
    notes: Tuple[str, ...] = ()

    @property
    def missing_ranks(self) -> List[int]:
        have = set(self.ranks_read)
        return [r for r in range(self.world) if r not in have]
