"""Work off the language server's event loop, with a deadline and cancellation that poisons
nothing.

An analysis (the compile and every check `astral check` runs: sizing, scenarios, Seer's job
validation) runs in a worker process (`Checker`): a newer version of the document, or the
deadline, ends that process, and a fresh one takes its place. Nothing is ever raised inside a
running thread, so no import is left half-done and no lock half-held (issue: an exception
injected into a thread during `import cvxpy` once broke the server for good). Heavy modules are
imported in the workers, where ending the process ends them too.

The rest (the in-process compile that hover and navigation read, hover, lookups, completion,
formatting, the outline, the project scan) runs as a `Job` in a daemon thread: work whose result
a cancelled or late request no longer waits for. A compile in it stops when its job is cancelled
or past its deadline: the evaluator asks the thread (astral_dsl/cancel.py), and the compile ends
with an exception of its own thread, raised where the evaluator already raises at its step
budget (before, it ran to its end: up to ~25 s of CPU a compile, 200 compiles in a project
scan, nobody waiting for them). What is not a compile (parsing, formatting, the outline)
grows with the text, at most 8 MiB, and ends on its own."""
from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

from astral_dsl import cancel

IDLE = 2     # warm worker processes kept ready
SLICE = 0.1  # seconds: how soon a thread waiting for an ended worker notices (_Worker._wait)
# seconds a worker may take to start (its "ready"), not counted in the analysis's deadline: one
# forked from the fork server is ready in ~0.1 s, a spawned one (Windows) imports for ~1 s; past
# START it will not start (the wait for it was unbounded: a request waiting for the analysis
# never got an answer)
START = 30.0
# imported once by the fork server (lsp/warm.py analyses a tiny design), so that each worker
# forked from it starts warm: one that replaces an ended worker is ready in milliseconds, not
# after half a second of its own imports
PRELOAD = ["astral_dsl.lsp.warm"]
# bytes of address space a worker may take beyond what it had when it started (RLIMIT_AS,
# checker.serve): a check of the GB200 NVL72 example peaks at ~0.5 GB of address space (0.16 GB
# resident); past the limit the analysis ends with E410, not the machine's memory (before, a
# worker could grow without bound, the server's other documents and the editor with it)
MEMORY = 4 << 30


def _context():
    """Workers fork from a fork server (a single-threaded process of its own, started once,
    which imported PRELOAD), never from the threaded server itself; where there is no fork
    server (Windows), they are spawned and import on their own."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


class TimedOut(Exception):
    """The job ran past its deadline."""

    def __init__(self, what: str, seconds: float):
        super().__init__(f"{what} took longer than {seconds:g} s and was stopped")
        self.what, self.seconds = what, seconds


class Superseded(Exception):
    """The job was cancelled because newer work replaced it (a newer version of a document)."""


class Stopped(Exception):
    """Raised in a job's own thread when its worker process was ended (cancel or deadline)."""


