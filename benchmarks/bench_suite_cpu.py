"""The suite's CPU, every process it starts counted: prints the figures the README's paragraph on
the suite's CPU quotes (never asserted in tests).

    python benchmarks/bench_suite_cpu.py                       # the whole suite (below)
    python benchmarks/bench_suite_cpu.py -- tests/test_lsp.py  # any arguments for pytest
    python benchmarks/bench_suite_cpu.py --command make test   # any command

`/usr/bin/time` and `getrusage(RUSAGE_CHILDREN)` count a process and the descendants it waited for;
the processes a test starts and never waits for (a language server's fork server and its workers,
which outlive the server a test kills; Chromium's renderers) are reparented to init when their
parent goes and their CPU is in no figure of the run. Here the command runs under a child subreaper
(Linux's PR_SET_CHILD_SUBREAPER): every orphaned descendant is reparented to this process and
reaped by it, so RUSAGE_CHILDREN counts the CPU of every process the run started. The default
command is `python -m pytest -q -p no:cacheprovider`. Printed: the command's own figure (what
`/usr/bin/time` says: it and what it waited for) and the figure of every process, user + system
seconds, with the wall time and the load averages before and after (the machine is shared: two runs
of the same code differ by 10-30 s). Linux only.
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36     # linux/prctl.h
LINGER = 60                     # seconds the orphans may take to end after the command


class _Late(Exception):
    pass


def _late(*_):
    raise _Late()


def _reap_all(pid: int):
    """Wait for `pid` and then for every descendant left (at most LINGER seconds more):
    (the command's rusage, its exit code, wall seconds, the number of processes still running).
    The alarm that ends the wait may fire anywhere in the loop: the whole loop is guarded."""
    start = time.monotonic()
    own, code, wall, left = None, 1, 0.0, 0
    try:
        while True:
            try:
                got, status, usage = os.wait4(-1, 0)
            except ChildProcessError:
                break
            if got == pid:
                own, code = usage, os.waitstatus_to_exitcode(status)
                wall = time.monotonic() - start
                signal.signal(signal.SIGALRM, _late)
                signal.alarm(LINGER)
    except _Late:
        left = sum(1 for e in os.scandir("/proc")
                   if e.name.isdigit() and _parent(e.name) == os.getpid())
    finally:
        signal.alarm(0)
    return own, code, wall, left


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def main(argv) -> int:
    if "--command" in argv:
        command = argv[argv.index("--command") + 1:]
    else:
        extra = argv[argv.index("--") + 1:] if "--" in argv else []
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    prctl = None
    if sys.platform.startswith("linux"):
        try:
            prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)
        except OSError:
            prctl = None
    if prctl is None or prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("this needs Linux's PR_SET_CHILD_SUBREAPER (prctl)", file=sys.stderr)
        return 2
    load = os.getloadavg()
    pid = os.fork()
    if pid == 0:                                        # pragma: no cover - the command
        try:
            os.execvp(command[0], command)
        except OSError as e:
            print(f"cannot run {command[0]}: {e}", file=sys.stderr)
        os._exit(127)
    own, code, wall, left = _reap_all(pid)
    every = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"command: {' '.join(command)}\nexit code {code}, wall {wall:.1f} s, load average "
          f"{load[0]:.1f} before, {os.getloadavg()[0]:.1f} after\n"
          f"the command and what it waited for: {own.ru_utime:.1f} + {own.ru_stime:.1f} s of "
          f"user and system CPU\nevery process it started: {every.ru_utime:.1f} + "
          f"{every.ru_stime:.1f} s = {every.ru_utime + every.ru_stime:.1f} s"
          + (f"\n{left} process(es) still running after {LINGER} s: not counted" if left else ""),
          file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
