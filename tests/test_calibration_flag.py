"""`--calibration FIT.json` on every command that forecasts a job: diff, report, diagnose and synth
price their forecasts with the fit as forecast does (the same figures), and a fit that cannot
be read is the same usage error (exit 2)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import api, diagnose, seer
from astral_dsl.seer.calibration import FIT_FORMAT, priors
from astral_dsl.synth import generate, write
from clirun import astral

REPO = Path(__file__).resolve().parents[1]
SINGLE_POD = REPO / "examples" / "single_pod.astral"
SMALL = REPO / "tests" / "fixtures" / "diagnose" / "small.astral"


@pytest.fixture(scope="module")
def fit(tmp_path_factory) -> Path:
    """A fit of one's own: the priors' centres (not the shipped constants), no bands."""
    path = tmp_path_factory.mktemp("fit") / "mine.json"
    path.write_text(json.dumps({"format": FIT_FORMAT, "generated_by": "astral calibrate",
                                "fitted_on": ["mine"], "constants": priors().values(),
                                "bands": {}}), encoding="utf-8")
    return path


def _time(design, fit=None) -> float:
    return seer.forecast(design, calibration=None if fit is None else str(fit)).iteration_time


def test_diff_forecasts_with_the_fit(fit, tmp_path):
    other = tmp_path / "full.astral"          # the same job recomputing every layer
    other.write_text(SINGLE_POD.read_text(encoding="utf-8").replace(
        "recompute = selective", "recompute = full"), encoding="utf-8")
    designs = [astral_dsl.load(str(p)) for p in (SINGLE_POD, other)]
    mine = [round(_time(d, fit), 6) for d in designs]
    shipped = [round(_time(d), 6) for d in designs]
    assert mine[0] != pytest.approx(shipped[0], rel=1e-3)     # the fit changes the forecast
    for extra, expected in (([], shipped), (["--calibration", str(fit)], mine)):
        proc = astral("diff", str(SINGLE_POD), str(other), "--format", "json", *extra)
        assert proc.returncode == 0, proc.stderr
        (change,) = [c for c in json.loads(proc.stdout)["changes"]["jobs"]
                     if c["key"] == "llama70b.iteration_time_s"]
        assert [change["before"], change["after"]] == expected
    # from Python too (the CLI is never less accurate than the API, nor the API than the CLI)
    result = api.diff(str(SINGLE_POD), str(other), calibration=fit)
    (change,) = [c for c in result.changes if c.key == "llama70b.iteration_time_s"]
    assert [change.before, change.after] == mine


def test_report_forecasts_with_the_fit(fit, tmp_path):
    design = astral_dsl.load(str(SINGLE_POD))
    out = tmp_path / "r.html"
    proc = astral("report", str(SINGLE_POD), "-o", str(out), "--job", "llama70b",
                  "--calibration", str(fit))
    assert proc.returncode == 0, proc.stderr
    page = out.read_text(encoding="utf-8")
    assert f"{_time(design, fit):.3f} s" in page
    assert f"{_time(design):.3f} s" not in page


def test_diagnose_forecasts_with_the_fit(fit, tmp_path):
    design = astral_dsl.load(str(SMALL))
    fc, rm = seer.forecast(design), diagnose.rank_map(design)
    write.write_log(generate(fc, rm, [], seed=4), str(tmp_path / "log.csv"))
    times = {}
    for name, extra in (("shipped", []), ("mine", ["--calibration", str(fit)])):
        proc = astral("diagnose", str(SMALL), "--observed", str(tmp_path / "log.csv"),
                      "--format", "json", *extra)
        # a diagnosis made (healthy, suspects, or inconclusive: with the priors' faster
        # forecast the job's compute is 1.30x it, beyond the default band's 1.28x), not a
        # usage error (exit 2 without a diagnosis)
        doc = json.loads(proc.stdout)
        assert doc["verdict"] and doc["exit_code"] == proc.returncode, proc.stderr
        times[name] = doc["forecast_iteration_s"]
    assert times == {"shipped": pytest.approx(_time(design)),
                     "mine": pytest.approx(_time(design, fit))}
    assert times["shipped"] != pytest.approx(times["mine"], rel=1e-3)


def test_synth_forecasts_with_the_fit(fit, tmp_path):
    """`astral synth --calibration`: the drill is made from the forecast with the fit, the log
    the Python API makes from that forecast byte for byte (synth had no --calibration: its
    drills were always the shipped fit's)."""
    design = astral_dsl.load(str(SMALL))
    rm = diagnose.rank_map(design)
    for name, calibration in (("mine", str(fit)), ("shipped", None)):
        fc = seer.forecast(design, calibration=calibration)
        write.write_log(generate(fc, rm, [], seed=3), str(tmp_path / f"{name}.csv"))
    proc = astral("synth", str(SMALL), "-o", str(tmp_path / "cli.csv"), "--seed", "3",
                  "--calibration", str(fit))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cli = (tmp_path / "cli.csv").read_bytes()
    assert cli == (tmp_path / "mine.csv").read_bytes()
    assert cli != (tmp_path / "shipped.csv").read_bytes()


@pytest.mark.parametrize("command", [
    ("diff", str(SINGLE_POD), str(SINGLE_POD)),
    ("synth", str(SMALL), "-o", "never-written.csv"),
    ("report", str(SINGLE_POD), "-o", "never-written.html"),
    ("diagnose", str(SMALL), "--observed", str(SMALL)),
])
def test_a_fit_that_cannot_be_read_is_a_usage_error(command, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": 1}', encoding="utf-8")
    missing = tmp_path / "none.json"
    for path in (bad, missing):
        proc = astral(*command, "--calibration", str(path), cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert re.search(rf"--calibration: {re.escape(str(path))}", proc.stderr), proc.stderr
        assert "Traceback" not in proc.stderr and "E000" not in proc.stdout + proc.stderr
    assert not (tmp_path / "never-written.html").exists()
    assert not (tmp_path / "never-written.csv").exists()


def test_the_api_sweep_forecasts_with_the_fit(fit):
    """`astral_dsl.sweep(..., calibration=)`, as `astral sweep --calibration`: the API had no
    way to give the fit (the CLI is never less accurate than the API, nor the API than it);
    without `job` it prices nothing, and is refused as the command refuses it."""
    design = astral_dsl.load(str(SINGLE_POD))
    grid = {"hosts_per_rack": [4]}                     # the design as written: one point
    for given, expected in ((None, _time(design)), (fit, _time(design, fit))):
        result = astral_dsl.sweep(SINGLE_POD, grid, job="llama70b", workers=1,
                                  calibration=given)
        # the sweep's metrics round the time to the microsecond (explore/point.py)
        assert result.rows[0]["metrics"]["iteration_time_s"] == round(expected, 6)
    from astral_dsl.explore.sweep import SweepError

    with pytest.raises(SweepError, match="give the job too"):
        astral_dsl.sweep(SINGLE_POD, grid, workers=1, calibration=fit)


def _copy(tmp_path: Path, name: str, **changes) -> Path:
    """The shipped fit (fit-exact.json: fit.json's constants with the bands of exact refits)
    copied with `changes` (None: the key removed)."""
    from astral_dsl.seer.calibration import FIT_EXACT_FILE

    shipped_doc = json.loads(FIT_EXACT_FILE.read_text(encoding="utf-8"))
    doc = {k: v for k, v in dict(shipped_doc, **changes).items() if v is not None}
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_copy_of_the_shipped_fit_with_a_band_or_a_range_changed_is_not_it(tmp_path):
    """Equal constants are not the shipped fit when the bands or ranges, which set a forecast's
    band, regime and W759, differ: each message then names the copy, as for any fit of one's own;
    an unchanged copy still is the shipped fit."""
    from astral_dsl.seer.calibration import FIT_EXACT_FILE, FIT_FILE, read_calibration, shipped

    doc = json.loads(FIT_EXACT_FILE.read_text(encoding="utf-8"))
    same = read_calibration(_copy(tmp_path, "same.json"))
    # fit.json itself (the one-step bands) is not the shipped fit: its bands differ
    assert read_calibration(FIT_FILE) != shipped()
    assert same == shipped() and same.source != shipped().source
    wider = dict(doc["ranges"], gpus=[1, 1 << 20])
    star = dict(doc["bands"]["*"], high=doc["bands"]["*"]["high"] + 0.01)
    for name, changes in (("no-ranges.json", {"ranges": None}),
                          ("ranges.json", {"ranges": wider}),
                          ("no-bands.json", {"bands": {}}),
                          ("band.json", {"bands": dict(doc["bands"], **{"*": star})})):
        cal = read_calibration(_copy(tmp_path, name, **changes))
        assert cal.values() == shipped().values() and cal != shipped(), name
    # `forecast --calibration`: W759 and W753 name the copy, not the shipped fit
    path = _copy(tmp_path, "no-ranges.json", ranges=None)
    r = astral("forecast", SINGLE_POD, "--calibration", path)
    assert f"the calibration `{path}` records no ranges" in r.stdout
    assert "the shipped fit records no ranges" not in r.stdout
    path = _copy(tmp_path, "no-bands.json", bands={})
    r = astral("forecast", SINGLE_POD, "--calibration", path)
    assert f"the calibration `{path}` records no error bands: fit it again" in r.stdout
    assert "forecast with `--calibration`" not in r.stdout
