"""The bad-input corpus: every invalid design in tests/bad gets a diagnostic with a stable code at
an exact position, and never a Python traceback.

The table tests/bad/EXPECTED lists one case per line: `<file> <CODE> <line>:<column>` (the position
may name another file of tests/bad as `<file>:<line>:<column>`). Lines are 1-based, columns count
Unicode code points.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.diagnostics import CODES, Severity
from clirun import astral as _astral_cli  # noqa: E402

HERE = Path(__file__).resolve().parent
BAD = HERE / "bad"
REPO = HERE.parent


# ---- the table ------------------------------------------------------------------------------------
def _parse_expected():
    cases = []
    for number, raw in enumerate((BAD / "EXPECTED").read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        assert len(parts) == 3, f"EXPECTED line {number}: want `<file> <CODE> <line>:<column>`"
        name, code, where = parts
        pieces = where.rsplit(":", 2)
        if len(pieces) == 3:
            diag_file, ln, col = pieces
        else:
            diag_file, (ln, col) = name, pieces
        cases.append((name, code, diag_file, int(ln), int(col)))
    return cases


CASES = _parse_expected()
CASE_IDS = [c[0] for c in CASES]

# Hints the diagnostic must carry (a substring), for the cases where a hint is the point.
HINTS = {
    "name_unknown_did_you_mean.astral": "H800",
    "name_unknown_kind.astral": "rack",
    "name_unknown_field.astral": "power",
    "name_unknown_member_in_path.astral": "hosts",
    "name_scenario_unknown_path.astral": "hosts",
    "name_unknown_type_annotation.astral": "power",
    "import_missing_name.astral": "H800",
    "type_enum_misspelt.astral": "infiniband",
    "syntax_single_quoted_string.astral": "double quote",
    "syntax_unterminated_string.astral": "line",
    "syntax_bad_escape.astral": "escape",
    "syntax_assign_for_compare.astral": "==",
    # `tp = 8 pp = 16`: the hint must explain that `pp` was read as the unit of `8 pp`
    # (and not suggest `==`).
    "syntax_two_statements_one_line.astral": "`pp`",
    "unit_plain_number_needs_unit.astral": "unit",
    "unit_difference_for_point.astral": "degC",
    "unit_temperature_points_add.astral": "K",
    "encoding_invalid_utf8.astral": "UTF-8",
    "encoding_utf16.astral": "UTF-8",
}


def _same_file(span_file: str, expected: Path) -> bool:
    return Path(span_file).resolve() == expected.resolve()


def _fmt(diags) -> str:
    return "\n".join(
        f"  {d.code} {d.span.file}:{d.span.start.line}:{d.span.start.column}: {d.message}"
        if d.span else f"  {d.code} {d.file}: {d.message}" for d in diags) or "  (no diagnostics)"


def _load(name: str):
    """Compile a case; any exception escaping the compiler fails the test with its type."""
    path = BAD / name
    try:
        return astral_dsl.load(path)
    except Exception as exc:  # noqa: BLE001 - the point: nothing may escape
        pytest.fail(f"{name}: the compiler raised {type(exc).__name__}: {exc}")


# ---- the corpus itself ----------------------------------------------------------------------------
def test_corpus_is_big_enough_and_complete():
    assert len(CASES) >= 45
    listed = {c[0] for c in CASES}
    assert len(listed) == len(CASES), "a file is listed twice in EXPECTED"
    on_disk = {p.name for p in BAD.glob("*.astral")}
    helpers = {n for n in on_disk if n.startswith("helper_")}
    assert listed <= on_disk, f"EXPECTED names missing files: {sorted(listed - on_disk)}"
    assert on_disk - helpers <= listed, f"cases without an expectation: {sorted(on_disk - helpers - listed)}"
    for _, code, diag_file, _, _ in CASES:
        assert code in CODES, f"{code} is not a diagnostic code"
        assert (BAD / diag_file).is_file()


def test_binary_cases_match_their_generator():
    """The committed bytes are exactly what make_binary_cases.py writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_binary_cases", BAD / "make_binary_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    listed = {c[0] for c in CASES}
    for name, data in module.CASES.items():
        assert name in listed, f"{name} is generated but has no expectation"
        assert (BAD / name).read_bytes() == data, f"{name} differs from make_binary_cases.py"


