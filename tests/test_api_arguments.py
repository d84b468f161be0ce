"""The library API's arguments (docs/api.md, "Errors"): one of the wrong kind raises TypeError
naming the argument and what it takes, never an AttributeError or a TypeError from deep below
(`'int' object has no attribute 'lower'`); a str where names or paths are listed is one name or
one path, never its characters."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.diagnose import DiagnoseError
from astral_dsl.outputs.report import ReviewError

REPO = Path(__file__).resolve().parents[1]
POD = REPO / "examples" / "single_pod.astral"


@pytest.fixture(scope="module")
def ws() -> astral_dsl.Workspace:
    return astral_dsl.compile(POD)


def test_one_observed_path_is_one_path(ws, tmp_path, monkeypatch):
    """`observed="run7.csv"` was read as the paths r, u, n, 7, ".", c, s, v: "." the whole
    current folder. Now it is that one file (missing here: its E780 names it, and only it)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("not a trace\n", encoding="utf-8")
    with pytest.raises(DiagnoseError) as info:
        astral_dsl.diagnosis(ws, "run7.csv")
    files = {d.file for d in info.value.diagnostics}
    assert files == {"run7.csv"}, info.value.diagnostics
    assert [d.code for d in info.value.diagnostics] == ["E780"]


def test_one_job_or_scenario_name_is_one_name(ws, tmp_path):
    """`jobs="nonesuch"` said `--job n: no such job`; `scenarios="tor_plane_a_rail_3"` gave
    E216 for each of its letters, and ran no scenario. (The job is named as the API takes it,
    not by the command's `--job`, and as an item of `jobs`.)"""
    with pytest.raises(ReviewError, match=r"^jobs=\['nonesuch'\]: no such job"):
        astral_dsl.report(ws, tmp_path / "r.html", jobs="nonesuch")
    checked = astral_dsl.check(ws, scenarios="tor_plane_a_rail_3")
    assert not any(d.code == "E216" for d in checked.diagnostics)
    assert [o.name for o in checked.scenarios] == ["tor_plane_a_rail_3"]


def test_an_unknown_job_or_scenario_is_named_as_the_api_takes_it(ws, tmp_path):
    """Each function of the API said an unknown job or scenario in the command's words,
    `--job nope: no such job`, `--scenario nope: ...`: a Python caller gave no `--job`. Now the
    argument, `job='nope'`, as an override is `overrides['NAME']` (the code is the command's)."""
    from astral_dsl.explore.search import SearchError

    calls = [lambda: astral_dsl.forecast(ws, job="nope"),
             lambda: astral_dsl.forecast(ws, scenario="nope"),
             lambda: astral_dsl.report(ws, tmp_path / "r.html", scenario="nope"),
             lambda: astral_dsl.sweep(POD, {"hosts_per_rack": [2]}, scenario="nope"),
             lambda: astral_dsl.search(POD, job="nope", workers=1)]
    said = []
    for call in calls:
        with pytest.raises((astral_dsl.ForecastError, ReviewError, SearchError,
                            astral_dsl.SweepError)) as info:
            call()
        said += [(d.code, d.message) for d in info.value.diagnostics if d.code[0] == "E"]
    said += [(d.code, d.message) for d in astral_dsl.check(ws, scenarios="nope").diagnostics
             if d.code == "E216"]
    job, scenario = ("E221", "job='nope': no such job"), ("E216", "scenario='nope': no such scenario")
    assert said == [job, scenario, scenario, scenario, job, ("E216", "scenarios=['nope']: no such "
                                                                   "scenario")]


def test_an_unknown_name_in_a_list_is_named_by_the_list_argument(ws, tmp_path):
    """`report(jobs=[...])`, `check(scenarios=[...])` and `check_file(scenarios=[...])` said an
    unknown name in the words of the singular argument, `job='x'`, `scenario='x'`: arguments
    those calls do not have. Now the argument given, `jobs=['x']`, `scenarios=['x']` (each
    unknown name its own diagnostic); a scenario of `report` is still `scenario='x'`, and the
    command line's words are unchanged (`--job x`, `--scenario x`)."""
    from astral_dsl.api.review import collect
    from astral_dsl.pipeline import check
    from astral_dsl.semantics.overrides import command_line

    with pytest.raises(ReviewError) as info:
        astral_dsl.report(ws, tmp_path / "r.html", jobs=["x"])
    assert [d.message for d in info.value.diagnostics] == ["jobs=['x']: no such job"]
    assert str(info.value).startswith("jobs=['x']: no such job (")
    with pytest.raises(ReviewError, match=r"^scenario='x': no such scenario"):
        astral_dsl.report(ws, tmp_path / "r.html", jobs=[], scenario="x")
    for checked in (astral_dsl.check(ws, scenarios=["tor_plane_a_rail_3", "x", "y"]),
                    astral_dsl.check_file(POD, scenarios=("x", "y"))):
        assert [d.message for d in checked.diagnostics if d.code == "E216"] == \
            ["scenarios=['x']: no such scenario", "scenarios=['y']: no such scenario"]
    cli = astral_dsl.Workspace.open(POD, option=command_line)        # as the command opens it
    with pytest.raises(ReviewError, match="^--job x: no such job"):
        collect(cli, jobs=["x"])
    assert [d.message for d in check(cli, scenarios=["x"]).diagnostics if d.code == "E216"] == \
        ["--scenario x: no such scenario"]


def test_the_option_of_the_caller_names_a_job_or_scenario():
    """The one mechanism that names an override in the caller's words (semantics/overrides.py)
    names a job or scenario too: the command's flag, the API's argument, `astral diff`'s sides
    (`--set-a` is for overrides only)."""
    from astral_dsl.pipeline_scenarios import unknown_scenarios
    from astral_dsl.semantics.overrides import command_line, from_python, sided
    from astral_dsl.seer import unknown_job

    design = astral_dsl.compile(POD).design
    assert unknown_job(design, "x").message == "--job x: no such job"
    assert unknown_job(design, "x", from_python).message == "job='x': no such job"
    assert unknown_job(design, "x", sided(["x"], "--set-a")).message == "--job x: no such job"
    assert [d.message for d in unknown_scenarios(design, {"x"}, from_python)] == \
        ["scenario='x': no such scenario"]
    assert [d.message for d in unknown_scenarios(design, {"x"}, command_line)] == \
        ["--scenario x: no such scenario"]
    assert sided(["x"], "--set-a")("x") == "--set-a x"      # as before


WRONG_KINDS = [
    ("job is a name", lambda ws: astral_dsl.forecast(ws, job=5)),
    ("scenario is a name", lambda ws: astral_dsl.forecast(ws, scenario=["x"])),
    ("job is a name", lambda ws: astral_dsl.sweep(POD, {"hosts_per_rack": [2]}, job=5)),
    ("workers is a whole number", lambda ws: astral_dsl.sweep(POD, {"hosts_per_rack": [2]},
                                                              workers="2")),
    ("workers is a whole number", lambda ws: astral_dsl.sweep(POD, {"hosts_per_rack": [2]},
                                                              workers=1.5)),
    ("baseline is a Baseline", lambda ws: astral_dsl.check(ws, baseline="b.json")),
    ("design is a Design", lambda ws: astral_dsl.check(ws, design=5)),
    ("overrides is a mapping", lambda ws: astral_dsl.check(ws, overrides=5)),
    ("design is a Design", lambda ws: astral_dsl.summary(None)),
    # (an AttributeError: 'int' object has no attribute 'diagnostics')
    ("design is a Design", lambda ws: astral_dsl.front_end_errors(5)),
    ("observed is a list of paths", lambda ws: astral_dsl.diagnosis(ws, None)),
    ("each of observed is a path", lambda ws: astral_dsl.diagnosis(ws, [3])),
    ("timers is a name", lambda ws: astral_dsl.diagnosis(ws, ["t.csv"], timers=1)),
    ("output is a path", lambda ws: astral_dsl.report(ws, None)),
    ("jobs is a list of names", lambda ws: astral_dsl.report(ws, "r.html", jobs=5)),
    ("table is a path", lambda ws: astral_dsl.score_runs(None)),
    ("calibration is a Calibration", lambda ws: astral_dsl.forecast(ws, calibration=5)),
    ("calibration \\(a Calibration or a fit file\\) is a path",
     lambda ws: astral_dsl.diff(ws, ws, calibration=5)),
    ("the root of a design's imports", lambda ws: astral_dsl.loads("site S { }", root=5)),
    # a value of overrides= as with_params takes one (it was E310 "a list is not a value")
    ("parameter `hosts_per_rack`: a value is an int, float, bool, str or Quantity, not list",
     lambda ws: astral_dsl.check(POD, overrides={"hosts_per_rack": [1]})),
    ("parameter `hosts_per_rack`: a value is an int, float, bool, str or Quantity, not NoneType",
     lambda ws: astral_dsl.compile(POD, overrides={"hosts_per_rack": None})),
    ("parameter `n`: a value is an int, float, bool, str or Quantity, not object",
     lambda ws: astral_dsl.loads("param n = 1", overrides={"n": object()})),
]


@pytest.mark.parametrize("message, call", WRONG_KINDS, ids=[str(i) for i in
                                                             range(len(WRONG_KINDS))])
def test_an_argument_of_the_wrong_kind_is_a_type_error_that_names_it(ws, message, call):
    with pytest.raises(TypeError, match=message):
        call(ws)


def test_a_what_if_that_names_no_job_field_is_e203(ws):
    """`forecast(path, mciro=2)` raised ForecastError with no diagnostic (no code for a tool to
    read): now E203, as a job that sets such a field, its hint the closest field."""
    with pytest.raises(astral_dsl.ForecastError, match="E203 `mciro` is not a job field") as info:
        astral_dsl.forecast(ws, mciro=2)
    [diag] = info.value.diagnostics
    assert (diag.code, diag.hint) == ("E203", "did you mean `micro`?")


def test_a_job_field_that_is_no_what_if_says_so(ws):
    """`forecast(path, gpus=512, dp=128)`: `gpus` is a job field (the job's placement), not a
    forecast option; E203 had said "`gpus` is not a job field"."""
    with pytest.raises(astral_dsl.ForecastError) as info:
        astral_dsl.forecast(ws, gpus=512, dp=128)
    [diag] = info.value.diagnostics
    assert diag.code == "E203" and diag.message == (
        "`gpus` is a job field but not a forecast option: state it in the design (a job of its "
        "own for the what-if)")
    assert diag.hint.startswith("forecast options: ") and "dp" in diag.hint


def test_a_design_of_another_file_is_refused(ws):
    """check/forecast(ws, design=) take a design of the workspace: one of another file was
    checked against this workspace's source (forecast under a scenario: a bare StopIteration
    from pipeline.scenario_twin). A design of the same file is its own."""
    other = astral_dsl.compile(REPO / "examples" / "tutorial_rack.astral").design
    for call in (lambda: astral_dsl.check(ws, design=other),
                 lambda: astral_dsl.forecast(ws, design=other, scenario="tor_plane_a_rail_3")):
        with pytest.raises(ValueError, match=r"design is a design of `\S*tutorial_rack.astral`"):
            call()
    assert astral_dsl.check(ws, design=astral_dsl.compile(POD).design).valid


# an int beyond a float: 10**400 (float() raises OverflowError) and 10**5000 (repr() and str()
# raise ValueError past 4,300 digits) reached the caller as those exceptions, from inside the
# library, where a number too large to represent is the language's error
@pytest.mark.parametrize("big, magnitude", [(10 ** 400, "1e400"), (-10 ** 5000, "-1e5000")],
                         ids=["10**400", "-10**5000"])
def test_an_int_beyond_a_float_is_the_error_of_a_number_too_large(ws, big, magnitude):
    params = astral_dsl.check(ws.with_params(hosts_per_rack=big))
    (e310,) = [d for d in params.diagnostics if d.is_error]
    assert e310.code == "E310" and e310.span is not None and e310.span.start.line == 15
    assert e310.message == (f"overrides['hosts_per_rack']: an int of {big.bit_length()} bits "
                            f"is too large to represent (beyond about 1.8e308)")
    with pytest.raises(astral_dsl.ForecastError) as forecast:
        astral_dsl.forecast(ws, micro=big)
    assert [(d.code, d.message) for d in forecast.value.diagnostics] == [
        ("E309", "`batch.micro` is too large to represent")]
    with pytest.raises(astral_dsl.SweepError) as grid:
        astral_dsl.sweep(ws, {"hosts_per_rack": [big]}, workers=1)
    assert str(grid.value).startswith(f"--grid hosts_per_rack={magnitude}: value `{magnitude}` "
                                      f"is beyond the range of a number")
    with pytest.raises(astral_dsl.SearchError) as search:
        astral_dsl.search(POD, overrides={"hosts_per_rack": big})
    assert [d.code for d in search.value.diagnostics if d.is_error] == ["E310"]


def test_an_empty_path_names_no_file_not_the_working_directory():
    """check("") read Path(""), which is `.`: "cannot read `.`: Is a directory", a folder the
    caller never named (`astral check ""` the same)."""
    from clirun import astral

    for result in (astral_dsl.check(""), astral_dsl.margins("")):
        (d,) = result.diagnostics
        assert (d.code, d.message, d.span, d.hint, d.file) == (
            "E100", "cannot read ``: the path is empty: it names no file", None,
            "name a .astral file", "")
    cli = astral("check", "")              # in this process (tests/clirun.py)
    assert cli.returncode == 2 and cli.stdout.startswith(
        "error[E100]: cannot read ``: the path is empty: it names no file\n"
        "  = hint: name a .astral file\n"), cli.stdout


def test_a_report_to_an_empty_path_is_a_value_error(ws, tmp_path, monkeypatch):
    """report(ws, "") wrote to Path(""), which is `.`: IsADirectoryError naming `.`."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="^output: the path is empty: it names no file$"):
        astral_dsl.report(ws, "")
    assert list(tmp_path.iterdir()) == []


NUL = "the path holds a NUL character, which no file's path can"


def test_a_path_with_a_nul_is_the_diagnostic_of_a_file_that_cannot_be_read(ws, tmp_path):
    """No file's path holds a NUL: the operating system's calls refuse one with ValueError
    ("embedded null byte"), which came out of load, compile, check, size, margins, diff,
    score_runs and report as a traceback from posixpath (and diagnosis said "no such file or
    directory"). Now each says it where it says why a file cannot be read: E100 (a design),
    E766 (a runs table), E780 (observed data), OSError naming the output (report)."""
    bad = str(tmp_path / "a\0b.astral")
    for result in (astral_dsl.load(bad), astral_dsl.check(bad).design, astral_dsl.margins(bad),
                   astral_dsl.size(bad).checked.design):
        (d,) = result.diagnostics
        assert (d.code, d.message) == ("E100", f"cannot read `{bad}`: {NUL}"), d
    assert astral_dsl.diff(bad, POD).a.errors == 1
    (d,) = astral_dsl.score_runs(bad).diagnostics
    assert d.code == "E766" and NUL in d.message, d
    with pytest.raises(DiagnoseError) as info:
        astral_dsl.diagnosis(ws, bad)
    assert [(d.code, d.message) for d in info.value.diagnostics] == [("E780", NUL)]
    with pytest.raises(OSError, match=NUL) as written:
        astral_dsl.report(ws, bad)
    assert written.value.filename == bad
    assert list(tmp_path.iterdir()) == []
