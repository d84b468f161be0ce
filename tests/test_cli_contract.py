"""The command line as a contract for CI systems and scripts (docs/language.md, section 19.4):
the same exit code means the same thing on every command (3 only an internal error, E000),
an unknown `--scenario` is E216 everywhere, `--format json` is one enveloped document on every
command that takes it, and a Ctrl-C exits 130 without a traceback from the program's first
line on."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import astral

REPO = Path(__file__).resolve().parents[1]
RACK = "examples/tutorial_rack.astral"
BROKEN = """
param servers = 2
gpu G { power = 700 W }
host H { gpus = 8 x G }
site S { hosts = servers x H, foo = 3 kW + 2 Gb/s }
"""


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("contract") / "broken.astral"
    path.write_text(BROKEN, encoding="utf-8")
    return path


# ---- exit codes --------------------------------------------------------------------------------
def test_diagnose_design_errors_and_internal_errors_exit_apart(broken, monkeypatch, tmp_path):
    # a design with errors is no diagnosis (2, verdict design-errors); 3 is only a bug (E000)
    log = tmp_path / "ranks.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s\n", encoding="utf-8")
    p = astral("diagnose", broken, "--observed", log, "--format", "json")
    doc = json.loads(p.stdout)
    assert (p.returncode, doc["verdict"], doc["exit_code"]) == (2, "design-errors", 2)
    assert "E301" in [d["code"] for d in doc["diagnostics"]]

    from astral_dsl import observe

    def bug(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(observe, "load", bug)
    p = astral("diagnose", RACK, "--observed", log, "--format", "json")
    assert p.returncode == 3 and p.stderr.startswith("error[E000]: internal compiler error")


# ---- an unknown --scenario ---------------------------------------------------------------------
@pytest.mark.parametrize("command, extra", [
    ("check", []), ("size", []), ("forecast", []),
    ("sweep", ["--grid", "hosts_per_rack=3..4", "--workers", "1"]),
])
def test_an_unknown_scenario_is_e216_exit_1_in_the_envelope(command, extra):
    # sweep said it as a usage error (exit 2, nothing on stdout) where check, size and
    # forecast gave E216 in their envelope, exit 1
    p = astral(command, "examples/single_pod.astral", "--scenario", "tor_plane_a_rail3",
               "--format", "json", *extra)
    doc = json.loads(p.stdout)
    assert (p.returncode, doc["valid"], doc["file"]) == (1, False, "examples/single_pod.astral")
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "E216"]
    assert d["message"] == "--scenario tor_plane_a_rail3: no such scenario"
    assert d["hint"] == "did you mean `tor_plane_a_rail_3`?"


def test_an_unknown_scenario_in_report_and_sweep_text_is_e216(tmp_path):
    # report writes HTML, its diagnostics go to standard error; it wrote no page, exit 2 before
    page = tmp_path / "review.html"
    p = astral("report", "examples/single_pod.astral", "-o", page, "--scenario", "nope")
    assert p.returncode == 1 and not page.exists()
    assert p.stderr.startswith("error[E216]: --scenario nope: no such scenario\n")
    assert "= hint: scenarios: tor_plane_a_rail_3" in p.stderr
    p = astral("sweep", "examples/single_pod.astral", "--grid", "hosts_per_rack=3..4",
               "--scenario", "nope", "--workers", "1")
    assert p.returncode == 1 and p.stdout.startswith("error[E216]: --scenario nope")


# ---- Ctrl-C from the program's first line --------------------------------------------------------
# The console script as pip writes it (pyproject.toml [project.scripts] names MODULE:FUNCTION),
# with a Ctrl-C sent at a chosen moment: as the import of a module starts (an import hook), or
# as the program exits (an exit handler). A real Ctrl-C lands anywhere in these ~0.3 s; the hook
# lands it exactly where a Python traceback used to be printed (the command line's modules
# imported before any handler of the program was in place; the exit, after cli.main had put
# Python's own handler back).
_INTERRUPTED = """
import atexit, os, re, signal, sys
when = {when!r}
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == when:
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt())
if when == "exit":
    atexit.register(os.kill, os.getpid(), signal.SIGINT)
