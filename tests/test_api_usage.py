"""The library used as a design tool uses it (docs/api.md): same input, same (equal) result;
arguments of the wrong kind are TypeErrors naming them; the errors' messages name what the
caller gave. Each test is a mistake a tool met through the API."""
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.explore.sweep import SweepError
from astral_dsl.seer.calibration import FIT_FILE, shipped
from clirun import astral as _astral_cli

REPO = Path(__file__).resolve().parents[1]
POD = REPO / "examples" / "single_pod.astral"
A100 = REPO / "astral_dsl" / "seer" / "calibration" / "a100.csv"


@pytest.fixture(scope="module")
def ws() -> astral_dsl.Workspace:
    return astral_dsl.compile(POD)


def test_two_forecasts_of_the_same_input_are_equal(ws):
    """`forecast(ws) == forecast(ws)` was False: `detail`, the seer.Forecast, holds its
    Lowering, equal only to itself. The amounts are compared; the result still pickles."""
    a, b = astral_dsl.forecast(ws), astral_dsl.forecast(ws)
    assert a == b
    assert a != astral_dsl.forecast(ws, zero=1)             # another what-if, another time
    assert pickle.loads(pickle.dumps(a)) == a


def test_score_runs_takes_a_calibration_as_the_other_functions_do(tmp_path):
    """`score_runs(table, calibration=shipped())` was a TypeError ("calibration is a path"),
    where forecast, sweep, report, diff and diagnosis take a Calibration or a fit file."""
    lines = A100.read_text(encoding="utf-8").splitlines()
    table = tmp_path / "two.csv"
    table.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    default = astral_dsl.score_runs(table)
    assert len(default.rows) == 2
    by_object = astral_dsl.score_runs(table, calibration=shipped())
    by_file = astral_dsl.score_runs(table, calibration=FIT_FILE)
    assert by_object.errors() == default.errors() == by_file.errors()
    with pytest.raises(TypeError, match="calibration"):
        astral_dsl.score_runs(table, calibration=5)


@pytest.mark.parametrize("call", [
    lambda ws: astral_dsl.check(ws, all_scenarios="no"),
    lambda ws: astral_dsl.check_file(POD, all_scenarios=1),
    lambda ws: astral_dsl.check_file(POD, scenarios=5),
    lambda ws: astral_dsl.check_file(POD, baseline="b.json"),
], ids=["check", "check_file", "check_file scenarios", "check_file baseline"])
def test_check_flags_and_names_are_of_their_kind(ws, call):
    """`all_scenarios="no"` ran every scenario (a str is true); check_file took no look at
    `scenarios` or `baseline` (`scenarios=5`: `'int' object is not iterable` from below)."""
    with pytest.raises(TypeError, match="all_scenarios is a bool|scenarios is a list|"
                                        "baseline is a Baseline"):
        call(ws)


def test_a_grid_value_of_the_wrong_kind_names_its_parameter():
    with pytest.raises(TypeError, match=r"each value of grid\['hosts_per_rack'\] is an int"):
        astral_dsl.sweep(POD, {"hosts_per_rack": [2, None]}, workers=1)
    with pytest.raises(SweepError):        # the grid read before any point (NaN: no number)
        astral_dsl.sweep(POD, {"hosts_per_rack": [float("nan")]}, workers=1)


def test_nan_is_not_a_number_not_too_large(ws):
    """`forecast(micro=float("nan"))` said "`batch.micro` is too large to represent"."""
    with pytest.raises(astral_dsl.ForecastError, match=r"`batch.micro` is not a number \(NaN\)"):
        astral_dsl.forecast(ws, micro=float("nan"))
    with pytest.raises(astral_dsl.ForecastError, match="too large to represent"):
        astral_dsl.forecast(ws, micro=float("inf"))


def test_a_page_that_cannot_be_written_names_the_output(ws, tmp_path):
    """A missing folder said `No such file or directory: '.../nodir/.astral-report-x.tmp'`, a
    file the caller never named; and nothing is left behind."""
    out = tmp_path / "nodir" / "review.html"
    with pytest.raises(FileNotFoundError) as info:
        astral_dsl.report(ws, out)
    assert info.value.filename == str(out)
    with pytest.raises(IsADirectoryError) as info:
        astral_dsl.report(ws, tmp_path)
    assert info.value.filename == str(tmp_path)
    assert os.listdir(tmp_path) == []
    assert not [n for n in os.listdir(tmp_path.parent) if n.startswith(".astral-")]


