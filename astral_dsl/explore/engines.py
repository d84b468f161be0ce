"""Where the points run: a local process pool (all cores by default), or an existing Dask
distributed cluster (`--cluster tcp://host:8786`). Both run the same function on the same plain
data (the design's source text and each point's overrides, see bundle.py), in chunks, and hand
back results in submission order whatever finished first.

Dask rather than Ray: it is pure Python (one `pip install distributed`, no 100 MB wheel of
native services), its local cluster starts in about a second on two cores, its scheduler address
is a plain `tcp://host:port`, and it ships the function by reference to an installed package,
which is all this work needs: independent tasks over small inputs, no actors, no object store."""
from __future__ import annotations

import math
import os
from typing import Any, Callable, List, Optional, Sequence, Tuple

Task = Tuple[Callable, Tuple[Any, ...]]       # a module-level function and its arguments


class EngineError(Exception):
    """The engine cannot run the work at all (unreachable cluster, version mismatch)."""


def chunks(n: int, workers: int, largest: int = 16) -> List[range]:
    """Split n items into chunks: several per worker (for balance and progress), small enough
    that a lost chunk costs little."""
    if n <= 0:
        return []
    size = max(1, min(largest, math.ceil(n / (workers * 8))))
    return [range(i, min(n, i + size)) for i in range(0, n, size)]


class LocalEngine:
    """A process pool on this machine; one worker runs in this process. The pool lives until
    close(), so that a search's rounds find the workers' caches warm."""

    def __init__(self, workers: Optional[int] = None):
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._pool = None

    @property
    def description(self) -> str:
        return f"{self.workers} local process{'es' if self.workers > 1 else ''}"

    def _executor(self):
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            self._pool = ProcessPoolExecutor(self.workers,
                                             mp_context=multiprocessing.get_context(method))
        return self._pool

    def run(self, tasks: Sequence[Task], done: Callable[[int], None] = lambda i: None,
            lost: Callable[[int, str], Any] = None) -> List[Any]:
        results: List[Any] = [None] * len(tasks)
        if self.workers == 1 or len(tasks) <= 1:
            for i, (fn, args) in enumerate(tasks):
                results[i] = fn(*args)
                done(i)
            return results
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        pool = self._executor()
        futures = {pool.submit(fn, *args): i for i, (fn, args) in enumerate(tasks)}
        broken = False
        for future in as_completed(futures):
            i = futures[future]
            try:
                results[i] = future.result()
            except BrokenProcessPool as exc:
                broken = True
                if lost is None:
                    self.close()
                    raise
                results[i] = lost(i, f"the local worker process died ({exc})")
            done(i)
        if broken:                   # a new pool for the next run
            self.close()
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskEngine:
    """An existing Dask distributed cluster, by its scheduler's address."""

    def __init__(self, address: str, timeout: float = 10.0):
        try:
            from distributed import Client
        except ImportError:
            raise EngineError("--cluster needs Dask distributed, an optional dependency: "
                              "pip install astral-dsl[cluster]") from None
        self.address = address
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise EngineError(f"--cluster {address}: cannot reach the Dask scheduler ({exc})") \
                from None
        self._check_versions()

    def _check_versions(self) -> None:
        from astral_dsl import __version__

        versions = self.client.run(_version)
        if not versions:
            self.close()
            raise EngineError(f"--cluster {self.address}: the cluster has no workers")
        wrong = {w: v for w, v in versions.items() if v != __version__}
        if wrong:
            self.close()
            worker, version = sorted(wrong.items())[0]
            raise EngineError(f"--cluster {self.address}: worker {worker} runs astral_dsl "
                              f"{version}, this client {__version__}; install the same "
                              "version on every worker")
        self.workers = len(versions)

    @property
    def description(self) -> str:
        return f"Dask cluster {self.address} ({self.workers} workers)"

    def scatter(self, data):
        """Send `data` once to every worker; tasks then take the returned handle."""
        return self.client.scatter(data, broadcast=True, hash=False)

    def run(self, tasks: Sequence[Task], done: Callable[[int], None] = lambda i: None,
            lost: Callable[[int, str], Any] = None) -> List[Any]:
        from distributed import as_completed

        results: List[Any] = [None] * len(tasks)
        futures = [self.client.submit(fn, *args, pure=False) for fn, args in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures, loop=self.client.loop):
            i = index[future.key]
            try:
                results[i] = future.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker costs its chunk only
                if lost is None:
                    raise
                results[i] = lost(i, f"the Dask task failed: {type(exc).__name__}: {exc}")
            done(i)
        return results

    def close(self) -> None:
        self.client.close()


def _version() -> str:
    from astral_dsl import __version__

    return __version__


def engine(cluster: Optional[str] = None, workers: Optional[int] = None):
    if cluster:
        if "://" not in cluster:
            cluster = "tcp://" + cluster
        if not cluster.startswith(("tcp://", "tls://", "inproc://", "ws://", "wss://")):
            raise EngineError(f"--cluster {cluster}: expected a Dask scheduler address such as "
                              "tcp://host:8786")
        return DaskEngine(cluster)
    return LocalEngine(workers)
