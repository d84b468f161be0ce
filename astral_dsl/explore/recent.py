"""What a worker process keeps for the tasks that follow, bounded: the values of the most
recently used keys, at most `keep` of them (the least recently used let go first). A worker's
tasks of one sweep or search share one entry; a long-lived process (an editor's, a design tool's
that embeds the package) runs many, and kept every one before (benchmarks/bench_retention.py).
Safe across threads (a Dask worker runs its tasks on threads): two threads that miss the same
key both build its value, and both get the first one kept."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable, Iterator, Optional, Tuple


class Recent:
    def __init__(self, keep: int):
        self.keep = keep
        self._kept: "OrderedDict[Hashable, Any]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Optional[Any]:
        """The value kept for `key` (now the most recently used), or None."""
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None:
                self._kept.move_to_end(key)
            return hit

    def put(self, key: Hashable, value: Any) -> Any:
        """Keep `value` for `key` (unless a value is kept for it already: that one is returned)
        as the most recently used, letting the least recently used go beyond `keep`."""
        with self._lock:
            hit = self._kept.setdefault(key, value)
            self._kept.move_to_end(key)
            while len(self._kept) > self.keep:
                self._kept.popitem(last=False)
            return hit

    def items(self) -> Iterator[Tuple[Hashable, Any]]:
        """(key, value) from the least recently used to the most (a copy: safe to iterate)."""
        with self._lock:
            return iter(list(self._kept.items()))

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)
