"""Shared by the accuracy tests: the Selene design with the published runs as jobs, and a report
printed in the test output (the table, mean and max error)."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import seer

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def selene():
    design = astral_dsl.load(HERE / "selene.astral")
    assert design.valid, [d.message for d in design.diagnostics]
    return design


class Accuracy:
    def __init__(self, design, write):
        self.design, self.write = design, write

    def run(self, title, rows):
        """rows: (job name, label, measured seconds). Returns (mean %, max %, lines)."""
        lines = [f"{title}", f"  {'run':<34} {'measured s':>11} {'Seer s':>9} {'error':>8}  chosen"]
        errors = []
        for job, label, measured in rows:
            fc = seer.forecast(self.design, job=job)    # as `astral forecast` does
            err = (fc.iteration_time / measured - 1) * 100
            errors.append(abs(err))
            chosen = ", ".join(f"{k} {v}" for k, v in fc.chosen)
            lines.append(f"  {label:<34} {measured:11.3f} {fc.iteration_time:9.3f} "
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
