"""What every local process pool of the package shares (a sweep's and a search's workers,
explore/engines.py; the readers of observed files, observe/load.py): Ctrl-C is the parent's;
and a worker's memory bound (`limit_memory`: the language server's workers, lsp/checker.py,
and the child a large observed file is parsed in, observe/budget.py).

A terminal sends SIGINT to the whole process group. A worker interrupted inside its result
queue's lock kept it, then waited for it to send its KeyboardInterrupt back; the other workers
and the pool's shutdown (which waits for the workers) waited for ever: `astral sweep` hung after
a Ctrl-C. So the workers ignore SIGINT (`worker_started`, the pool's initializer), and the
interrupted parent stops them where they are (`terminate`) instead of waiting for their work.

SIGTERM (a `kill`, a job scheduler's or a container's stop) is sent to the parent alone: it died
at once and its forked workers went on with their items (a calibration refit, a minute) before
they found it gone. While forked_map's workers run, a parent whose SIGTERM does the default
(dies) stops them first (`_ended_with`), then dies of the signal as it would have; the workers
do the default themselves (`_forked_started`)."""
from __future__ import annotations

import contextlib
import os
from typing import Optional


def worker_started() -> None:
    """A pool's initializer: the worker leaves Ctrl-C to the process that started it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def terminate(pool, before: Optional[frozenset] = None) -> None:
    """Stop a concurrent.futures ProcessPoolExecutor's workers now and drop its pending work,
    without waiting for what they are doing (a chunk may take minutes). `before`: this
    process's children before the pool was made, so that a worker forked but not yet listed
    is stopped too (_workers); None: the workers the pool lists."""
    _kill(_workers(pool, before) if before is not None else _listed(pool))
    pool.shutdown(wait=False, cancel_futures=True)


def _listed(pool) -> list:
    return list((getattr(pool, "_processes", None) or {}).values())


def _kill(processes) -> None:
    """SIGKILL to each: what SIGTERM's default does to a worker, but a worker forked an instant
    ago loses a SIGTERM that comes before Python's after-fork code (which clears the signals its
    inherited handler noted)."""
    for process in processes:
        try:
            process.kill()
        except (OSError, AttributeError, ValueError):      # already gone
            pass


def cores() -> int:
    """The cores this process may run on (its affinity where the platform says it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# threads known to take no lock a forked child needs: a command's progress line on a terminal
# (outputs/progress.py) writes to stderr under its lock, and a forked child writes nowhere but
# its pipe (its stdout and stderr are new, on /dev/null: quiet)
SAFE_THREADS = ("astral-progress",)


def fork_safe(*waiting) -> bool:
    """Whether no thread runs but the caller's, `waiting` (threads that wait for the child)
    and SAFE_THREADS: another could hold a lock a forked child would wait for. A child forked
    so starts with `quiet`."""
    import threading

    mine = {threading.current_thread(), *waiting}
    return all(t in mine or t.name in SAFE_THREADS for t in threading.enumerate())


def quiet() -> None:
    """A forked child's start: its stdout and stderr new, on /dev/null, so that it never
    writes, nor flushes when it exits, the parent's, whose lock a thread of SAFE_THREADS may
    have held at the fork."""
    import sys

    sys.stdout = sys.stderr = open(os.devnull, "w")


def _forked_started() -> None:
    import signal

    worker_started()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)     # not the parent's _ended_with
    quiet()


def _ended_with(pool, before: frozenset):
    """A SIGTERM handler for the parent of `pool` whose SIGTERM did the default (it dies): the
    pool's workers killed (_workers; `before`: this process's children before the pool), then
    the default restored and the signal sent again, so that the parent dies of it as it would
    have (status 143 in a shell; nothing else runs first, as before). A worker forked before
    its initializer restored the default does the default.
    (No lock is taken: the signal may come while this thread holds the pool's.)"""
    import signal

    parent = os.getpid()

    def ended(signum, frame):
        if os.getpid() == parent:
            _kill(_workers(pool, before))
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return ended


def _workers(pool, before) -> list:
    """The processes of `pool`: those it lists, and any this process forked since `before` (its
    children then) that the pool does not list yet (ProcessPoolExecutor._spawn_process starts
    one, then lists it: a signal between the two left it waiting for an item for ever)."""
    import multiprocessing

    listed = _listed(pool)
    return listed + [p for p in multiprocessing.active_children()
                     if p not in listed and p not in before]


