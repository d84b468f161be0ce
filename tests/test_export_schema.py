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


# a pod-owned fabric in 2 pods: per pod 8 leaves (one per rail) and 4 spines of 1.5 kW
NETWORK = """
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s, power = 25 W }
switch Sw { ports = 64, port_speed = 400 Gb/s, power = 1.5 kW }
host H { gpus = 8 x G, nics = 8 x N, power = 10.2 kW }
rack R { hosts = 4 x H }
pod P { racks = 8 x R, fabric = F }
site S { pods = 2 x P }
fabric F { rails = 8
  tier leaf { switch = Sw, scope = pod, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = Sw, scope = pod, down = 64 x 400 Gb/s } }
"""


def test_export_rolls_the_switches_up_beside_the_power(tmp_path, schema):
    # per pod: 8 racks x 4 x 10.2 kW = 326.4 kW of hosts; 32 hosts x 8 NICs = 256 ports, a leaf
    # per rail takes 32 of them (8 leaves, 32 uplinks each: 256 up), spines of 64 ports: 4.
    # 12 switches x 1.5 kW = 18 kW, so the pod's IT power is 344.4 kW; the site holds two pods:
    # 652.8 kW of hosts, 24 switches, 36 kW, 688.8 kW in all. A rack owns no fabric: no keys.
    path = tmp_path / "net.astral"
    path.write_text(NETWORK, encoding="utf-8")
    proc = _astral_cli("export", str(path), cwd=ROOT, text=False)
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, schema)
    roll = {i["path"]: i["rollup"] for i in doc["design"]["instances"] if "rollup" in i}
    for where, switches, kws in (("S.pods[0]", 12, (326.4, 18, 344.4)),
                                 ("S", 24, (652.8, 36, 688.8))):
        r = roll[where]
        assert r["switches"] == switches
        assert [(r[k]["value"], r[k]["unit"]) for k in ("power", "network_power", "it_power")] \
            == [(pytest.approx(v), "kW") for v in kws]
    assert "switches" not in roll["S.pods[0].racks[0]"]
