"""The period of a trace's kernel sequence: how a trace without ProfilerStep annotations is cut
into iterations (kineto.py).

The period is the shortest p (1 <= p <= n/2, so that the pattern repeats at least twice) under
which at least SHARE of the sequence repeats: matches(p) = #{i < n - p : seq[i] == seq[i + p]}
>= SHARE * (n - p). Checking every p directly is O(n^2): 40,000 kernels took 0.4 s, a
400,000-kernel trace would take about a minute. Instead matches(p) is bounded for every p at
once, and only the p whose bound passes are checked directly, in ascending order, so the answer
is always the direct search's. Short sequences and short periods are found directly (the first
DIRECT elements compared); then:

- the kernels are put in at most BUCKETS buckets: the most frequent one each in its own, the
  others shared round-robin; a bucket's autocorrelation (one FFT of its indicator x:
  sum_i x[i] x[i + p], for every p at once) counts its kernels' matches exactly, and also the
  pairs of two different kernels of one bucket, so the buckets' sum bounds matches(p) from
  above.

On a training trace (a few dozen distinct kernels repeating) the bound passes at the period and
its multiples only: 400,000 kernels that do not repeat take about 5 s instead of a minute. When
so many kernels would need an FFT that the FFTs cost more than the direct search, the direct
search runs: the work is never more than the direct search's."""
from __future__ import annotations

from typing import Optional

import numpy as np

SHARE = 0.9
BUCKETS = 64               # FFTs at most
SHARED = 16                # of them shared by the less frequent kernels
DIRECT = 50_000_000        # elements compared directly before the bound is computed
FFT_COST = 2               # an FFT of size m costs about FFT_COST * m log2 m element compares


def find(seq: np.ndarray) -> Optional[int]:
    """The shortest period of `seq` (small non-negative integers, one per kernel in time
    order), or None."""
    n = int(seq.size)
    if n < 2:
        return None
    half = n // 2
    need = SHARE * (n - np.arange(half + 1))
    # short sequences, or a short period: checked directly until DIRECT elements are compared
    done, compared = 0, 0
    while done < half and compared < DIRECT:
        done += 1
        if _matches(seq, done) >= need[done]:
            return done
        compared += n - done
    if done == half:
        return None
    shifts = np.arange(done + 1, half + 1)
    buckets = _buckets(seq)
    size = 1 << int(2 * n - 1).bit_length()      # no wrap-around: at least 2n - 1
    if FFT_COST * (int(buckets.max()) + 1) * size * size.bit_length() < \
            int((n - shifts).sum()):
        upper = _upper_bound(buckets[seq], n, size)
        # 0.5: the FFT's rounding (its counts are exact integers to well within that)
        shifts = shifts[upper[shifts] + 0.5 >= need[shifts]]
    for period in shifts.tolist():
        if _matches(seq, period) >= need[period]:
            return period
    return None


def _matches(seq: np.ndarray, p: int) -> int:
    return int(np.count_nonzero(seq[:-p] == seq[p:]))


def _buckets(seq: np.ndarray) -> np.ndarray:
    """Symbol -> bucket: the BUCKETS - SHARED most frequent each its own, the others in SHARED
    buckets by frequency rank, round-robin (so that no bucket holds two heavy ones)."""
    counts = np.bincount(seq)
    rank = np.empty(counts.size, dtype=np.int64)
    rank[np.argsort(-counts, kind="stable")] = np.arange(counts.size)
    own = BUCKETS - SHARED
    return np.where(rank < own, rank, own + (rank - own) % SHARED)


def _upper_bound(bucket_seq: np.ndarray, n: int, size: int) -> np.ndarray:
    """Per shift p (index p, 0..n-1): #{i < n - p : bucket[i] == bucket[i + p]}, the sum of the
    buckets' autocorrelations."""
    total = np.zeros(n)
    for b in range(int(bucket_seq.max()) + 1):
        f = np.fft.rfft((bucket_seq == b).astype(np.float64), size)
        total += np.fft.irfft(f * np.conj(f), size)[:n]
    return total


__all__ = ["SHARE", "find"]