def test_the_arguments_module_exports_what_it_defines():
    """Its __all__ named `whole`, which it does not define: `import *` raised."""
    from astral_dsl.api import arguments

    assert all(hasattr(arguments, name) for name in arguments.__all__)


@pytest.mark.parametrize("digits", [400, 5000])        # 5000: beyond str()'s 4300 digits
def test_a_quantity_beyond_a_float_is_a_value_error(digits):
    """`Quantity.of(10**400, "kW")` raised OverflowError from float() inside the library."""
    with pytest.raises(ValueError, match="too large to represent"):
        astral_dsl.Quantity.of(10**digits, "kW")
    assert astral_dsl.Quantity.of(2**70, "B").si == 2.0**70 * 8        # bits, exactly


def test_the_documented_errors_and_results_are_top_level_names():
    """`except astral_dsl.SweepError` was an AttributeError (only `astral_dsl.explore.sweep`
    had it); each name is its module's class, and `dir()` lists the API."""
    from astral_dsl.diagnose import DiagnoseError
    from astral_dsl.diagnose.model import Diagnosis
    from astral_dsl.explore.sweep import SweepError, SweepResult
    from astral_dsl.outputs.report import ReviewError

    for cls in (DiagnoseError, Diagnosis, SweepError, SweepResult, ReviewError):
        assert getattr(astral_dsl, cls.__name__) is cls
        assert cls.__name__ in astral_dsl.__all__ and cls.__name__ in dir(astral_dsl)
    with pytest.raises(astral_dsl.SweepError):
        astral_dsl.sweep(POD, {"nonesuch": [1]}, workers=1)


def test_an_unreadable_fit_or_operator_table_is_a_value_error_naming_it(ws, tmp_path):
    """As docs/api.md says: the path, and why (here: it does not exist, or is a folder)."""
    missing = tmp_path / "none.json"
    with pytest.raises(ValueError, match=f"{missing}: cannot read a calibration fit"):
        astral_dsl.forecast(ws, calibration=missing)
    with pytest.raises(ValueError, match=f"{tmp_path}: cannot read a calibration fit"):
        astral_dsl.score_runs(A100, calibration=tmp_path)
    with pytest.raises(ValueError, match=f"{tmp_path / 'none.csv'}: No such file"):
        astral_dsl.forecast(ws, operator_table=tmp_path / "none.csv")


def test_a_sweep_of_a_file_that_cannot_be_read_raises_with_its_error(tmp_path):
    # it returned a result of no rows, the cause only in `base.diagnostics`
    for path, said in ((tmp_path / "missing.astral", "No such file"), (tmp_path, "directory")):
        with pytest.raises(astral_dsl.SweepError, match=said) as caught:
            astral_dsl.sweep(path, {"hosts_per_rack": [2]})
        assert [d.code for d in caught.value.diagnostics] == ["E100"]
    bad = tmp_path / "bad.astral"
    bad.write_text("site S { racks = }\n", encoding="utf-8")
    with pytest.raises(astral_dsl.SweepError) as caught:
        astral_dsl.sweep(bad, {"hosts_per_rack": [2]})
    assert caught.value.diagnostics and caught.value.diagnostics[0].code.startswith("E1")


def test_what_a_frozen_result_holds_cannot_be_changed(ws):
    """`fc.breakdown` was a dict inside the frozen ForecastResult (`fc.breakdown["compute"] =
    ...` changed the result, and the `==` of two forecasts with it), and `SweepResult.rows` a
    list. The breakdown is a read-only mapping, equal to the dict of its items as before, in
    the same order, that pickles; the rows are a tuple."""
    fc = astral_dsl.forecast(ws)
    parts = dict(fc.breakdown)
    assert fc.breakdown == parts and parts == fc.breakdown and list(fc.breakdown) == list(parts)
    assert list(parts)[:3] == ["compute", "tp_comm", "cp_comm"]
    with pytest.raises(TypeError):
        fc.breakdown["compute"] = astral_dsl.Quantity.of(0, "s")  # type: ignore[index]
    for change in ("pop", "update", "clear", "setdefault"):
        assert not hasattr(fc.breakdown, change)
    with pytest.raises(AttributeError):
        fc.breakdown._items = {}                  # type: ignore[attr-defined]
    again = pickle.loads(pickle.dumps(fc))
    assert again == fc and again.breakdown == parts and list(again.breakdown) == list(parts)
    assert hash(again.breakdown) == hash(fc.breakdown)
    assert fc.breakdown != dict(parts, compute=astral_dsl.Quantity.of(0, "s"))
    rows = astral_dsl.sweep(ws, {"hosts_per_rack": [2, 4]}, workers=1).rows
    assert isinstance(rows, tuple) and [r["params"] for r in rows] == [
        {"hosts_per_rack": 2}, {"hosts_per_rack": 4}]


def test_a_grid_name_set_too_is_said_in_the_apis_words(ws):
    """`sweep(ws.with_params(hosts_per_rack=4), {"hosts_per_rack": [...]})` said "given both by
    --grid and by --set", options the caller never wrote; `astral sweep` keeps its words."""
    grid = {"hosts_per_rack": [2, 4]}
    with pytest.raises(SweepError) as caught:
        astral_dsl.sweep(ws.with_params(hosts_per_rack=4), grid, workers=1)
    first = caught.value
    (d,) = first.diagnostics
    assert d.code == "E802" and str(caught.value) == d.message == (
        "grid['hosts_per_rack'] sweeps a parameter that the Workspace (its with_params, or "
        "compile's overrides) sets too; a swept parameter takes its values from grid alone")
    assert d.hint.startswith("sweep a Workspace that does not set `hosts_per_rack`")
    with pytest.raises(SweepError, match=r"that overrides\['hosts_per_rack'\] sets too") as caught:
        astral_dsl.sweep(ws, grid, overrides={"hosts_per_rack": 4}, workers=1)
    assert caught.value.diagnostics[0].hint == ("give `hosts_per_rack` in grid or in overrides, "
                                                "not both")
    for refused in (first, caught.value):
        said = str(refused) + refused.diagnostics[0].hint
        assert "--grid" not in said and "--set" not in said
    from clirun import astral as cli

    proc = cli("sweep", str(POD), "--grid", "hosts_per_rack=2,4", "--set", "hosts_per_rack=4")
    assert proc.returncode == 2
    assert "hosts_per_rack is given both by --grid and by --set; a swept parameter takes its " \
        "values from --grid alone" in proc.stdout + proc.stderr



def test_a_forecast_says_whether_it_may_not_fit_as_the_command_does(tmp_path, capsys):
    """`astral forecast` says "may not fit" (its JSON `may_not_fit`) when the memory estimate
    plus its uncertainty exceeds the GPU's memory; the API's result held the estimate alone
    (`memory_per_gpu`), so a tool had to dig into `detail` to learn what the command says. At
    8,192 tokens this job's estimate (81.1 GB) fits the H100's 85.9 GB, its +/- 6 GB not."""
    import json

    from astral_dsl.cli import main

    design = tmp_path / "tight.astral"
    from jobtext import TIGHT

    design.write_text(TIGHT, encoding="utf-8")
    ws = astral_dsl.compile(design)
    for seq, expected in ((4096, False), (8192, True)):
        fc = astral_dsl.forecast(ws.with_params(seq=seq), job="tight")
        assert fc.may_not_fit is expected
        assert "W750" not in [d.code for d in fc.diagnostics]    # the estimate alone fits
        assert main(["forecast", str(design), "--set", f"seq={seq}", "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["may_not_fit"] is expected


TYPED = """
param on = true
param label = "a"
param n = 4
param ratio = 0.5
param limit = 45 kW
param supply = 40 degC
host H { power = 10 kW }
rack R { hosts = n x H }
site S { racks = 2 x R }
"""


def test_a_sweep_row_s_params_are_typed_as_with_params_takes_them(tmp_path):
    """The rows' params were the grid's texts ("4", "45 kW", "true", '"b"'): the Python API
    gives what `with_params` takes (ints and floats, Quantities, bools, strs), a bare number of
    a parameter with a unit in that unit, as `--set` reads it; `astral sweep`'s JSON is
    unchanged (a quantity stays its text there: JSON has none)."""
    path = tmp_path / "typed.astral"
    path.write_text(TYPED, encoding="utf-8")
    grid = {"on": "true,false", "label": ['"b"'], "n": [2], "ratio": [0.25],
            "limit": ["50kW", 60], "supply": "35degC..36degC:1K"}
    rows = astral_dsl.sweep(path, grid, workers=1).rows
    first = rows[0]["params"]
    assert first == {"on": True, "label": "b", "n": 2, "ratio": 0.25,
                     "limit": astral_dsl.Quantity.of(50, "kW"),
                     "supply": astral_dsl.Quantity.of(35, "degC")}
    assert [type(v) for v in first.values()] == [bool, str, int, float, astral_dsl.Quantity,
                                                astral_dsl.Quantity]
    assert str(first["limit"]) == "50 kW" and str(first["supply"]) == "35 degC"
    assert [r["params"]["limit"] for r in rows[:4]] == [
        astral_dsl.Quantity.of(v, "kW") for v in (50, 50, 60, 60)]
    assert {r["params"]["on"] for r in rows} == {True, False} and all(r["valid"] for r in rows)
    # a row's params are what the point compiled with: given back, the same design
    again = astral_dsl.compile(path).with_params(**rows[-1]["params"])
    assert dict(again.design.params)["limit"] == astral_dsl.Quantity.of(60, "kW")
    # the command line's JSON is as it was: a quantity's text, a bare number a number
    proc = _astral_cli("sweep", str(path), "--grid", "limit=50kW,60", "--grid", "n=2",
                "--format", "jsonl", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(d["limit"], d["n"]) for d in lines] == [("50 kW", 2), (60, 2)]


def test_an_override_is_named_in_the_callers_words(tmp_path):
    """`load(path, overrides=...)`, `with_params(...)` and the commands' functions said
    `--set NAME: ...`, an option the caller never gave: they name `overrides['NAME']` and give
    with_params as the example, as the search names `gpus` where the command says `--gpus`; the
    command still says `--set`."""
    path = tmp_path / "d.astral"
    text = "param n = 4\nparam p = 45 kW\nsite S { }\n"
    path.write_text(text)
    bad = {"nope": 1, "p": "5 kg"}
    said = [("E213", "overrides['nope']: the design has no parameter `nope`",
             "parameters: n, p"),
            ("E310", "overrides['p']: expected a power (kW) like the default `45 kW`, got `5 kg`",
             "give it in a unit of the default's dimension, e.g. `with_params(p='45 kW')`")]

    def errors(diagnostics):
        return [(d.code, d.message, d.hint) for d in diagnostics if d.is_error]

    with pytest.raises(astral_dsl.SearchError) as search:
        astral_dsl.search(path, overrides=bad, workers=1)
    swept = astral_dsl.sweep(path, {"n": [2]}, overrides=bad, workers=1)
    ws = astral_dsl.compile(path)
    for where, found in (("load", astral_dsl.load(path, overrides=bad).diagnostics),
                         ("loads", astral_dsl.loads(text, overrides=bad).diagnostics),
                         ("with_params", ws.with_params(**bad).design.diagnostics),
                         ("compile", ws.compile(overrides=bad).diagnostics),
                         ("check", astral_dsl.check(path, overrides=bad).diagnostics),
                         ("margins", astral_dsl.margins(path, overrides=bad).diagnostics),
                         ("search", search.value.diagnostics),
                         ("sweep", swept.base.diagnostics)):
        assert errors(found) == said, where
    assert [(d["code"], d["message"], d["hint"]) for d in swept.rows[0]["diagnostics"]] == said
    cli = _astral_cli("check", path, "--set", "nope=1", "--set", "p=5 kg")
    assert cli.returncode == 1
    assert "error[E213]: --set nope: the design has no parameter `nope`\n" in cli.stdout
    assert "error[E310]: --set p: expected a power (kW) like the default `45 kW`, got `5 kg`\n" \
           in cli.stdout
    assert "= hint: give it in a unit of the default's dimension, e.g. `--set 'p=45 kW'`\n" \
           in cli.stdout
