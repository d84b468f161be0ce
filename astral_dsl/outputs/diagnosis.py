"""A diagnosis as text for a person or as JSON (docs/diagnose.md lists the fields;
schema/diagnosis.schema.json is their JSON Schema)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from astral_dsl.units.readable import whole_percent

MAX_LISTED = 12
TIED = " (tied: the evidence cannot tell them apart)"     # after a tie's names (its path)
PER_RANK = "median over ranks of each rank's mean per iteration"     # the breakdown's figures
DRIFTS_LISTED = 8            # hosts whose fitted drift the text names (the JSON has all)
SCHEMA_VERSION = 1           # of the diagnosis document (schema/diagnosis.schema.json)
# the exit codes of `astral diagnose`: 3 is an internal error (E000), as for every command; a
# design with errors is no diagnosis (nothing compared): no all-clear, as unusable data is
EXIT_CODES = {"healthy": 0, "suspects": 1, "inconclusive": 2, "unusable": 2, "design-errors": 2}


def _ranks(ranks) -> str:
    ranks = list(ranks)
    shown = ", ".join(str(r) for r in ranks[:MAX_LISTED])
    return shown + (f" and {len(ranks) - MAX_LISTED} more" if len(ranks) > MAX_LISTED else "")


def _its(its) -> str:
    its = list(its)
    if not its:
        return "-"
    # a run of consecutive numbers is shown as its ends; compared without building the range
    # between them (a trace's step numbers go up to 2^63: `range(3, 2**53)` exhausts memory)
    if len(its) > 2 and its == list(range(its[0], its[0] + len(its))):
        return f"{its[0]}-{its[-1]}"
    return ", ".join(map(str, its))


def _s(v) -> str:
    if v is None:
        return "-"
    return f"{v * 1e3:.3f} ms" if v < 1 else f"{v:.3f} s"


def _p(v: float) -> str:
    if 0 < v < 0.005:
        return "<1 %"
    if 0.995 <= v < 1:
        return ">99 %"
    return whole_percent(v)


HEADING = "most likely first; their probabilities compete"
# with several named: each is weighed once every other named suspect explains what it does
# (diagnose/verdict.py, given_the_others); the alternatives as the job's one fault
HEADING_GIVEN = ("in the order named; each named suspect's probability is given that the "
                 "other named suspects are real; the alternatives' are weighed as the job's "
                 "one fault")


def given(s, suspects) -> str:
    """`, given that suspect 1 is real`: what a suspect's probability is conditional on (its
    `given`, the other named suspects, by their number in `suspects`); "" for none."""
    said = given_text(s.given, [(x.path, x.alternative) for x in suspects])
    return f", {said}" if said else ""


def given_text(paths, suspects) -> str:
    """"given that suspect 1 is real", "given that suspects 1 and 2 are real": the named
    suspects among `suspects` ((path, alternative) in the listed order) whose paths a
    suspect's `given` lists, by their number; "" for none."""
    at = {path: i for i, (path, alt) in reversed(list(enumerate(suspects, start=1)))
          if not alt}
    nums = [str(at[p]) for p in paths if p in at]
    if not nums:
        return ""
    if len(nums) == 1:
        return f"given that suspect {nums[0]} is real"
    return f"given that suspects {', '.join(nums[:-1])} and {nums[-1]} are real"


def schema_text() -> str:
    """The JSON Schema of the diagnosis document (`astral diagnose --schema`)."""
    from astral_dsl import resources

    return resources.schema_text("diagnosis")


# warnings that say part of what was read could not be judged: no all-clear with them
UNSEEN = frozenset({"W795", "W797"})
UNSEEN_WHY = {"W795": "the collectives of traces that name no process group were not compared: "
                      "W795",
              "W797": "collectives with too few peers and no forecast of their own kind (the "
                      "data does not say which each is, names one the forecast has none of, "
                      "or the forecast has none of their kind) were not compared: W797"}


def final_verdict(d, diagnostics) -> str:
    """The verdict the exit code, the JSON and the text say: the diagnosis's, except that
    nothing suspect is no all-clear when ranks were not read or part of the input could not be
    used (an error among `diagnostics`): `unusable` then (docs/diagnose.md, the exit codes)."""
    if d.verdict in ("healthy", "inconclusive") and (
            d.missing_ranks or any(x.is_error or x.code in UNSEEN for x in diagnostics)):
        return "unusable"       # what could not be used may be where the probability sits
    return d.verdict


def verdict_json(verdict: str) -> Dict[str, Any]:
    """What the exit code says, for --format json."""
    return {"diagnosis_version": SCHEMA_VERSION, "verdict": verdict,
            "exit_code": EXIT_CODES[verdict]}


