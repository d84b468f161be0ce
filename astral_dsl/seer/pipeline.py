"""The pipeline schedules as orders of blocks: which forward or backward of which chunk and
micro-batch each stage runs next (Megatron-LM's 1F1B, its interleaved variant, GPipe).

`order` gives (phase, chunk, micro-batch) tuples; `codes` the same as integers
((backward * v + chunk) * m + micro-batch), which is what the simulation runs on."""
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


def deferred(p: int, v: int, m: int, stage: int, schedule: str) -> set:
    """Positions (in `order`) of the forwards whose output Megatron-LM's interleaved schedule
    sends only after the backward that follows them: its steady state exchanges both in one
    batched send/receive (send_forward_backward_recv_forward_backward)."""
    if schedule == "gpipe" or v == 1 or m <= p:
        return set()
    total = m * v
    warm = min(total, (p - stage - 1) * 2 + (v - 1) * p)
    return {warm + 2 * k for k in range(total - warm)}


def codes(p: int, v: int, m: int, stage: int, schedule: str) -> List[int]:
    """`order` as integer codes ((backward * v + chunk) * m + micro-batch)."""
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