sys.argv = ["astral", "check", "examples/tutorial_rack.astral"]
from {module} import {function}
sys.exit({function}())
"""


def _console_script():
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["scripts"]["astral"].split(":")


@pytest.mark.parametrize("when", ["astral_dsl.cli", "astral_dsl.cli.check", "exit"])
def test_ctrl_c_anywhere_in_the_program_exits_130_without_a_traceback(when):
    import subprocess
    import sys

    module, function = _console_script()
    p = subprocess.run([sys.executable, "-c", _INTERRUPTED.format(when=when, module=module,
                                                                   function=function)],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stderr) == (130, ""), p.stderr[-1500:]


# ---- --format json: one document, in the envelope, whatever the input -------------------------
ENVELOPE = ["version", "format", "valid", "diagnostics", "file"]


@pytest.mark.parametrize("command, extra", [
    ("check", []), ("size", []), ("export", []), ("forecast", []), ("diff", [REPO / RACK]),
    ("sweep", ["--grid", "servers=3..4", "--workers", "1"]), ("search", ["--workers", "1"]),
    ("synth", ["-o", "ranks.csv"]), ("diagnose", ["--observed", "ranks.csv"]),
])
def test_json_is_one_enveloped_document_for_a_design_with_errors(command, extra, broken):
    p = astral(command, broken, *extra, "--format", "json", cwd=broken.parent)
    doc = json.loads(p.stdout)              # the whole of standard output: one document
    # (diff names its two sides `a` and `b` instead of `file`; export had no `file`)
    assert list(doc)[:5] == ENVELOPE[:4] + (["a"] if command == "diff" else ["file"]), p.stdout
    # a sweep's points are rows, each with its own diagnostics
    found = [d for r in doc["rows"] for d in r["diagnostics"]] if command == "sweep" \
        else doc["diagnostics"]
    assert "E301" in [d["code"] for d in found] and doc["valid"] is False
    assert p.returncode in (1, 2) and p.stderr == ""


def test_sweep_json_is_one_document_with_the_rows_and_jsonl_the_rows_alone():
    # 4 servers x 10.2 kW = 40.8 kW, under the 45 kW busway; 5 x 10.2 = 51 kW, over it (E500)
    args = ["sweep", RACK, "--grid", "servers=4,5", "--workers", "1"]
    p = astral(*args, "--format", "json")
    doc = json.loads(p.stdout)
    assert list(doc)[:5] == ENVELOPE and (p.returncode, doc["valid"]) == (1, False)
    assert doc["grid"] == [{"name": "servers", "values": [4, 5]}]
    assert [(r["servers"], r["it_power_kw"], r["valid"]) for r in doc["rows"]] == [
        (4, 40.8, True), (5, 51.0, False)]
    assert "E500" in doc["rows"][1]["errors"]
    lines = astral(*args, "--format", "jsonl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == doc["rows"]


# ---- an unknown --job ----------------------------------------------------------------------------
POD = "examples/single_pod.astral"


@pytest.fixture(scope="module")
def observed(tmp_path_factory) -> Path:
    log = tmp_path_factory.mktemp("observed") / "ranks.csv"
    log.write_text("rank,iteration,phase,start_s,duration_s\n", encoding="utf-8")
    return log


@pytest.mark.parametrize("command, extra, code", [
    ("forecast", [], 1), ("search", ["--workers", "1"], 1),
    ("sweep", ["--grid", "hosts_per_rack=3..4", "--workers", "1"], 1),
    ("synth", ["-o", "never.csv"], 1),
    # diagnose's 1 says suspects were found: no diagnosis is its 2, verdict `unusable`
    ("diagnose", ["--observed", "OBSERVED"], 2),
])
def test_an_unknown_job_is_e221_in_the_envelope(command, extra, code, observed, tmp_path):
    # each said it as a usage error: exit 2, nothing on standard output
    extra = [str(observed) if x == "OBSERVED" else x for x in extra]
    p = astral(command, REPO / POD, "--job", "llama7b", *extra, "--format", "json", cwd=tmp_path)
    doc = json.loads(p.stdout)
    assert (p.returncode, doc["valid"], doc["file"]) == (code, False, str(REPO / POD)), p.stderr
    assert list(doc)[:5] == ENVELOPE and p.stderr == ""
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "E221"]
    assert (d["message"], d["range"]) == ("--job llama7b: no such job", None)
    assert d["hint"] == "did you mean `llama70b`? jobs: llama70b"
    if command == "diagnose":
        assert (doc["verdict"], doc["exit_code"]) == ("unusable", 2)
    assert not (tmp_path / "never.csv").exists()


def test_an_unknown_job_in_report_is_e221_and_no_page(tmp_path):
    page = tmp_path / "review.html"
    p = astral("report", POD, "-o", page, "--job", "gpt")
    assert p.returncode == 1 and not page.exists()
    assert p.stderr.startswith("error[E221]: --job gpt: no such job\n")
    assert "= hint: jobs: llama70b\n" in p.stderr        # nothing close: the list alone


def test_an_unknown_job_in_the_api_is_its_documented_error_with_e221(observed, tmp_path):
    import astral_dsl
    from astral_dsl.diagnose import DiagnoseError
    from astral_dsl.explore.sweep import SweepError
    from astral_dsl.outputs.report import ReviewError

    path = str(REPO / POD)
    calls = [(astral_dsl.ForecastError, lambda: astral_dsl.forecast(path, job="llama7b")),
             (SweepError, lambda: astral_dsl.sweep(path, {"hosts_per_rack": [3]},
                                                   job="llama7b")),
             (ReviewError, lambda: astral_dsl.report(path, tmp_path / "r.html",
                                                     jobs=["llama7b"])),
             (DiagnoseError, lambda: astral_dsl.diagnosis(path, [observed], job="llama7b"))]
    for error, call in calls:
        with pytest.raises(error) as caught:
            call()
        (d,) = caught.value.diagnostics
        # in the API's words: the argument `job=`, or an item of `jobs=` (`astral forecast`
        # says `--job llama7b`)
        said = "jobs=['llama7b']" if error is ReviewError else "job='llama7b'"
        assert (d.code, d.message, d.hint, Path(d.file).resolve()) == (
            "E221", f"{said}: no such job", "did you mean `llama70b`? jobs: llama70b",
            REPO / POD)


def test_the_unknown_job_hint_lists_at_most_twenty_jobs():
    from astral_dsl.seer import unknown_job

    class Job:
        def __init__(self, name):
            self.template = name

    class Design:
        file = "x.astral"
        jobs = [Job(f"j{i:02}") for i in range(23)]

    # 23 jobs: the first 20 named, "and 3 more"; `j0` is close to `j00` (difflib)
    d = unknown_job(Design(), "nope")
    assert d.hint == "jobs: " + ", ".join(f"j{i:02}" for i in range(20)) + " and 3 more"
    assert unknown_job(type("D", (), {"file": "x", "jobs": []})(), "a").hint == \
        "the design declares no job"


# ---- a usage error under --format json: one line of JSON on standard output --------------------
JSON_COMMANDS = ["check", "size", "export", "forecast", "sweep", "search", "diagnose", "synth",
                 "diff", "runs", "calibrate"]


def _usage_document(p, file=None):
    (line,) = p.stdout.splitlines()              # one line, the whole of standard output
    doc = json.loads(line)
    assert p.returncode == 2 and list(doc)[:5] == ENVELOPE, p.stdout
    assert (doc["valid"], doc["diagnostics"], doc["file"]) == (False, [], file)
    assert p.stderr.endswith(f"astral: error: {doc['usage_error']}\n")
    return doc


@pytest.mark.parametrize("command", JSON_COMMANDS)
def test_an_argparse_usage_error_under_json_is_a_json_line(command):
    # argparse's own error (a bad choice) comes before the format is known: stdout was empty
    p = astral(command, "x", "y", "--format", "json", "--color", "bogus")
    doc = _usage_document(p)
    assert doc["usage_error"].startswith("argument --color: invalid choice: 'bogus'")
    if command == "diagnose":        # no diagnosis: its verdict, as its documents say it
        assert (doc["verdict"], doc["exit_code"], doc["error"]) == (
            "unusable", 2, doc["usage_error"])


@pytest.mark.parametrize("command, args", [
    ("size", [RACK, "--format=json", "--set", "x"]),
    ("export", [RACK, "--set", "x"]),                  # json is export's default format
    ("sweep", [RACK, "--format", "jsonl", "--set", "x"]),
])
def test_a_command_usage_error_under_json_names_the_file(command, args):
    doc = _usage_document(astral(command, *args), RACK)
    assert doc["usage_error"] == "--set expects NAME=VALUE, got `x`"


def test_no_json_for_a_usage_error_without_json():
    # human output, text formats (export --netbox answers in text), a command without json
    for args in (["size", RACK, "--set", "x"], ["export", RACK, "--netbox", "d", "--set", "x"],
                 ["fmt", RACK, "--format", "json"], ["check", "--format", "yaml", RACK]):
        p = astral(*args)
        assert (p.returncode, p.stdout) == (2, ""), args
        assert "astral: error:" in p.stderr


@pytest.mark.parametrize("command, extra", [
    ("forecast", []), ("search", ["--workers", "1"]), ("synth", ["-o", "never.csv"])])
def test_a_design_without_a_job_is_e758_not_a_usage_error(command, extra, tmp_path):
    # the design's shortcoming, not the command line's: exit 1 in the envelope (it was exit 2,
    # "the design declares no job" on standard error only)
    p = astral(command, REPO / RACK, *extra, "--format", "json", cwd=tmp_path)
    doc = json.loads(p.stdout)
    assert (p.returncode, doc["valid"], p.stderr) == (1, False, "")
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "E758"]
    assert d["message"] == "the design declares no job to forecast" and d["hint"]
    assert not (tmp_path / "never.csv").exists()


@pytest.mark.parametrize("command, extra", [
    ("check", []), ("size", []), ("export", []), ("forecast", []), ("diff", [RACK]),
    ("sweep", ["--grid", "servers=3..4", "--workers", "1"]), ("search", ["--workers", "1"]),
    ("synth", ["-o", "never.csv"]), ("diagnose", ["--observed", "OBSERVED"]),
])
def test_an_internal_error_under_json_is_the_envelope_with_e000(command, extra, monkeypatch,
                                                                 observed, tmp_path):
    # exit 3 left standard output empty: a script parsing it read an empty string
    from astral_dsl.workspace import Workspace

    def bug(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(Workspace, "open", bug)
    extra = [str(observed) if x == "OBSERVED" else x for x in extra]
    p = astral(command, REPO / RACK, *extra, "--format", "json", cwd=tmp_path)
    (line,) = p.stdout.splitlines()
    doc = json.loads(line)
    assert p.returncode == 3 and list(doc) == ENVELOPE, p.stdout
    file = None if command == "diff" else str(REPO / RACK)     # diff: two files, A and B
    (d,) = doc["diagnostics"]
    assert (doc["valid"], doc["file"], d["code"], d["message"]) == (
        False, file, "E000", "internal compiler error: RuntimeError: a bug")
    assert p.stderr.startswith("error[E000]: internal compiler error: RuntimeError: a bug\n")
    p = astral(command, REPO / RACK, *extra, "--format", "human", cwd=tmp_path)  # no JSON
    assert (p.returncode, p.stdout) == (3, "")
