"""Shared by the accuracy tests: the A100 calibration runs (astral_dsl/seer/calibration/a100.csv,
a runs table: Korthikanti et al. 2022 and Narayanan et al. 2021 on Selene) stated as jobs and
forecast as `astral runs` forecasts them (runs/evaluate.py), and a report printed in the test
output."""
from __future__ import annotations

import pytest

from astral_dsl.runs.evaluate import evaluate, prepare
from astral_dsl.runs.table import read_table
from astral_dsl.seer.calibration import RUN_FILES


@pytest.fixture(scope="session")
def a100():
    table = read_table(RUN_FILES["a100"])
    assert table.valid, [d.message for d in table.diagnostics]
    prepared = prepare(table)
    assert [p.status for p in prepared] == ["ok"] * len(prepared), \
        [(p.row.id, p.field, p.reason) for p in prepared if p.status != "ok"]
    return prepared


class Accuracy:
    def __init__(self, prepared, write):
        self.prepared, self.write = prepared, write

    def run(self, name, calibration, title):
        """The set's runs forecast with `calibration`: (mean %, max %, lines)."""
        runs = [p for p in self.prepared if p.row.source_version == name]
        assert runs, name
        lines = [f"{name}: {title}",
                 f"  {'run':<12} {'published s':>11} {'Seer s':>9} {'error':>8}  chosen"]
        errors = []
        for r in evaluate(runs, calibration):
            err = (r.iteration_time / r.published - 1) * 100
            errors.append(abs(err))
            chosen = ", ".join(f"{k} {v}" for k, v in r.chosen)
            lines.append(f"  {r.row.id:<12} {r.published:11.3f} {r.iteration_time:9.3f} "
                         f"{err:+7.1f}%  {chosen}")
        mean, worst = sum(errors) / len(errors), max(errors)
        lines.append(f"  mean |error| {mean:.2f}%   max |error| {worst:.2f}%")
        for line in [""] + lines:
            self.write(line)
        return mean, worst, lines


@pytest.fixture
def accuracy(a100, capsys):
    def write(line):
        with capsys.disabled():      # the table belongs in the test output, also with -q
            print(line)

    return Accuracy(a100, write)
