"""Random faults in the parts a job's traffic crosses (a fault nothing crosses cannot be seen by
any timing): what `astral synth` injects for a drill, and the proof's trials
(benchmarks/proof.py) draw."""
from __future__ import annotations

import numpy as np

from astral_dsl.diagnose.verdict import band_of
from astral_dsl.synth import experts
from astral_dsl.synth.faults import Fault
from astral_dsl.synth.network import Net

SEVERITY = {"gpu": (0.10, 0.30), "nic_port": (0.5, 0.5), "tor": (0.3, 0.6), "agg": (0.3, 0.6),
            "uplink": (0.3, 0.6), "nvlink": (0.3, 0.6), "link_flap": (0.2, 0.4),
            "partial": (0.3, 0.5),
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
    # a NIC part is drawn behind a rank whose traffic leaves its NVLink domain (on an NVL72 a
    # rank may send nothing over its NICs); every rank where all do, as it always was drawn
    pool = nvlink_ranks(rank_map, fc) if kind == "nvlink" else \
        crossing_ranks(rank_map, fc) if kind not in ("gpu", "fast") else \
        tuple(range(rank_map.world))
    if not pool:
        raise ValueError("no traffic of this job stays in an NVLink domain: it crosses no "
                         "NVLink port" if kind == "nvlink" else
                         "no traffic of this job leaves its NVLink domains: it crosses no NIC")
    r = pool[int(rng.integers(len(pool)))]
    info = rank_map.ranks[r]
    if kind == "gpu":
        return Fault("gpu", info.gpu, sev, r)
    if kind == "nvlink":              # the GPU's NVLink port: its traffic within its domain
        return Fault("nvlink", info.gpu, sev, r)
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


def _job_channels(rank_map, fc):
    """The generator's traffic, channel by channel: (the channel's ranks, the rank pairs its
    flows run between): each pipeline neighbours' transfer (and the interleaved wrap-around),
    each data-parallel ring (over DP x CP with context parallelism), each CP group's ring,
    under ZeRO-3 with experts each expert-data-parallel ring and, with expert parallelism, each
    EP group's all-to-all (its pairs that leave their NVLink domain: experts.pairs)."""
    par = fc.job.parallel
    pairs = set()
    for g in rank_map.groups["pp"]:
        pairs.update(zip(g.ranks, g.ranks[1:]))
        if par.v > 1 and len(g.ranks) > 1:
            pairs.add((g.ranks[0], g.ranks[-1]))
    out = [(pair, [pair]) for pair in sorted(pairs)]
    rings = ["dpcp" if "dpcp" in rank_map.groups else "dp"] + (["cp"] if par.cp > 1 else []) \
        + (["edp"] if par.zero >= 3 and par.ep > 1 else [])
    for kind in rings:
        for g in rank_map.groups[kind]:
            if len(g.ranks) > 1:
                out.append((g.ranks, list(zip(g.ranks, g.ranks[1:] + g.ranks[:1]))))
    if par.ep > 1:
        net = Net(rank_map, (), 0)
        for g in rank_map.groups["ep"]:
            crossing = experts.pairs(net, g.ranks)
            if crossing:
                out.append((g.ranks, crossing))
    return out


def nvlink_ranks(rank_map, fc):
    """The ranks whose GPU exchanges with another GPU of its NVLink domain in some collective or
    transfer the generator runs (a TP, DP x CP, CP, EP or, under ZeRO-3 with experts,
    expert-data-parallel group, or a pipeline neighbour, holding another member of its domain:
    Net.nvlink_slow's rule), in rank order: where a degraded NVLink port can be seen."""
    par = fc.job.parallel
    kinds = ["tp"] * (par.tp > 1) + ["dpcp" if "dpcp" in rank_map.groups else "dp"] + \
        ["cp"] * (par.cp > 1) + ["ep"] * (par.ep > 1) + ["edp"] * (par.zero >= 3 and par.ep > 1)
    groups = [g.ranks for k in kinds for g in rank_map.groups[k]]
    groups += [ranks for ranks, pairs in _job_channels(rank_map, fc) if len(ranks) == 2
               and pairs == [ranks]]                 # the pipeline neighbours' transfers
    net = Net(rank_map, (), 0)
    return tuple(sorted({r for ranks in groups for r in net.domain_peers(ranks)}))


def crossing_ranks(rank_map, fc):
    """The ranks whose NIC ports some flow of the job crosses (the generator's rule,
    Net.crosses: traffic inside one NVLink domain crosses none), in rank order."""
    net = Net(rank_map, (), 0)
    return tuple(sorted({r for ranks, _ in _job_channels(rank_map, fc) if net.crosses(ranks)
                         for r in ranks}))


def used_parts(rank_map, fc, seed: int):
    """(upper-tier switches, uplinks between tiers) some flow of the job crosses, by the
    generator's own routing (its ECMP hash)."""
    net = Net(rank_map, (), seed)
    first = {p.switch for r in rank_map.ranks for p in r.ports}
    ports = {p.name for r in rank_map.ranks for p in r.ports}
    switches, uplinks = set(), set()
    for ranks, pairs in _job_channels(rank_map, fc):
        if not net.crosses(ranks):
            continue
        for a, b in pairs:
            for crossed in net.route(a, b):
                for part in crossed:
                    if " -- " in part:
                        if part.split(" -- ")[0] not in ports:
                            uplinks.add(part)
                    elif part not in first and part not in ports:
                        switches.add(part)
    return switches, uplinks


__all__ = ["KINDS", "SEVERITY", "crossing_ranks", "nvlink_ranks", "random_fault", "used_parts"]
