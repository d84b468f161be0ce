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
from astral_dsl.synth.generator import _Net, generate

SEVERITY = {"gpu": (0.10, 0.30), "nic_port": (0.5, 0.5), "tor": (0.3, 0.6), "agg": (0.3, 0.6),
            "uplink": (0.3, 0.6), "link_flap": (0.2, 0.4)}


def random_fault(kind: str, rank_map, fc, rng: np.random.Generator, seed: int = 0,
                 iterations: int = 3) -> Fault:
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
    if kind in ("agg", "uplink"):
        switches, uplinks = used_parts(rank_map, fc, seed)
        used = sorted(switches if kind == "agg" else uplinks)
        if not used:
            raise ValueError("no flow of this job crosses an upper tier")
        return Fault(kind, used[int(rng.integers(len(used)))], sev)
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
    """One trial; `fmt`: csv, jsonl or kineto (written to files and read back), or memory
    (the rank log's rows handed to the log reader's column builder)."""
    from astral_dsl import diagnose, observe
    from astral_dsl.synth import write

    rng = np.random.default_rng(seed)
    fault = None if kind == "none" else random_fault(kind, rank_map, fc, rng, seed, iterations)
    data = generate(fc, rank_map, [fault] if fault else [], noise, iterations, seed)
    if fmt == "memory":             # the log's rows as the reader takes them, no text
        result = diagnose.diagnose(design, write.to_observed(data), job=fc.job.name)
        return _outcome(kind, fault, fmt, result)
    with tempfile.TemporaryDirectory() as tmp:
        if fmt == "kineto":
            path = os.path.join(tmp, "traces")
            write.write_traces(data, path)
        else:
            path = os.path.join(tmp, f"log.{fmt}")
            write.write_log(data, path, fmt)
        result = diagnose.diagnose(design, observe.load([path]), job=fc.job.name)
    return _outcome(kind, fault, fmt, result)


def _outcome(kind, fault, fmt, result) -> Trial:
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
