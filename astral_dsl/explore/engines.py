"""Where the points run: a local process pool (all cores by default), or an existing Dask
distributed cluster (`--cluster tls://host:8786`). Both run the same function on the same plain
data (the design's source text and each point's overrides, see bundle.py), in chunks, and hand
back results in submission order whatever finished first.

A cluster is reached as cluster.py allows (TLS with its certificates, or plain TCP to this
machine or with --insecure-cluster), and while the client is open it accepts plain data only
from it (unpickle.py): the version probe's answer and every result are checked to be that
before they are used.

Dask rather than Ray: it is pure Python (one `pip install distributed`, no 100 MB wheel of
native services), its local cluster starts in about a second on two cores, and it ships the
function by reference to an installed package, which is all this work needs: independent tasks
over small inputs, no actors, no object store."""
from __future__ import annotations

import functools
import logging
import math
from typing import Any, Callable, List, Optional, Sequence, Tuple

from astral_dsl.pools import cores, local_workers

Task = Tuple[Callable, Tuple[Any, ...]]       # a module-level function and its arguments


class EngineError(Exception):
    """The engine cannot run the work at all (unreachable cluster, version mismatch)."""


# why a task's answer that is not the shape its task returns (sweep.py, search) is refused
REFUSED = ("the worker's answer is not what its task returns (a worker of another version of "
           "astral_dsl, or a rogue one): refused")


def chunks(n: int, workers: int, largest: int = 16) -> List[range]:
    """Split n items into chunks: several per worker (for balance and progress), small enough
    that a lost chunk costs little."""
    if n <= 0:
        return []
    size = chunk_size(n, workers, largest)
    return [range(i, min(n, i + size)) for i in range(0, n, size)]


def chunk_size(n: int, workers: int, largest: int = 16) -> int:
    """The items of each of chunks(n, workers)."""
    return max(1, min(largest, math.ceil(n / (workers * 8))))


