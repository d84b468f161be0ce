"""`astral calibrate` on a tiny table (three runs, two iterations: the suite never runs the full
refit, `make calibrate`): what it reports, the fit it writes, that a refit reproduces it byte for
byte, the docs' tables it rewrites, its usage errors; and the round trip of its fit through
`astral runs --calibration`."""
from __future__ import annotations

import json

import pytest

from astral_dsl import cli
from astral_dsl.seer.calibration import FIT_FORMAT, read_calibration

from test_cli import call
from test_runs import _row, _write


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Three of Narayanan et al.'s runs, fitted with two iterations (seconds of CPU)."""
    d = tmp_path_factory.mktemp("calibrate")
    path = _write(d, [_row("n1_7b"), _row("n7_5b"), _row("n39_1b"),
                      _row("k22b_full", id="int3", precision="INT3")], "tiny.csv")
    fit = d / "fit.json"
    md = d / "doc.md"
    md.write_text("# Fit\n\n<!-- calibration:accuracy -->\nold\n<!-- /calibration:accuracy -->\n"
                  "text\n<!-- calibration:constants -->\n<!-- /calibration:constants -->\n",
                  encoding="utf-8")
    code = cli.main(["calibrate", str(path), "--max-iterations", "2", "-o", str(fit),
                     "--docs", str(md), "--format", "json"])
    assert code == 0
    return path, fit


def test_calibrate_writes_a_fit_that_runs_reads(tiny, capsys):
    path, fit = tiny
    doc = json.loads(fit.read_text(encoding="utf-8"))
    assert doc["format"] == FIT_FORMAT and doc["fitted_on"] == ["tiny"]
    assert [r["id"] for r in doc["rows"]] == ["n1_7b", "n7_5b", "n39_1b"]
    cal = read_calibration(fit)
    assert cal.values() == doc["constants"] and cal.fitted_on == ("tiny",)
    code, out, _ = call(["runs", str(path), "--calibration", str(fit), "--format", "json"],
                        capsys)
    rows = {r["id"]: r for r in json.loads(out)["rows"]}
    # the forecasts are those of the fitted constants: the fit's in-fit errors
    for r in doc["rows"]:
        assert rows[r["id"]]["error"] * 100 == pytest.approx(r["in_fit_pct"], abs=0.006)
        band = doc["bands"][r["regime"]]
        assert rows[r["id"]]["calibration"]["inside"] is True
        assert rows[r["id"]]["band"] == [band["low"], band["high"]]
    assert json.loads(out)["summary"]["constants"] == {"source": str(fit),
                                                       "fitted_on": ["tiny"]}
    assert rows["int3"]["status"] == "not_expressible"


def test_calibrate_reports_rows_families_constants_and_reproduces_its_fit(tiny, capsys):
    path, fit = tiny
    code, out, _ = call(["calibrate", str(path), "--max-iterations", "2", "--calibration",
                         str(fit), "--color", "never"], capsys)
    assert code == 0, out
    assert "3 rows of tiny" in out
    assert "int3 (line 5, not expressible) precision: unknown precision `INT3`" in out
    for rid in ("n1_7b", "n7_5b", "n39_1b"):
        assert f"\n{rid} " in out
    assert "A100 BF16 dense" in out and "left out: mean |error|" in out
    assert "gemm_eff " in out and "0.7 - 0.9" in out and "interfere" in out
    assert f"reproduces {fit} exactly" in out
    changed = fit.parent / "changed.json"
    doc = json.loads(fit.read_text(encoding="utf-8"))
    doc["constants"]["gemm_eff"] = 0.5
    changed.write_text(json.dumps(doc), encoding="utf-8")
    code, out, _ = call(["calibrate", str(path), "--max-iterations", "2", "--calibration",
                         str(changed), "--format", "json"], capsys)
    compared = json.loads(out)["compared"]
    assert code == 1 and compared["differences"][0].startswith("gemm_eff = ")
    assert compared["differences"][0].endswith("was 0.5")


