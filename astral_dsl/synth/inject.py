"""Random faults in the parts a job's traffic crosses (a fault nothing crosses cannot be seen by
any timing): what `astral synth` injects for a drill, and the proof's trials
(benchmarks/proof.py) draw."""
from __future__ import annotations

import numpy as np

from astral_dsl.diagnose.verdict import band_of
from astral_dsl.synth.faults import Fault
from astral_dsl.synth.generator import _Net

SEVERITY = {"gpu": (0.10, 0.30), "nic_port": (0.5, 0.5), "tor": (0.3, 0.6), "agg": (0.3, 0.6),
            "uplink": (0.3, 0.6), "link_flap": (0.2, 0.4), "partial": (0.3, 0.5),
            "fast": (1.13, 3.48)}
KINDS = tuple(SEVERITY)           # `partial`: a GPU or a NIC link, bad from a moment on
# `fast` is drawn as a multiple of the least speed-up the job's forecast cannot explain, 1 over
# the low edge of its band (diagnose.verdict.band_of: Seer's error band, 1.33x for a -25 % edge):
# a run faster than its forecast by less is one Seer's own error may explain, no fault to find.
# The multiples keep the drill as first drawn, 1.3-4x against the default band's 1.15x edge


def random_fault(kind: str, rank_map, fc, rng: np.random.Generator, seed: int = 0,
                 iterations: int = 3) -> Fault:
    lo, hi = SEVERITY[kind]
    if kind == "fast":
        edge = 1.0 / band_of(fc)[0][0]
        lo, hi = lo * edge, hi * edge
    sev = float(rng.uniform(lo, hi))
    world = rank_map.world
    r = int(rng.integers(world))
    info = rank_map.ranks[r]
    if kind == "gpu":
        return Fault("gpu", info.gpu, sev, r)
    if kind == "nic_port":
        p = info.ports[int(rng.integers(len(info.ports)))]
        return Fault("nic_port", p.name, sev, r)
    if kind == "tor":
        p = info.ports[int(rng.integers(len(info.ports)))]
        return Fault("tor", p.switch, sev)
    if kind in ("agg", "uplink"):
        switches, uplinks = used_parts(rank_map, fc, seed)
        used = sorted(switches if kind == "agg" else uplinks)
        if not used:
            raise ValueError("no flow of this job crosses an upper tier")
        return Fault(kind, used[int(rng.integers(len(used)))], sev)
    if kind == "fast":
        return Fault("fast", "forecast", sev)
    if kind == "partial":             # from 20-45 % of the run to its end: seen in more than
        #                               half of it (one slow iteration of three is, for the
        #                               diagnosis, an outlier: docs/diagnose.md, "Limits")
        run = fc.iteration_time * iterations
        since = round(float(rng.uniform(0.2, 0.45)) * run, 6)
        if rng.random() < 0.5:
            return Fault("gpu", info.gpu, sev, r, ((since, round(2 * run, 6)),))
        p = info.ports[int(rng.integers(len(info.ports)))]
        return Fault("link_flap", f"{p.name} -- {p.switch}", sev, r,
                     ((since, round(2 * run, 6)),))
    if kind == "link_flap":
        p = info.ports[int(rng.integers(len(info.ports)))]
        run = fc.iteration_time * iterations
        windows, t = [], float(rng.uniform(0, run / 3))
        while t < run:                       # bad for a few hundred ms to a few seconds
            length = float(rng.uniform(0.05, 0.25)) * fc.iteration_time
            windows.append((round(t, 6), round(t + length, 6)))
            t += length + float(rng.uniform(0.5, 1.5)) * fc.iteration_time
        return Fault("link_flap", f"{p.name} -- {p.switch}", sev, r, tuple(windows))
    raise ValueError(kind)


def _job_pairs(rank_map, fc):
    """The rank pairs the generator's traffic runs between: pipeline neighbours (and the
    interleaved wrap-around) and the data-parallel rings."""
    par = fc.job.parallel
    pairs = set()
    for g in rank_map.groups["pp"]:
        pairs.update(zip(g.ranks, g.ranks[1:]))
        if par.v > 1 and len(g.ranks) > 1:
            pairs.add((g.ranks[0], g.ranks[-1]))
    for g in rank_map.groups["dp"]:
        pairs.update(zip(g.ranks, g.ranks[1:] + g.ranks[:1]))
    return sorted(pairs)


def used_parts(rank_map, fc, seed: int):
    """(upper-tier switches, uplinks between tiers) some flow of the job crosses, by the
    generator's own routing (its ECMP hash)."""
    net = _Net(rank_map, (), seed)
    first = {p.switch for r in rank_map.ranks for p in r.ports}
    ports = {p.name for r in rank_map.ranks for p in r.ports}
    switches, uplinks = set(), set()
    for a, b in _job_pairs(rank_map, fc):
        for crossed in net.route(a, b):
            for part in crossed:
                if " -- " in part:
                    if part.split(" -- ")[0] not in ports:
                        uplinks.add(part)
                elif part not in first and part not in ports:
                    switches.add(part)
    return switches, uplinks


__all__ = ["KINDS", "SEVERITY", "random_fault", "used_parts"]
