"""What stops a job from running under a scenario, besides its network (seer/cluster.py): a
failed part the scenario names wrongly (E214, E219: the engineering checks' own), and hosts of
the job that lose power (E776): a failed feeder nothing backs (the engineering checks' E628)
whose row, pod or hall holds hosts of the job."""
from __future__ import annotations

from typing import List, Optional

from astral_dsl.analyses.engineering import NAMING, analyse
from astral_dsl.analyses.host_positions import Positions, intersect, length, path_steps
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.seer.job_tiers import hosts_of_job

def blockers(design, applied, job, ranks: int, per_host: int) -> List[Diagnostic]:
    """The diagnostics that stop `job` (its first `ranks` GPUs, `per_host` to a host) under
    `applied` (analyses.scenarios.Applied, on `design` compiled under the scenario)."""
    eng = analyse(design, applied)
    out = [d for d in eng.diagnostics if d.code in NAMING]
    unpowered = [f.path for f in eng.power.feeders if f.dark]
    if not unpowered:
        return out
    root = _root_of(design, job)
    if root is None:
        return out
    pos = Positions(root)
    mine = hosts_of_job(design, job, root, pos, per_host, ranks)
    dark, names = [], []
    for feeder in unpowered:
        owner = feeder.rsplit(".", 1)[0]        # the row (pod, ...) whose racks it serves
        steps = path_steps(owner, root.path)
        hit = intersect(mine, pos.named(steps)) if steps is not None else []
        if hit:
            dark.extend(hit)
            names.append(f"`{feeder}`")
    lost = length(dark)
    if lost:
        out.append(Diagnostic(
            "E776", Severity.ERROR,
            f"job `{job.template}`: under the scenario {lost:,} of its hosts lose power "
            f"({', '.join(names)} down with nothing backing {'it' if len(names) == 1 else 'them'})"
            f", so it cannot run", job.span_of("placement"),
            "every host of a job needs power: keep a partner feeder (A/B) or spare feeders in "
            "service, or place the job elsewhere"))
    return out


def _root_of(design, job) -> Optional[object]:
    target = job.field("placement")
    path = getattr(target, "path", None)
    if path is None and hasattr(target, "flat"):
        path = next((getattr(r, "path", None) for _, r in target.flat()), None)
    for root in design.roots:
        if path is None or path == root.path or path.startswith(root.path + ".") or \
                path.startswith(root.path + "["):
            return root
    return None


__all__ = ["blockers"]
