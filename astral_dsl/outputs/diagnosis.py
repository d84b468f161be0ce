"""A diagnosis as text for a person or as JSON (docs/diagnose.md lists the fields)."""
from __future__ import annotations

from typing import Any, Dict, List

MAX_LISTED = 12


def _ranks(ranks) -> str:
    ranks = list(ranks)
    shown = ", ".join(str(r) for r in ranks[:MAX_LISTED])
    return shown + (f" and {len(ranks) - MAX_LISTED} more" if len(ranks) > MAX_LISTED else "")


def _its(its) -> str:
    its = list(its)
    if not its:
        return "-"
    if its == list(range(its[0], its[-1] + 1)) and len(its) > 2:
        return f"{its[0]}-{its[-1]}"
    return ", ".join(map(str, its))


def _s(v) -> str:
    if v is None:
        return "-"
    return f"{v * 1e3:.3f} ms" if v < 1 else f"{v:.3f} s"


def _named(path: str, devices) -> Dict[str, Any]:
    """A suspect's device (analyses.fleet.Devices): its name beside the path, serial, asset tag."""
    from astral_dsl.analyses.fleet import _longest

    if not devices:
        return {}
    at = _longest(path, devices.by_path)
    if at is None:
        return {}
    d = devices.by_path[at]
    return {"device": {"name": d.name, "path": at, "serial": d.serial,
                       "asset_tag": d.asset_tag}, "label": devices.label(path)}


def to_json(d, devices=None) -> Dict[str, Any]:
    """`devices`: the names of the design's devices (pipeline.devices), beside each suspect."""
    flagged = {r for s in d.suspects for e in s.evidence for r in e.ranks}
    return {
        "job": d.job, "world_size": d.world, "ranks_read": len(d.ranks_read),
        "missing_ranks": d.missing_ranks, "iterations": list(d.iterations),
        "forecast_iteration_s": d.forecast_iteration_s,
        "observed_iteration_s": d.observed_iteration_s,
        "instances": {k: {"matched": t, "slow": s} for k, (t, s) in d.instances.items()},
        "suspects": [{**s.to_json(), **_named(s.path, devices)} for s in d.suspects],
        "compute": [{"rank": c.rank, "stage": c.stage, "compute_s": c.compute_s,
                     "peers_s": c.peers_s, "forecast_s": c.forecast_s,
                     "ratio_to_peers": round(c.ratio, 5)}
                    for c in d.compute if c.rank in flagged],
        "clock_offsets_s": d.clock_offsets_s,
    }


def render(d, devices=None) -> str:
    lines: List[str] = []
    read = len(d.ranks_read)
    lines.append(f"diagnosis: job `{d.job}`, {read:,} of {d.world:,} ranks read, iterations "
                 f"{_its(d.iterations)}")
    if d.forecast_iteration_s is not None or d.observed_iteration_s is not None:
        lines.append(f"  iteration  forecast {_s(d.forecast_iteration_s)}, observed "
                     f"{_s(d.observed_iteration_s)} (median over ranks)")
    if d.instances:
        parts = [f"{t:,} {k} ({s:,} slow)" for k, (t, s) in d.instances.items()]
        lines.append("  matched    " + ", ".join(parts))
    offsets = list(d.clock_offsets_s.values())
    if offsets:
        spread = max(offsets) - min(offsets)
        lines.append(f"  clocks     {len(offsets):,} hosts aligned on collective ends "
                     f"(offsets span {_s(spread)})")
    lines.append("")
    if not d.suspects:
        lines.append("no suspect: every rank and collective is within the noise of its peers "
                     "and the forecast")
        return "\n".join(lines) + "\n"
    lines.append("suspects (most likely first)")
    for i, s in enumerate(d.suspects, start=1):
        conf = "<1%" if 0 < s.confidence < 0.005 else f"{s.confidence:.0%}"
        named = devices.label if devices else (lambda text: text)
        lines.append(f"  {i}. {s.kind:<8} {named(s.path)}   confidence {conf}")
        lines.append(f"     {named(s.summary)}")
        for e in s.evidence[:3]:
            fc = f", forecast {_s(e.forecast_s)}" if e.forecast_s is not None else ""
            lines.append(f"     evidence: {e.what}: expected {_s(e.expected_s)}, observed "
                         f"{_s(e.observed_s)}{fc}; ranks {_ranks(e.ranks)}; iterations "
                         f"{_its(e.iterations)}")
        if len(s.parts) > 1:
            lines.append(f"     parts: {_ranks(s.parts)}")
        if s.note:
            lines.append(f"     note: {named(s.note)}")
    return "\n".join(lines) + "\n"


__all__ = ["render", "to_json"]
