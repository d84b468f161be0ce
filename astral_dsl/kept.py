"""Values kept for the keys used most recently, bounded: the one cache type of the package.

A long-lived process (an editor's language server, a design tool that embeds the package, a Dask
worker, a refit) asks the same questions again: the same pipeline schedules, rank numberings,
pictures, solved limits, forecasts. Each place that remembers answers keeps a `Kept`: at most
`most` values, or with `weigh` values whose weights add up to at most `most` (a value heavier
than that alone is returned and not kept), the least recently used let go first. The
bookkeeping (the order of use, the running total of weights) is cachetools' `LRUCache`; this
adds what every user here needs of it:

- safe across threads (a Dask worker runs its tasks on threads, the language server answers on
  several): every operation holds a lock, and two threads that miss one key both build its value
  and both get the first one kept (`put` returns the value kept);
- `get` says a miss with None (no value kept here is None) and counts nothing.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Hashable, Iterator, List, Optional, Tuple

import cachetools


class Kept:
    def __init__(self, most: int, weigh: Optional[Callable[[Any], int]] = None):
        if most < 1:
            raise ValueError("a Kept keeps at least one value (most >= 1)")
        self.most = most
        self._kept: cachetools.LRUCache = cachetools.LRUCache(most, getsizeof=weigh)
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Optional[Any]:
        """The value kept for `key` (now the most recently used), or None."""
        with self._lock:
            return self._kept.get(key)

    def put(self, key: Hashable, value: Any) -> Any:
        """Keep `value` for `key` as the most recently used, letting the least recently used go
        beyond the bound, and return it; when a value is kept for `key` already, that one is
        returned (made the most recently used) and `value` is not kept. A value that weighs more
        than `most` alone is returned and not kept."""
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None:
                return hit
            try:
                self._kept[key] = value
            except ValueError:          # cachetools: "value too large", nothing let go
                pass
            return value

    def items(self) -> Iterator[Tuple[Hashable, Any]]:
        """(key, value) from the least recently used to the most (a copy: safe to iterate)."""
        with self._lock:
            return iter(self._in_order())

    @property
    def weight(self) -> int:
        """What the values kept weigh together (their number without `weigh`)."""
        with self._lock:
            return int(self._kept.currsize)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)

    def _in_order(self) -> List[Tuple[Hashable, Any]]:
        """(key, value) from the least recently used to the most (under the lock). cachetools
        keeps the order of use for `popitem` alone, so it is read by taking every item out, least
        recently used first, and putting each back in that order (which restores it)."""
        taken = []
        while len(self._kept):
            taken.append(self._kept.popitem())
        for key, value in taken:
            self._kept[key] = value
        return taken
