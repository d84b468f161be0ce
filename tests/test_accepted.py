"""Accepted warnings (issue #25, item 2): `allow W621 "reason"` at file, template and instance
scope and `astral check --baseline accepted.json` (written by `--write-baseline`), as ruff's noqa
and mypy's baseline. `--strict` honours both; the accepted warnings are counted and listed apart
in text, JSON and the review page, never dropped; a stale `allow` or baseline entry is W220; a
warning is printed once per design and command, not once per scenario split."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import astral_dsl
from test_cli import call, out, run

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "accepted" / "first_design.astral"
SIX = ["W608", "W621", "W621", "W622", "W648", "W659"]     # the day-one warnings it accepts
ALLOW = re.compile(r"^\s*allow W\d{3} \"[^\"]*\"\n", re.M)


@pytest.fixture
def design(tmp_path) -> Path:
    path = tmp_path / "first_design.astral"
    shutil.copy(FIXTURE, path)
    return path


def _without_allows(path: Path) -> Path:
    bare = path.with_name("bare.astral")
    bare.write_text(ALLOW.sub("", path.read_text(encoding="utf-8")), encoding="utf-8")
    return bare


def test_six_accepted_warnings_pass_check_strict(design):
    proc = run(["check", "--strict", design.name], design.parent)
    assert proc.returncode == 0, out(proc)
    text = out(proc)
    assert "warning[" not in text and "error[" not in text
    # apart: a count, then each with where it points and what accepted it, and why
    assert "accepted: 6 warning(s)" in text
    assert "  W621 first_design.astral:22:76: feeder `Cluster.sus[0].hvdc_a` declares no " \
           "`conductor_temperature`" in text
    assert ("    accepted by allow at first_design.astral:16: conductor temperature from the "
            "cable vendor's data sheet, due in June") in text
    assert text.rstrip().endswith("[ok, 6 accepted]")


def test_the_same_design_without_its_allows_fails_check_strict(design):
    bare = _without_allows(design)
    proc = run(["check", "--strict", "--format", "json", bare.name], design.parent)
    assert proc.returncode == 1
    doc = json.loads(out(proc))
    assert sorted(d["code"] for d in doc["diagnostics"]) == SIX
    assert doc["accepted"] == []


def test_json_lists_the_accepted_apart(design):
    proc = run(["check", "--strict", "--format", "json", design.name], design.parent)
    assert proc.returncode == 0
    doc = json.loads(out(proc))
    assert doc["valid"] is True and doc["diagnostics"] == []
    assert sorted(a["code"] for a in doc["accepted"]) == SIX
    w648 = next(a for a in doc["accepted"] if a["code"] == "W648")
    assert w648["reason"] == "pump data from the CDU vendor pending"
    assert w648["allowed_at"] == {"file": "first_design.astral", "line": 31, "column": 5}
    assert w648["baseline"] is None
    assert w648["severity"] == "warning" and w648["range"]["start"]["line"] == 30


def test_each_scope_accepts_only_the_text_it_stands_in(tmp_path):
    text = FIXTURE.read_text(encoding="utf-8")
    # the loop's W648 accepted in the feeder `net` instead: stale there, reported where it is
    moved = text.replace('    allow W648 "pump data from the CDU vendor pending"\n', "").replace(
        '    allow W622 "', '    allow W648 "in the wrong instance"\n    allow W622 "')
    path = tmp_path / "moved.astral"
    path.write_text(moved, encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(path))
    codes = sorted(d.code for d in checked.diagnostics)
    assert codes == ["W220", "W648"], checked.diagnostics
    stale = next(d for d in checked.diagnostics if d.code == "W220")
    assert stale.message == "`allow W648` accepts nothing: no W648 is reported in this instance"
    assert stale.span.start.line == 49
    assert len(checked.accepted) == 5


def test_a_stale_allow_warns_and_fails_strict(tmp_path):
    path = tmp_path / "stale.astral"
    path.write_text('allow W621 "conductor data due in June"\n'
                    'gpu G { power = 700 W }\n'
                    'site S { gpus = 8 x G, power = 5.6 kW }\n', encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(path))
    (w,) = [d for d in checked.diagnostics if d.code == "W220"]
    assert w.message == "`allow W621` accepts nothing: no W621 is reported in this file"
    assert (w.span.start.line, w.span.start.column) == (1, 1)
    proc = run(["check", "--strict", path.name], tmp_path)
    assert proc.returncode == 1 and "error[W220]" in out(proc)


def test_an_error_stopping_the_check_leaves_no_allow_stale(tmp_path):
    path = tmp_path / "broken.astral"
    path.write_text(FIXTURE.read_text(encoding="utf-8").replace("hosts = 4 x Node",
                                                                "hosts = 4 x Nod"),
                    encoding="utf-8")
    checked = astral_dsl.check(astral_dsl.compile(path))
    assert [d.code for d in checked.diagnostics] == ["E200"]


@pytest.mark.parametrize("statement, message", [
    ('allow E625 "later"', "`allow E625`: E625 is an error, and errors cannot be accepted"),
    ('allow W999 "later"', "`allow W999`: `W999` is not a warning code"),
    ('allow W220 "later"', "`allow W220`: `W220` says an `allow` accepts nothing: remove that "
                           "`allow` instead"),
    ("allow W621", "`allow W621` says no reason"),
    ('allow W621 "  "', "`allow W621` says no reason"),
])
def test_an_allow_that_cannot_accept_anything_is_e220(statement, message):
    design = astral_dsl.loads(f"{statement}\nsite S {{ }}\n", name="e.astral")
    (e,) = [d for d in design.diagnostics if d.code == "E220"]
    assert e.message == message and e.span.start.line == 1


def test_an_allow_in_a_scenario_is_judged_only_when_it_runs(tmp_path):
    path = tmp_path / "scen.astral"
    path.write_text(FIXTURE.read_text(encoding="utf-8") + """
