"""The `astral` command line, in this process (`astral_dsl.cli.main([...])`, with tests/clirun.py's
streams or pytest's) and in processes under two hash seeds: exit codes, the JSON envelope, JSON
Lines for several files, byte-identical output, `export`, and human-readable diagnostics."""
from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl import cli
from clirun import astral as _astral_cli  # noqa: E402
from clirun import astral_runs

REPO = Path(__file__).resolve().parents[1]

OK = """
gpu Accel { power = 700 W, memory = 80 GB }
host Node { gpus = 8 x Accel }
rack Rack { hosts = 4 x Node }
site S { racks = 2 x Rack }
"""

BAD = """
site S {
  power_limit = 45 GB
}
"""

SYNTAX = """
site S {
  power = = 5 kW
}
"""

WARN = """
gpu Accel { power = 700 W }
host Node { gpus = 8 x Accel }
rack Rack {
  hosts = 4 x Node
  check power <= 20 kW else warning "rack is hot"
}
site S { racks = 2 x Rack }
"""

PARAMS = """
param n = 4
gpu Accel { power = 700 W }
host Node { gpus = 8 x Accel }
rack Rack { hosts = n x Node }
site S { racks = 2 x Rack }
"""

UNICODE = '// café\nsite S { note = "µµ", power_limit = 45 GB }\n'

DIAGNOSTIC_KEYS = {"code", "severity", "message", "file", "range", "hint"}
SUMMARY_KEYS = {"gpus", "hosts", "racks", "switches", "it_power_kw"}


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def run(args, cwd: Path) -> subprocess.CompletedProcess:
    """In this process (tests/clirun.py); the determinism tests' processes are `seeded`'s."""
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    return _astral_cli(*args, cwd=cwd, env=env, text=False)


def out(proc) -> str:
    return proc.stdout.decode("utf-8")