class Stopper:
    """What ends a job's work: the worker process it runs in, once it has one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stopped = False
        self._worker: Optional["_Worker"] = None

    def attach(self, worker: "_Worker") -> None:
        with self._lock:
            self._worker = worker
            stopped = self.stopped
        if stopped:
            worker.kill()

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            worker = self._worker
        if worker is not None:
            worker.kill()

    def release(self, worker: "_Worker") -> bool:
        """Let go of `worker`, whose answer came (it may serve another analysis now: a late
        `stop` must not end it); False when this job was stopped already."""
        with self._lock:
            if self._worker is worker:
                self._worker = None
            return not self.stopped


class Job:
    """`fn(*args)` in a daemon thread; `future` (of the event loop `loop`) gets its result,
    its exception, Superseded when cancelled, or TimedOut after `timeout` seconds. `on_stop`
    is called when the job is cancelled or runs out of time (it ends the job's worker); a
    compile `fn` runs in this thread stops then too (`stopping`, cancel.py)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, what: str, timeout: Optional[float],
                 fn: Callable[..., Any], *args: Any, on_stop: Optional[Callable[[], None]] = None):
        self.loop, self.what, self.timeout = loop, what, timeout
        self.future: asyncio.Future = loop.create_future()
        self._fn, self._args, self._on_stop = fn, args, on_stop
        self._finished = False
        self._ended = False                           # cancelled, or its deadline's timer ran
        self._deadline = time.monotonic() + timeout if timeout else None
        self.thread = threading.Thread(target=self._run, name=f"astral-{what}", daemon=True)
        self._timer = loop.call_later(timeout, self._expire) if timeout else None
        self.thread.start()

    def _run(self) -> None:
        try:
            with cancel.stop_when(self.stopping):
                outcome: Tuple[bool, Any] = (True, self._fn(*self._args))
        except BaseException as exc:  # noqa: BLE001 - delivered to the waiting request
            outcome = (False, exc)
        self._finished = True
        self._fn = self._args = None                  # nothing kept alive by an ended job
        try:
            self.loop.call_soon_threadsafe(self._deliver, outcome)
        except RuntimeError:                          # the loop is closed: nobody waits
            pass
        # an exception's traceback holds this frame, which held the exception: a cycle that
        # kept the document's text (the frames of the analysis) until a full collection
        del outcome

    def stopping(self) -> bool:
        """Whether the job's work should stop: it was cancelled, or it is past its deadline
        (read on the clock too: the deadline's timer runs on the event loop, late when the loop
        is starved of CPU)."""
        return self._ended or self._past_deadline()

    def _past_deadline(self) -> bool:
        return self._deadline is not None and time.monotonic() > self._deadline

    def _deliver(self, outcome: Tuple[bool, Any]) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self.future.done():
            return
        ok, value = outcome
        if ok:
            self.future.set_result(value)
        elif isinstance(value, cancel.Cancelled) and self._past_deadline():
            self.future.set_exception(TimedOut(self.what, self.timeout))
        elif isinstance(value, (Stopped, cancel.Cancelled)):
            self.future.set_exception(Superseded(self.what))
        else:
            self.future.set_exception(value)

    def _end(self, exc: Exception) -> None:
        self._ended = True
        if self._on_stop is not None:
            self._on_stop()
        if not self.future.done():
            self.future.set_exception(exc)
            self.future.exception()                   # retrieved: no "never retrieved" log

    def cancel(self) -> None:
        """Stop the job; its future fails with Superseded."""
        self._end(Superseded(self.what))

    def _expire(self) -> None:
        """The deadline, unless the work ended in time: its result is on its way to the loop
        (`_deliver`, queued behind this timer when the loop was starved of CPU), not late."""
        if not self._finished:
            self._end(TimedOut(self.what, self.timeout))

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


# -- worker processes ------------------------------------------------------------------------------

