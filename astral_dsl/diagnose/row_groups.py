"""Grouping the rows of integer columns, the step the matching of records repeats (diagnose/
match.py, evidence.py, localise.py): dense ids of the distinct rows, a stable order, and each
row's place among the rows of its group. Each gives what the plain numpy computation (np.unique
over rows, a stable argsort, a lexsort) gives, faster: one integer key a row where the columns'
ranges fit 62 bits, counted rather than sorted when few keys are possible."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np


def group_ids(*cols: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Dense ids of the distinct rows of `cols` (int arrays of one length): (inverse, index of
    each group's first row in sorted order: the rows sorted by cols[0], then cols[1], ...,
    then by position)."""
    n = cols[0].size
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key, total = one_key(cols)
    if key is not None and total <= COUNTED * n + (1 << 16):
        # few possible rows: ids by counting which occur, no sort (the same ids: ascending
        # rows; the same firsts: the lowest position of each)
        present = np.zeros(total, dtype=bool)
        present[key] = True
        dense = np.cumsum(present) - 1
        inv = dense[key]
        firsts = np.full(int(dense[-1]) + 1, n, dtype=np.int64)
        np.minimum.at(firsts, inv, np.arange(n))
        return inv, firsts
    order, new = sort_rows(cols, key, total)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return inv, order[new]


COUNTED = 4           # group_ids counts rather than sorts up to this many possible rows a row


def stable_order(key: np.ndarray, total: int) -> Tuple[np.ndarray, np.ndarray]:
    """(np.argsort(key, kind="stable"), key sorted) of non-negative integers below `total`.

    With the position in the low bits each key is distinct, and a plain sort of the values
    (numpy's vectorised quicksort, several times faster than a stable argsort) sorts by key
    and then by position: the stable order."""
    n = key.size
    bits = max(1, (n - 1).bit_length())
    if total >= 1 << (63 - bits):
        order = np.argsort(key, kind="stable")
        return order, key[order]
    packed = key << bits
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    return packed & ((1 << bits) - 1), packed >> bits


def sort_rows(cols, key: Optional[np.ndarray], total: int
               ) -> Tuple[np.ndarray, np.ndarray]:
    """(the rows' order sorted by cols[0], cols[1], ..., then by position; whether each sorted
    row starts a group). `key`: the rows as one integer below `total` (one_key), or None."""
    n = cols[0].size
    new = np.empty(n, dtype=bool)
    new[0] = True
    if key is not None:                  # one sort of one integer: the same order, faster
        order, sk = stable_order(key, total)
        np.not_equal(sk[1:], sk[:-1], out=new[1:])
    else:
        order = np.lexsort(cols[::-1])
        new[1:] = False
        for c in cols:
            sc = c[order]
            new[1:] |= sc[1:] != sc[:-1]
    return order, new


def one_key(cols) -> Tuple[Optional[np.ndarray], int]:
    """(the rows of `cols` as one int64 each, ordered as the rows (mixed radix, cols[0] the
    most significant digit), the number of possible keys); None when their ranges do not fit
    62 bits."""
    digits = []
    total = 1
    for c in cols:
        lo, hi = int(c.min()), int(c.max())
        if hi > lo:                      # a constant column adds nothing to the order
            digits.append((c, lo, hi - lo + 1, max(abs(lo), abs(hi))))
            total *= hi - lo + 1
    if total >= 1 << 62:
        return None, total
    if not digits:
        return np.zeros(cols[0].size, dtype=np.int64), 1
    # sum of (c - lo) * weight as sum of c * weight - offset (no shifted copy of each column),
    # when no partial sum can leave 62 bits
    offset = bound = 0
    for _, lo, span, size in digits:
        offset = offset * span + lo
        bound = bound * span + size
    if bound < 1 << 62:
        key = digits[0][0].astype(np.int64)
        for c, _, span, _ in digits[1:]:
            key *= span
            key += c
        if offset:
            key -= offset
        return key, total
    key = np.zeros(cols[0].size, dtype=np.int64)
    for c, lo, span, _ in digits:
        key *= span
        key += c - lo
    return key, total


def occurrence(ids: np.ndarray, start: np.ndarray) -> np.ndarray:
    """For each record, how many records with the same id start before it."""
    order = np.lexsort((start, ids))
    sk = ids[order]
    first = np.r_[True, sk[1:] != sk[:-1]]
    return _rank_in_runs(order, first)


def _rank_in_runs(order: np.ndarray, first: np.ndarray) -> np.ndarray:
    """For rows sorted by `order` into runs (`first`: the row starts one), each row's place in
    its run, in the rows' own order."""
    idx = np.arange(order.size)
    run_start = np.maximum.accumulate(np.where(first, idx, 0))
    occ = np.empty(order.size, dtype=np.int64)
    occ[order] = idx - run_start
    return occ


def occurrence_on_rank(rank, local_cols, when) -> np.ndarray:
    """occurrence() of the records grouped by (rank, *local_cols) in the order of `when`, for
    records whose ranks are contiguous (collect appends them rank by rank).

    Sorted by the local columns alone (stable), each group is a run of one rank's records in
    their order; when `when` already ascends in every run (records are in time order) that is
    the order by `when`."""
    local, total = one_key(local_cols)
    if local is None:
        return occurrence(group_ids(rank, *local_cols)[0], when)
    order, ls = stable_order(local, total)
    rs = rank[order]
    new = np.empty(order.size, dtype=bool)
    new[0] = True
    new[1:] = (ls[1:] != ls[:-1]) | (rs[1:] != rs[:-1])
    w = when[order]
    if (new[1:] | (w[1:] >= w[:-1])).all():
        return _rank_in_runs(order, new)
    ids = np.empty(order.size, dtype=np.int64)       # out of order somewhere: sort by `when`
    ids[order] = np.cumsum(new) - 1
    return occurrence(ids, when)


__all__ = ["COUNTED", "group_ids", "occurrence", "occurrence_on_rank", "one_key", "sort_rows",
           "stable_order"]
