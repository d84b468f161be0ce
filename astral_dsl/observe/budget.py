"""A large observed file is parsed in a forked child process under a memory budget, so that no
JSON or CSV it holds can take the machine's memory, whatever part of it is built.

The readers bound what they keep (tracedoc.MAX_EVENTS, MAX_KEPT; ranklog.MAX_ROWS), but a
parser builds a value whole before the reader sees it: a trace `{"junk": [[], [], ...]}` of 30
million entries is 87 kB gzipped and 90 MB inflated, and its read peaked at 2.2 GB (at the
1 GiB inflated cap, about 27 GB): each `[],` costs 64 bytes as a list. The same held for
`distributedInfo`, `deviceProperties`, a nested field of a kernel, an event the schema does not
fit, a JSON Lines row, a CSV row of millions of cells. Rather than a bound per field (and one
more for each field a later reader takes), the parse of a file above FROM_BYTES (inflated) runs
in a child whose address space (RLIMIT_AS) is what it holds at the fork plus BUDGET: past it
the parsers raise MemoryError (or the child dies), and the caller says E781. The parent watches
the child's address space and ends it once no more of the allocator's arenas fit under its cap
(_watch): a parse building a value whole went on at the cap for seconds, one failed mapping an
object, before its MemoryError.

BUDGET (6 GiB) is above what a real file at the caps takes: a trace at 1 GiB about 1.1 GiB more
than its bytes (docs/diagnose.md); a rank log of 4,000,000 rows, peer and op filled, 3.9 GB in
all, about 3.6 GB more than its bytes (a 4 GiB budget left too thin a margin). A hostile file
meets it long before the machine's memory: each of the values above at the 1 GiB cap ends in
E781 (peak about 1 GiB + BUDGET). A file within FROM_BYTES is parsed in the process (a fork
costs more than its read; at most about 25 times 16 MiB, 400 MB, however it is built). The
child is the one worker of a process pool forked as observe/load.py's are, and its result comes
back as theirs do: the same objects, byte for byte. The child ends with the process that
forked it (_die_with: inside a pools.forked_map worker it is a grandchild, which went on
parsing when its worker was ended). Where a child cannot be forked safely (no fork or no /proc,
as on Windows and macOS, or threads running other than pools.SAFE_THREADS, which a fork could
catch holding a lock), the parse runs in the process, unbounded as before."""
from __future__ import annotations

import os
import signal
import threading
from typing import Callable, TypeVar

from astral_dsl.pools import fork_safe, limit_memory, quiet

FROM_BYTES = 16 << 20        # files larger than this (inflated) are parsed in a bounded child
BUDGET = 6 << 30             # the child's address space beyond what it holds at the fork

T = TypeVar("T")


class OverBudget(Exception):
    """The parse took more memory than BUDGET, or its child died."""


# what the child runs, inherited at the fork (never pickled: the parse may be any callable, and
# the file's bytes are not copied through a pipe)
_TASK = None


def bounded(parse: Callable[..., T], *args, handed: list) -> T:
    """parse(*args, handed), in a forked child limited to BUDGET more address space when that
    can be done safely, else here; OverBudget when the child ran out of memory or died. Another
    exception of the parse is raised here, as if it had run here. `handed` (the file's bytes,
    in a list the parse empties once it has no more use for them) is the child's alone: it is
    emptied here once the child is forked, so that the bytes are freed when the child frees
    them, as they are when the parse runs here. The child is a worker of a one-process pool
    forked as load.py's are (its result comes back as theirs do)."""
    if not _can_fork():
        return parse(*args, handed)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    global _TASK
    _TASK = (parse, args, handed)
    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_start, initargs=(os.getpid(),)) as pool:
            future = pool.submit(_run)           # the worker is forked here, with _TASK
            _TASK = None
            handed.clear()
            try:
                full = _watch(pool, future)
                kind, value = ("memory", None) if full else future.result()
            except BrokenProcessPool:
                raise OverBudget("the read of the file died (out of memory, or killed)") from None
            except MemoryError:                  # sending its result back
                kind, value = "memory", None
    finally:
        _TASK = None
    if kind == "memory":
        raise OverBudget(f"the read of the file took more than the reader's memory budget "
                         f"({BUDGET >> 20:,} MiB beyond the file's bytes)")
    return value


