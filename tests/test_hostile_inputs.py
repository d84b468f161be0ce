"""Hostile inputs beside the design text: JSON files a command is given or a design names, an
inventory built to blow up, a repository's revision built to fill the memory, a buffer past the
file cap. Each must be refused with a message or a diagnostic (never E000, never a traceback),
within bounded memory."""
from __future__ import annotations

import pytest

from clirun import REPO, astral

TUTORIAL = REPO / "examples" / "tutorial_rack.astral"
# nested past the interpreter's recursion limit (1,000 by default): json.loads raises
# RecursionError, not ValueError
DEEP = "[" * 100_000 + "]" * 100_000


def _no_internal_error(proc) -> None:
    out = proc.stdout + proc.stderr
    assert "E000" not in out and "Traceback" not in out and "RecursionError" not in out, out


# ---- JSON nested past the parser's depth -----------------------------------------------------
@pytest.mark.parametrize("option, command", [
    ("--baseline", ["check", str(TUTORIAL)]),
    # the fit is read before the table: the table need not exist
    ("--calibration", ["runs", "{tmp}/runs.csv"]),
    ("--highlight", ["render", str(TUTORIAL), "-o", "{tmp}/x.svg", "--view", "rack"]),
    ("--diagnosis", ["report", str(TUTORIAL), "-o", "{tmp}/x.html"]),
])
def test_a_deeply_nested_json_option_is_a_usage_error(tmp_path, option, command):
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    args = [a.replace("{tmp}", str(tmp_path)) for a in command] + [option, str(deep)]
    proc = astral(*args, "--color", "never")
    _no_internal_error(proc)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{option}: " in proc.stderr and "nested too deeply" in proc.stderr, proc.stderr


def test_a_deeply_nested_inventory_is_e230(tmp_path):
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "fleet.json").write_text(DEEP)
    design = tmp_path / "d.astral"
    design.write_text(TUTORIAL.read_text(encoding="utf-8")
                      + '\ninventory Fleet {\n  file = "fleet.json"\n}\n')
    proc = astral("check", "--color", "never", str(design))
    _no_internal_error(proc)
    assert proc.returncode == 1
    assert "error[E230]: the inventory `fleet.json` cannot be read: it is not JSON (arrays or " \
           "objects nested too deeply to read" in proc.stdout, proc.stdout
