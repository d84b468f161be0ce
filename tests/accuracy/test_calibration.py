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
        assert fit["outside_prior"] == fits()[name]["outside_prior"]
        for const, sd in fit["spread"].items():
            shipped_sd = fits()[name]["spread"][const]
            assert (sd is None) == (shipped_sd is None), (name, const)
            if sd is not None:
                assert sd == pytest.approx(shipped_sd, rel=0.1), (name, const)


def test_the_table_says_which_constants_leave_their_prior_and_which_are_not_determined():
    both, alone = fits()[key(ALL)], fits()[key(("narayanan2021",))]
    assert both["outside_prior"] == calibrate.outside_prior(both)
    for name in both["outside_prior"]:
        c = next(c for c in CONSTANTS if c.name == name)
        assert not c.compare[0] <= both["constants"][name] <= c.compare[1]
    # the 2021 runs reduce TP gradients on the critical path: nothing overlaps, so they say
    # nothing about `interfere`, which stays at its prior's centre
    assert alone["spread"]["interfere"] is None
    assert alone["constants"]["interfere"] == pytest.approx(0.5)
    assert "(not determined)" in calibrate.markdown_constants(fits())


def test_docs_tables_are_the_scripts_output():
    """docs/seer.md's calibration table and the README's accuracy table are what
    `python -m astral_dsl.seer.calibrate --markdown` prints from the shipped fits."""
    seer_md = (REPO / "docs" / "seer.md").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert calibrate.markdown_constants(fits()) in seer_md
    assert calibrate.markdown_errors(fits()) in readme
    assert calibrate.markdown_errors(fits()) in seer_md


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