@contextlib.contextmanager
def _workers_end_with_the_parent(pool, before: frozenset):
    """While `pool` works: SIGTERM to this process stops its workers too (`_ended_with`), where
    it would kill this process (a caller's own handler, or SIGTERM ignored, is left as it is: a
    handler that raises SystemExit stops them by forked_map's `except`); then the handler that
    was there is put back. Only the main thread can set one: elsewhere, nothing changes.
    `before`: this process's children before the pool (_workers)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _ended_with(pool, before))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def forked_map(fn, items, workers: int, chunksize: int = 1, safe=fork_safe, done=None):
    """[fn(item) for item in items], in order, by `workers` forked processes (the children
    inherit what the parent holds: nothing is re-imported or sent but the items and the
    results) where there is more than one item and one worker, the platform forks and `safe()`
    (no thread but SAFE_THREADS could hold a lock the children need); else, or when no process
    can be had, in this one. The same results whatever `workers`: each item is taken alone.
    `done(k)`: told as the k-th result (in order) is in. Ctrl-C stops the workers now
    (terminate), and so does a SIGTERM to this process (_workers_end_with_the_parent)."""
    import multiprocessing

    def taken(results):
        out = []
        for res in results:
            out.append(res)
            if done is not None:
                done(len(out))
        return out

    items = list(items)
    workers = min(workers, len(items))
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods() and safe():
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        try:
            ctx = multiprocessing.get_context("fork")
            before = frozenset(multiprocessing.active_children())    # _workers: not the pool's
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                       initializer=_forked_started)
            # the handler set before a worker is forked, put back after the pool's shutdown
            # (which waits for the items left when one raised)
            with _workers_end_with_the_parent(pool, before), pool:
                try:
                    return taken(pool.map(fn, items, chunksize=chunksize))
                except (KeyboardInterrupt, SystemExit):   # Ctrl-C: the workers stop now
                    terminate(pool, before)
                    raise
        except (BrokenProcessPool, OSError, RuntimeError):
            pass                      # no processes to be had here: the work is done in this one
    return taken(fn(item) for item in items)


# the most local worker processes a command starts: a bound of its own, the same on every
# machine (a --workers that runs here runs on a CI box too); past it only the forks cost
# (`--workers 100000` forked a process per task of a search: 115 s against 4.6 s with one, on 2
# cores). More than the cores this process may run on is allowed: they contend, the results do
# not change (the pools' outputs are the same whatever their size)
MAX_LOCAL_WORKERS = 1024


def too_many(flag: str, n: Optional[int]) -> Optional[str]:
    """Why `n` local worker processes are refused (`astral sweep --workers`, `search
    --workers`, `diagnose --jobs`, astral_dsl.sweep's `workers`), or None: more than
    MAX_LOCAL_WORKERS."""
    if n is None or n <= MAX_LOCAL_WORKERS:
        return None
    have = cores()
    return (f"{flag} {n:,}: more than {MAX_LOCAL_WORKERS:,} local worker processes: give at "
            f"most {MAX_LOCAL_WORKERS:,} (this process runs on {have} core"
            f"{'s' if have > 1 else ''}: more workers than that only contend for them)")


def local_workers(what: str, n: Optional[int]) -> Optional[int]:
    """`n` local worker processes as a library entry point takes them (explore.engines'
    LocalEngine, so explore.sweep.run and explore.search.run; observe.load): None (its
    default) or a whole number from 1 to MAX_LOCAL_WORKERS; TypeError for another kind,
    ValueError (too_many's message past the bound) for one out of range. The command line's
    flags and astral_dsl.sweep say the same as diagnostics before they get here."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what} is a whole number (an int) of processes, or None for one per "
                        f"core, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{what} must be at least 1, not {n}")
    refused = too_many(what, n)
    if refused is not None:
        raise ValueError(refused)
    return n


def limit_memory(extra: Optional[int]) -> None:
    """Let this process take at most `extra` bytes of address space beyond what it has now
    (RLIMIT_AS; a lower limit already set is kept; None, or a system without the limit or
    without /proc: none)."""
    if extra is None:
        return
    try:
        import resource
        with open("/proc/self/statm") as f:
            have = int(f.read().split()[0]) * resource.getpagesize()
    except (ImportError, OSError, ValueError):
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = have + extra
    for limit in (soft, hard):
        if limit != resource.RLIM_INFINITY:
            cap = min(cap, limit)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
