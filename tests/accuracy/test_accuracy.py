"""Seer against published Megatron-LM runs (astral_dsl/seer/calibration/a100.csv): per set, the
error when the set is in the fit (the shipped constants) and when it is left out (the constants
refitted without the set's rows: fit.json's leave-one-source-out figures, `astral calibrate
--by-source a100`). Targets (docs/seer.md, "Accuracy"): in the fit, mean |error| <= 3 %; left
out, mean <= 5 % and max <= 10 %. Every forecast goes the way of `astral runs`: the row stated
as a job (runs/express.py), compiled, validated and forecast; none of its options is passed
from Python."""
from __future__ import annotations

import pytest

from astral_dsl.seer.calibration import shipped, shipped_document

# the sets of a100.csv, by their `source_version`
SETS = ("Megatron-LM, Korthikanti et al. 2022", "Megatron-LM, Narayanan et al. 2021")


@pytest.mark.parametrize("name", SETS)
def test_in_fit(name, accuracy):
    mean, worst, lines = accuracy.run(name, shipped(), "in the fit (shipped constants)")
    assert mean <= 3.0, "\n".join(lines)
    # fit.json's own figure of the set is this forecast's
    figures = shipped_document()["sources"][f"a100: {name}"]
    assert figures["in_fit_mean_pct"] == pytest.approx(mean, abs=0.01)
    assert figures["in_fit_max_pct"] == pytest.approx(worst, abs=0.01)


@pytest.mark.parametrize("name", SETS)
def test_left_out(name):
    figures = shipped_document()["sources"][f"a100: {name}"]
    assert figures["left_out_mean_pct"] <= 5.0 and figures["left_out_max_pct"] <= 10.0, figures
