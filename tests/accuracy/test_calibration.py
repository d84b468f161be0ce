"""The shipped constants are `astral calibrate`'s output (`make calibrate`: astral_dsl/runs/fit.py
on the runs tables of astral_dsl/seer/calibration, written to fit.json), checked here without
refitting (a refit costs minutes): fit.json is a fit of the shipped tables as they are, its
constants within their bounds, its flags consistent with its values, the docs' tables what it
generates; a fit written by `astral calibrate -o` is what `--calibration` reads; and a constant
that no run moves is left at its prior's centre and reported "not determined"."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from astral_dsl.outputs import calibration as tables
from astral_dsl.runs import accuracy, fit_document
from astral_dsl.runs.table import read_table
from astral_dsl.seer.calibration import (BY_NAME, CONSTANTS, FIT_EXACT_FILE, FIT_FORMAT,
                                         RUN_FILES, read_calibration, shipped,
                                         shipped_document)
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_the_shipped_fit_is_a_fit_of_the_shipped_tables():
    doc = shipped_document()
    assert doc["format"] == FIT_FORMAT and doc["generated_by"] == "astral calibrate"
    assert doc["fitted_on"] == sorted(RUN_FILES)
    for name, path in RUN_FILES.items():
        table = read_table(path)
        assert doc["tables"][name] == fit_document.digest("\n".join(f"{r.line}:{r.id}"
                                                           for r in table.runs)), name
    # the A100 papers are reported set by set, as before
    assert {k for k in doc["sources"] if k.startswith("a100: ")} == {
        "a100: Megatron-LM, Korthikanti et al. 2022", "a100: Megatron-LM, Narayanan et al. 2021"}
    assert shipped().fitted_on == tuple(sorted(RUN_FILES))


def test_the_table_says_which_constants_leave_their_prior():
    doc = shipped_document()
    assert doc["outside_prior"] == [c.name for c in CONSTANTS if c.name in doc["free"] and
                                    not c.prior[0] <= doc["constants"][c.name] <= c.prior[1]]
    for name in doc["outside_prior"]:
        assert f"`{name}`" in tables.markdown_constants(doc)
        assert tables.value_text(doc, BY_NAME[name]).split(" ")[0].endswith("*")
    # docs/seer.md's list of them (it had named constants back inside their range and values
    # of fits long replaced): generated, one item each, in the table's order
    listed = [line.split("`")[1] for line in tables.markdown_outside(doc).splitlines()]
    assert listed == doc["outside_prior"]


def test_docs_tables_are_the_fits_output():
    """docs/seer.md's accuracy, sources, constants and ranges tables are what `make calibrate`
    writes from the shipped fit.json, its `-exact` tables what `make calibrate-exact` writes
    from fit-exact.json, and the README quotes both A100 tables."""
    seer_md = (REPO / "docs" / "seer.md").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert set(tables.markers(seer_md)) == set(tables.TABLES)
    assert tables.rewrite(seer_md, shipped_document()) == seer_md
    assert tables.rewrite(seer_md, _exact_document()) == seer_md
    assert tables.markdown_sources(shipped_document()) in readme
    assert tables.markdown_sources(_exact_document()) in readme


def _exact_document() -> dict:
    return json.loads(FIT_EXACT_FILE.read_text(encoding="utf-8"))


def test_the_exact_fit_is_the_shipped_fit_with_every_refit_exact():
    """fit-exact.json (`make calibrate-exact`) is fit.json's fit, its leave-out figures those
    of whole refits: the constants, the runs and every figure in the fit the same (a refit
    that left it behind fails here, not in a reader's hands)."""
    one_step, exact = shipped_document(), _exact_document()
    assert (one_step["leave_out"], exact["leave_out"]) == ("one-step", "exact")
    for key in ("format", "generated_by", "fitted_on", "tables", "constants", "free", "spread",
                "outside_prior", "ranges", "families_in_fit", "groups"):
        assert exact.get(key) == one_step.get(key), key
    assert [(r["id"], r["in_fit_pct"]) for r in exact["rows"]] == \
        [(r["id"], r["in_fit_pct"]) for r in one_step["rows"]]
    assert set(exact["sources"]) == set(one_step["sources"])


def test_every_constant_is_in_the_table_and_within_its_bounds():
    values = shipped().values()
    assert set(values) == {c.name for c in CONSTANTS}
    for c in CONSTANTS:
        assert c.bounds[0] <= values[c.name] <= c.bounds[1]
        assert c.meaning and c.source and c.bounds[0] <= c.prior[0] < c.prior[1] <= c.bounds[1]
    assert set(shipped_document()["constants"]) == {c.name for c in CONSTANTS}


def test_a_constant_no_run_moves_is_not_determined(monkeypatch):
    """Narayanan et al.'s 2021 code reduced TP gradients on the critical path: nothing
    overlaps, so its runs say nothing about `interfere`, which a fit on them alone leaves at
    its prior's centre and reports not determined (a few iterations: the test's CPU).
    What is asserted (the fit's constants, its spreads, the table's text) is the fit's alone:
    the left-out errors feed only the error bands, which nothing here reads. Their exact
    refits (groups x rows within accuracy.EXACT_ROW_FITS: a fit more a group, 3.1 of the
    test's 4.2 s of CPU) are checked on Narayanan et al.'s runs by test_calibrate.py
    (test_a_small_table_is_left_out_exactly_and_warned_about); here the one-step leave-out
    serves."""
    monkeypatch.setattr(accuracy, "EXACT_ROW_FITS", 0)
    table = read_table(RUN_FILES["a100"])
    narayanan = type(table)(table.file, tuple(r for r in table.runs
                                              if "Narayanan" in r.source_version))
    doc, cal, rows, _ = accuracy.calibrate([("narayanan2021", narayanan)], max_iter=2)
    assert len(rows) == 6
    assert doc["spread"]["interfere"] is None
    assert cal.interfere == pytest.approx(0.5)
    assert tables.value_text(doc, BY_NAME["interfere"]) == "0.5 (not determined)"
    # nor does any A100 run MXFP8 attention: attn_fp8_ratio stays at its prior's centre, the
    # mean of no gain (0.5) and FlashAttention-3's FP8 forward (0.81)
    assert doc["spread"]["attn_fp8_ratio"] is None
    assert cal.attn_fp8_ratio == pytest.approx(0.655)
    assert tables.value_text(doc, BY_NAME["attn_fp8_ratio"]) == "0.655 (not determined)"


def test_forecast_reads_a_written_fit(tmp_path):
    # every GEMM efficiency at its lower bound: a slower forecast, whatever the GPU
    slower = {c.name: c.bounds[0] for c in CONSTANTS if c.name.startswith("gemm_eff")}
    doc = {"format": FIT_FORMAT, "generated_by": "astral calibrate", "fitted_on": [],
           "constants": dict(shipped().values(), **slower), "bands": {}}
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(doc))
    assert read_calibration(path).gemm_eff == slower["gemm_eff"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = ["forecast", "examples/single_pod.astral", "--format", "json"]
    slow = _astral_cli(*base, "--calibration", str(path), env=env)
    fast = _astral_cli(*base, env=env)
    assert slow.returncode == 0 and fast.returncode == 0, slow.stderr + fast.stderr
    assert json.loads(slow.stdout)["iteration_time_s"] > json.loads(fast.stdout)["iteration_time_s"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"fits": {}}')
    proc = _astral_cli(*base, "--calibration", str(bad), env=env)
    assert proc.returncode == 2 and "--calibration" in proc.stderr


def test_the_shipped_bands_are_the_exact_refits_spread(tmp_path, monkeypatch):
    """A forecast's band is its regime's spread on runs left out by exact refits
    (fit-exact.json); fit.json's one-step bands serve only where fit-exact.json is not of its
    fit (after a `make calibrate`, before its exact refits)."""
    from astral_dsl.seer import calibration

    exact = _exact_document()
    assert shipped().bands == exact["bands"] and shipped().values() == exact["constants"]
    assert exact["bands"] != shipped_document()["bands"]
    stale = dict(exact, constants=dict(exact["constants"], gemm_eff=0.5))
    path = tmp_path / "fit-exact.json"
    path.write_text(json.dumps(stale), encoding="utf-8")
    monkeypatch.setattr(calibration, "FIT_EXACT_FILE", path)
    calibration.shipped.cache_clear()
    calibration.shipped_exact_document.cache_clear()
    try:
        assert calibration.shipped_exact_document() is None
        assert calibration.shipped().bands == shipped_document()["bands"]
        assert calibration.shipped().values() == shipped_document()["constants"]
    finally:
        monkeypatch.undo()
        calibration.shipped.cache_clear()
        calibration.shipped_exact_document.cache_clear()
