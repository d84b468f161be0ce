"""`astral check --strict` (every warning is an error: exit 1, "valid": false, the summary counts
the warnings) and job validation when the site comes from an imported file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_cli import WARN, out, run, write   # the CLI tests' helpers and warning design

SITE = """
import stdlib.hardware { H800, CX7_2x200G, HGX8 }
host Node = HGX8(gpu = H800, nic = CX7_2x200G, liquid_share = 75 %)   // not assumed: no W216
rack R { hosts = 4 x Node }
site S { racks = 4 x R }
"""

JOB = """
import site { S }
import stdlib.models { Llama3_8B }
job j {
  model = Llama3_8B
  placement = S
  gpus = 128
  parallel { tp = TP, pp = 1, dp = DP }
  batch { global_batch = 256, micro = 1, seq = 8192 }
}
"""


@pytest.fixture
def warn(tmp_path):
    write(tmp_path, "warn.astral", WARN)
    return tmp_path


def _w500(diags):
    return [d for d in diags if d["code"] == "W500"]


def test_a_warning_alone_exits_0_without_strict(warn):
    proc = run(["check", "warn.astral", "--color", "never"], warn)
    assert proc.returncode == 0, out(proc)
    assert "warning[W500]" in out(proc)


def test_strict_makes_every_warning_an_error(warn):
    proc = run(["check", "warn.astral", "--strict", "--color", "never"], warn)
    assert proc.returncode == 1, out(proc)
    assert "error[W500]: rack is hot" in out(proc)       # the code stays, the severity changes
    assert "made an error by --strict" in out(proc)
    # the one-line summary counts the warnings that became errors
    last = out(proc).strip().splitlines()[-1]
    warnings = out(proc).count("error[W")
    assert last.endswith(f"[{warnings} error(s) ({warnings} warning(s) under --strict)]"), last


def test_strict_json_is_not_valid(warn):
    plain = json.loads(out(run(["check", "warn.astral", "--format", "json"], warn)))
    assert plain["valid"] is True
    assert _w500(plain["diagnostics"])[0]["severity"] == "warning"
    doc = json.loads(out(run(["check", "warn.astral", "--format", "json", "--strict"], warn)))
    assert doc["valid"] is False
    assert all(d["severity"] == "error" for d in doc["diagnostics"])
    assert _w500(doc["diagnostics"])[0]["severity"] == "error"
    assert doc["summary"]["gpus"] == 64          # the design still compiled and is summarised


def test_strict_without_warnings_changes_nothing(tmp_path):
    write(tmp_path, "job.astral", JOB.replace("TP", "8").replace("DP", "16"))
    write(tmp_path, "site.astral", SITE)
    plain = run(["check", "job.astral", "--color", "never"], tmp_path)
    strict = run(["check", "job.astral", "--strict", "--color", "never"], tmp_path)
    assert plain.returncode == strict.returncode == 0, plain.stdout + strict.stdout
    assert plain.stdout == strict.stdout


# ---- jobs on a site imported from another file ------------------------------------------------------
def test_jobs_are_validated_when_the_site_is_imported(tmp_path):
    """The entry file declares no site: the job is still validated (it used to print `ok`)."""
    write(tmp_path, "site.astral", SITE)
    # tp = 3 does not divide Llama 3 8B's 32 heads (E750); 3 x 1 x 16 = 48 != 128 GPUs (E754)
    write(tmp_path, "job.astral", JOB.replace("TP", "3").replace("DP", "16"))
    proc = run(["check", "job.astral", "--color", "never"], tmp_path)
    assert proc.returncode == 1, out(proc)
    assert "error[E750]" in out(proc) and "error[E754]" in out(proc)
    assert "[ok]" not in out(proc) and ": ok" not in out(proc)


def test_a_sound_job_on_an_imported_site_passes(tmp_path):
    write(tmp_path, "site.astral", SITE)
    # 8 x 1 x 16 = 128 GPUs of the 128 the imported site holds (4 racks x 4 hosts x 8)
    write(tmp_path, "job.astral", JOB.replace("TP", "8").replace("DP", "16"))
    proc = run(["check", "job.astral", "--color", "never"], tmp_path)
    assert proc.returncode == 0, out(proc)
    assert "error[" not in out(proc)