# ---- every case -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,code,diag_file,line,column", CASES, ids=CASE_IDS)
def test_bad_input(name, code, diag_file, line, column):
    design = _load(name)
    diags = design.diagnostics
    for d in diags:
        assert d.code in CODES, f"unknown code {d.code}"
        assert d.message and d.message.strip(), f"{d.code} without a message"
        assert d.span is not None or d.file, f"{d.code} has neither a span nor a file"
        assert isinstance(d.severity, Severity)
        if d.span is not None:
            assert d.span.start.line >= 1 and d.span.start.column >= 1
            assert (d.span.end.line, d.span.end.column) >= (d.span.start.line, d.span.start.column)
    hits = [d for d in diags if d.code == code and d.span is not None
            and _same_file(d.span.file, BAD / diag_file)
            and (d.span.start.line, d.span.start.column) == (line, column)]
    assert hits, (f"{name}: expected {code} at {diag_file}:{line}:{column}; got\n{_fmt(diags)}")
    want = Severity.WARNING if code.startswith("W") else Severity.ERROR
    assert hits[0].severity is want
    if code.startswith("W"):
        assert design.valid, f"{name}: a warning case must have no errors; got\n{_fmt(diags)}"
    else:
        assert not design.valid


@pytest.mark.parametrize("name", sorted(HINTS), ids=sorted(HINTS))
def test_bad_input_hint(name):
    case = next(c for c in CASES if c[0] == name)
    _, code, diag_file, line, column = case
    design = _load(name)
    hits = [d for d in design.diagnostics if d.code == code and d.span is not None
            and (d.span.start.line, d.span.start.column) == (line, column)]
    assert hits, f"{name}: no {code} at {line}:{column}; got\n{_fmt(design.diagnostics)}"
    text = " ".join(filter(None, [hits[0].hint, hits[0].message]))
    assert HINTS[name] in (hits[0].hint or ""), (
        f"{name}: the hint should mention {HINTS[name]!r}; message/hint: {text!r}")


TEXT_CASES = [c for c in CASES if c[2] == c[0] and not c[0].startswith(("encoding_", "import_"))]


@pytest.mark.parametrize("name,code,diag_file,line,column", TEXT_CASES,
                         ids=[c[0] for c in TEXT_CASES])
def test_bad_input_from_text(name, code, diag_file, line, column):
    """`astral_dsl.loads` on the same text reports the same code at the same position."""
    text = (BAD / name).read_bytes().decode("utf-8")
    try:
        design = astral_dsl.loads(text, name=name, root=BAD)
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"loads({name}) raised {type(exc).__name__}: {exc}")
    assert any(d.code == code and d.span is not None and d.span.file == name
               and (d.span.start.line, d.span.start.column) == (line, column)
               for d in design.diagnostics), f"loads({name}):\n{_fmt(design.diagnostics)}"


def test_helpers_are_valid():
    for path in BAD.glob("helper_*.astral"):
        design = astral_dsl.load(path)
        assert design.valid, _fmt(design.diagnostics)


# ---- positive encodings -----------------------------------------------------------------------------
VALID = b"gpu G { power = 700 W, memory = 80 GB }\nhost Node { gpus = 8 x G }\nsite S { hosts = 2 x Node }\n"


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.astral"
    path.write_bytes(b"\xef\xbb\xbf" + VALID)
    design = astral_dsl.load(path)
    assert design.diagnostics == (), _fmt(design.diagnostics)
    assert design.valid
    assert astral_dsl.summary(design)["gpus"] == 16


