"""Forecasts a fit made, kept for the next fit of the same process (runs/fit.py `Problem`): the
exact leave-one-group-out refits (runs/accuracy.py `leave_out_exact`) all start from the prior
centres with the rule's choices made there, so their first forecasts, log errors and Jacobian
are the same forecasts of the same configurations under the same constants, which each refit
made again (on the shipped tables 874 of a refit's 15,208 iteration() calls and 89 of its 267
run() calls: benchmarks/bench_fit.py). A forecast is a pure function of its configuration
(its job as chosen, but for the job's name, its GPU and its network: configs.stated) and the
constants, so a kept one is the one made again, to the bit: every refit's result is the one it
was without the memo (tests/test_fit_memo.py).

The memo keeps the most recently used forecasts, at most `size` (least recently used first
out): a refit's later forecasts, at constants no other refit reaches, pass through and go, and
the shared ones are used again by each refit before they can age out. What it holds: the full
fit of the shipped tables keeps 16,529 forecasts, its peak resident memory 207 MB against 192
MB with a memo of size 0 (stop 68, getrusage's ru_maxrss; 72 s of CPU either way for that fit,
whose forecasts are all new)."""
from __future__ import annotations

import struct
from typing import Callable, Hashable

from astral_dsl.kept import Kept

SIZE = 20_000          # forecasts kept: a refit of the shipped tables makes about 15,000


class Memo:
    """key -> a forecast (what `make()` returns), the `size` most recently used kept; `hits` and
    `misses` count the lookups."""

    def __init__(self, size: int = SIZE):
        self.kept = Kept(size) if size else None
        self.hits = self.misses = 0

    def get(self, key: Hashable, make: Callable[[], object]):
        if self.kept is None:        # keeps nothing: no key is hashed
            return make()
        hit = self.kept.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        return self.kept.put(key, make())


def exactly(cal) -> bytes:
    """The constants of a Calibration to the bit (their doubles' bytes: 0.0 and -0.0 apart,
    which compare equal), as a forecast's key."""
    values = cal.values()
    return struct.pack(f"{len(values)}d", *values.values())
