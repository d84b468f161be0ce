"""Keeping standard output for astral's own output.

Native libraries (CoolProp, solvers) may print to file descriptor 1 directly, below Python's
`sys.stdout`: on the command line that would corrupt `--format json`, in the language server
the JSON-RPC stream. Two guards:

- `library_output()`: while a library call runs, descriptor 1 points at standard error (C stdio
  buffers are flushed before it is restored). Used on the command line, where one thread runs.
- `detach_stdout()`: the language server takes a private duplicate of descriptor 1 for its
  protocol and points descriptor 1 (and `sys.stdout`) at standard error for the rest of the
  process, so nothing else can ever write into the protocol stream; `library_output()` is then a
  no-op (the analyses run in a worker thread)."""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import BinaryIO, Iterator

_detached = False


@contextlib.contextmanager
def library_output() -> Iterator[None]:
    """Route whatever a native library prints to standard output to standard error instead."""
    if _detached or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        yield
        return
    try:
        yield
    finally:
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)


def _flush_c_stdio() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:  # noqa: BLE001 - best effort (no libc symbols on this platform)
        pass


def detach_stdout() -> BinaryIO:
    """The protocol stream (a duplicate of descriptor 1); descriptor 1 goes to standard error."""
    global _detached
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _detached = True
    return protocol