class LocalEngine:
    """A process pool on this machine; one worker runs in this process. The pool lives until
    close(), so that a search's rounds find the workers' caches warm. It holds no more
    processes than there are tasks (a forked pool starts all of its processes at once: 64
    for the 2 points of a sweep on a 64-core machine), up to `workers`."""

    def __init__(self, workers: Optional[int] = None):
        # None: the cores this process may run on; else 1 to pools.MAX_LOCAL_WORKERS
        self.workers = local_workers("workers", workers) or cores()
        self._pool = None
        self._size = 0
        self._before: frozenset = frozenset()

    @property
    def description(self) -> str:
        return f"{self.workers} local process{'es' if self.workers > 1 else ''}"

    def _executor(self, tasks: int):
        want = min(self.workers, tasks)
        if self._pool is not None and self._size < want:
            self.close()                       # a larger round than the pool was made for
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            from astral_dsl.pools import worker_started

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            # this process's children before the pool: abort stops a worker started but not
            # yet listed by the pool too (pools.terminate)
            self._before = frozenset(multiprocessing.active_children())
            self._pool = ProcessPoolExecutor(want,
                                             mp_context=multiprocessing.get_context(method),
                                             initializer=worker_started)
            self._size = want
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

        pool = self._executor(len(tasks))
        broken = False
        try:
            futures = {pool.submit(fn, *args): i for i, (fn, args) in enumerate(tasks)}
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
        except (KeyboardInterrupt, SystemExit):     # Ctrl-C: the workers stop now (pools.py)
            self.abort()
            raise
        if broken:                   # a new pool for the next run
            self.close()
        return results

    def abort(self) -> None:
        """Stop the workers where they are, without waiting for their chunks."""
        pool, self._pool = self._pool, None
        if pool is not None:
            from astral_dsl.pools import terminate

            terminate(pool, self._before)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskEngine:
    """An existing Dask distributed cluster, by its scheduler's address (a ClusterSpec)."""

    def __init__(self, spec, timeout: float = 10.0):
        from astral_dsl.explore.cluster import ClusterError, connection, probe
        from astral_dsl.explore import unpickle

        try:
            import distributed  # noqa: F401
        except ImportError:
            raise EngineError("--cluster needs Dask distributed, an optional dependency: "
                              "pip install astral-dsl[cluster]") from None
        try:
            address, security = connection(spec)
        except ClusterError as exc:
            raise EngineError(str(exc)) from None
        self.address = address
        try:
            unpickle.install()
        except unpickle.GuardError as exc:
            raise EngineError(f"--cluster {address}: {exc}") from None
        self.client = None
        self._logs = OneLineLogs()
        try:
            probe(address, security, timeout)       # bounded, and a scheduler's (cluster.py)
            self.client = _client()(address, timeout=timeout, set_as_default=False,
                                    security=security)
        except ClusterError as exc:
            self.close()
            raise EngineError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - whatever Dask raises: the cluster is unusable
            self.close()
            raise EngineError(f"--cluster {address}: cannot reach the Dask scheduler "
                              f"({type(exc).__name__}: {str(exc)[:500]})") from None
        except BaseException:     # Ctrl-C: the guard must not outlive the engine (a notebook)
            self.close()
            raise
        try:
            self._check_versions()
        except BaseException:
            self.close()
            raise

    def _check_versions(self) -> None:
        from astral_dsl import __version__

        try:
            versions = self.client.run(_version)
        except Exception as exc:  # noqa: BLE001 - a refused or failed probe refuses the cluster
            self.close()
            raise EngineError(f"--cluster {self.address}: the workers' version probe failed "
                              f"({type(exc).__name__}: {exc})") from None
        if not isinstance(versions, dict) or not versions:
            self.close()
            raise EngineError(f"--cluster {self.address}: the cluster has no workers")
        odd = sorted(str(w) for w, v in versions.items() if not isinstance(v, str))
        if odd:
            self.close()
            raise EngineError(f"--cluster {self.address}: worker {odd[0]} did not answer the "
                              "version probe with a version")
        wrong = {str(w): v for w, v in versions.items() if v != __version__}
        if wrong:
            self.close()
            worker, version = sorted(wrong.items())[0]
            raise EngineError(f"--cluster {self.address}: worker {worker} runs astral_dsl "
                              f"{version[:40]}, this client {__version__}; install the same "
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

        from astral_dsl.explore.unpickle import plain

        results: List[Any] = [None] * len(tasks)
        futures = [self.client.submit(fn, *args, pure=False) for fn, args in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures, loop=self.client.loop):
            i = index[future.key]
            try:
                result = future.result()
                if not plain(result):
                    raise TypeError("the result is not plain data: refused")
                results[i] = result
            except Exception as exc:  # noqa: BLE001 - a lost worker costs its chunk only
                if lost is None:
                    raise
                results[i] = lost(i, _failure(exc))
            done(i)
        return results

    def close(self) -> None:
        from astral_dsl.explore import unpickle

        try:
            if self.client is not None:
                self.client.close()
        finally:
            self.client = None
            self._logs.close()
            unpickle.uninstall()


class OneLineLogs(logging.Filter):
    """While an engine is open, Dask's log records reach the terminal as one line each, without
    a traceback, and with control characters escaped: their text may come from the cluster (a
    refused pickle, a worker's exception), and a traceback is not for the user."""

    LOGGERS = ("distributed", "distributed.client")

    def __init__(self):
        super().__init__()
        self.handlers = [h for name in self.LOGGERS for h in logging.getLogger(name).handlers]
        for h in self.handlers:
            h.addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        from astral_dsl.outputs.terminal import printable

        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a record whose arguments do not format
            text = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        record.msg, record.args = printable(" ".join(text.split()))[:2000], ()
        record.exc_info = record.exc_text = record.stack_info = None
        return True

    def close(self) -> None:
        for h in self.handlers:
            h.removeFilter(self)
        self.handlers = []


def _failure(exc: Exception) -> str:
    """Why a Dask task gave no result. A worker's error comes as a pickle, which the client
    does not read (unpickle.py): Dask then hands over its bytes, which say nothing."""
    if exc.args and isinstance(exc.args[0], (bytes, bytearray, memoryview)):
        return ("the Dask task failed or its worker died (the error it sent is a pickle, which "
                "this client does not read)")
    return f"the Dask task failed: {type(exc).__name__}: {str(exc)[:500]}"


IGNORED_TOPICS = ("print", "warn")


@functools.lru_cache(maxsize=None)
def _client():
    """Dask's Client, without the handlers that print a worker's `print` and `warn` events in
    this process (a worker's text would reach the terminal, or the middle of --format json)."""
    from distributed import Client

    class QuietClient(Client):
        def subscribe_topic(self, topic, handler):
            if topic in IGNORED_TOPICS:
                return None
            return super().subscribe_topic(topic, handler)

    return QuietClient


def _version() -> str:
    from astral_dsl import __version__

    return __version__


def engine(cluster=None, workers: Optional[int] = None):
    """A LocalEngine, or a DaskEngine for `cluster` (a ClusterSpec, or an address with the
    defaults: certificates from Dask's configuration, no --insecure-cluster)."""
    if cluster:
        from astral_dsl.explore.cluster import ClusterSpec

        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(str(cluster))
        return DaskEngine(spec)
    return LocalEngine(workers)
