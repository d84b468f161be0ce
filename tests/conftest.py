"""Every test exercises this checkout, never whatever copy of astral_dsl happens to be installed:
the checkout comes first on sys.path, and PYTHONPATH names it for every subprocess a test starts
(the command line, the language server), whatever the subprocess's working directory."""
from __future__ import annotations

import itertools
import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

if str(REPO) not in sys.path[:1]:
    sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                   if p and Path(p).resolve() != REPO])

# Byte code is written for this checkout (its __pycache__ folders, which git ignores) even where
# the environment asks for none (PYTHONDONTWRITEBYTECODE): without it every process a test
# starts (the command line, the language server and its workers, Dask's workers) compiles the
# package's modules from source again, about 0.35 s of CPU each, and pytest rewrites every test
# module's asserts again on every run.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# jsonschema imports rfc3987_syntax when it is installed (HolisticTraceAnalysis's JupyterLab
# brings it), which builds 38 Lark grammars on import: 1.7 s of CPU for the `iri` format, which
# no schema here uses and no test checks formats for (no format_checker is ever passed).
sys.modules.setdefault("rfc3987_syntax", None)

import astral_dsl  # noqa: E402

if Path(astral_dsl.__file__).resolve().parent != REPO / "astral_dsl":   # pragma: no cover
    raise RuntimeError(f"the tests of {REPO} would run {astral_dsl.__file__}")


def pytest_collection_finish():
    """The cyclic garbage collector of the test process: what collection loaded (the modules, their
    functions and classes, the parametrized cases: none of it garbage) is moved out of its reach
    (gc.freeze), a young pass runs every 1,000,000 allocations (net of the tracked objects
    freed meanwhile) instead of 700, a middle one every 2 young ones, and a full one only after
    100 middle ones (in practice only where a test or pytest calls gc.collect(), and at the
    end: pytest_sessionfinish below). Its passes kept rewalking the suite's long-lived objects:
    about 15% of the CPU of the in-process tests at a pass every 10,000. The freeze lasts: the
    package's own freezes (astral_dsl/gcpause.py) leave a process alone where objects it did not
    freeze are frozen. (Before they did, every command the tests ran in this process through
    cli/common.py's gcpause.frozen ended with gc.unfreeze(), which put all that was frozen back
    into the oldest generation, so that each automatic full pass walked the whole heap the
    suite had built: 1.4 million objects, 0.8-1.8 s a pass.) A young pass every 100,000 (middle
    every 20 of them: the same 2 million allocations as now) still landed inside most tests
    that build a large structure (a design, Seer's templates, a trace, a NetBox export) and
    walked it, and a middle pass walked it again, though the test drops it at its end: 5.8 s of
    young passes in a run of the suite (measured with gc.callbacks). At a million most of those
    structures are freed before a pass sees them: in test_seer_speed, test_fmt, test_fuzz,
    explore/test_margins, test_report and test_render together, young passes 2.4-2.8 -> 0.35 s
    and the CPU 39.6 and 43.1 -> 35.4 and 35.2 s, peak RSS 0.45-0.51 -> 0.54 GB (2026-12-04).
    The package's own pauses (astral_dsl/gcpause.py) and the processes tests start are
    unchanged."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(1_000_000, 2, 100)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish():
    """At its end pytest collects garbage five times over (unraisableexception.cleanup: what a
    `__del__` raises is reported), each pass a walk of the whole heap the suite left (the
    modules it imported, the package's caches: 1.4 million objects, a second of CPU a pass).
    Here the tests are over (their fixtures torn down): passes run until one finds no garbage
    (any `__del__` that raises is reported as before: pytest's hook is still in place), then
    what is left alive is frozen, so that pytest's passes walk only what is made after."""
    import gc

    for _ in range(5):
        if not gc.collect():
            break
    gc.freeze()


_module = [None]          # the test module whose tests run now


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """As each test module's first test starts (the module before it done, its module-scoped
    fixtures torn down): the garbage the modules before it left is collected, and what is still
    alive (the product's caches, imported modules, session fixtures: none of it what this
    module's tests check) is frozen like what collection loaded. A full pass, whether a test asks
    for it, the collector's own or pytest's at the end, then walks what this module made, not the
    heap the whole run built (late in a run, 1-2 s of CPU a pass). In a run of the suite the
    collector's passes took 13.0 s of CPU with this, 21.3 s without (gen0 8.9, gen1 2.4, full
    10.0 s; with it 1.3, 0.4 and 11.4 s, the full passes 211, collecting 7.9 million objects of
    the cyclic garbage the modules leave; 2026-12-07, gc.callbacks). What is frozen and dies
    later is left to the process's end (objects without cycles are still freed by their
    references), as collection's objects are."""
    if item.module is not _module[0]:
        import gc

        _module[0] = item.module
        gc.collect()
        gc.freeze()


@pytest.fixture
def own_heap():
    """For a test that asks the collector for a full pass (gc.collect()) to see what it made go:
    the young garbage is collected and everything alive is frozen (as collection's objects are,
    above) before the test, so that its pass walks what the test made, not the heap the run has
    built by then (in a whole run, 1-2 s of CPU a pass for test_retention's and
    test_seer_speed's). Garbage already in the oldest generation is frozen with the rest and
    stays to the process's end, as it would until the next full pass."""
    import gc

    gc.collect(1)
    gc.freeze()


_serial = itertools.count()


@pytest.fixture
def tmp_path(tmp_path_factory, request):
    """pytest's `tmp_path` (a new empty directory for the test, mode 0700, named after the test,
    under the run's base temporary directory and kept with it: pyproject.toml sets no
    tmp_path_retention_policy), numbered by a count of the run's own: pytest finds the next free
    number of a test's name by listing the whole base directory (_pytest/pathlib.py
    make_numbered_dir), where each of the suite's ~2,000 tests that ask for one leaves a
    directory and a `...current` link, so that each new one cost more as the run went (2,000
    such tests in a file of their own: 5.0 -> 2.2 s of CPU)."""
    base = tmp_path_factory.getbasetemp()
    name = re.sub(r"\W", "_", request.node.name)[:30]
    while True:
        path = base / f"{name}{next(_serial)}"
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:         # a name mktemp gave (tmp_path_factory's own numbering)
            continue
        return path
