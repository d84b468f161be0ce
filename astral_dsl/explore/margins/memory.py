"""The memory limit of each job of a design, as `astral check` measures it (Seer's estimate
per GPU against the GPU's memory: W750, E757), for the margins (limits.py collects it): one
limit per job, numeric sides in GB, bracketed by evaluating the design again."""
from __future__ import annotations

import functools
from typing import List, Tuple

from astral_dsl.explore.margins.limits import Limit, where_of

BITS = 8.0        # information is counted in bits in SI (1 GB = 8e9)


def job_memory(checked) -> List[Limit]:
    from astral_dsl import seer
    from astral_dsl.seer.validate_memory import probe_settings

    out = []
    design = checked.design
    validated = {id(job): found for job, *found in checked.jobs}   # the check's step 17
    for job in design.jobs:
        try:
            diags, spec, cluster = validated.get(id(job)) or seer.validate_job(design, job)
        except Exception:  # noqa: BLE001 - a job Seer cannot read has no memory margin
            continue
        if spec is None or cluster is None or not cluster.gpu.memory or \
                any(d.is_error and d.code != "E757" for d in diags):
            continue
        total, unc = _memory_estimate(spec, cluster)
        file, line, col = where_of(job.span_of("recompute") or job.span)
        probed = probe_settings(spec)
        at = f"; at {', '.join(probed)}, the least memory of what the job leaves to Seer's " \
             f"rule, as the check measures it (`astral forecast` gives the memory of the " \
             f"rule's choice)" if probed else ""
        out.append(Limit(f"memory:{job.template}", "memory",
                         f"memory per GPU of job {job.template}", total * BITS,
                         cluster.gpu.memory * BITS, "<=", "GB", file, line, col,
                         note=f"Seer's estimate (+/- {unc / 1e9:.1f} GB): `astral check` warns "
                              "(W750) once it is over the GPU's memory and errs (E757) only "
                              f"beyond its uncertainty{at}"))
    return out


@functools.lru_cache(maxsize=16)
def _memory_estimate(spec, cluster) -> Tuple[float, float]:
    """Seer's per-GPU estimate and its uncertainty, as its memory check computes them
    (validate_memory.memory_check). Kept for the last 16 (job, cluster) pairs (frozen records,
    compared by value): most of a margins analysis' probes move a parameter the job does not
    read (a limit, a temperature), and ask again for the same job on the same cluster."""

    from astral_dsl.seer import costs, lower, memory
    from astral_dsl.seer.validate_memory import memory_probe

    probe = memory_probe(spec)       # the check's: the rule's recompute at full, no offload
    low = lower.Lowering(probe, costs.Costs.of(probe, cluster.gpu), cluster.net)
    est = memory.estimate(probe, low.stage_params)
    return est.total, est.uncertainty          # bytes
