"""The library's own entry points bound their worker processes as the command line does
(pools.MAX_LOCAL_WORKERS): `observe.load(workers=)` forked one process per file past 1,024 (as
many as there are), and explore's engine (`sweep.run`, `search.run`, `LocalEngine`) one per
task. Each refuses, before any work, with the message `--workers` / `--jobs` give."""
from __future__ import annotations

import pytest

from astral_dsl import observe
from astral_dsl.explore import search, sweep
from astral_dsl.explore.engines import LocalEngine, engine
from clirun import REPO

TINY = REPO / "tests" / "fixtures" / "diagnose" / "tiny.astral"
SAID = "workers 100,000: more than 1,024 local worker processes: give at most 1,024"

CALLS = [
    ("observe.load", lambda n: observe.load([str(TINY)], workers=n)),
    ("LocalEngine", lambda n: LocalEngine(n)),
    ("engine", lambda n: engine(None, n)),
    ("sweep.run", lambda n: sweep.run(str(TINY), ["n=1"], workers=n)),
    ("search.run", lambda n: search.run(str(TINY), workers=n)),
]


@pytest.mark.parametrize("name, call", CALLS, ids=[c[0] for c in CALLS])
def test_past_the_bound_is_refused_as_the_command_line_says_it(name, call, monkeypatch):
    import astral_dsl.pools as pools

    def no_fork(*a, **k):                 # refused before any pool is made
        raise AssertionError("a pool was started")

    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", no_fork)
    with pytest.raises(ValueError, match=SAID):
        call(100_000)
    with pytest.raises(ValueError, match="workers 1,025: more than 1,024"):
        call(pools.MAX_LOCAL_WORKERS + 1)
    with pytest.raises(ValueError, match="workers must be at least 1, not 0"):
        call(0)
    with pytest.raises(ValueError, match="workers must be at least 1, not -3"):
        call(-3)
    for kind in ("2", 1.5, True):
        with pytest.raises(TypeError, match="workers is a whole number"):
            call(kind)


def test_within_the_bound_is_taken():
    assert LocalEngine(1).workers == 1
    assert LocalEngine(1024).workers == 1024      # a pool as large as its tasks, at most
    assert LocalEngine(None).workers >= 1
    # one reader here: the file read, its diagnostics said (a design is not a trace)
    assert [d.code for d in observe.load([str(TINY)], workers=1).diagnostics] == \
        [d.code for d in observe.load([str(TINY)]).diagnostics]
