"""pools.forked_map's workers end with their parent on SIGTERM (a `kill`, a scheduler's or a
container's stop, sent to the parent alone): the parent died at once and each worker went on
with its item (a calibration refit, a minute) before it found the parent gone. Now the parent
stops them, then dies of the signal as before; the handler is put back after the map, a
caller's own handler is left as it is, and the workers keep the default."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from astral_dsl.pools import forked_map

REPO = Path(__file__).resolve().parents[1]
GRACE_S = 15          # a bound on the wait for the processes to go, not a measure of speed

# a parent mapping items that each take 120 s over two forked workers; each worker writes its
# pid as it starts an item
PARENT = textwrap.dedent("""
    import os, signal, sys, time
    from astral_dsl.pools import forked_map

    folder = sys.argv[1]
    if sys.argv[2] == "own":            # a caller's handler: SystemExit, as many programs do
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))

    def slow(item):
        with open(os.path.join(folder, f"{os.getpid()}.pid"), "w") as f:
            f.write(str(item))
        time.sleep(120)
        return item

    forked_map(slow, range(4), 2)
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"      # a zombie has ended
    except FileNotFoundError:
        return False


def _reap(parent, tmp_path) -> None:
    """The test's parent and any worker it wrote a pid file for, killed whatever happened."""
    parent.kill()
    parent.wait()
    for p in tmp_path.glob("*.pid"):
        try:
            os.kill(int(p.stem), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _until(condition, what: str):
    end = time.monotonic() + GRACE_S
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"{what} within {GRACE_S} s")
        time.sleep(0.05)


@pytest.mark.skipif(not Path("/proc/self/stat").exists() or sys.platform != "linux",
                    reason="process states read from /proc (Linux)")
@pytest.mark.parametrize("handler", ["default", "own"])
def test_sigterm_to_the_parent_ends_its_workers(tmp_path, handler):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path), handler],
                              cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _until(lambda: len(list(tmp_path.glob("*.pid"))) == 2, "two workers started")
        workers = [int(p.stem) for p in tmp_path.glob("*.pid")]
        assert parent.pid not in workers and all(_alive(w) for w in workers)
        parent.send_signal(signal.SIGTERM)
        parent.wait(GRACE_S)
        _until(lambda: not any(_alive(w) for w in workers), "the workers ended")
    finally:
        _reap(parent, tmp_path)
    # the default: dead of the signal, as without workers; a caller's handler: its exit
    assert parent.returncode == (-signal.SIGTERM if handler == "default" else 143), \
        parent.stderr.read()


def _disposition(_item):
    return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, os.getpid()


def test_the_handler_is_put_back_and_the_workers_keep_the_default():
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    got = forked_map(_disposition, range(4), 2)
    assert all(default for default, _ in got)
    assert {pid for _, pid in got} - {os.getpid()}          # done in forked workers
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


# the interruption comes as a worker has been forked but before the pool lists it
# (ProcessPoolExecutor._spawn_process: `p.start()`, then `self._processes[p.pid] = p`): a
# SIGTERM (the handler stopped the workers the pool listed), or Ctrl-C, a KeyboardInterrupt in
# the parent (forked_map's `except`, pools.terminate, did the same, and the parent hung in the
# pool's shutdown: stop 67's review)
BETWEEN = textwrap.dedent("""
    import os, signal, sys, time
    from multiprocessing import context
    from astral_dsl.pools import forked_map

    folder = sys.argv[1]
    start = context.ForkProcess.start

    def started(self):
        start(self)
        with open(os.path.join(folder, f"{self.pid}.pid"), "w") as f:
            f.write("forked")
        if sys.argv[2] == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            raise KeyboardInterrupt

    context.ForkProcess.start = started
    try:
        forked_map(time.sleep, [120, 120], 2)
    except KeyboardInterrupt:
        sys.exit(130)
""")


@pytest.mark.skipif(not Path("/proc/self/stat").exists() or sys.platform != "linux",
                    reason="process states read from /proc (Linux)")
@pytest.mark.parametrize("interruption, status", [("sigterm", -signal.SIGTERM), ("ctrl-c", 130)])
def test_a_worker_forked_as_the_interruption_comes_ends_too(tmp_path, interruption, status):
    """The worker forked just before the interruption, not yet in the pool's list, was left
    waiting for an item for ever (the workers the pool listed were stopped)."""
    parent = subprocess.Popen([sys.executable, "-c", BETWEEN, str(tmp_path), interruption],
                              cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        parent.wait(GRACE_S)
        workers = [int(p.stem) for p in tmp_path.glob("*.pid")]
        assert len(workers) == 1, parent.stderr.read()
        _until(lambda: not any(_alive(w) for w in workers), "the worker ended")
    finally:
        _reap(parent, tmp_path)
    assert parent.returncode == status
