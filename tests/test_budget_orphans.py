"""The child a large observed file is parsed in (observe/budget.py) ends with the process that
forked it: inside a pools.forked_map worker it is a grandchild, and when its worker was ended
(the SIGTERM forked_map's parent sends its workers, a SIGKILL, the kernel's out-of-memory
killer) it went on parsing, a parse of a file of up to 1 GiB and its 6 GiB budget, until it
tried to send a result no one read. Now the kernel kills it as its parent goes
(PR_SET_PDEATHSIG, set as it starts)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_pools_sigterm import GRACE_S, _alive, _until

REPO = Path(__file__).resolve().parents[1]

# a parent mapping two items over two forked workers; each reads "a large file" by
# budget.bounded, whose child writes `PID.child` (holding its parent's pid) and parses for
# 120 s
PARENT = textwrap.dedent("""
    import os, sys, time
    from astral_dsl.observe import budget
    from astral_dsl.pools import forked_map

    folder = sys.argv[1]

    def parse(item, handed):
        with open(os.path.join(folder, f"{os.getpid()}.child"), "w") as f:
            f.write(str(os.getppid()))
        time.sleep(120)
        return item

    def read(item):
        return budget.bounded(parse, item, handed=[b"bytes"])

    forked_map(read, range(2), 2)
""")


@pytest.mark.skipif(not Path("/proc/self/stat").exists() or sys.platform != "linux",
                    reason="process states read from /proc (Linux)")
@pytest.mark.parametrize("how", ["sigterm to the map's parent", "sigkill to a worker"])
def test_the_parse_child_ends_with_its_worker(tmp_path, how):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)],
                              cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    children: dict = {}
    try:
        _until(lambda: len(list(tmp_path.glob("*.child"))) == 2, "two parse children started")
        children = {int(p.stem): int(p.read_text()) for p in tmp_path.glob("*.child")}
        workers = set(children.values())
        assert len(workers) == 2 and parent.pid not in workers | set(children)
        assert all(_alive(c) for c in children)
        if how == "sigkill to a worker":
            child, worker = sorted(children.items())[0]
            os.kill(worker, signal.SIGKILL)
            _until(lambda: not _alive(child), "the killed worker's child ended")
        parent.send_signal(signal.SIGTERM)
        parent.wait(GRACE_S)
        _until(lambda: not any(_alive(w) for w in workers), "the workers ended")
        _until(lambda: not any(_alive(c) for c in children), "the parse children ended")
    finally:
        parent.kill()
        parent.wait()
        # (the map, its pool broken, reads what is left in its own process: more children)
        more = [int(p.stem) for p in tmp_path.glob("*.child")]
        for pid in {*children, *children.values(), *more}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
