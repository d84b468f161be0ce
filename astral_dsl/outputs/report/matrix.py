"""The scenario matrix: each scenario against each family of checks (network, power, cooling,
jobs, user checks), with what breaks and by how much. Pure: it reads a review.Review.

A cell holds the diagnostics that appear only under the scenario (errors break, warnings warn)
and the family's headline figures, baseline against scenario: the fabric's switches and its
worst oversubscription; the IT peak and the most loaded feeder in normal operation and with one
more feeder failed (share of its capacity); facility power, PUE and the CDUs the tightest loop
needs; each job's iteration time and MFU; the user `check`s that fail."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple


from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.outputs.feeder_load import failover_share_w, loading
from astral_dsl.units import readable

FAMILIES = ("network", "power", "cooling", "jobs", "checks")
FAMILY_TITLES = {"network": "network", "power": "power", "cooling": "cooling", "jobs": "jobs",
                 "checks": "user checks", "other": "compile"}


def family(code: str) -> str:
    """The family of checks a diagnostic code belongs to (docs/diagnostics.md's sections)."""
    n = int(code[1:]) if code[1:].isdigit() else -1
    if 500 <= n < 510:
        return "checks"
    if 600 <= n < 620:
        return "network"
    if 620 <= n < 640 or 690 <= n < 700:
        return "power"
    if 640 <= n < 660:
        return "cooling"
    if 750 <= n < 780:
        return "jobs"
    return "other"


@records.frozen
class Figure:
    label: str
    baseline: Optional[float]
    scenario: Optional[float]
    unit: str = ""               # "kW", "%", "s", "" ...
    worse: str = "up"            # which direction is worse: up, down
    digits: int = 1              # decimals shown
    missing: str = "n/a"         # what a None means

    def text(self, v: Optional[float]) -> str:
        if v is None:
            return self.missing
        if isinstance(v, int):
            return f"{v:,}"
        return f"{v:,.{self.digits}f}"


@records.frozen
class Cell:
    family: str
    broken: Tuple[Diagnostic, ...] = ()        # errors that appear only under the scenario
    warned: Tuple[Diagnostic, ...] = ()        # warnings that appear only under it
    figures: Tuple[Figure, ...] = ()
    notes: Tuple[str, ...] = ()                # what the scenario takes out of this family

    @property
    def state(self) -> str:
        if self.broken:
            return "breaks"
        if self.warned:
            return "warns"
        if self.notes or any(f.baseline != f.scenario for f in self.figures):
            return "changes"
        return "holds"


@records.frozen
class Row:
    name: str
    required: bool
    notes: Tuple[str, ...]
    cells: Tuple[Cell, ...]

    def cell(self, fam: str) -> Cell:
        return next((c for c in self.cells if c.family == fam), Cell(fam))


def _key(d: Diagnostic):
    return (d.code, d.span, d.message)


def _worst_feeder(eng, attr: str) -> Optional[float]:
    """The highest share of its capacity a feeder carries (in %), normal or one failed; None
    with one failed when a feeder has none left to carry its load (it is lost, not 0 %)."""
    loads = [(f, failover_share_w(f) if attr == "failover_w" else getattr(f, attr))
             for f in eng.power.feeders if f.capacity_w]
    if any(w is None for _, w in loads):
        return None
    shares = [loading(f, w) * 100 for f, w in loads]
    return round(max(shares), 2) if shares else None


def _worst_oversub(eng) -> Optional[float]:
    """The highest oversubscription of a tier: as designed, or as a scenario's failures leave
    it (uplinks that lost part of their links: the computation behind E602 and its notes,
    analyses/network_damage.py)."""
    from astral_dsl.analyses.network_damage import worst_oversubscription

    vals = [t.oversubscription for f in eng.fabrics for t in f.tiers
            if t.oversubscription is not None]
    vals += [v for v in (worst_oversubscription(f.damage) for f in eng.fabrics)
             if v is not None]
    return max(vals) if vals else None


def _cdu_share(eng) -> Optional[float]:
    """The largest share of a loop's installed CDUs its heat needs (in %)."""
    shares = [lp.cdus_needed / lp.cdus * 100 for lp in eng.cooling.loops
              if lp.cdus and lp.cdus_needed is not None]
    return round(max(shares), 2) if shares else None


def _band(base, fc) -> str:
    """How far to trust a job's times, baseline and scenario: ", band -22/+25 % (outside the
    calibrated envelope)", or both bands when the scenario moves the job to another regime."""
    bands = list(dict.fromkeys(f.envelope().brief() for f in (base, fc) if f is not None))
    return f", band {' -> '.join(bands)}" if bands else ""


def _figures(eng_a, eng_b, sum_a: Dict, sum_b: Dict) -> Dict[str, List[Figure]]:
    def s(d, key):
        return None if d is None else d.get(key)

    return {
        "network": [Figure("switches", s(sum_a, "switches"), s(sum_b, "switches")),
                    Figure("worst oversubscription", _worst_oversub(eng_a),
                           _worst_oversub(eng_b), ":1", digits=4),   # as the notes give it
                    Figure("network power", s(sum_a, "network_power_kw"),
                           s(sum_b, "network_power_kw"), "kW")],
        "power": [Figure("IT peak", s(sum_a, "it_power_kw"), s(sum_b, "it_power_kw"), "kW"),
                  Figure("most loaded feeder", _worst_feeder(eng_a, "normal_w"),
                         _worst_feeder(eng_b, "normal_w"), "% of capacity"),
                  Figure("most loaded, one more failed", _worst_feeder(eng_a, "failover_w"),
                         _worst_feeder(eng_b, "failover_w"), "% of capacity",
                         missing="a feeder has no spare: its load is lost")],
        "cooling": [Figure("facility power", s(sum_a, "facility_power_kw"),
                           s(sum_b, "facility_power_kw"), "kW"),
                    Figure("PUE", s(sum_a, "pue"), s(sum_b, "pue"), digits=4),
                    Figure("CDUs the tightest loop needs", _cdu_share(eng_a), _cdu_share(eng_b),
                           "% of installed"),
                    Figure("liquid flow", s(sum_a, "liquid_flow_l_per_min"),
                           s(sum_b, "liquid_flow_l_per_min"), "L/min")],
    }


def matrix(review) -> Tuple[Row, ...]:
    """One row per scenario the design declares (pipeline.check ran them all)."""
    checked = review.checked
    base_eng = checked.engineering
    if base_eng is None:
        return ()
    from astral_dsl.analyses.engineering import is_new, known

    before = known(base_eng, checked.design)       # as the scenario check tells them apart
    rows = []
    for o in checked.scenarios:
        new = [d for d in (o.broken + (o.result.diagnostics if o.result is not None else ()))
               if is_new(d, before) and d.code not in ("E680", "W680")]
        if o.applied is not None:
            new += [d for d in o.applied.design.diagnostics
                    if is_new(d, before) and d.code not in ("E680", "W680")]
        unique: Dict = {}
        for d in new:
            unique.setdefault(_key(d), d)
        by_family: Dict[str, List[Diagnostic]] = {}
        for d in unique.values():
            by_family.setdefault(family(d.code), []).append(d)
        figures = _figures(base_eng, o.result, review.summary, review.summary_under(o.name))
        jobs_figs: List[Figure] = []
        for job in review.jobs:
            fc, diags = job.under_scenario(o.name)
            job_before = frozenset((d.code, d.span) for d in job.diagnostics)
            for d in diags:          # what stops the forecast only under the scenario
                if (d.is_error or d.severity.value == "warning") and is_new(d, job_before):
                    by_family.setdefault("jobs", []).append(d)
            base = job.forecast
            jobs_figs.append(Figure(f"{job.name} iteration time" + _band(base, fc),
                                    base.iteration_time if base else None,
                                    fc.iteration_time if fc else None, "s", digits=3))
            jobs_figs.append(Figure(f"{job.name} MFU", base.mfu * 100 if base else None,
                                    fc.mfu * 100 if fc else None, "%", worse="down"))
        figures["jobs"] = jobs_figs
        figures["checks"] = [Figure("failed checks", _failed_checks(checked.design),
                                    _failed_checks(o.applied.design) if o.applied else None)]
        out_of_service = ()
        if o.applied is not None:
            # a part the failure analysis rejected (E214, E219) fails nothing
            out_of_service = tuple(
                f"out of service: {f.display}" if f.fraction is None else
                f"out of service: {readable.percent(f.fraction)} of {f.display}"
                for f in o.applied.fabric_failed)
        families = list(FAMILIES) + (["other"] if by_family.get("other") else [])
        cells = []
        for fam in families:
            diags = by_family.get(fam, [])
            cells.append(Cell(fam, tuple(d for d in diags if d.is_error),
                              tuple(d for d in diags if not d.is_error),
                              tuple(figures.get(fam, ())),
                              out_of_service if fam == "network" else ()))
        rows.append(Row(o.name, o.required, tuple(o.notes), tuple(cells)))
    return tuple(rows)


def _failed_checks(design) -> int:
    return sum(1 for c in design.checks if not c.passed)
