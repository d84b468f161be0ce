"""`astral diff`'s diagnostics section. A diagnostic whose figures change (`(2 kW)` ->
`(4 kW)`) is one diagnostic changed, in text and JSON, not one removed and another added
(they were keyed by their whole message); another message at the same place is still another
problem. With a side that does not compile, the other side's diagnostics of the steps that
need a compiled design (engineering checks: E600 on) are not compared (a note says so): they
were listed as removed, though they never ran on the broken side."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import astral
from test_envelope_schemas import schema_validator

A = """\
host H { power = 1 kW }
rack R { hosts = 2 x H }
site S { racks = 1 x R, utilization = 75 % }
"""
W626 = ("1 rack(s) ({} kW) have no feeder: their power path is not checked and their "
        "conversion losses count as 0 W")
W653 = ("no cooling is declared: the {} kW of heat of `S` have no path out, and no PUE is "
        "computed")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("diff_diagnostics")
    (root / "a.astral").write_text(A, encoding="utf-8")
    # 4 hosts of 1 kW: the rack draws 4 kW (2 x 1 kW = 2 kW before)
    (root / "b.astral").write_text(A.replace("2 x H", "4 x H"), encoding="utf-8")
    # the same, the rack and the site a line lower
    (root / "moved.astral").write_text("// moved\n" + A.replace("2 x H", "4 x H"),
                                       encoding="utf-8")
    (root / "broken.astral").write_text(A.replace("1 x R", "1 x Q"), encoding="utf-8")
    return root


def _diff(files, *argv):
    proc = astral("diff", *argv, "--color", "never", cwd=files)
    return proc.returncode, proc.stdout


def _section(text: str, title: str):
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i]), len(lines))
    return lines[start:end]


def test_a_diagnostic_whose_figures_change_is_one_change(files):
    code, text = _diff(files, "a.astral", "b.astral")
    assert code == 0
    assert _section(text, "diagnostics") == [
        "  ~ warning[W626] (line 2)",
        "      - " + W626.format(2),
        "      + " + W626.format(4),
        "  ~ warning[W653] (line 3)",
        "      - " + W653.format(2),
        "      + " + W653.format(4)]
    # 1 value, 1 count and 5 figures of power changed, and the 2 warnings
    assert text.endswith("9 difference(s): 0 added, 0 removed, 9 changed\n")
    assert _diff(files, "a.astral", "b.astral")[1] == text          # byte for byte


def test_the_json_pairs_them_and_validates(files):
    code, out = _diff(files, "a.astral", "b.astral", "--format", "json")
    doc = json.loads(out)
    assert [(c["kind"], c["before"]["message"], c["after"]["message"],
             c["before"]["file"], c["after"]["file"], c["before"]["line"], c["after"]["line"])
            for c in doc["changes"]["diagnostics"]] == [
        ("changed", W626.format(2), W626.format(4), "a.astral", "b.astral", 2, 2),
        ("changed", W653.format(2), W653.format(4), "a.astral", "b.astral", 3, 3)]
    assert doc["changes"]["diagnostics"][0]["key"] == "warning[W626] " + W626.format(2)
    diff = schema_validator("diff", "diff")
    assert not list(diff.iter_errors(doc))
    # a change of a diagnostic has both sides
    bad = dict(doc, changes={"diagnostics": [dict(doc["changes"]["diagnostics"][0],
                                                  after=None)]})
    assert list(diff.iter_errors(bad))


def test_a_diagnostic_moved_to_another_line_pairs_by_its_message(files):
    _, text = _diff(files, "a.astral", "moved.astral")
    assert _section(text, "diagnostics")[0::3] == ["  ~ warning[W626] (line 2 -> line 3)",
                                                   "  ~ warning[W653] (line 3 -> line 4)"]


def test_another_message_at_the_same_place_is_another_problem(files):
    # the fixture replaces one check of S by another on the same line: two W500s
    cases = Path(__file__).resolve().parent / "fixtures" / "diff" / "diagnostics"
    _, text = _diff(files, cases / "a.astral", cases / "b.astral")
    assert _section(text, "diagnostics") == [
        "  - warning[W500] expected 64 GPUs (line 40)",
        "  + warning[W500] less than 10 % headroom on the feeder (line 40)"]


@pytest.mark.parametrize("a, b, kind", [("a.astral", "broken.astral", "added"),
                                        ("broken.astral", "a.astral", "removed")])
def test_a_side_that_does_not_compile_leaves_the_engineering_warnings_uncompared(files, a, b,
                                                                                 kind):
    code, text = _diff(files, a, b)
    name, other = ("a", "b") if a == "a.astral" else ("b", "a")
    assert (f"note: {name}'s 2 diagnostic(s) of sizing, the engineering checks, scenarios and "
            f"jobs are not compared: they never ran on {other}\n") in text
    mark = "+" if kind == "added" else "-"
    assert _section(text, "diagnostics") == [f"  {mark} error[E200] unknown name `Q` (line 3)"]
    _, out = _diff(files, a, b, "--format", "json")
    doc = json.loads(out)
    assert [(c["kind"], (c["before"] or c["after"])["code"])
            for c in doc["changes"]["diagnostics"]] == [(kind, "E200")]
    assert code == 1 and not list(schema_validator("diff", "diff").iter_errors(doc))
