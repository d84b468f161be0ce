"""A sign of life on standard error for work that takes a while (`astral report`, `check
--margins`, `diagnose`, `calibrate`): when the work is still running after DELAY seconds (2 s
by default, `$ASTRAL_PROGRESS_DELAY`), and only when standard error is a terminal, one line
says what is being done and for how long, rewritten in place each second and erased when the
work ends. A pipe, a file or CI's log gets nothing, so outputs stay the same byte for byte.

    with Progress("astral report") as progress:
        progress.step("checking the design")
        ...
        progress.step("drawing the pictures")
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Optional

DELAY = 2.0


def delay() -> float:
    try:
        return max(0.0, float(os.environ.get("ASTRAL_PROGRESS_DELAY", DELAY)))
    except ValueError:
        return DELAY


class Progress:
    def __init__(self, command: str, stream=None, after: Optional[float] = None):
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        self.after = delay() if after is None else after
        self.what = "working"
        self.start = time.monotonic()
        self.shown = False
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "Progress":
        try:
            live = self.stream.isatty()
        except (AttributeError, ValueError, OSError):
            live = False
        if live:
            self._thread = threading.Thread(target=self._run, name="astral-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def step(self, what: str) -> None:
        """What is being done now: shown at once when the line is up, else when it comes."""
        self.what = what
        if self._thread is not None and time.monotonic() - self.start >= self.after:
            self._draw()

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.shown:
                self._write("\r\x1b[K")

    def _run(self) -> None:
        if self._done.wait(self.after):
            return
        while not self._done.is_set():
            self._draw()
            self._done.wait(1.0)

    def _draw(self) -> None:
        with self._lock:
            if self._done.is_set():
                return
            elapsed = time.monotonic() - self.start
            self._write(f"\r\x1b[K{self.command}: {self.what} ({elapsed:.0f} s)")
            self.shown = True

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass
