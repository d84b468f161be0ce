"""The package's one cache type (astral_dsl/kept.py): the values of the keys used most recently,
bounded by their number or their weight, the least recently used let go first, safe across
threads."""
from __future__ import annotations

import threading

import pytest

from astral_dsl.kept import Kept


def test_by_number_the_least_recently_used_goes():
    kept = Kept(2)
    assert kept.put("a", 1) == 1 and kept.put("b", 2) == 2
    assert kept.get("a") == 1                  # a is now the most recent
    assert kept.put("c", 3) == 3               # b, the least recent, goes
    assert kept.get("b") is None and list(kept.items()) == [("a", 1), ("c", 3)]
    assert kept.put("a", 10) == 1              # a value already kept is the one returned...
    assert list(kept.items()) == [("c", 3), ("a", 1)]   # ...and is now the most recent
    assert len(kept) == 2 and kept.weight == 2
    # reading the order leaves it as it was
    assert list(kept.items()) == [("c", 3), ("a", 1)]


def test_by_weight_as_many_go_as_the_new_value_needs():
    kept = Kept(10, weigh=len)
    kept.put(1, "aaaa")
    kept.put(2, "bbbb")
    assert kept.weight == 8
    kept.get(1)
    kept.put(3, "ccccc")                       # 13 > 10: 2, the least recent, goes
    assert [k for k, _ in kept.items()] == [1, 3] and kept.weight == 9
    kept.put(4, "dddddddd")                    # 17 > 10: both go
    assert [k for k, _ in kept.items()] == [4] and kept.weight == 8
    # a value heavier than the bound alone is returned, not kept, and lets nothing go
    big = "x" * 11
    assert kept.put(5, big) is big and kept.get(5) is None and [k for k, _ in kept.items()] == [4]
    kept.clear()
    assert not kept and kept.weight == 0


def test_a_bound_below_one_is_refused():
    with pytest.raises(ValueError):
        Kept(0)


def test_threads_that_miss_one_key_get_the_first_value_kept():
    kept = Kept(64)
    start = threading.Barrier(8)
    got = []

    def miss(n):
        start.wait()
        for k in range(200):
            hit = kept.get(k)
            if hit is None:
                hit = kept.put(k, (n, k))
            got.append((k, hit))

    threads = [threading.Thread(target=miss, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(kept) == 64 and kept.weight == 64
    # each key's value is one thread's, the same for every thread that asked while it was kept
    for k, value in kept.items():
        assert value[1] == k
    assert all(hit[1] == k for k, hit in got)