def call(argv, capsys):
    """`cli.main(argv)` -> (exit code, stdout, stderr); usage errors may exit via SystemExit."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write_files(folder: Path) -> Path:
    for name, text in (("ok.astral", OK), ("bad.astral", BAD), ("syntax.astral", SYNTAX),
                       ("warn.astral", WARN), ("params.astral", PARAMS)):
        write(folder, name, text)
    (folder / "unicode.astral").write_text(UNICODE, encoding="utf-8")
    return folder


@pytest.fixture
def files(tmp_path):
    return _write_files(tmp_path)


@pytest.fixture
def here(files, monkeypatch):
    monkeypatch.chdir(files)
    return files


# ---- exit codes ---------------------------------------------------------------------------------------

def test_exit_0_for_a_valid_design(files):
    proc = run(["check", "ok.astral"], files)
    assert proc.returncode == 0, proc.stderr
    assert "64 GPUs" in out(proc)


def test_exit_1_for_errors(files):
    assert run(["check", "bad.astral"], files).returncode == 1
    assert run(["check", "syntax.astral"], files).returncode == 1


def test_exit_0_for_warnings_only(files):
    proc = run(["check", "warn.astral"], files)
    assert proc.returncode == 0
    assert "warning[W500]" in out(proc)


def test_exit_2_for_a_missing_file(files):
    proc = run(["check", "missing.astral"], files)
    assert proc.returncode == 2
    assert "E100" in out(proc) + proc.stderr.decode()


def test_exit_2_wins_over_errors(files):
    assert run(["check", "bad.astral", "missing.astral"], files).returncode == 2
    assert run(["check", "ok.astral", "bad.astral"], files).returncode == 1


@pytest.mark.parametrize("argv", [
    [],
    ["check"],
    ["frobnicate", "ok.astral"],
    ["check", "ok.astral", "--format", "xml"],
    ["check", "ok.astral", "--set", "no_equals_sign"],
    ["export"],
])
def test_exit_2_for_bad_usage(files, argv):
    proc = run(argv, files)
    assert proc.returncode == 2
    assert proc.stderr.strip(), "a usage error explains itself on stderr"


def test_main_exit_codes_in_process(here, capsys):
    assert call(["check", "ok.astral"], capsys)[0] == 0
    assert call(["check", "bad.astral"], capsys)[0] == 1
    assert call(["check", "missing.astral"], capsys)[0] == 2
    assert call(["check"], capsys)[0] == 2
    assert call(["frobnicate"], capsys)[0] == 2
    assert call(["check", "ok.astral", "--set", "nonsense"], capsys)[0] == 2
    assert call(["export"], capsys)[0] == 2


def test_unknown_set_parameter_is_an_error(here, capsys):
    code, stdout, _ = call(["check", "params.astral", "--set", "m=3", "--format", "json"], capsys)
    assert code == 1
    doc = json.loads(stdout)
    (d,) = doc["diagnostics"]
    assert d["code"] == "E213"
    assert d["range"] is None
    assert d["file"] == "params.astral"


# ---- the JSON envelope -----------------------------------------------------------------------------------

def test_json_envelope_for_a_valid_design(here, capsys):
    code, stdout, _ = call(["check", "ok.astral", "--format", "json"], capsys)
    assert code == 0
    assert stdout.endswith("\n") and stdout.count("\n") == 1
    doc = json.loads(stdout)
    assert {"version", "valid", "diagnostics", "summary"} <= set(doc)
    assert doc["version"] == astral_dsl.__version__
    assert doc["valid"] is True
    # valid: warnings only (the design declares no feeders, cooling or utilization: W626 ...)
    assert all(d["severity"] == "warning" for d in doc["diagnostics"])
    summary = doc["summary"]
    assert SUMMARY_KEYS <= set(summary)
    assert (summary["gpus"], summary["hosts"], summary["racks"], summary["switches"]) == \
        (64, 8, 2, 0)
    assert all(isinstance(summary[k], int) for k in ("gpus", "hosts", "racks", "switches"))
    # 64 x 700 W
    assert summary["it_power_kw"] == pytest.approx(44.8)


def test_json_diagnostic_shape(here, capsys):
    code, stdout, _ = call(["check", "bad.astral", "--format", "json"], capsys)
    assert code == 1
    doc = json.loads(stdout)
    assert doc["valid"] is False
    (d,) = doc["diagnostics"]
    assert set(d) == DIAGNOSTIC_KEYS
    assert d["code"] == "E304"
    assert d["severity"] == "error"
    assert isinstance(d["message"], str) and d["message"]
    assert d["file"] == "bad.astral"
    assert d["range"] == {"start": {"line": 2, "column": 17}, "end": {"line": 2, "column": 22}}
    assert isinstance(d["hint"], str)


def test_json_syntax_error(here, capsys):
    code, stdout, _ = call(["check", "syntax.astral", "--format", "json"], capsys)
    assert code == 1
    (d,) = json.loads(stdout)["diagnostics"]
    assert d["code"] == "E103"
    assert d["range"]["start"] == {"line": 2, "column": 11}
    assert d["range"]["end"] == {"line": 2, "column": 12}


def test_json_columns_are_code_points(here, capsys):
    _, stdout, _ = call(["check", "unicode.astral", "--format", "json"], capsys)
    doc = json.loads(stdout)
    (d,) = doc["diagnostics"]
    assert d["range"]["start"] == {"line": 2, "column": 37}


def test_json_warning_has_notes(here, capsys):
    code, stdout, _ = call(["check", "warn.astral", "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(stdout)
    assert doc["valid"] is True
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "W500"]
    assert d["severity"] == "warning"
    assert set(d) - {"notes"} == DIAGNOSTIC_KEYS
    assert any("2 instances" in n for n in d.get("notes", []))


def test_json_for_a_missing_file(files):
    proc = run(["check", "missing.astral", "--format", "json"], files)
    assert proc.returncode == 2
    doc = json.loads(out(proc))
    assert doc["valid"] is False
    (d,) = doc["diagnostics"]
    assert d["code"] == "E100"
    assert d["file"] == "missing.astral"
    assert d["range"] is None


def test_several_files_give_json_lines(files):
    proc = run(["check", "ok.astral", "bad.astral", "warn.astral", "--format", "json"], files)
    assert proc.returncode == 1
    lines = out(proc).splitlines()
    assert len(lines) == 3
    docs = [json.loads(line) for line in lines]
    assert [d["valid"] for d in docs] == [True, False, True]
    assert docs[1]["diagnostics"][0]["file"] == "bad.astral"
    assert docs[2]["diagnostics"][0]["file"] == "warn.astral"
    for doc in docs:
        assert {"version", "valid", "diagnostics", "summary"} <= set(doc)


def test_set_override_from_the_command_line(files):
    proc = run(["check", "params.astral", "--set", "n=8", "--format", "json"], files)
    assert proc.returncode == 0, out(proc)
    assert json.loads(out(proc))["summary"]["hosts"] == 16
    proc = run(["check", "params.astral", "--set", "n=2 kW", "--format", "json"], files)
    assert proc.returncode == 1
    assert [d["code"] for d in json.loads(out(proc))["diagnostics"]] == ["E310"]


# ---- determinism -------------------------------------------------------------------------------------------

DETERMINISM = [
    ["check", "ok.astral", "bad.astral", "warn.astral", "unicode.astral", "--format", "json"],
    ["check", "ok.astral", "bad.astral", "warn.astral", "unicode.astral"],
    ["export", "ok.astral"],
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """Each of DETERMINISM's commands under hash seeds 1 and 2 (NO_COLOR unset, as `run`
    does): a process per seed that runs them all (tests/clirun.py's astral_runs), not a
    process per command and seed."""
    folder = _write_files(tmp_path_factory.mktemp("seeded"))
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    runs = [astral_runs(DETERMINISM, cwd=folder, env=dict(env, PYTHONHASHSEED=seed))
            for seed in ("1", "2")]
    return list(zip(*runs))


@pytest.mark.parametrize("k", range(len(DETERMINISM)), ids=lambda k: f"argv{k}")
def test_output_is_byte_identical_across_runs(seeded, k):
    first, second = seeded[k]
    assert first.returncode == second.returncode
    assert first.stdout == second.stdout
    assert first.stdout


# ---- export --------------------------------------------------------------------------------------------------

def test_export_a_design(files):
    proc = run(["export", "ok.astral"], files)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out(proc))
    assert doc["valid"] is True
    design = doc["design"]
    assert design["roots"] == ["S"]
    paths = [i["path"] for i in design["instances"]]
    assert "S" in paths and "S.racks[0].hosts[0].gpus[0]" in paths
    site = next(i for i in design["instances"] if i["path"] == "S")
    assert site["members"]["racks"]["count"] == 2


def test_export_an_invalid_design(files):
    proc = run(["export", "bad.astral"], files)
    assert proc.returncode == 1
    doc = json.loads(out(proc))
    assert doc["valid"] is False
    assert doc["design"] is None
    assert doc["diagnostics"][0]["code"] == "E304"


def test_export_a_missing_file(files):
    assert run(["export", "missing.astral"], files).returncode == 2


def test_export_schema_is_json(files):
    proc = run(["export", "--schema"], files)
    assert proc.returncode == 0
    schema = json.loads(out(proc))
    assert isinstance(schema, dict)


def test_export_in_process(here, capsys):
    code, stdout, _ = call(["export", "ok.astral"], capsys)
    assert code == 0
    assert json.loads(stdout)["design"]["roots"] == ["S"]
    code, stdout, _ = call(["export", "--schema"], capsys)
    assert code == 0
    json.loads(stdout)


# ---- human output ---------------------------------------------------------------------------------------------

def _caret_under(text: str, source_line: str, snippet: str) -> None:
    """The caret line below `source_line` starts its carets under `snippet`."""
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.endswith(source_line))
    shown, carets = lines[i], lines[i + 1]
    assert set(carets.split("|", 1)[1].strip()) == {"^"}
    assert carets.index("^") == shown.index(snippet)


def test_human_output_shows_the_source_line_and_a_caret(here, capsys):
    code, stdout, _ = call(["check", "bad.astral", "--color", "never"], capsys)
    assert code == 1
    assert "error[E304]" in stdout
    assert "bad.astral:2:17" in stdout
    assert "power_limit = 45 GB" in stdout
    _caret_under(stdout, "power_limit = 45 GB", "45 GB")
    lines = stdout.splitlines()
    caret = next(line for line in lines if "^" in line)
    assert caret.count("^") == len("45 GB")
    assert "hint:" in stdout
    assert "\x1b[" not in stdout


def test_human_output_caret_after_non_ascii(here, capsys):
    code, stdout, _ = call(["check", "unicode.astral", "--color", "never"], capsys)
    assert code == 1
    assert "unicode.astral:2:37" in stdout
    _caret_under(stdout, 'site S { note = "µµ", power_limit = 45 GB }', "45 GB")


def test_the_caret_counts_the_columns_of_wide_characters():
    """A terminal gives a CJK character or an emoji two columns, a combining accent none: the
    carets stand under the span as it is shown (they stood two columns early per wide character)."""
    from astral_dsl.diagnostics import Diagnostic, Severity, Span
    from astral_dsl.outputs.human import render

    for line, snippet in (('gpu G { note = "機器", power = 7 GB }', "7 GB"),
                          ('let a = "😀😀" + 3 W', '"😀😀" + 3 W'),
                          ('let e = "e\u0301" + 3 W', "3 W")):
        col = line.index(snippet) + 1
        d = Diagnostic("E304", Severity.ERROR, "m", Span.at("f", 1, col, 1, col + len(snippet)))
        shown, carets = render(d, lambda f, n: line).splitlines()[3:5]
        # `X | ` before the line; the columns of the text before the snippet, wide ones as two
        before = shown[:shown.index(snippet)]
        wide = sum(ch in "機器😀" for ch in before) - sum(ch == "\u0301" for ch in before)
        assert carets.index("^") == len(before) + wide
        assert carets.count("^") == len(snippet) + sum(ch in "機器😀" for ch in snippet)


def test_human_output_for_a_syntax_error(files):
    proc = run(["check", "syntax.astral"], files)
    text = out(proc)
    assert "error[E103]" in text
    assert "syntax.astral:2:11" in text
    _caret_under(text, "power = = 5 kW", "= 5 kW")


def test_human_output_for_a_warning_has_notes(here, capsys):
    _, stdout, _ = call(["check", "warn.astral", "--color", "never"], capsys)
    assert "warning[W500]: rack is hot" in stdout
    assert "note:" in stdout and "2 instances" in stdout


def test_human_summary_line(here, capsys):
    code, stdout, _ = call(["check", "ok.astral"], capsys)
    assert code == 0
    assert stdout.strip().splitlines()[-1].startswith(
        "ok.astral: 64 GPUs, 8 hosts, 2 racks, 0 switches")


def test_colour_on_request(here, capsys):
    _, stdout, _ = call(["check", "bad.astral", "--color", "always"], capsys)
    assert "\x1b[" in stdout
    _, stdout, _ = call(["check", "bad.astral"], capsys)   # not a terminal: no colour
    assert "\x1b[" not in stdout


def test_a_very_long_line_is_shown_as_a_window_around_the_span(tmp_path):
    from astral_dsl.diagnostics import Diagnostic, Severity, Span
    from astral_dsl.outputs.human import render

    line = "site S { x = " + "(" * 500 + "1" + ")" * 500 + " }"
    d = Diagnostic("E203", Severity.ERROR, "a site has no field `x`", Span.at("f", 1, 10, 1, 11))
    text = render(d, lambda f, n: line if n == 1 else None)
    shown, caret = text.splitlines()[3], text.splitlines()[4]
    assert len(shown) < 140 and shown.endswith("...")
    assert caret.index("^") == shown.index("x =")      # the caret still points at `x`


def test_a_window_is_cut_after_its_control_characters_are_escaped(tmp_path):
    """A UTF-16 line (a NUL every other character) was cut to 120 characters, then escaped to
    300 and more; the window now counts what is shown, and the caret still points at the span."""
    from astral_dsl.diagnostics import Diagnostic, Severity, Span
    from astral_dsl.outputs.human import render

    line = "\x00".join("site S { power_limit = 5 zz" + " " * 150 + "}")
    col = line.index("z") + 1
    d = Diagnostic("E300", Severity.ERROR, "unknown unit `zz`", Span.at("f", 1, col, 1, col + 3))
    shown, caret = render(d, lambda f, n: line if n == 1 else None).splitlines()[3:5]
    body = shown.split("| ", 1)[1]
    assert len(body) <= 120 + 6 and body.startswith("...") and body.endswith("...")
    assert "\\x00" in body and body[caret.index("^") - len(shown) + len(body):].startswith("z")
    assert caret.count("^") == len("z\\x00z")


def test_the_launcher_runs_as_a_module_as_the_script_does():
    """`python -m astral_dsl.launch` (the `astral` script's module) runs the command line: it
    had no `__main__` guard and exited 0 having done nothing."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "astral_dsl.launch", "--version"],
                          capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0 and proc.stdout.startswith("astral "), proc