def _named(path: str, devices, tied=()) -> Dict[str, Any]:
    """A suspect's device (analyses.devices.Devices): its name beside the path, serial, asset
    tag; of a tie (`tied`), the label alone."""
    from astral_dsl.analyses.devices import longest

    if not devices:
        return {}
    if tied or " " in path:   # several parts (a tie, or a set the timings cannot split: "one
        # of the 16 NICs of ..."): no one device; each name labelled in the text
        return {"label": devices.label(path)}
    at = longest(path, devices.by_path)
    if at is None:
        return {}
    d = devices.by_path[at]
    return {"device": {"name": d.name, "path": at, "serial": d.serial,
                       "asset_tag": d.asset_tag}, "label": devices.label(path)}


def to_json(d, verdict: Optional[str] = None, devices=None) -> Dict[str, Any]:
    """`devices`: the names of the design's devices (pipeline.devices), beside each suspect."""
    flagged = {r for s in d.suspects for e in s.evidence for r in e.ranks}
    return {
        **verdict_json(verdict or d.verdict),
        "probability": round(d.probability, 6),
        "unnamed": {k: round(v, 6) for k, v in d.unnamed.items()},
        "next_steps": d.next_steps or None,
        "job": d.job, "world_size": d.world, "ranks_read": len(d.ranks_read),
        "missing_ranks": d.missing_ranks, "iterations": list(d.iterations),
        "timers": d.timers,
        "forecast_iteration_s": d.forecast_iteration_s,
        "observed_iteration_s": d.observed_iteration_s,
        "forecast_band": {"low": d.band[0], "high": d.band[1], "source": d.band_source,
                          "compute_ratio": d.compute_ratio},
        "instances": {k: {"matched": t, "slow": s} for k, (t, s) in d.instances.items()},
        "suspects": [{**s.to_json(), **_named(s.path, devices, s.tied)} for s in d.suspects],
        "compute": [{"rank": c.rank, "stage": c.stage, "compute_s": c.compute_s,
                     "peers_s": c.peers_s, "forecast_s": c.forecast_s,
                     "ratio_to_peers": round(c.ratio, 5)}
                    for c in d.compute if c.rank in flagged],
        "clocks": d.clocks.to_json() if d.clocks else None,
        "breakdown": d.breakdown.to_json() if d.breakdown else None,
    }


def render(d, devices=None, verdict: Optional[str] = None) -> str:
    """`verdict`: the final one (final_verdict; default: the diagnosis's own)."""
    lines: List[str] = []
    read = len(d.ranks_read)
    verdict = verdict or d.verdict
    lines.append(f"diagnosis: job `{d.job}`, {read:,} of {d.world:,} ranks read, iterations "
                 f"{_its(d.iterations)}")
    said = {"suspects": "something is wrong", "unusable": "no all-clear",
            "inconclusive": "inconclusive"}.get(verdict, "healthy")
    lines.append(f"  verdict    {said}: probability {_p(d.probability)} that something is "
                 f"wrong with the job" + (f" ({_unseen(d)})" if verdict == "unusable" else ""))
    if d.forecast_iteration_s is not None or d.observed_iteration_s is not None:
        lines.append(f"  iteration  forecast {_s(d.forecast_iteration_s)}, observed "
                     f"{_s(d.observed_iteration_s)} (median over ranks)")
    if d.compute_ratio is not None:
        what = ("blocks (Megatron-LM timers: compute, TP collectives, waits)"
                if d.timers == "megatron" else "compute")
        lines.append(f"  forecast   {what} at {d.compute_ratio:.3f}x the forecast (median over "
                     f"stages; healthy within {d.band[0]:.2f}-{d.band[1]:.2f}x, "
                     f"{d.band_source})")
    if d.instances:
        parts = [f"{t:,} {k} ({s:,} slow)" for k, (t, s) in d.instances.items()]
        lines.append("  matched    " + ", ".join(parts))
    lines.extend(_clocks(d.clocks))
    lines.extend(_breakdown(d.breakdown))
    lines.append("")
    if not d.suspects and d.next_steps:             # inconclusive, or unusable besides
        lines.append(f"no suspect named, and a fault is the more likely: {d.next_steps}"
                     + ("; no all-clear for what could not be read" if verdict == "unusable"
                        else ""))
        return "\n".join(lines) + "\n"
    if not d.suspects:
        against = "and the forecast" if d.forecast_iteration_s is not None else \
            "(no forecast to compare with, W791)"
        lines.append("no suspect: every rank and collective is within the noise of its peers "
                     + against + ("; no all-clear for what could not be read"
                                  if verdict == "unusable" else ""))
        return "\n".join(lines) + "\n"
    lines.append(f"suspects ({HEADING_GIVEN if any(s.given for s in d.suspects) else HEADING})")
    for i, s in enumerate(d.suspects, start=1):
        named = devices.label if devices else (lambda text: text)
        tie = TIED if s.tied else ""
        lines.append(f"  {i}. {s.kind:<8} {named(s.path)}{tie}   probability "
                     f"{_p(s.probability)}{given(s, d.suspects)}")
        lines.append(f"     {named(s.summary)}")
        for e in s.evidence[:3]:
            fc = f", forecast {_s(e.forecast_s)}" if e.forecast_s is not None else ""
            who = (f"; ranks {_ranks(e.ranks)}; iterations {_its(e.iterations)}" if e.ranks
                   else "")
            lines.append(f"     evidence: {e.what}: expected {_s(e.expected_s)}, observed "
                         f"{_s(e.observed_s)}{fc}{who}")
        if s.supports:
            lines.append(f"     supports: {s.supports}")
        if s.contradicts:
            lines.append(f"     contradicts: {s.contradicts}")
        for o in s.slow[:4 if not s.alternative else 0]:
            who = (f"{o.ranks[0]} -> {o.ranks[1]}" if o.what == "pipeline transfer" else
                   f"ranks {_ranks(o.ranks)}")
            lines.append(f"     slow: {o.what} {who}, iteration {o.iteration} #{o.occurrence}: "
                         f"{_s(o.observed_s)} against {_s(o.expected_s)}")
        if len(s.parts) > 1:
            lines.append(f"     parts: {_ranks(s.parts)}")
        if s.note:
            lines.append(f"     note: {named(s.note)}")
    return "\n".join(lines) + "\n"


