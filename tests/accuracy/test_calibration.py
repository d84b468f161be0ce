"""The shipped constants are the calibration script's output: `python -m
astral_dsl.seer.calibrate` refits every fit of fit.json from the calibration runs and gets the
same values (to calibrate.RTOL) and the same errors; a fit written with --out is what
`astral forecast --calibration` reads."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from astral_dsl.seer import calibrate
from astral_dsl.seer.calibration import ALL, CONSTANTS, fits, key, read_calibration, shipped

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def refit():
    return calibrate.refit()


def test_refit_reproduces_the_shipped_constants(refit):
    assert set(refit) == set(fits())
    assert calibrate.compare(refit, fits()) == []
    for name, fit in refit.items():
        for set_name, errs in fit["errors"].items():
            shipped_errs = fits()[name]["errors"][set_name]
            assert errs["mean_pct"] == pytest.approx(shipped_errs["mean_pct"], abs=0.05)
            assert errs["max_pct"] == pytest.approx(shipped_errs["max_pct"], abs=0.05)


def test_every_constant_is_in_the_table_and_within_its_bounds():
    values = shipped().values()
    assert set(values) == {c.name for c in CONSTANTS}
    for c in CONSTANTS:
        assert c.bounds[0] <= values[c.name] <= c.bounds[1]
        assert c.meaning and c.source and c.compare[0] < c.compare[1]
    assert shipped().fitted_on == ALL
    assert set(fits()) == {key(ALL)} | {key((n,)) for n in ALL}


def test_forecast_reads_a_written_fit(tmp_path):
    doc = {"fits": fits()}
    doc["fits"][key(ALL)] = dict(doc["fits"][key(ALL)],
                                 constants=dict(fits()[key(ALL)]["constants"], gemm_eff=0.5))
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(doc))
    assert read_calibration(path).gemm_eff == 0.5
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "astral_dsl.cli", "forecast", "examples/single_pod.astral",
            "--format", "json"]
    slow = subprocess.run(base + ["--calibration", str(path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    fast = subprocess.run(base, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert slow.returncode == 0 and fast.returncode == 0, slow.stderr + fast.stderr
    assert json.loads(slow.stdout)["iteration_time_s"] > json.loads(fast.stdout)["iteration_time_s"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"fits": {}}')
    proc = subprocess.run(base + ["--calibration", str(bad)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--calibration" in proc.stderr
