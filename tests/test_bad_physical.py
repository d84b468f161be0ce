"""The physically-invalid corpus (tests/bad/physical/): designs that compile cleanly but break one
engineering rule (network E60x, power E62x, cooling E64x, scenarios E680/W680).

For every line `<file> <CODE> <line>:<column>` of tests/bad/physical/EXPECTED:
- the front end reports no error (the violation is physical, not a language error);
- `astral_dsl.check(workspace, all_scenarios=True)` reports a diagnostic with exactly CODE starting at
  exactly line:column, and no error with another code (one rule per case);
- `astral check --all-scenarios FILE` exits 1 for an E-code (0 for a W-code) and prints no
  traceback."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import List, NamedTuple

import pytest

import astral_dsl
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CASES = Path(__file__).resolve().parent / "bad" / "physical"

_LINE = re.compile(r"^(?P<file>\S+)\s+(?P<code>[EW]\d{3})\s+(?P<line>\d+):(?P<col>\d+)\s*(#.*)?$")


class Case(NamedTuple):
    file: str
    code: str
    line: int
    column: int

    @property
    def is_error(self) -> bool:
        return self.code.startswith("E")


def _read_expected() -> List[Case]:
    cases = []
    for raw in (CASES / "EXPECTED").read_text(encoding="utf-8").splitlines():
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        m = _LINE.match(text)
        assert m, f"malformed EXPECTED line: {raw!r}"
        cases.append(Case(m["file"], m["code"], int(m["line"]), int(m["col"])))
    return cases


EXPECTED = _read_expected()


def _run_cli(args, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("ASTRAL_DEBUG", None)
    return _astral_cli(*args, cwd=cwd, env=env)


def _where(d) -> str:
    return f"{d.span.start.line}:{d.span.start.column}" if d.span else "-"


def _describe(diags) -> str:
    return "\n".join(f"  {d.code} {_where(d)} {d.message}" for d in diags) or "  (none)"


# ---- the table itself ------------------------------------------------------------------------------
def test_expected_lists_every_case_once():
    listed = [c.file for c in EXPECTED]
    assert len(listed) == len(set(listed)), "a case is listed twice"
    on_disk = sorted(p.name for p in CASES.glob("*.astral"))
    assert sorted(listed) == on_disk
    assert len(listed) >= 18


def test_corpus_covers_every_engineering_code():
    codes = {c.code for c in EXPECTED}
    wanted = {"E600", "E601", "E602", "E603", "E604", "E605",
              "E620", "E621", "E622", "E623", "E624", "E625", "E626", "E627",
              "E640", "E641", "E642", "E643", "E644", "E645", "E680", "W680"}
    assert wanted <= codes, f"missing: {sorted(wanted - codes)}"
    # the rules with two distinct ways to break them have two cases each
    for code in ("E600", "E601", "E603", "E604", "E625"):
        assert sum(c.code == code for c in EXPECTED) >= 2, code
    assert sum(c.code == "E605" for c in EXPECTED) >= 3   # one port, one plane, not per plane


# ---- each case -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def checked():
    cache = {}

    def get(name: str):
        if name not in cache:
            ws = astral_dsl.compile(CASES / name)
            design = ws.design
            design = ws.design
            cache[name] = (design, astral_dsl.check(ws, all_scenarios=True))
        return cache[name]
    return get


@pytest.mark.parametrize("case", EXPECTED, ids=[c.file for c in EXPECTED])
def test_front_end_accepts_the_design(case, checked):
    design, _ = checked(case.file)
    errors = [d for d in design.diagnostics if d.is_error]
    assert not errors, f"{case.file} is not a physical violation:\n{_describe(errors)}"
    assert design.valid
    assert design.roots, "the case declares no site"


@pytest.mark.parametrize("case", EXPECTED, ids=[c.file for c in EXPECTED])
def test_engineering_check_reports_the_code_at_the_position(case, checked):
    _, result = checked(case.file)
    hits = [d for d in result.diagnostics if d.code == case.code and d.span is not None
            and (d.span.start.line, d.span.start.column) == (case.line, case.column)]
    assert hits, (f"{case.file}: expected {case.code} at {case.line}:{case.column}, got:\n"
                  f"{_describe(result.diagnostics)}")
    # the diagnostic points into the case file itself
    assert all(Path(d.span.file).name == case.file for d in hits)


@pytest.mark.parametrize("case", EXPECTED, ids=[c.file for c in EXPECTED])
def test_one_rule_per_case(case, checked):
    _, result = checked(case.file)
    error_codes = {d.code for d in result.diagnostics if d.is_error}
    if case.is_error:
        assert error_codes == {case.code}, (
            f"{case.file} should break only {case.code}:\n{_describe(result.diagnostics)}")
        assert not result.valid
    else:
        assert error_codes == set(), (
            f"{case.file} should only warn:\n{_describe(result.diagnostics)}")
        assert result.valid


@pytest.mark.parametrize("case", EXPECTED, ids=[c.file for c in EXPECTED])
def test_cli_check_exit_code_and_no_traceback(case):
    proc = _run_cli(["check", case.file, "--all-scenarios", "--color", "never"], CASES)
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output
    assert "E000" not in output and "internal compiler error" not in output
    assert proc.returncode == (1 if case.is_error else 0), output
    severity = "error" if case.is_error else "warning"
    assert f"{severity}[{case.code}]" in proc.stdout, output
    assert f"{case.file}:{case.line}:{case.column}" in proc.stdout, output


def test_cli_plain_check_fails_every_error_case():
    """Without --all-scenarios, required scenarios still run: every E-case fails, in one run."""
    files = [c.file for c in EXPECTED if c.is_error]
    proc = _run_cli(["check", *files, "--color", "never"], CASES)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.returncode == 1
    for case in EXPECTED:
        if case.is_error:
            assert f"{case.file}:{case.line}:{case.column}" in proc.stdout, case.file


def test_cli_plain_check_skips_the_optional_scenario():
    """An optional scenario runs only when asked for: the W680 case is clean without it."""
    proc = _run_cli(["check", "scen_optional_breaks.astral", "--color", "never"], CASES)
    assert proc.returncode == 0
    assert "W680" not in proc.stdout
    asked = _run_cli(["check", "scen_optional_breaks.astral", "--scenario", "heat_wave",
                      "--color", "never"], CASES)
    assert asked.returncode == 0
    assert "warning[W680]" in asked.stdout


# ---- what the scenario cases break -----------------------------------------------------------------
@pytest.mark.parametrize("name, scenario, required, broken, line", [
    ("scen_required_breaks.astral", "cdu_lost", True, "E640", 12),      # the failed CDUs' count
    ("scen_optional_breaks.astral", "heat_wave", False, "E642", 20),    # the scenario's `set`
])
def test_scenario_cases_break_under_the_scenario_only(name, scenario, required, broken, line,
                                                      checked):
    _, result = checked(name)
    # the baseline holds
    assert not [d for d in result.engineering.diagnostics if d.is_error]
    (outcome,) = result.scenarios
    assert outcome.name == scenario and outcome.required is required
    assert [d.code for d in outcome.broken] == [broken]
    # the diagnostic names what broke, and where: the broken declaration as its related span
    top = next(d for d in result.diagnostics if d.code in ("E680", "W680"))
    assert any(n.startswith(f"breaks: [{broken}]") for n in top.notes), top.notes
    assert [(r.message, r.span.file.endswith(name), r.span.start.line) for r in top.related] \
        == [(f"[{broken}] breaks here", True, line)]