class _Worker:
    """One worker process (lsp/checker.py `serve`) and our end of its pipe."""

    killed = False           # `kill` ended the process

    def __init__(self, ctx, memory: Optional[int] = MEMORY) -> None:
        from astral_dsl.lsp import checker

        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=checker.serve, args=(child, memory), daemon=True,
                                   name="astral-analysis")
        self.process.start()
        child.close()
        self.ready = False

    def call(self, request, timeout: Optional[float]) -> Any:
        """Send `request` once the worker is ready (its imports done: not counted in the
        deadline, but at most START seconds: TimedOut after them), wait for the answer;
        Stopped when the process ends first, TimedOut (the process ended) after `timeout`
        seconds of work. Only the thread that calls this closes the pipe (`close`)."""
        try:
            if not self.ready:
                if not self._wait(START):
                    self.kill()
                    raise TimedOut("the start of the analysis worker", START)
                self.conn.recv()                      # "ready"
                self.ready = True
            self.conn.send(request)
            if not self._wait(timeout):
                self.kill()
                raise TimedOut("the analysis", timeout)
            return self.conn.recv()
        except (EOFError, OSError) as exc:
            raise Stopped(str(exc)) from None

    def _wait(self, timeout: Optional[float]) -> bool:
        """Whether the worker answered within `timeout` seconds (None: however long it takes),
        waited for in slices of SLICE seconds. A worker that `kill` ended (from another thread)
        ends the wait at the next slice (Stopped), whether or not the end of the process reached
        the pipe: in the server it often did not (the cause is not established: 45 of 60
        threads whose worker was ended during a burst of edits still waited), and each such
        thread kept its document's text (1 MB on a large design) for the whole deadline."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.killed:
                raise Stopped("the analysis worker was ended")
            left = SLICE if end is None else min(SLICE, end - time.monotonic())
            if left <= 0:
                return False
            if self.conn.poll(left):
                return True

    def kill(self) -> None:
        """End the process (from any thread). The pipe stays open until its user closes it:
        a pipe closed under a thread that was reading or writing it let that thread's next
        read or write go to whatever file took its number (another worker's pipe, made at the
        same moment by the warm start)."""
        self.killed = True
        if self.process.is_alive():
            self.process.kill()

    def close(self) -> None:
        """End the process and close our end of its pipe (by the thread that uses it, or for
        an idle worker nobody uses)."""
        self.kill()
        self.conn.close()

    @property
    def alive(self) -> bool:
        return not self.killed and self.process.is_alive() and not self.conn.closed


class Checker:
    """Analyses in worker processes the server can end: `check(stopper, request)` runs one in a
    warm worker (lsp/checker.py), which `stopper.stop()` ends at any point. `memory`: the bytes
    of address space each worker may take beyond its start (MEMORY; None: no limit)."""

    def __init__(self, memory: Optional[int] = MEMORY) -> None:
        self._ctx = _context()                  # no fork of the threaded server itself
        self._memory = memory
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)   # an idle worker was added
        self._idle: List[_Worker] = []
        self._starting = 0                      # workers `warm` is starting, outside the lock

    @property
    def memory(self) -> Optional[int]:
        return self._memory

    def warm(self) -> None:
        """Start the idle workers (their imports run while the editor opens the file). A start
        talks to the fork server, which may never answer: it is made outside the lock, which
        `check` takes to find an idle worker (held through the start, one stalled start kept
        every later analysis from starting: they waited for the lock, not for a deadline)."""
        while True:
            with self._lock:
                if len(self._idle) + self._starting >= IDLE:
                    return
                self._starting += 1
            try:
                worker = _Worker(self._ctx, self._memory)
            finally:
                with self._lock:
                    self._starting -= 1
            with self._lock:
                keep = len(self._idle) < IDLE
                if keep:
                    self._idle.append(worker)
                    self._ready.notify_all()
            if not keep:
                worker.close()
                return

    def check(self, stopper: Stopper, request, timeout: Optional[float] = None) -> Any:
        with self._lock:
            worker = self._take()
        if worker is None:
            worker = self._wait_idle(stopper)
        threading.Thread(target=self.warm, daemon=True).start()     # the next one, ready
        stopper.attach(worker)
        try:
            answer = worker.call(request, timeout)
        except BaseException:
            worker.close()
            raise
        # the worker is let go before it is idle again: a job cancelled after its answer came
        # (during the compile that follows) ended the worker it had, by then another
        # document's, whose analysis failed with "the analysis worker ended" (E000)
        with self._lock:
            keep = stopper.release(worker) and len(self._idle) < IDLE
            if keep:
                self._idle.append(worker)
        if not keep:
            worker.close()
        return answer

    def _take(self) -> Optional[_Worker]:
        """An idle worker that is alive (the lock held), dropping the dead ones with their
        pipes (an fd a dead one kept); None when there is none."""
        while self._idle and not self._idle[0].alive:
            self._idle.pop(0).close()
        return self._idle.pop(0) if self._idle else None

    def _wait_idle(self, stopper: Stopper) -> _Worker:
        """A worker `warm` starts (at most IDLE starts at a time, outside the lock), waited for
        in slices of SLICE seconds: Stopped once the job is stopped, TimedOut past START. The
        analysis's own thread never starts one: a start talks to the fork server, which may
        never answer, and each such thread had waited for good (the request was answered at
        its deadline, the thread and its document's text kept)."""
        threading.Thread(target=self.warm, daemon=True).start()
        end = time.monotonic() + START
        with self._ready:
            while True:
                worker = self._take()
                if worker is not None:
                    return worker
                if stopper.stopped:
                    raise Stopped("the analysis was stopped before a worker started")
                left = end - time.monotonic()
                if left <= 0:
                    raise TimedOut("the start of the analysis worker", START)
                self._ready.wait(min(SLICE, left))

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()