def _unseen(d) -> str:
    """Why nothing suspect is no all-clear."""
    if d.missing_ranks:
        return (f"{len(d.missing_ranks):,} of the job's {d.world:,} ranks were not read: "
                f"nothing is known of them")
    if any(x.code in UNSEEN for x in d.diagnostics) and not any(x.is_error
                                                                for x in d.diagnostics):
        said = {x.code for x in d.diagnostics if x.code in UNSEEN}
        return "; ".join(UNSEEN_WHY[c] for c in sorted(said))
    # the job's own errors (W791: no forecast) are not the observed data's (E780-E799)
    unforecast = any(x.code == "W791" for x in d.diagnostics)
    why = ["the job has errors (above): no forecast to compare with (W791)"] if unforecast \
        else []
    if not unforecast or any(x.is_error and "E780" <= x.code <= "E799" for x in d.diagnostics):
        why.append("part of the observed data could not be used: the errors above")
    return "; ".join(why)


def _clocks(c) -> List[str]:
    if c is None:
        return []
    out = []
    offsets = list(c.offsets_s.values())
    spread = f" (offsets span {_s(max(offsets) - min(offsets))})" if offsets else ""
    lines = f"  clocks     {len(c.aligned):,} of {c.hosts:,} hosts aligned on collective ends" \
        f"{spread}"
    if c.unaligned:
        lines += f"; {len(c.unaligned):,} cannot be"
    out.append(lines)
    if c.drifts and max(abs(v) for v in c.drifts.values()) < 0.005e-6:
        out.append(f"  drift      fitted per host: every host within 0.01 ppm of "
                   f"{min(c.drifts, key=lambda h: (abs(c.drifts[h]), h))}'s clock")
    elif c.drifts:
        ranked = sorted(c.drifts.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
        shown = ", ".join(f"{h} {v * 1e6:+.2f} ppm" for h, v in ranked[:DRIFTS_LISTED])
        more = f" and {len(ranked) - DRIFTS_LISTED} more" if len(ranked) > DRIFTS_LISTED else ""
        out.append(f"  drift      fitted per host, largest first: {shown}{more}")
    return out


def _breakdown(b) -> List[str]:
    if b is None or not b.ranks:
        return []
    out = []
    kinds = ", ".join(f"{k} {_s(v)}" for k, v in b.median_kinds().items())
    overlap = b.median("overlap")
    source = "kineto and log" if b.source == "both" else b.source
    out.append(f"  per rank   ({PER_RANK}, {source}) window "
               f"{_s(b.median('window_s'))}: compute {_s(b.median('compute_s'))}, "
               f"communication {_s(b.median('comm_s'))}" + (f" ({kinds})" if kinds else "")
               + f", memory {_s(b.median('memory_s'))}, idle {_s(b.median('idle_s'))}; "
               + (f"overlap {whole_percent(overlap)} of communication" if overlap is not None
                  else "overlap unknown (a rank log has no kernel intervals)"))
    causes = b.median_causes()
    if causes:
        out.append(f"  idle by cause (HolisticTraceAnalysis, summed over streams; {PER_RANK}): "
                   + ", ".join(f"{c.replace('_', ' ')} {_s(v)}" for c, v in causes.items()))
    for s in b.spread[:3]:
        out.append(f"  spread     {s.name[:60]}: {_s(s.min_s)} to {_s(s.max_s)} across "
                   f"{s.ranks:,} rank{'' if s.ranks == 1 else 's'} (median {_s(s.median_s)}; "
                   f"slowest rank {s.slowest_rank})")
    if b.slowest:
        out.append("  slowest    " + ", ".join(
            f"rank {s.rank} ({s.compute_s / s.peers_s:.3f}x its stage)" for s in b.slowest
            if s.peers_s > 0))
    return out


__all__ = ["EXIT_CODES", "SCHEMA_VERSION", "final_verdict", "render", "schema_text", "to_json",
           "verdict_json"]
