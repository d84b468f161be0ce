"""The typed library API (docs/api.md): its examples run, and type-check under `mypy --strict`;
`astral_dsl.check(path).valid` is `astral check`'s verdict on every example; roll-ups read from
an instance; typed overrides; amounts as Quantities; errors that say why; `py.typed` shipped."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import astral

import astral_dsl
from astral_dsl.seer.calibration import shipped
from astral_dsl.units import Quantity
from astral_dsl.units.quantity import format_number

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.astral"))
_FENCE = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)


def api_script() -> str:
    """docs/api.md's ```python blocks, in order, as one script."""
    blocks = _FENCE.findall((REPO / "docs" / "api.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 6, "docs/api.md lost its examples"
    return "\n".join(blocks)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def script_dir(tmp_path_factory) -> Path:
    """A folder holding the script, with the repository's examples beside it (the examples
    name `examples/...` and write their outputs here)."""
    folder = tmp_path_factory.mktemp("api")
    (folder / "examples").symlink_to(REPO / "examples")
    (folder / "api_examples.py").write_text(api_script(), encoding="utf-8")
    (folder / "mypy.ini").write_text(MYPY_INI, encoding="utf-8")
    return folder


# Dask's, Distributed's and Matplotlib's modules are imported only inside the package's function
# bodies (explore/, outputs/), never in a signature, and those bodies' errors are not reported
# (--follow-imports=silent): following them typed ~1,100 modules more (IPython, Jupyter, Tornado
# and the rest they import) for nothing the checks below read, 14 -> 4.5 s of CPU.
MYPY_INI = "[mypy]\n[mypy-dask.*,distributed.*,matplotlib.*]\nfollow_imports = skip\n"


def _mypy(script_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """`mypy --strict` in `script_dir` on `args`, the package's own modules read for their types,
    their own errors not reported (--follow-imports=silent)."""
    env = _env()
    env["MYPYPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--strict",
                           "--follow-imports=silent", "--cache-dir", str(script_dir / ".mypy"),
                           *args], cwd=script_dir, env=env, capture_output=True, text=True,
                          timeout=900)


def test_docs_api_examples_run(script_dir):
    """The script runs in this process (runpy, as `__main__`, in its folder): the examples'
    code as a user's script runs it, without a new interpreter importing the package and its
    libraries again (about a second of CPU); an example that fails raises here."""
    import contextlib
    import io
    import runpy

    stdout = io.StringIO()
    with contextlib.chdir(script_dir), contextlib.redirect_stdout(stdout):
        runpy.run_path(str(script_dir / "api_examples.py"), run_name="__main__")
    out = stdout.getvalue()
    assert "524288 708.608 MW" in out                        # the totals, converted
    assert "rack 40.8 kW 32" in out                          # a rack's roll-ups
    assert "51 kW" in out                                    # with_params(hosts_per_rack=5)
    assert "Cluster.rows[0].secondary.cdus = 2" in out       # sizing's choice, by field
    assert "cannot be forecast: E750" in out                 # ForecastError's reason
    # the drill's fault, found: `astral synth --seed 5` breaks this port
    assert "suspects nic port Lab.pods[0].rows[0].racks[0].hosts[2].nics[7].port[a|b]" in out
    assert "cannot convert power (kW) to `GB`" in out
    assert (script_dir / "review.html").stat().st_size > 10_000


def test_docs_api_examples_pass_mypy_strict(script_dir):
    """`mypy --strict` on a script using the documented API (the package's own modules are
    read for their types, their own errors not reported: --follow-imports=silent)."""
    pytest.importorskip("mypy", reason="mypy is in the [test] extra")
    proc = _mypy(script_dir, "--no-error-summary", "api_examples.py")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_mypy_sees_the_api_types(script_dir, tmp_path):
    """The types are real, not Any: a wrong use is an error under mypy."""
    pytest.importorskip("mypy", reason="mypy is in the [test] extra")
    bad = tmp_path / "bad.py"
    bad.write_text("import astral_dsl\n"
                   "r = astral_dsl.check('x.astral')\n"
                   "n: str = r.valid\n"
                   "fc = astral_dsl.forecast('x.astral')\n"
                   "t: int = fc.iteration_time\n", encoding="utf-8")
    proc = _mypy(script_dir, str(bad))
    assert proc.returncode == 1, proc.stdout
    assert 'bad.py:3: error: Incompatible types in assignment (expression has type "bool"' \
        in proc.stdout, proc.stdout
    assert 'bad.py:5: error: Incompatible types in assignment (expression has type "Quantity"' \
        in proc.stdout, proc.stdout


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_check_valid_is_the_cli_verdict(path):
    proc = astral("check", path)           # the command's verdict, in this process (clirun)
    assert proc.returncode in (0, 1), proc.stderr
    assert astral_dsl.check(path).valid == (proc.returncode == 0)
    assert astral_dsl.check(str(path)).valid == (proc.returncode == 0)


def test_check_valid_strict_is_the_strict_cli_verdict(tmp_path):
    # a design with warnings only: valid, not under --strict; an allow accepts its warning
    text = "host H { power = 10 kW }\nrack R { hosts = 4 x H }\nsite S { racks = 2 x R }\n"
    path = tmp_path / "w.astral"
    for body, strict_ok in ((text, False),
                            (text.replace("site S {", "site S {\n  allow W627 \"lab\"\n"
                                          "  allow W653 \"lab\"\n").replace(
                                "rack R {", "rack R {\n  allow W626 \"lab\"\n"), True)):
        path.write_text(body, encoding="utf-8")
        assert astral("check", path, cwd=tmp_path).returncode == 0
        proc = astral("check", "--strict", path, cwd=tmp_path)
        checked = astral_dsl.check(path)
        assert checked.valid and checked.valid_strict == strict_ok == (proc.returncode == 0), \
            proc.stdout


@pytest.mark.parametrize("text, code", [
    ("site S { }\njob j { model = Nope }\n", 1),                    # a job that does not resolve
    ("param p = 4 kW\nsite S { }\ncheck p < 1 kW else error \"too much\"\n", 1),
])
def test_check_valid_is_the_cli_verdict_on_bad_designs(tmp_path, text, code):
    """Beyond the examples, designs the front end compiles but `check` rejects: `load().valid`
    may say yes where `check` says no; `check(path).valid` is the command's verdict."""
    path = tmp_path / "bad.astral"
    path.write_text(text, encoding="utf-8")
    proc = astral("check", path, cwd=tmp_path)
    assert proc.returncode == code, proc.stdout
    assert astral_dsl.check(path).valid is False


def test_check_of_an_unreadable_file_is_not_valid(tmp_path):
    proc = astral("check", tmp_path / "missing.astral", cwd=tmp_path)
    assert proc.returncode == 2
    assert astral_dsl.check(tmp_path / "missing.astral").valid is False


def test_check_refuses_what_is_not_a_design():
    with pytest.raises(TypeError, match="a design is a path or a Workspace"):
        astral_dsl.check(42)  # type: ignore[arg-type]


def test_instance_rollups_match_the_language():
    """A rack's power and GPUs from its instance are the values the language's `rack.power`
    and `rack.gpus` give (the reference's rack: 4 HGX hosts of 10.2 kW, 8 GPUs each)."""
    design = astral_dsl.load(REPO / "examples" / "astral.astral")
    rack = design.instance("Astral.pods[0].rows[0].racks[0]")
    assert rack.power.to("kW").magnitude == pytest.approx(40.8)
    assert rack.power.si == pytest.approx(40_800.0)
    assert rack.count("gpus") == 32 and rack.count("hosts") == 4
    assert design.roots[0].count("gpus") == 524_288
    with pytest.raises(ValueError, match="cannot count `widgets`"):
        rack.count("widgets")


def test_with_params_takes_python_values():
    ws = astral_dsl.compile(REPO / "examples" / "astral.astral")
    rack = "Astral.pods[0].rows[0].racks[0]"
    assert ws.with_params(hosts_per_rack=5).design.instance(rack).power.si == \
        pytest.approx(51_000.0)
    # a number takes the unit of the default (kW), a Quantity its own: the same limit
    a = ws.with_params(rack_limit=50).design
    b = ws.with_params(rack_limit=Quantity.of(50_000, "W")).design
    assert dict(a.params)["rack_limit"] == dict(b.params)["rack_limit"]
    assert ws.design.instance(rack).power.si == pytest.approx(40_800.0)    # unchanged
    with pytest.raises(TypeError, match="parameter `hosts_per_rack`: a value is an int"):
        ws.with_params(hosts_per_rack=[5])  # type: ignore[arg-type]
    wrong = ws.with_params(nonesuch=3).design
    assert any(d.code == "E213" for d in wrong.diagnostics)


def test_forecast_amounts_are_quantities():
    fc = astral_dsl.forecast(REPO / "examples" / "single_pod.astral")
    raw = fc.detail
    assert fc.iteration_time.si == pytest.approx(raw.iteration_time)
    assert fc.iteration_time.to("ms").magnitude == pytest.approx(raw.iteration_time * 1e3)
    assert fc.mfu.si == pytest.approx(raw.mfu) and fc.mfu.unit == "%"
    assert fc.memory_per_gpu.si == pytest.approx(8 * raw.memory.total)    # information: bits
    assert fc.memory_per_gpu.to("B").magnitude == pytest.approx(raw.memory.total)
    assert sum(q.si for q in fc.breakdown.values()) == pytest.approx(raw.iteration_time,
                                                                     rel=1e-6)


def test_forecast_says_how_far_to_trust_it(tmp_path):
    """The API's forecast carries its envelope (it had none: the band was only at
    `.detail.envelope()`), that of the job as forecast: a what-if to another precision gets
    that precision's regime and band."""
    fc = astral_dsl.forecast(REPO / "examples" / "single_pod.astral")
    # H100 bf16 Megatron-LM: each part calibrated, never together: outside, with the shipped
    # fit's every-run band (fit-exact.json `bands["*"]`, -0.101/+0.1216) twice as wide
    bands = shipped().bands
    assert fc.envelope == fc.detail.envelope() and not fc.envelope.inside
    assert fc.envelope.band == pytest.approx((2 * bands["*"]["low"], 2 * bands["*"]["high"]),
                                             abs=1e-12)
    assert [d.code for d in fc.diagnostics] == ["W753"]
    fp8 = astral_dsl.forecast(REPO / "examples" / "single_pod.astral", dtype="fp8",
                              fp8_recipe="current")
    # H100/FP8/flash/dense/megatron: 13 runs, its own band (fit.json: -0.0691/+0.0762)
    assert fp8.envelope.inside and fp8.envelope.basis == "H100/FP8/flash/dense/megatron"
    own = bands["H100/FP8/flash/dense/megatron"]
    assert fp8.envelope.band == (own["low"], own["high"])
    assert fp8.envelope.rows == own["rows"] == 13


def test_forecast_error_states_its_reason():
    with pytest.raises(astral_dsl.ForecastError) as info:
        astral_dsl.forecast(REPO / "examples" / "single_pod.astral", tp=3)
    first = next(d for d in info.value.diagnostics if d.is_error)
    assert f"cannot be forecast: {first.code} {first.message}" in str(info.value)


def test_quantity_to_takes_a_unit_name():
    q = Quantity.of(40.8, "kW")
    assert str(q.to("W")) == "40800 W" and q.to("MW").magnitude == pytest.approx(0.0408)
    with pytest.raises(astral_dsl.UnitError, match="cannot convert power"):
        q.to("GB")
    # a unit the table does not know: UnitSpecError, exported beside UnitError (docs/api.md)
    for bad in (lambda: Quantity.of(3, "furlong"), lambda: q.to("blarg")):
        with pytest.raises(astral_dsl.UnitSpecError, match="unknown unit") as info:
            bad()
        assert info.value.code == "E300" and isinstance(info.value, ValueError)


def test_py_typed_ships_in_the_wheel():
    """The marker sits in the package, and the wheel takes the package whole (hatch's
    `packages`, no exclusion of it)."""
    assert (REPO / "astral_dsl" / "py.typed").is_file()
    import tomllib

    conf = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = conf["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["astral_dsl"] and "exclude" not in wheel
    assert any(dep.startswith("mypy") for dep in conf["project"]["optional-dependencies"]["test"])


def test_top_level_exports_what_the_cli_uses():
    for name in ("check", "size", "forecast", "diagnosis", "sweep", "report", "diff",
                 "score_runs", "load", "loads", "compile", "compiles", "Quantity",
                 "ForecastError", "Workspace"):
        assert callable(getattr(astral_dsl, name)), name
    # the packages of the same work keep their names (a function would shadow them)
    from astral_dsl import diagnose, runs
    assert hasattr(diagnose, "diagnose") and hasattr(runs, "__path__")
    assert callable(astral_dsl.diagnosis) and callable(astral_dsl.score_runs)
    # and the API's diff is the function even after the package's diff facts are imported
    import importlib

    api = importlib.import_module("astral_dsl.api")
    importlib.import_module("astral_dsl.api.sides")
    assert callable(api.diff) and astral_dsl.diff is api.diff


def test_size_names_chosen_values_by_field():
    sized = astral_dsl.size(REPO / "examples" / "sizing.astral")
    assert sized.valid and sized.objective is not None
    paths = {c.path: c.value for c in sized.chosen}
    assert paths["Cluster.rows[0].secondary.cdus"] == "2"
    assert all(c.path is None or not re.search(r":\d+:\d+", c.path) for c in sized.chosen)


def test_score_runs_of_an_unreadable_table(tmp_path):
    result = astral_dsl.score_runs(tmp_path / "none.csv")
    assert not result.valid and result.rows == () and result.diagnostics


def test_diff_of_two_workspaces_lists_the_change():
    ws = astral_dsl.compile(REPO / "examples" / "single_pod.astral")
    change = astral_dsl.diff(ws, ws.with_params(hosts_per_rack=2))
    gpus = next(c for c in change.changes if c.key == "gpus")
    assert (gpus.before, gpus.after) == (4096, 2048)
    assert change.json()["changes"]


def test_sweep_takes_a_workspace_and_lists_of_single_values():
    from astral_dsl.explore.sweep import SweepError

    pod = REPO / "examples" / "single_pod.astral"
    # a Workspace of a file sweeps with its overrides: 320 switches x 100 W more at every point
    # (5,619.2 kW with 600 W switches; hosts_per_rack = 4 is the file's own value)
    ws = astral_dsl.compile(pod).with_params(switch_power=700)
    row = astral_dsl.sweep(ws, {"hosts_per_rack": [4]}, workers=1).rows[0]
    assert row["metrics"]["it_power_kw"] == pytest.approx(5619.2 + 320 * 0.1)
    # each listed value is one value: "1..3" in a list is not a range of three points
    with pytest.raises(SweepError, match=r"'1\.\.3' in a list is not one value"):
        astral_dsl.sweep(pod, {"switch_power": ["1..3"]}, workers=1)
    with pytest.raises(SweepError, match="'1,2' in a list is not one value"):
        astral_dsl.sweep(pod, {"switch_power": ["1,2"]}, workers=1)
    # the text of --grid is a range
    rows = astral_dsl.sweep(pod, {"switch_power": "1..3"}, workers=1).rows
    assert [r["params"]["switch_power"] for r in rows] == [      # in the default's unit, W
        astral_dsl.Quantity.of(v, "W") for v in (1, 2, 3)]
    with pytest.raises(TypeError, match="not one of source text"):
        astral_dsl.sweep(astral_dsl.compiles("site S { }"), {"n": [1]})
    with pytest.raises(TypeError, match="grid is a mapping"):
        astral_dsl.sweep(pod, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"grid\['hosts_per_rack'\] is a list of values"):
        astral_dsl.sweep(pod, {"hosts_per_rack": 4})  # type: ignore[dict-item]
    with pytest.raises(SweepError, match="workers must be at least 1, not 0"):
        astral_dsl.sweep(pod, {"hosts_per_rack": [4]}, workers=0)
    with pytest.raises(SweepError, match="workers 100,000: more than 1,024 local worker processes") as err:
        astral_dsl.sweep(pod, {"hosts_per_rack": [4]}, workers=100_000)
    assert err.value.diagnostics[0].code == "E309"


def test_under_takes_a_scenario_or_its_name(tmp_path):
    path = tmp_path / "d.astral"
    path.write_text("rack R { power_limit = 45 kW }\nsite S { racks = 2 x R }\n"
                    "scenario low { set S.racks[1].power_limit = 10 kW }\n")
    ws = astral_dsl.compile(path)
    by_name = ws.under("low")
    by_instance = ws.under(ws.design.scenarios[0])
    for design in (by_name, by_instance):       # exactly the rack it names changes
        assert design.scenario == "low"
        assert str(design.instance("S.racks[1]").field("power_limit")) == "10 kW"
        assert str(design.instance("S.racks[0]").field("power_limit")) == "45 kW"
    with pytest.raises(ValueError, match=r"no scenario `high` \(low\)"):
        ws.under("high")
    with pytest.raises(TypeError, match="not site"):
        ws.under(ws.design.roots[0])


def test_instance_takes_the_path_of_any_replica():
    """docs/api.md reads a rack by its path; `racks[3]` is as much a path as `racks[0]` (it
    returned None: only the canonical path, the first replica's, was looked up)."""
    design = astral_dsl.load(REPO / "examples" / "astral.astral")
    last = design.instance("Astral.pods[7].rows[127].racks[15]")
    assert last is not None and last.kind == "rack"
    assert last.power.to("kW").magnitude == pytest.approx(40.8)     # 4 hosts x 10.2 kW
    assert last.count("gpus") == 32
    gpu = design.instance("Astral.pods[3].rows[5].racks[2].hosts[3].gpus[7]")
    assert gpu is not None and gpu.kind == "gpu" and gpu.power.to("W").magnitude == 700
    for missing in ("Astral.pods[8].rows[0].racks[0]",     # 8 pods: 0 to 7
                    "Astral.pods[3].rows[5].racks",        # a group, not an instance
                    "Astral.pods[*]", "Astral.nothing", ""):
        assert design.instance(missing) is None, missing



@pytest.mark.parametrize("path, kind", [(5, "int"), (None, "NoneType"),
                                        (("Astral",), "tuple")])
def test_instance_of_a_path_that_is_not_a_str_is_a_type_error(path, kind):
    """`design.instance(5)` returned None, as for a path that names nothing: a wrong kind of
    argument is the caller's TypeError naming it (docs/api.md, "Errors")."""
    design = astral_dsl.load(REPO / "examples" / "astral.astral")
    with pytest.raises(TypeError) as info:
        design.instance(path)
    assert str(info.value) == (f"path is an instance's path (a str such as \"S.racks[3]\"), "
                               f"not {kind}")


def test_a_bad_override_points_at_the_parameter_and_says_how_to_quote_text(tmp_path):
    path = tmp_path / "d.astral"
    path.write_text('param label = "x"\nparam n = 2\nsite S { }\n')
    ws = astral_dsl.compile(path)
    bad = next(d for d in ws.with_params(label="abc").design.diagnostics if d.code == "E310")
    # the default it replaces, `"x"` on line 1 (it had no span)
    assert bad.span is not None and (bad.span.start.line, bad.span.start.column) == (1, 15)
    assert bad.hint is not None and "with_params(label='\"abc\"')" in bad.hint
    assert dict(ws.with_params(label='"abc"').design.params)["label"] == "abc"
    other = next(d for d in ws.with_params(n="zz").design.diagnostics if d.code == "E310")
    assert other.span is not None and other.span.start.line == 2 and other.hint


def test_a_workspace_opened_from_python_names_an_override_in_the_apis_words(tmp_path):
    """`Workspace.open` and `Workspace.of_text` called directly said `--set NAME` (the
    command's option, which a Python caller did not give) in an override's diagnostics; they
    say `overrides['NAME']` and `with_params(...)` as the API's functions do, and the command
    still says `--set` (it passes its own words)."""
    from astral_dsl.semantics.overrides import command_line

    path = tmp_path / "d.astral"
    text = 'param label = "x"\nparam n = 2\nparam limit = 45 kW\nsite S { }\n'
    path.write_text(text)
    given = {"label": "4", "nope": "3", "limit": "300 K"}
    for ws in (astral_dsl.Workspace.open(path, given),
               astral_dsl.Workspace.of_text(text, "d.astral", tmp_path, given)):
        said = {(d.code, d.message.split(":")[0], d.hint) for d in ws.design.diagnostics
                if d.is_error}
        assert said == {
            ("E310", "overrides['label']",
             "give a string in double quotes, e.g. `with_params(label='\"x\"')`"),
            ("E213", "overrides['nope']", "parameters: label, n, limit"),
            ("E310", "overrides['limit']",
             "give it in a unit of the default's dimension, e.g. "
             "`with_params(limit='45 kW')`")}, said
    command = astral_dsl.Workspace.open(path, {"nope": "3"}, option=command_line)
    assert [d.message for d in command.design.diagnostics if d.is_error] == [
        "--set nope: the design has no parameter `nope`"]
    proc = astral("check", str(path), "--set", "nope=3")
    assert "--set nope: the design has no parameter `nope`" in proc.stderr + proc.stdout


@pytest.mark.parametrize("given", [1.5e308, 1e308, int(1.5e308), 2 ** 1024 - 2 ** 970 - 1])
def test_a_finite_number_past_1e308_is_a_number_or_too_large_in_si(tmp_path, given):
    """A float between 1e308 and the largest float was "not a finite number" (read as inf
    past 1e308), and so was an int there "too large to represent": it is finite. A plain
    number takes it; in kW it is beyond a float in SI units, said so at the parameter."""
    path = tmp_path / "d.astral"
    path.write_text("param n = 2\nparam p = 3 kW\nsite S { }\n")
    ws = astral_dsl.compile(path)
    plain = ws.with_params(n=given).design
    assert not [d for d in plain.diagnostics if d.is_error]
    assert dict(plain.params)["n"].si == float(given)
    for value in (given, str(float(given)), f"{float(given)} kW"):
        bad = [d for d in ws.with_params(p=value).design.diagnostics if d.is_error]
        assert [(d.code, d.message, d.hint, d.span.start.line) for d in bad] == [
            ("E310", f"overrides['p']: {format_number(float(given))} kW is too large to "
                     f"represent (beyond about 1.8e308 in SI units)",
             "write it in a larger unit or check the number", 2)]
    # past the largest float: an int is said by its size, a float is an infinity
    huge = [d.message for d in ws.with_params(n=2 ** 1024 - 2 ** 970).design.diagnostics]
    assert huge == ["overrides['n']: an int of 1024 bits is too large to represent (beyond "
                    "about 1.8e308)"]


def test_forecast_refuses_a_design_with_errors_as_the_command_does():
    """A misspelt override (E213) was dropped: the forecast of the design as declared came
    back (9.890 s for explore.astral's tp 8), as if `tpp=4` had been applied."""
    path = REPO / "examples" / "explore.astral"
    with pytest.raises(astral_dsl.ForecastError) as info:
        astral_dsl.forecast(path, job="llama70b", overrides={"tpp": 4})
    assert str(info.value) == ("the design has errors: E213 overrides['tpp']: the design has "
                               "no parameter `tpp`")
    assert [d.code for d in info.value.diagnostics if d.is_error] == ["E213"]
    with pytest.raises(astral_dsl.ForecastError, match="E310"):
        astral_dsl.forecast(astral_dsl.compile(path).with_params(tp=Quantity.of(4, "W")))
    # spelt right, it moves the forecast
    four = astral_dsl.forecast(path, job="llama70b", overrides={"tp": 4})
    eight = astral_dsl.forecast(path, job="llama70b")
    assert four.iteration_time.si < eight.iteration_time.si


def test_a_design_and_a_workspace_show_a_summary_in_a_repl():
    # their reprs were every instance (209 kB) and every module's text and tree (161 kB)
    text = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nsite S { hosts = 2 x H }\n"
    ws = astral_dsl.compiles(text, name="two.astral").with_params()
    assert repr(ws) == "Workspace('two.astral', overrides={})"
    # roots: S; distinct instances: S, H, G (the 2 hosts and 16 GPUs share theirs)
    assert repr(ws.design) == ("<Design 'two.astral': valid, 1 root(s), 0 job(s), 0 scenario(s), "
                               f"3 distinct instance(s), 0 error(s), "
                               f"{len(ws.design.diagnostics)} other diagnostic(s)>")
    broken = astral_dsl.loads("site S {", name="broken.astral")
    assert repr(broken).startswith("<Design 'broken.astral': invalid, 0 root(s)")
