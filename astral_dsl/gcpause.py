"""Pausing Python's cyclic garbage collector while a large immutable structure is built.

Parsing and compiling allocate hundreds of thousands of objects that all stay alive (tokens,
syntax nodes, frames, instances): each allocation counts towards the collector's next pass, and
every pass walks the objects that survived the ones before, none of which is garbage. On a
1 MB design this was about a third of `astral check`'s CPU time (benchmarks/bench_scale.py).
The collector is paused while such a structure is built, and while the engineering analyses
walk a compiled design (their allocations had each pass rescan the whole model: about a fifth
of a warm 1 MB check), and resumes where it was after; the little cyclic garbage left meanwhile
is collected by the next pass, as before. Each pause is one structure or one analysis, never a
whole command: a pause over a check with 64 required scenarios kept the cyclic garbage of all
their compiles (14 GiB instead of 415 MiB at the peak, benchmarks/bench_limits.py).

Nesting and threads are safe: only the outermost pause that found the collector running turns
it on again, and a collector that was off (someone else's choice) stays off. Freezing likewise
respects a host application that embeds the package: gc.unfreeze() has no partial form (it
thaws every frozen object), so objects are frozen here only while everything frozen in the
process was frozen here (`_mine`); a host that froze its own (a pre-forking server's start-up,
a test runner's collection) keeps them frozen, and the package's pauses still serve it. The
collector is asked whether anything is frozen only until a host's frozen objects are seen:
gc.get_freeze_count() walks every frozen object (CPython 3.11's gc_list_size: 17 ms for the
350,000 that the test suite's collection freezes, 45 ms for 1.4 million), which every command
run in such a host had paid two or three times (the test suite's in-process commands). Once it
has seen them, the package freezes nothing more in that process, even if the host thaws them
later (its pauses still serve): it never thaws what it did not freeze."""
from __future__ import annotations

import functools
import gc
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_depth = 0                 # pauses open in this process (any thread)
_resume = False            # whether the collector was running when the first one opened
_mine = False              # whether what is frozen in this process was frozen by this module
_foreign = False           # whether objects someone else froze were seen (module docstring)


@contextmanager
def paused() -> Iterator[None]:
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()


def pausing(function):
    """`function` with the collector paused while it runs."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        with paused():
            return function(*args, **kwargs)
    return run


@contextmanager
def settled() -> Iterator[None]:
    """The block (a one-shot command importing its modules: ~100 for `astral check`, whose
    objects live to its end, none of them garbage) with the collector paused, then everything
    alive left out of its passes (gc.freeze; `frozen` below puts it back in the oldest
    generation as its block ends): without it, ~45 passes walked the objects of the modules
    imported before them, and with only the pause its first pass after would walk them all
    (6 ms of a warm check of the reference). Not for a long-lived process: what is frozen is
    never collected until something unfreezes it. Nothing is frozen where a host froze objects
    of its own (module docstring)."""
    with paused():
        yield
        _freeze()


def _freeze() -> bool:
    """gc.freeze() where nothing frozen is someone else's (asked of the collector until a host's
    frozen objects are seen, then never again: module docstring); whether it froze."""
    global _mine, _foreign
    with _lock:
        if _mine or (not _foreign and gc.get_freeze_count() == 0):
            gc.freeze()
            _mine = True
            return True
        _foreign = True
        return False


def _unfreeze() -> None:
    global _mine
    with _lock:
        if _mine:
            gc.unfreeze()
            _mine = False


@contextmanager
def frozen(build: Callable[[], T]) -> Iterator[T]:
    """`build()` (what a one-shot command keeps to its end: the syntax trees of the files it
    checks, the design compiled from them) with the collector paused, then everything alive
    left out of the collector's passes until the block ends (gc.freeze, before the collector
    resumes: its first pass would walk all of what was just built, 0.15 s for a 1 MB design's
    trees and as much for its design; then gc.unfreeze puts it back in the oldest generation,
    where a full pass finds any of it that has become garbage). Cyclic garbage left while
    `build` ran is frozen with the rest: `build` is one structure, never a loop of them. Where a
    host froze objects of its own, nothing is frozen or unfrozen (module docstring)."""
    with paused():
        value = build()
        froze = _freeze()
    try:
        yield value
    finally:
        if froze:
            _unfreeze()
