"""Work off the language server's event loop, each call in a thread of its own with a deadline:
an analysis, a hover, formatting, the outline, the scan of the project for references.

A Python thread cannot be killed, but it can be stopped: `Job.cancel()` raises Cancelled in it
at its next Python instruction (CPython's asynchronous exceptions, PyThreadState_SetAsyncExc),
and its `finally` blocks and `with` statements unwind as for any exception. A job still running
at its deadline is cancelled, and its future fails with TimedOut at once, so whoever waits for it
goes on; a thread that does not stop (blocked inside C code: the compiler's file reads never
block, so this is a last resort) is abandoned. Jobs share no lock, so an abandoned one holds
nothing another job needs."""
from __future__ import annotations

import asyncio
import ctypes
import threading
from typing import Any, Callable, Optional, Tuple


class Cancelled(BaseException):
    """Raised inside a job that was cancelled (a BaseException: the compiler's `except
    Exception` handlers, which turn a bug into a diagnostic, let it through)."""


class TimedOut(Exception):
    """The job ran past its deadline."""

    def __init__(self, what: str, seconds: float):
        super().__init__(f"{what} took longer than {seconds:g} s and was stopped")
        self.what, self.seconds = what, seconds


class Superseded(Exception):
    """The job was cancelled because newer work replaced it (a newer version of a document)."""


def _raise_in(thread: threading.Thread, exc_type: Optional[type]) -> None:
    """Raise `exc_type` in `thread` at its next instruction (None clears a pending one)."""
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(thread.ident), ctypes.py_object(exc_type) if exc_type else None)


class Job:
    """`fn(*args)` in a daemon thread; `future` (of the event loop `loop`) gets its result,
    its exception, Superseded when cancelled, or TimedOut after `timeout` seconds."""

    def __init__(self, loop: asyncio.AbstractEventLoop, what: str, timeout: Optional[float],
                 fn: Callable[..., Any], *args: Any):
        self.loop, self.what, self.timeout = loop, what, timeout
        self.future: asyncio.Future = loop.create_future()
        self._fn, self._args = fn, args
        self._state = threading.Lock()
        self._finished = False
        self.thread = threading.Thread(target=self._run, name=f"astral-{what}", daemon=True)
        self._timer = loop.call_later(timeout, self._expire) if timeout else None
        self.thread.start()

    # -- in the worker thread ----------------------------------------------------------------------
    def _run(self) -> None:
        outcome: Optional[Tuple[bool, Any]] = None
        try:
            try:
                outcome = (True, self._fn(*self._args))
            except Cancelled:
                outcome = (False, Superseded(self.what))
            except BaseException as exc:  # noqa: BLE001 - delivered to the waiting request
                outcome = (False, exc)
            with self._state:
                self._finished = True
                _raise_in(self.thread, None)          # a cancel that came too late: dropped
        except Cancelled:                             # ... or delivered just before
            self._finished = True
            outcome = outcome or (False, Superseded(self.what))
        self._fn = self._args = None                  # nothing kept alive by an ended job
        try:
            self.loop.call_soon_threadsafe(self._deliver, outcome)
        except RuntimeError:                          # the loop is closed: nobody waits
            pass

    # -- on the event loop -------------------------------------------------------------------------
    def _deliver(self, outcome: Tuple[bool, Any]) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self.future.done():
            return
        ok, value = outcome
        if ok:
            self.future.set_result(value)
        else:
            self.future.set_exception(value)

    def _stop(self) -> None:
        with self._state:
            if not self._finished:
                _raise_in(self.thread, Cancelled)

    def cancel(self) -> None:
        """Stop the job; its future fails with Superseded."""
        self._stop()
        if not self.future.done():
            self.future.set_exception(Superseded(self.what))
            self.future.exception()                   # retrieved: no "never retrieved" log

    def _expire(self) -> None:
        self._stop()
        if not self.future.done():
            self.future.set_exception(TimedOut(self.what, self.timeout))
            self.future.exception()

    @property
    def running(self) -> bool:
        return not self._finished


async def run(what: str, timeout: Optional[float], fn: Callable[..., Any], *args: Any) -> Any:
    """The result of `fn(*args)` run as a Job; a request cancelled by the client cancels it."""
    job = Job(asyncio.get_running_loop(), what, timeout, fn, *args)
    try:
        return await asyncio.shield(job.future)
    except asyncio.CancelledError:
        job.cancel()
        raise
