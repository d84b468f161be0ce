"""Stopping a compile that runs in a thread nobody waits for any more, at a point of its own.

The language server runs its own compiles (the one hover and navigation read, the project scan
for references, the margins of a hover) in threads (lsp/workers.py `Job`). A thread cannot be
stopped from outside without raising into it wherever it is (inside an import, holding a
lock: lsp/workers.py says why that is never done), so a request that ran out of time, or a
document edited since, left its compile running to its end: up to the evaluation budget
(semantics/evaluate.py MAX_STEPS, ~25 s of CPU) per compile, 200 of them in a project scan,
each holding the memory it built and a share of the interpreter the event loop needed.

Instead, the thread states when it should stop (`stop_when`, a predicate of its own: its job
was cancelled or is past its deadline), and the evaluator asks (`check`) every POLL_STEPS steps
of evaluation, at the point where it already raises when a compile runs out of steps: the
compile ends there with `Cancelled`, an exception of the thread itself that unwinds through
every `with` and `finally` as any other does. A thread that stated nothing (the command line,
the language server's worker processes, which are ended whole) is never stopped."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

# evaluation steps between two questions (semantics/evaluate.py counts the steps): a step costs
# 1.5 to 12 us of CPU (evaluate.py MAX_STEPS's comment), so a stopped compile ends 6 to 50 ms
# of CPU after its stop; a design choice (the cost of the question is one call per 4,096 steps)
POLL_STEPS = 4096


class Cancelled(BaseException):
    """The compile of this thread was stopped (`stop_when`'s predicate said so). A
    BaseException, like KeyboardInterrupt: a handler of `Exception` that turns a failure into a
    diagnostic and goes on does not take it for one."""


_local = threading.local()


@contextmanager
def stop_when(predicate: Callable[[], bool]) -> Iterator[None]:
    """The block, run in this thread, stops (Cancelled, at the next `check`) once `predicate()`
    is true."""
    outer: Optional[Callable[[], bool]] = getattr(_local, "stop", None)
    _local.stop = predicate
    try:
        yield
    finally:
        _local.stop = outer


def check() -> None:
    """Cancelled when this thread's compile should stop (never in a thread that said nothing)."""
    predicate = getattr(_local, "stop", None)
    if predicate is not None and predicate():
        raise Cancelled()