POLL_S = 0.01        # how often the parent looks at the child's address space
ARENA = 1 << 20      # what Python's allocator maps at a time (an arena of 3.10 on): a child
#                      within this of its cap can map no more


def _watch(pool, future) -> bool:
    """Wait for the child's parse; True when its address space came within ARENA of its cap
    first, the child then ended. At its cap a parse building a value whole (tests/
    test_trace_budget.py's hostile files) did not stop: every object it still made tried to
    map an arena and failed, and took the memory it freed elsewhere, one failed mapping each
    (730,000 of them, seconds, for a budget of 8 MiB) before the MemoryError. The child
    cannot watch itself (the parser holds the interpreter while it builds), so this process
    does, from /proc, and ends it as soon as no arena fits."""
    from concurrent.futures import wait

    pids = list((getattr(pool, "_processes", None) or {}))
    if len(pids) != 1 or not hasattr(_resource(), "prlimit"):
        return False
    pid, cap, page = pids[0], None, os.sysconf("SC_PAGE_SIZE")
    while not wait([future], timeout=POLL_S)[0]:
        try:
            if cap is None:           # set by the child's _limit, once it has started
                soft = _resource().prlimit(pid, _resource().RLIMIT_AS)[0]
                cap = None if soft == _resource().RLIM_INFINITY else soft
                continue
            with open(f"/proc/{pid}/statm") as fh:
                size = int(fh.read().split()[0]) * page
        except (OSError, ValueError):     # gone: the future says how
            continue
        if size + ARENA > cap:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            wait([future])
            return True
    return False


def _resource():
    import resource

    return resource


def _start(parent: int) -> None:
    """The child's start: its end tied to its parent's (_die_with), nothing written where the
    parent's streams may be locked (quiet), and its memory bounded (_limit)."""
    _die_with(parent)
    quiet()
    _limit()


PR_SET_PDEATHSIG = 1        # linux/prctl.h


def _die_with(parent: int) -> None:
    """The kernel kills this child (SIGKILL) as its parent, `parent`, goes. Inside a
    pools.forked_map worker the child is a grandchild: a worker ended by forked_map's SIGTERM, a
    SIGKILL or the out-of-memory killer left it parsing (a file of up to 1 GiB, its budget 6
    GiB) until it sent a result no one read. It cannot watch for that itself (the parser holds
    the interpreter while it builds, as _watch says), hence the kernel (prctl, through ctypes:
    Linux; elsewhere, nothing, as before). The signal follows the thread that forked the child,
    which is bounded's caller (ProcessPoolExecutor forks a "fork" pool's worker in submit), and
    it waits in bounded until the child is done. A parent gone before the prctl is seen by
    getppid (the child was handed to another): the child ends at once."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):     # no C library to load, or no prctl in it
        pass
    if os.getppid() != parent:
        os._exit(1)


def _run():
    """("ok", the parse's result) or ("memory", None): in the child, on what it inherited."""
    parse, args, handed = _TASK
    try:
        return "ok", parse(*args, handed)
    except MemoryError:
        return "memory", None


def _can_fork() -> bool:
    """Whether a child can be forked safely: no thread runs but the caller's, the main thread
    (which waits for it, load.read_file) and pools.SAFE_THREADS (fork_safe)."""
    if not hasattr(os, "fork") or not os.path.exists("/proc/self/statm"):
        return False
    return fork_safe(threading.main_thread())


def _limit() -> None:
    """This process's address space capped at what it holds now plus BUDGET (a lower limit
    already set is kept), no core file when it dies of it, and the kernel's out-of-memory
    killer pointed at it first (a machine with less free memory than BUDGET: the child is
    killed, E781, rather than the parent or another program)."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
    except OSError:
        pass
    limit_memory(BUDGET)


__all__ = ["BUDGET", "FROM_BYTES", "OverBudget", "bounded", "fork_safe", "quiet"]
