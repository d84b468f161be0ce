"""`astral export` documents of every example validate against schema/design.schema.json, and
two runs of `astral check --format json` and `astral export` give the same bytes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.astral"))


def _run(*argv: str, seed: str = "0") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    return subprocess.run([sys.executable, "-m", "astral_dsl.cli", *argv], capture_output=True,
                          cwd=ROOT, env=env)


@pytest.fixture(scope="module")
def schema():
    proc = _run("export", "--schema")
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_export_validates_against_the_schema(path, schema):
    proc = _run("export", str(path.relative_to(ROOT)))
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
