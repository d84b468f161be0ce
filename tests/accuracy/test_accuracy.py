"""Seer against published Megatron-LM runs (astral_dsl/seer/calibration): per set, the error
when the set is in the fit (the shipped constants, fitted on every set) and when it is left out
(the constants fitted on the other sets alone). Targets (docs/seer.md, "Accuracy"): in the fit,
mean |error| <= 3 %; left out, mean <= 5 % and max <= 10 %. Every forecast goes through
`seer.forecast(design, job=...)`, the path of `astral forecast`: the runs' options are stated
in the .astral file, none is passed from Python."""
from __future__ import annotations

import pytest

from astral_dsl.seer.calibration import ALL, calibration


@pytest.mark.parametrize("name", ALL)
def test_in_fit(name, accuracy):
    mean, _, lines = accuracy.run(name, calibration(ALL), "in the fit (shipped constants)")
    assert mean <= 3.0, "\n".join(lines)


@pytest.mark.parametrize("name", ALL)
def test_left_out(name, accuracy):
    others = tuple(n for n in ALL if n != name)
    mean, worst, lines = accuracy.run(name, calibration(others),
                                      "left out (constants fitted on " + ", ".join(others) + ")")
    assert mean <= 5.0 and worst <= 10.0, "\n".join(lines)
