"""What `astral check` does not spend its start-up on (benchmarks/bench_startup.py measures it):
modules it does not need, the collector's passes over the modules it imports."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# what `astral check` of a design prints as text never needs (the tables of `astral size`, the
# JSON writer, Lark when the trees are cached; the inventories' binding for a design that names
# no part; Seer's lowering, for a job without failed fabric or expert groups: its memory check
# counts the parameters with seer/params.py; hashlib, whose OpenSSL costs 2.5-3 ms to load,
# when the digests of the stdlib climate file and the wet-bulb table are remembered, and csv
# when no climate file's header or operator table is read; Seer's calibration, which prices
# operators, for the validation of a job)
NOT_IMPORTED = ("astral_dsl.outputs.table", "astral_dsl.outputs.size_report",
                "astral_dsl.outputs.jsonout", "lark", "astral_dsl.seer.forecast",
                "astral_dsl.seer.envelope", "astral_dsl.analyses.fleet",
                "astral_dsl.analyses.inventory", "astral_dsl.seer.lower", "hashlib", "csv",
                "astral_dsl.seer.calibration",
                *(f"astral_dsl.seer.lower_{part}"
                  for part in ("attention", "comm", "dense", "linear", "mamba", "moe")))

_CHECK = """
import gc, json, sys
passes = []
gc.callbacks.append(lambda phase, info: phase == "start" and passes.append(info))
from astral_dsl.cli import main
code = main(["check", "examples/astral.astral"])
print(json.dumps({"code": code, "modules": sorted(sys.modules), "passes": len(passes)}))
"""


def _check(cache: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), ASTRAL_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                         cwd=REPO, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


def test_a_check_imports_only_what_it_needs_and_the_collector_leaves_its_modules(tmp_path):
    _check(tmp_path / "cache")                          # the user cache and the byte code
    warm = _check(tmp_path / "cache")
    assert warm["code"] == 0
    assert not set(NOT_IMPORTED) & set(warm["modules"])
    # without the pause, ~45 passes while the ~100 modules are imported
    assert warm["passes"] < 15, warm["passes"]


_VERSION = """
import json, sys
from astral_dsl.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def test_version_imports_no_command_s_dependencies():
    """`astral --help` and `--version` import every command's module for its name and help,
    not what the commands use."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", _VERSION], capture_output=True, text=True,
                         cwd=REPO, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    modules = set(json.loads(out.stdout.splitlines()[-1]))
    assert not {"attrs", "difflib", "subprocess", "astral_dsl.records"} & modules


_FREEZE = """
import gc, json
from astral_dsl import gcpause
out = {}
with gcpause.settled():
    out["paused"] = not gc.isenabled()
    kept = [[] for _ in range(10)]
out["settled"] = gc.get_freeze_count()
with gcpause.frozen(lambda: [[] for _ in range(10)]) as built:
    out["frozen"] = gc.get_freeze_count()
out["after"], out["enabled"] = gc.get_freeze_count(), gc.isenabled()
print(json.dumps(out))
"""


def _run(code: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=REPO, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_settled_pauses_then_freezes_and_frozen_thaws_what_this_package_froze():
    """In a process where nothing was frozen before: `settled` pauses the collector, then
    freezes what is alive; `frozen` freezes what it built and thaws it all as its block ends."""
    got = _run(_FREEZE)
    assert got["paused"] and got["settled"] >= 10 and got["frozen"] >= got["settled"] + 10
    assert got["after"] == 0 and got["enabled"]


def test_a_host_applications_frozen_objects_stay_frozen():
    """gc.unfreeze() thaws every frozen object: a host that froze its own before running a
    command in process (a pre-forking server, a test runner) found them thawed by the command's
    end. The package neither freezes nor thaws where objects it did not freeze are frozen."""
    got = _run("""
import gc, json
kept = [[] for _ in range(1000)]
gc.freeze()
host = gc.get_freeze_count()
from astral_dsl.cli import main
code = main(["check", "examples/astral.astral"])
print(json.dumps({"code": code, "host": host, "after": gc.get_freeze_count(),
                  "enabled": gc.isenabled()}))
""")
    assert got["code"] == 0 and got["enabled"]
    assert got["after"] >= got["host"] - 100        # still frozen (less what was freed)


def test_a_hosts_frozen_objects_are_counted_once(monkeypatch):
    """gc.get_freeze_count() walks every frozen object (this process's: the ~350,000 that
    conftest.py froze after the suite's collection, ~17 ms a call): asked once, not at every
    command's freeze; the host's objects stay frozen, the package freezes and thaws nothing."""
    import gc

    from astral_dsl import gcpause

    monkeypatch.setattr(gcpause, "_foreign", False, raising=False)   # a host that ran nothing
    host = gc.get_freeze_count()
    assert host > 0 and not gcpause._mine               # conftest.py's freeze, not the package's
    calls = []
    count = gc.get_freeze_count
    monkeypatch.setattr(gc, "get_freeze_count", lambda: calls.append(1) or count())
    assert not gcpause._freeze()
    with gcpause.settled():
        pass
    with gcpause.frozen(lambda: [[] for _ in range(10)]) as built:
        assert len(built) == 10
    assert len(calls) == 1                              # three freezes, one walk
    assert not gcpause._mine and count() >= host - 100  # still the host's, still frozen


def test_a_stdlib_climate_whose_hours_ship_is_hashed_not_held(monkeypatch):
    import hashlib

    from astral_dsl.analyses import climate
    from astral_dsl.semantics import source_files

    path = climate.locate("stdlib/climate/723170TYA.CSV", REPO / "examples")
    assert source_files.file_sha256(path) == \
        hashlib.sha256(source_files.read_file(path)).hexdigest()
    read = []
    monkeypatch.setattr(climate, "read_file",
                        lambda p: read.append(p) or source_files.read_file(p))
    monkeypatch.setattr(climate, "_parsed", {})
    loaded = climate.load("stdlib/climate/723170TYA.CSV", REPO / "examples")
    assert loaded.hours == 8760 and not read


_SEER = """
import astral_dsl.seer as seer
import astral_dsl.seer.forecast, astral_dsl.seer.envelope   # the submodules, imported after
from astral_dsl.seer import JobSpec, validate_jobs          # names read on first use
print(seer.forecast.__module__, seer.envelope.__module__, JobSpec.__name__,
      validate_jobs.__module__)
"""


def test_the_lazy_seer_package_keeps_its_functions_names():
    """seer/__init__.py imports its names on first use; `seer.forecast` and `seer.envelope` stay
    the functions when the submodules of the same names are imported, as before."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", _SEER], capture_output=True, text=True,
                         cwd=REPO, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["astral_dsl.seer", "astral_dsl.seer.envelope", "JobSpec",
                                  "astral_dsl.seer.validate"]


def test_the_language_servers_fork_server_warms_up_without_the_protocols_types():
    """lsp/warm.py, which the language server's fork server preloads, runs an analysis as a
    worker does: it places the diagnostics (lsp/placed.py) but never converts them, so it
    imports no lsprotocol (~0.25 s of imports at each server's start; `placed` lived in
    lsp/published.py beside the protocol's conversion before stop 67)."""
    modules = set(_run("import json, sys\nimport astral_dsl.lsp.warm\n"
                       "print(json.dumps(sorted(sys.modules)))"))
    assert "astral_dsl.lsp.placed" in modules
    assert not {"lsprotocol", "lsprotocol.types", "astral_dsl.lsp.published"} & modules
