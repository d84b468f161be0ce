"""Every test exercises this checkout, never whatever copy of astral_dsl happens to be installed:
the checkout comes first on sys.path, and PYTHONPATH names it for every subprocess a test starts
(the command line, the language server), whatever the subprocess's working directory."""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

if str(REPO) not in sys.path[:1]:
    sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                   if p and Path(p).resolve() != REPO])

import astral_dsl  # noqa: E402

if Path(astral_dsl.__file__).resolve().parent != REPO / "astral_dsl":   # pragma: no cover
    raise RuntimeError(f"the tests of {REPO} would run {astral_dsl.__file__}")
