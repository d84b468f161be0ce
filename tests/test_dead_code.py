"""No dead code (issue 22): vulture, at 60 % confidence, over the package with the tests and the
benchmarks as its users, reports nothing but the framework hooks tests/vulture_hooks.py lists,
each with the framework that calls it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_vulture_finds_no_dead_code():
    proc = subprocess.run([sys.executable, "-m", "vulture", "--min-confidence", "60",
                           "astral_dsl", "tests", "benchmarks"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.stdout == "" and proc.returncode == 0, proc.stdout + proc.stderr