def test_calibrate_rewrites_the_marked_docs_tables(tiny):
    from astral_dsl.outputs import calibration as tables

    path, fit = tiny
    doc = json.loads(fit.read_text(encoding="utf-8"))
    text = (fit.parent / "doc.md").read_text(encoding="utf-8")
    assert "\nold\n" not in text and tables.rewrite(text, doc) == text
    assert tables.markdown_accuracy(doc) in text and tables.markdown_constants(doc) in text
    assert "| A100 | BF16 | dense | 3 |" in text and "\ntext\n" in text


@pytest.mark.parametrize("argv, message", [
    (["a.csv", "b/a.csv"], "two tables are named `a`"),
    (["a.csv", "--by-source", "b"], "--by-source b: no table of that name"),
    (["a.csv", "--max-iterations", "0"], "--max-iterations must be at least 1"),
    (["a.csv", "--docs", "nope.md"], "--docs: cannot read nope.md"),
])
def test_calibrate_usage_errors(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = call(["calibrate", *argv], capsys)
    assert code == 2 and message in err


def test_calibrate_without_a_usable_row_is_a_usage_error(tmp_path, capsys):
    path = _write(tmp_path, [_row("k22b_full", id="int3", precision="INT3")])
    code, _, err = call(["calibrate", str(path)], capsys)
    assert code == 2 and "no row of the runs tables can be forecast and scored" in err


def test_the_fit_loss_is_soft_l1_of_the_log_errors():
    """runs/fit.py `robust`: least squares on f minimises 2 s^2 (sqrt(1 + (r / s)^2) - 1) (a
    square for small errors, linear for large), and w is df/dr (hand-checked values)."""
    import math

    from astral_dsl.runs.fit import LOSS_SCALE as s, robust

    errors = [-1.0, -0.2, -0.05, -1e-9, 0.0, 1e-6, 0.03, 0.5]
    f, w = robust(errors)
    for r, fi, wi in zip(errors, f, w):
        u = r / s             # 2 (sqrt(1 + u^2) - 1), written without the cancellation near 0
        assert fi * fi == pytest.approx(2 * s * s * u * u / (1 + math.sqrt(1 + u * u)),
                                        rel=1e-12, abs=1e-30)
        assert math.copysign(1.0, fi) == math.copysign(1.0, r) or r == 0.0
        h = 1e-7
        slope = (robust([r + h])[0][0] - robust([r - h])[0][0]) / (2 * h)
        assert wi == pytest.approx(slope, rel=1e-5)
    # small errors as in least squares; a 10x larger error costs ~10x, not 100x
    assert f[3] == pytest.approx(-1e-9, rel=1e-9)
    assert (f[0] / f[2]) ** 2 == pytest.approx(2 * (math.sqrt(401) - 1) / (2 * (math.sqrt(2) - 1)),
                                               rel=1e-12)


def test_the_spread_of_a_barely_moved_log_constant_is_finite():
    """runs/fit.py `spread`: a log-scale constant the runs barely move has a standard error of
    hundreds of decades; its factor is capped (10^sigma overflowed to infinity, and writing
    the fit failed with an internal error), a well-determined one keeps sigma's value."""
    import math

    import numpy as np

    from astral_dsl.runs.fit import SPREAD_FACTOR_MAX, spread
    from astral_dsl.seer.calibration import Constant

    free = [Constant("a", "", "", (0.1, 10.0), (0.5, 2.0), "", log=True),
            Constant("b", "", "", (0.1, 10.0), (0.5, 2.0), "", log=True)]
    J = np.array([[1.0, 1e-7], [2.0, -1e-7], [-1.0, 2e-7], [0.5, 0.0], [1.5, -3e-7]])
    r = {0: 0.1, 1: -0.2, 2: 0.05, 3: 0.3, 4: -0.1}
    out = spread(J, r, free)
    assert out["b"] == SPREAD_FACTOR_MAX and math.isfinite(out["b"])
    # a: sigma = s sqrt((J^T J)^-1_aa) with the two columns, s^2 = sum r^2 / (5 - 2)
    s2 = sum(v * v for v in r.values()) / 3
    sigma = math.sqrt(np.linalg.inv(J.T @ J)[0, 0] * s2)
    assert out["a"] == float(f"{10 ** sigma:.2g}")
