"""`astral export` documents of every example validate against schema/design.schema.json, and
two runs of `astral check --format json` and `astral export` give the same bytes."""
from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from clirun import astral as _astral_cli  # noqa: E402
from clirun import astral_runs

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.astral"))
ARGVS = [("check", "--format", "json", "--all-scenarios"), ("export",),
         ("size", "--format", "json")]
PATHS = ["examples/astral.astral", "examples/sizing.astral"]


@pytest.fixture(scope="module")
def seeded():
    """(argv, path) -> its runs under hash seeds 1 and 2: a process per seed that runs every
    command (tests/clirun.py's astral_runs), not a process per command and seed."""
    keys = [(argv, path) for argv in ARGVS for path in PATHS]
    commands = [(argv[0], path, *argv[1:]) for argv, path in keys]
    runs = [astral_runs(commands, cwd=ROOT, env=dict(os.environ, PYTHONHASHSEED=seed))
            for seed in ("1", "2")]
    return dict(zip(keys, zip(*runs)))


@pytest.fixture(scope="module")
def schema():
    # the schema and the documents validated against it: the command in this process (clirun);
    # what only separate processes show (hash seeds) is test_two_runs_are_byte_identical's
    proc = _astral_cli("export", "--schema", cwd=ROOT, text=False)
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_export_validates_against_the_schema(path, schema):
    proc = _astral_cli("export", str(path.relative_to(ROOT)), cwd=ROOT, text=False)
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, schema)
    assert doc["design"]["export_version"] == schema["$defs"]["design"]["properties"][
        "export_version"]["const"]


@pytest.mark.parametrize("argv", ARGVS)
@pytest.mark.parametrize("path", PATHS)
def test_two_runs_are_byte_identical(argv, path, seeded):
    first, second = seeded[argv, path]
    assert first.returncode == second.returncode == 0, first.stderr.decode()
    assert first.stdout == second.stdout and first.stdout
