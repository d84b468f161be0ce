"""Random faults in the parts a job's traffic crosses (a fault nothing crosses cannot be seen by
any timing), and one trial of the proof: generate, write in a format, read, diagnose, and say
where the injected part ranks among the suspects."""
from __future__ import annotations

import os
import tempfile
from typing import Optional, Sequence

import attrs
import numpy as np

from astral_dsl.synth.faults import Fault, Noise
from astral_dsl.synth.generator import CHANNELS, _mix, generate

SEVERITY = {"gpu": (0.10, 0.30), "nic_port": (0.5, 0.5), "tor": (0.3, 0.6), "agg": (0.3, 0.6),
            "link_flap": (0.2, 0.4)}


def random_fault(kind: str, rank_map, fc, rng: np.random.Generator, seed: int = 0) -> Fault:
    lo, hi = SEVERITY[kind]
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
    if kind == "agg":
        used = sorted(_used_aggs(rank_map, fc, seed))
        if not used:
            raise ValueError("no flow of this job crosses an upper-tier switch")
        return Fault("agg", used[int(rng.integers(len(used)))], sev)
    if kind == "link_flap":
        p = info.ports[int(rng.integers(len(info.ports)))]
        run = fc.iteration_time * 3
        windows, t = [], float(rng.uniform(0, run / 3))
        while t < run:                       # bad for a few hundred ms to a few seconds
            length = float(rng.uniform(0.05, 0.25)) * fc.iteration_time
            windows.append((round(t, 6), round(t + length, 6)))
            t += length + float(rng.uniform(0.5, 1.5)) * fc.iteration_time
        return Fault("link_flap", f"{p.name} -- {p.switch}", sev, r, tuple(windows))
    raise ValueError(kind)


def _used_aggs(rank_map, fc, seed: int):
    """Upper-tier switches some flow of the job hashes to (the generator's own ECMP choice)."""
    par = fc.job.parallel
    pairs = set()
    for g in rank_map.groups["pp"]:
        pairs.update(zip(g.ranks, g.ranks[1:]))
        if par.v > 1 and len(g.ranks) > 1:
            pairs.add((g.ranks[0], g.ranks[-1]))
    for g in rank_map.groups["dp"]:
        pairs.update(zip(g.ranks, g.ranks[1:] + g.ranks[:1]))
    sizes = {t.name: t.per_group for t in rank_map._tiers}
    out = set()
    for a, b in pairs:
        for x, y in zip(rank_map.ranks[a].ports, rank_map.ranks[b].ports):
            if x.switch == y.switch:
                continue
            meet = next((k for k in range(1, len(x.tiers)) if x.tiers[k] == y.tiers[k]), None)
            if meet is None:
                continue
            key = x.tiers[meet]
            n = max(1, sizes.get(key.tier, 1))
            for ch in range(CHANNELS):
                out.add(key.switch(_mix(min(a, b), max(a, b), x.port, ch, seed) % n))
    return out


@attrs.frozen
class Trial:
    kind: str                       # fault kind or "none"
    fault: Optional[Fault]
    fmt: str
    position: Optional[int]         # 1-based rank of the first suspect covering the part
    first: Optional[str]            # kind and path of the first suspect
    suspects: int
    diagnostics: Sequence[str]


def trial(design, fc, rank_map, kind: str, seed: int, fmt: str = "csv",
          noise: Noise = Noise(), iterations: int = 3) -> Trial:
    from astral_dsl import diagnose, observe
    from astral_dsl.synth import write

    rng = np.random.default_rng(seed)
    fault = None if kind == "none" else random_fault(kind, rank_map, fc, rng, seed)
    data = generate(fc, rank_map, [fault] if fault else [], noise, iterations, seed)
    with tempfile.TemporaryDirectory() as tmp:
        if fmt == "kineto":
            path = os.path.join(tmp, "traces")
            write.write_traces(data, path)
        else:
            path = os.path.join(tmp, f"log.{fmt}")
            write.write_log(data, path, fmt)
        result = diagnose.diagnose(design, observe.load([path]), job=fc.job.name)
    position = None
    if fault is not None:
        for i, s in enumerate(result.suspects, start=1):
            if s.covers(fault.part):
                position = i
                break
    first = f"{result.suspects[0].kind} {result.suspects[0].path}" if result.suspects else None
    return Trial(kind, fault, fmt, position, first, len(result.suspects),
                 tuple(d.code for d in result.diagnostics))


__all__ = ["SEVERITY", "Trial", "random_fault", "trial"]
