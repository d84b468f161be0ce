"""The pipeline schedules as orders of blocks: which forward or backward of which chunk and
micro-batch each stage runs next (Megatron-LM's 1F1B, its interleaved variant, GPipe).

`order` gives (phase, chunk, micro-batch) tuples; `codes` the same as integers
((backward * v + chunk) * m + micro-batch), which is what the simulation runs on.

A step may run its schedule more than once (a job's `pipeline_runs`: NeMo AutoModel runs the
pipeline once per gradient-accumulation step, nemo_automodel 0.7.0 recipes/llm/train_ft.py:
`pp_batch_size` is the local batch and `schedule.step()` is called per accumulation batch):
the schedule key "1f1b*4" is four runs of "1f1b" one after another, each over m / 4
micro-batches (run r's micro-batch j is the step's r m / 4 + j), each stage starting the next
run when it has finished the last (`schedule_key`, `codes`)."""
from __future__ import annotations

import math
from typing import List, Tuple


def order(p: int, v: int, m: int, stage: int, schedule: str) -> List[Tuple[str, int, int]]:
    """(phase, chunk, micro-batch) in the order stage `stage` runs them."""
    if schedule == "gpipe":
        return [("F", c, j) for c in range(v) for j in range(m)] + \
               [("B", c, j) for c in reversed(range(v)) for j in range(m)]
    if v == 1:
        warm = min(p - stage - 1, m)
        out = [("F", 0, j) for j in range(warm)]
        for k in range(m - warm):
            out += [("F", 0, warm + k), ("B", 0, k)]
        out += [("B", 0, j) for j in range(m - warm, m)]
        return out
    groups = math.ceil(m / p)
    fwd, bwd = [], []
    for k in range(groups * p * v):
        c, j = (k // p) % v, (k // (p * v)) * p + k % p
        if j < m:
            fwd.append(("F", c, j))
            bwd.append(("B", v - 1 - c, j))
    total = len(fwd)
    warm = total if m <= p else min(total, (p - stage - 1) * 2 + (v - 1) * p)
    out = fwd[:warm]
    for k in range(total - warm):
        out += [fwd[warm + k], bwd[k]]
    out += bwd[total - warm:]
    return out


def schedule_key(schedule: str, runs: int = 1) -> str:
    """The schedule `runs` times a step ("1f1b*4"), or the schedule itself for one run."""
    return schedule if runs <= 1 else f"{schedule}*{runs}"


def split_key(key: str) -> Tuple[str, int]:
    """(schedule, runs) of a schedule key (schedule_key)."""
    schedule, _, runs = key.partition("*")
    return schedule, int(runs) if runs else 1


def deferred(p: int, v: int, m: int, stage: int, schedule: str) -> set:
    """Positions (in `order`) of the forwards whose output Megatron-LM's interleaved schedule
    sends only after the backward that follows them: its steady state exchanges both in one
    batched send/receive (send_forward_backward_recv_forward_backward). A schedule run more
    than once a step (PyTorch's pipelining) sends each output on its own."""
    if schedule == "gpipe" or v == 1 or m <= p or "*" in schedule:
        return set()
    total = m * v
    warm = min(total, (p - stage - 1) * 2 + (v - 1) * p)
    return {warm + 2 * k for k in range(total - warm)}


def codes(p: int, v: int, m: int, stage: int, schedule: str) -> List[int]:
    """`order` as integer codes ((backward * v + chunk) * m + micro-batch); for a schedule key
    of several runs (schedule_key), each run's codes over its m / runs micro-batches, in the
    step's numbering, one run after another."""
    if "*" in schedule:
        base, runs = split_key(schedule)
        each = m // runs
        one = codes(p, v, each, stage, base)
        out = []
        for r in range(runs):
            for x in one:
                rest, j = divmod(x, each)          # rest = backward * v + chunk
                out.append(rest * m + r * each + j)
        return out
    vm = v * m
    if v == 1 and schedule != "gpipe":       # 1F1B, built without tuples
        warm = min(p - stage - 1, m)
        out = list(range(warm))
        steady = [0] * (2 * (m - warm))
        steady[0::2] = range(warm, m)
        steady[1::2] = range(vm, vm + m - warm)
        return out + steady + list(range(vm + m - warm, vm + m))
    return [((ph == "B") * v + c) * m + j for ph, c, j in order(p, v, m, stage, schedule)]


def decode(code: int, v: int, m: int) -> Tuple[str, int, int]:
    rest, j = divmod(code, m)
    backward, c = divmod(rest, v)
    return ("B" if backward else "F"), c, j
