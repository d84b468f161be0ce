"""Shared by the accuracy tests: the calibration runs (astral_dsl/seer/calibration: Selene and
the published Megatron-LM runs as `.astral` jobs) forecast as `astral forecast` forecasts them,
and a report printed in the test output."""
from __future__ import annotations

import pytest

import astral_dsl
from astral_dsl import seer
from astral_dsl.seer.calibration import DESIGN, SETS


@pytest.fixture(scope="session")
def selene():
    design = astral_dsl.load(DESIGN)
    assert design.valid, [d.message for d in design.diagnostics]
    return design


class Accuracy:
    def __init__(self, design, write):
        self.design, self.write = design, write

    def run(self, name, calibration, title):
        """The set's runs forecast with `calibration`: (mean %, max %, lines)."""
        lines = [f"{SETS[name][0]}: {title}",
                 f"  {'run':<34} {'measured s':>11} {'Seer s':>9} {'error':>8}  chosen"]
        errors = []
        for run in SETS[name][1]:
            fc = seer.forecast(self.design, job=run.job, calibration=calibration)
            err = (fc.iteration_time / run.measured_s - 1) * 100
            errors.append(abs(err))
            chosen = ", ".join(f"{k} {v}" for k, v in fc.chosen)
            lines.append(f"  {run.label:<34} {run.measured_s:11.3f} {fc.iteration_time:9.3f} "
                         f"{err:+7.1f}%  {chosen}")
        mean, worst = sum(errors) / len(errors), max(errors)
        lines.append(f"  mean |error| {mean:.2f}%   max |error| {worst:.2f}%")
        for line in [""] + lines:
            self.write(line)
        return mean, worst, lines


@pytest.fixture
def accuracy(selene, capsys):
    def write(line):
        with capsys.disabled():      # the table belongs in the test output, also with -q
            print(line)

    return Accuracy(selene, write)