scenario derated {
  allow W680 "a what-if we know the racks do not survive"
  set GpuRack.power_limit = 30 kW
}
""", encoding="utf-8")
    ws = astral_dsl.compile(path)
    assert not astral_dsl.check(ws).diagnostics
    run_it = astral_dsl.check(ws, ["derated"])
    assert [d.code for d in run_it.diagnostics] == [], run_it.diagnostics
    assert "W680" in [a.diagnostic.code for a in run_it.accepted]


def test_a_file_s_allow_of_a_scenario_s_verdict_is_stale_only_when_every_scenario_ran(tmp_path):
    """`allow W680` at the top of the file accepts the verdict of a what-if that breaks the
    design; a check that runs the required scenarios alone called it stale (W220: "no W680 is
    reported"), which `astral check --strict` failed on, while the report, which runs them all,
    accepted the W680: the check cannot know, so it says nothing."""
    path = tmp_path / "scen.astral"
    path.write_text('allow W680 "a what-if we know the racks do not survive"\n'
                    + FIXTURE.read_text(encoding="utf-8") + """
scenario derated { set GpuRack.power_limit = 30 kW }
""", encoding="utf-8")
    ws = astral_dsl.compile(path)
    plain = astral_dsl.check(ws)
    assert "W220" not in [d.code for d in plain.diagnostics], plain.diagnostics
    every = astral_dsl.check(ws, all_scenarios=True)
    assert [d.code for d in every.diagnostics] == []
    assert "W680" in [a.diagnostic.code for a in every.accepted]
    # every scenario ran and none breaks the design: the allow is stale, as any other
    fine = path.read_text(encoding="utf-8").replace("power_limit = 30 kW", "power_limit = 300 kW")
    path.write_text(fine, encoding="utf-8")
    (stale,) = [d for d in astral_dsl.check(astral_dsl.compile(path), all_scenarios=True)
                .diagnostics if d.code == "W220"]
    assert stale.message == "`allow W680` accepts nothing: no W680 is reported in this file"


# ---- the baseline --------------------------------------------------------------------------------
def test_write_baseline_then_check_strict_with_it(design):
    bare = _without_allows(design)
    sub = design.parent / "ci"
    sub.mkdir()
    proc = run(["check", "--write-baseline", "ci/accepted.json", bare.name], design.parent)
    assert proc.returncode == 0, out(proc)
    assert out(proc).rstrip().endswith("[ok, 6 accepted]")
    doc = json.loads((sub / "accepted.json").read_text(encoding="utf-8"))
    assert doc["astral_baseline"] == 1
    assert [e["code"] for e in doc["accepted"]] == SIX
    assert {e["file"] for e in doc["accepted"]} == {"../bare.astral"}     # from its own folder
    # from another working directory, the same baseline accepts the same warnings
    proc = run(["check", "--strict", "--baseline", "accepted.json", "--format", "json",
                "../bare.astral"], sub)
    assert proc.returncode == 0, out(proc)
    checked = json.loads(out(proc))
    assert checked["diagnostics"] == []
    assert sorted(a["code"] for a in checked["accepted"]) == SIX
    assert {a["reason"] for a in checked["accepted"]} == {"listed in the baseline"}
    assert {a["baseline"] for a in checked["accepted"]} == {"accepted.json"}


def test_a_baseline_entry_that_accepts_nothing_is_w220(design):
    bare = _without_allows(design)
    base = design.parent / "accepted.json"
    base.write_text(json.dumps({"astral_baseline": 1, "accepted": [
        {"code": "W621", "file": "bare.astral", "message": "a warning long gone"}]}))
    proc = run(["check", "--baseline", "accepted.json", "--format", "json", bare.name],
               design.parent)
    doc = json.loads(out(proc))
    stale = [d for d in doc["diagnostics"] if d["code"] == "W220"]
    assert len(stale) == 1 and stale[0]["file"] == "accepted.json"
    assert "a warning long gone" in stale[0]["message"]


def test_many_stale_baseline_entries_are_said_in_nine_warnings(design):
    """A baseline of 600,000 entries none of which is reported any more printed 600,000 W220
    (118 MB, 20 s): the first 8 are said one by one, the rest counted in one."""
    bare = _without_allows(design)
    base = design.parent / "accepted.json"
    base.write_text(json.dumps({"astral_baseline": 1, "accepted": [
        {"code": "W621", "file": "bare.astral", "message": f"gone {i}"} for i in range(5000)]}))
    proc = run(["check", "--baseline", "accepted.json", "--format", "json", bare.name],
               design.parent)
    stale = [d["message"] for d in json.loads(out(proc))["diagnostics"] if d["code"] == "W220"]
    assert stale == [f"the baseline accepts W621 `gone {i}` in bare.astral, which is no longer "
                     f"reported" for i in range(8)] + [
        "the baseline accepts more warnings that are no longer reported: 4,992 besides the 8 "
        "said one by one"]


def test_a_bad_baseline_is_a_usage_error(design, capsys):
    bad = design.parent / "bad.json"
    bad.write_text("[1, 2]")
    code, _, err = call(["check", str(design), "--baseline", str(bad)], capsys)
    assert code == 2 and "is not an astral baseline" in err
    code, _, err = call(["check", str(design), "--baseline", str(design.parent / "none.json")],
                        capsys)
    assert code == 2 and "cannot read" in err


# ---- once per design and command, and the other commands -----------------------------------------
def test_a_scenario_split_prints_each_warning_once(design, capsys):
    bare = _without_allows(design)
    code, stdout, err = call(["render", str(bare), "-o", str(design.parent / "p.dot"),
                              "--view", "power", "--scenario", "a_side_lost"], capsys)
    assert code == 0, err
    found = re.findall(r"^warning\[(W\d+)\]", err, re.M)
    assert sorted(found) == SIX, err           # once each, though sus[0] and sus[1] split
    assert "6 warning(s)" in stdout
    code, stdout, err = call(["render", str(design), "-o", str(design.parent / "p.dot"),
                              "--view", "power", "--scenario", "a_side_lost"], capsys)
    assert code == 0 and "warning[" not in err and "6 accepted" in stdout


def test_size_export_and_the_review_page_keep_them_apart(design, capsys):
    code, stdout, _ = call(["size", str(design), "--format", "json"], capsys)
    doc = json.loads(stdout)
    assert doc["diagnostics"] == [] and len(doc["accepted"]) == 6
    code, stdout, _ = call(["export", str(design)], capsys)
    doc = json.loads(stdout)
    assert doc["valid"] and len(doc["accepted"]) == 6
    from astral_dsl.api.review import collect
    from astral_dsl.outputs.report import build

    page = build(collect(astral_dsl.compile(design), views=()))
    assert "Accepted warnings (6)" in page
    assert "pump data from the CDU vendor pending" in page


GPU_FILE = """import stdlib.hardware { H100_SXM, CX7_2x200G, HGX8, QM9700_NDR }
allow W216 "the lab's hosts as the stdlib assumes them"
host Node = HGX8(gpu = H100_SXM, nic = CX7_2x200G)
rack LabRack { hosts = 4 x Node }
block Lab_SU { racks = 8 x LabRack }
fabric Lab_Fabric {
  rails = 8, planes = 1, max_oversubscription = 1
  tier leaf { switch = QM9700_NDR, scope = block, per = [rail], down = 32 x 400 Gb/s,
              up = 32 x 400 Gb/s }
  tier spine { switch = QM9700_NDR, scope = site, down = 64 x 400 Gb/s }
}
"""


@pytest.mark.parametrize("allowed", [True, False])
def test_search_and_runs_say_no_warning_the_design_accepts(tmp_path, capsys, allowed):
    """A search that stops (no such job) said every warning of the design, those its `allow`s
    accept among them, in full with the hint to accept them; so did `astral runs` of a
    --gpu-file's (the diagnostics they said otherwise, and their output, list none)."""
    text = GPU_FILE if allowed else ALLOW.sub("", GPU_FILE)
    gpu_file = tmp_path / "lab.astral"
    gpu_file.write_text(text, encoding="utf-8")
    table = tmp_path / "runs.csv"
    lines = (Path(astral_dsl.__file__).parent / "seer" / "calibration" / "a100.csv").read_text(
        encoding="utf-8").splitlines()
    table.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    code, stdout, _ = call(["runs", str(table), "--gpu-file", str(gpu_file)], capsys)
    assert code == 0 and ("W216" in stdout) is not allowed, stdout
    design = tmp_path / "job.astral"
    design.write_text(text + """
site Lab { su = 1 x Lab_SU }
import stdlib.models { Llama3_8B }
job small {
  model = Llama3_8B
  placement = Lab
  gpus = 32
  parallel { tp = 8, pp = 1, dp = 4 }
  batch { global_batch = 32, micro = 1, seq = 4096 }
}
""", encoding="utf-8")
    for argv in (["search", str(design), "--job", "nope"],
                 ["search", str(design), "--job", "nope", "--format", "json"]):
        code, stdout, _ = call(argv, capsys)
        assert code == 1 and "E221" in stdout and ("W216" in stdout) is not allowed, stdout


def test_allow_statements_format_as_statements():
    from astral_dsl.fmt import format_text

    text = 'site S {\n  allow   W621   "x"  , allow W690 "y"\n}\nallow W627"z"\n'
    assert format_text(text, "a.astral") == \
        'site S {\n  allow W621 "x", allow W690 "y"\n}\nallow W627 "z"\n'
    assert format_text(FIXTURE.read_text(encoding="utf-8"), "f.astral") == \
        FIXTURE.read_text(encoding="utf-8")


def test_the_editor_shows_the_accepted_as_information(design):
    """The language server publishes the accepted warnings as information saying what accepted
    them, as `astral check` lists them apart: never dropped, never a warning."""
    from astral_dsl.diagnostics import Severity
    from astral_dsl.lsp.analysis import analyse

    a = analyse(design.as_uri(), design, design.read_text(encoding="utf-8"), None, lambda p: None)
    accepted = [d for d in a.diagnostics if "(accepted by `allow` at line " in d.message]
    assert sorted(d.code for d in accepted) == sorted(SIX)
    assert all(d.severity is Severity.INFO for d in accepted)
    assert not [d for d in a.diagnostics if d.severity is Severity.WARNING]


UNSTATED = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
row Row { racks = 2 x R }
site S { a = 1 x Row, b = 1 x Row }
scenario average { set S.utilization = 60 % }
scenario half { set S.a[0].utilization = 50 % }
"""


def test_size_under_a_scenario_reports_the_scenarios_utilization_warnings(tmp_path, capsys):
    # W627 comes from the design the report shows: a scenario that sets the site's utilization
    # leaves none; one that sets row A's leaves row B's 2 x 4 x 10 kW = 80 kW unstated
    path = tmp_path / "util.astral"
    path.write_text(UNSTATED, encoding="utf-8")
    declared = "declares no `utilization` (nor do the parts inside it)"
    _, stdout, _ = call(["size", str(path)], capsys)
    assert declared in stdout
    code, stdout, _ = call(["size", str(path), "--scenario", "average"], capsys)
    assert code == 0 and "W627" not in stdout and "IT 160 kW peak, 96 kW average" in stdout
    _, stdout, _ = call(["size", str(path), "--scenario", "half", "--format", "json"], capsys)
    (w,) = [d for d in json.loads(stdout)["diagnostics"] if d["code"] == "W627"]
    assert "for 80 kW of its IT load" in w["message"]


def test_render_under_a_scenario_counts_the_warnings_accepted_there(tmp_path, capsys):
    # `allow W627` accepts the declared design's W627; under `average` (the site's utilization
    # set) there is no W627 to accept, as `size --scenario average` says; under `half` row b's
    # is still there, and accepted
    path = tmp_path / "util.astral"
    path.write_text(UNSTATED + 'allow W627 "metering later"\n', encoding="utf-8")
    picture = str(tmp_path / "p.dot")
    code, stdout, _ = call(["render", str(path), "-o", picture], capsys)
    assert code == 0 and "1 accepted" in stdout
    code, stdout, _ = call(["render", str(path), "-o", picture, "--scenario", "average"], capsys)
    assert code == 0 and "accepted" not in stdout
    _, stdout, _ = call(["size", str(path), "--scenario", "average"], capsys)
    assert "accepted" not in stdout
    _, stdout, _ = call(["render", str(path), "-o", picture, "--scenario", "half"], capsys)
    assert "1 accepted" in stdout


def test_copies_of_a_finding_that_differ_in_their_amounts_are_said_once():
    """allows.once: a scenario's split makes copies of one finding that differ in their
    instances' indices and amounts, an amount with its thousands' comma too (950 and 1,140),
    and are one; findings that differ in their words stay apart."""
    from astral_dsl.diagnostics.diagnostic import Diagnostic, Severity, Span
    from astral_dsl.model.allows import once

    at = Span.at("a.astral", 3, 1, 3, 9)

    def w(message):
        return Diagnostic("W621", Severity.WARNING, message, at)

    a = w("`sus[0]` carries 950 kW, past its 900 kW")
    b = w("`sus[1]` carries 1,140 kW, past its 900 kW")
    c = w("`sus[1]` carries 1,140.5 kW, past its 900 kW")
    assert once([a, b, c]) == (a,)
    other = w("`sus[1]` draws 1,140 kW, past its 900 kW")
    assert once([a, other]) == (a, other)