def test_utf8_bom_cli_exit_0(tmp_path):
    path = tmp_path / "bom.astral"
    path.write_bytes(b"\xef\xbb\xbf" + VALID)
    proc = _cli("check", str(path))
    _no_crash(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_crlf_and_bom_valid(tmp_path):
    path = tmp_path / "crlf.astral"
    path.write_bytes(b"\xef\xbb\xbf" + VALID.replace(b"\n", b"\r\n"))
    design = astral_dsl.load(path)
    assert design.valid and design.diagnostics == (), _fmt(design.diagnostics)


# ---- the command line ---------------------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    return _astral_cli(*args, cwd=REPO, env=env)


# Cases whose human output must show the source line and a caret under the expected column.
CLI_CASES = [
    "syntax_stray_character.astral",
    "syntax_unicode_column.astral",
    "name_unknown_did_you_mean.astral",
    "unit_mismatch_add.astral",
    "structure_rack_contains_pod.astral",
    "check_error_fails.astral",
    "type_enum_misspelt.astral",
]


def _caret_column(stdout: str, line: int):
    """The column the caret under `line` points at, from rustc-style output:
        4 |   gpus = 8 x G @ 2
          |                ^
    """
    lines = stdout.splitlines()
    for i, text in enumerate(lines[:-1]):
        m = re.match(rf"^(\s*{line} \| )", text)
        if not m:
            continue
        below = lines[i + 1]
        m2 = re.match(r"^(\s*\| )(\s*)(\^+)", below)
        if m2 and len(m2.group(1)) == len(m.group(1)):
            return len(m2.group(2)) + 1
    return None


def _shown_line(stdout: str, line: int):
    """The source text the output shows for `line` (`  4 | text`)."""
    for text in stdout.splitlines():
        m = re.match(rf"^\s*{line} \| (.*)$", text)
        if m:
            return m.group(1)
    return None


def _no_crash(proc: subprocess.CompletedProcess) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, proc.stderr[-3000:]
    assert "internal compiler error" not in out and "[E000]" not in out, proc.stderr[-3000:]


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_check_bad(name):
    case = next(c for c in CASES if c[0] == name)
    _, code, _, line, column = case
    proc = _cli("check", "--color", "never", f"tests/bad/{name}")
    _no_crash(proc)
    assert proc.returncode == (0 if code.startswith("W") else 1), proc.stdout + proc.stderr
    assert f"[{code}]" in proc.stdout
    assert f"tests/bad/{name}:{line}:{column}" in proc.stdout, proc.stdout
    source_line = (BAD / name).read_text(encoding="utf-8").split("\n")[line - 1]
    assert _shown_line(proc.stdout, line) == source_line.replace("\t", " "), proc.stdout
    # the caret stands in terminal columns: a wide character (the emoji of
    # syntax_unicode_column.astral) takes two, so it stands one further per wide character
    wide = sum(unicodedata.east_asian_width(ch) in "WF" for ch in source_line[:column - 1])
    assert _caret_column(proc.stdout, line) == column + wide, proc.stdout


def test_cli_shows_the_line_the_position_names():
    """Line numbers count `\n` only; the CLI must show that line, not the one `str.splitlines`
    finds after a form feed or U+2028."""
    proc = _cli("check", "--color", "never", "tests/bad/syntax_unusual_line_breaks.astral")
    _no_crash(proc)
    assert proc.returncode == 1
    assert "syntax_unusual_line_breaks.astral:3:21" in proc.stdout, proc.stdout
    assert _shown_line(proc.stdout, 3) == "gpu G { power = 700 Wattz }", proc.stdout
    assert _caret_column(proc.stdout, 3) == 21, proc.stdout


def test_cli_check_warning_exit_0():
    proc = _cli("check", "--color", "never", "tests/bad/check_warning_fails.astral")
    _no_crash(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning[W500]" in proc.stdout
    assert _caret_column(proc.stdout, 5) == 9, proc.stdout


def test_cli_invalid_utf8_shows_the_line():
    """Even a file that is not UTF-8 shows its offending line (bad bytes replaced) and a caret."""
    proc = _cli("check", "--color", "never", "tests/bad/encoding_invalid_utf8.astral")
    _no_crash(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[E101]" in proc.stdout
    assert _caret_column(proc.stdout, 3) == 17, proc.stdout


@pytest.mark.parametrize("name", ["encoding_binary_nul.astral", "syntax_bad_escape.astral",
                                  "value_infinite_result.astral", "import_cycle_a.astral",
                                  "encoding_empty.astral"])
def test_cli_no_traceback(name):
    proc = _cli("check", "--color", "never", f"tests/bad/{name}")
    _no_crash(proc)
    code = next(c[1] for c in CASES if c[0] == name)
    assert proc.returncode == (0 if code.startswith("W") else 1), proc.stdout + proc.stderr
    assert f"[{code}]" in proc.stdout


def test_cli_json_bad():
    proc = _cli("check", "--format", "json", "tests/bad/unit_mismatch_add.astral")
    _no_crash(proc)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert "E301" in json.dumps(doc)


def test_cli_missing_file_exit_2():
    proc = _cli("check", "tests/bad/no_such_file.astral")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    _no_crash(proc)
    assert "E100" in proc.stdout + proc.stderr


def test_cli_directory_exit_2():
    proc = _cli("check", "tests/bad")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    _no_crash(proc)
    assert "E100" in proc.stdout + proc.stderr


def test_cli_several_files_worst_exit():
    proc = _cli("check", "tests/bad/unit_unknown.astral", "tests/bad/no_such_file.astral")
    _no_crash(proc)
    assert proc.returncode == 2


def test_load_missing_file_has_file_not_span():
    design = astral_dsl.load(BAD / "no_such_file.astral")
    assert [d.code for d in design.diagnostics] == ["E100"]
    d = design.diagnostics[0]
    assert d.file and d.message and not design.valid
