"""`astral export` documents of every example validate against schema/design.schema.json, and
two runs of `astral check --format json` and `astral export` give the same bytes."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest
from clirun import astral as _astral_cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.astral"))


def _run(*argv: str, seed: str = "0") -> subprocess.CompletedProcess:
    """A process of its own: the export is compared across hash seeds."""
    env = dict(os.environ, PYTHONHASHSEED=seed)
    return _astral_cli(*argv, cwd=ROOT, env=env, text=False, process=True)


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


@pytest.mark.parametrize("argv", [("check", "--format", "json", "--all-scenarios"), ("export",),
                                  ("size", "--format", "json")])
@pytest.mark.parametrize("path", ["examples/astral.astral", "examples/sizing.astral"])
def test_two_runs_are_byte_identical(argv, path):
    first = _run(argv[0], path, *argv[1:], seed="1")
    second = _run(argv[0], path, *argv[1:], seed="2")
    assert first.returncode == second.returncode == 0, first.stderr.decode()
    assert first.stdout == second.stdout and first.stdout
