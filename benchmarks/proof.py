"""One trial of the diagnosis's proof (benchmarks/bench_diagnose.py; a fixed-seed sample in
tests/test_diagnose.py): draw a fault of a kind (astral_dsl.synth.inject), generate the job's
observed data with it, write it in a format, read it back, diagnose, and say where the injected
part ranks among the suspects. Test machinery: the product does not import it."""
from __future__ import annotations

import os
import tempfile
from typing import Optional, Sequence

import attrs
import numpy as np

from astral_dsl.synth import Fault, Noise, generate, write
from astral_dsl.synth.inject import random_fault


@attrs.frozen
class Trial:
    kind: str                       # fault kind or "none"
    fault: Optional[Fault]
    fmt: str
    position: Optional[int]         # 1-based rank of the first suspect covering the part
    first: Optional[str]            # kind and path of the first suspect
    suspects: int
    diagnostics: Sequence[str]
    probability: float = 0.0        # the job's probability that something is wrong
    verdict: str = "healthy"
    tied: int = 0                   # parts the covering suspect names as a tie (0: not one)


def trial(design, fc, rank_map, kind: str, seed: int, fmt: str = "csv",
          noise: Noise = Noise(), iterations: int = 3, timers: str = "kernels") -> Trial:
    """One trial; `fmt`: csv, jsonl or kineto (written to files and read back), or memory
    (the rank log's rows handed to the log reader's column builder); `timers`: the log's
    compute columns (write.TIMERS)."""
    from astral_dsl import diagnose, observe

    rng = np.random.default_rng(seed)
    fault = None if kind == "none" else random_fault(kind, rank_map, fc, rng, seed, iterations)
    data = generate(fc, rank_map, [fault] if fault else [], noise, iterations, seed)
    if fmt == "memory":             # the log's rows as the reader takes them, no text
        result = diagnose.diagnose(design, write.to_observed(data, timers=timers),
                                   job=fc.job.name)
        return outcome(kind, fault, fmt, result)
    with tempfile.TemporaryDirectory() as tmp:
        if fmt == "kineto":
            path = os.path.join(tmp, "traces")
            write.write_traces(data, path)
        else:
            path = os.path.join(tmp, f"log.{fmt}")
            write.write_log(data, path, fmt, timers)
        result = diagnose.diagnose(design, observe.load([path]), job=fc.job.name)
    return outcome(kind, fault, fmt, result)


def outcome(kind, fault, fmt, result) -> Trial:
    position, tied = None, 0
    if fault is not None:
        for i, s in enumerate(result.suspects, start=1):
            if s.covers(fault.part):
                position, tied = i, len(s.tied)
                break
    first = f"{result.suspects[0].kind} {result.suspects[0].path}" if result.suspects else None
    return Trial(kind, fault, fmt, position, first, len(result.suspects),
                 tuple(d.code for d in result.diagnostics), result.probability,
                 result.verdict, tied)


__all__ = ["Trial", "outcome", "trial"]
