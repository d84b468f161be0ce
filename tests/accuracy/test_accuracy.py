"""Seer against published Megatron-LM runs (astral_dsl/seer/calibration/a100.csv): per set, the
error when the set is in the fit (the shipped constants) and when it is left out (the constants
refitted without the set's rows: fit.json's leave-one-source-out figures, `astral calibrate
--by-source a100`). Every forecast goes the way of `astral runs`: the row stated as a job
(runs/express.py), compiled, validated and forecast; none of its options is passed from Python.

Targets (issue 21, docs/seer.md "Accuracy"): over the A100 runs, mean |error| <= 3 % with the
shipped constants, checked here. The left-out target (mean <= 5 %, max <= 10 % per set) held for
the A100-only fit and does not hold for the shipped fit, which the modern rows joined (the 2022
set left out: 13.6 %): docs/seer.md and the README report it, and these tests check that the
figures they report are fit.json's, not that they meet it."""
from __future__ import annotations

import math

import pytest

from astral_dsl.seer.calibration import shipped, shipped_document

# the sets of a100.csv, by their `source_version`
SETS = ("Megatron-LM, Korthikanti et al. 2022", "Megatron-LM, Narayanan et al. 2021")


def test_the_a100_runs_within_3_percent(accuracy):
    """The A100 runs together: mean |error| <= 3 % with the shipped constants; each set's
    figures are the ones fit.json (and so docs/seer.md and the README) reports."""
    total, count = 0.0, 0
    for name in SETS:
        mean, worst, lines = accuracy.run(name, shipped(), "in the fit (shipped constants)")
        runs = len(lines) - 3
        total, count = total + mean * runs, count + runs
        figures = shipped_document()["sources"][f"a100: {name}"]
        assert figures["rows"] == runs
        assert figures["in_fit_mean_pct"] == pytest.approx(mean, abs=0.01)
        assert figures["in_fit_max_pct"] == pytest.approx(worst, abs=0.01)
    assert count == 14
    assert total / count <= 3.0, f"A100 runs: mean |error| {total / count:.2f} %"


@pytest.mark.parametrize("name", SETS)
def test_left_out_figures_are_reported(name):
    """Each set's left-out figures (what docs/seer.md and the README quote) exist, are finite
    and bound one another (mean <= max)."""
    figures = shipped_document()["sources"][f"a100: {name}"]
    for key in ("left_out_mean_pct", "left_out_max_pct", "in_fit_mean_pct", "in_fit_max_pct"):
        assert math.isfinite(figures[key]) and figures[key] >= 0, (key, figures)
    assert figures["left_out_mean_pct"] <= figures["left_out_max_pct"]
    assert figures["in_fit_mean_pct"] <= figures["in_fit_max_pct"]
