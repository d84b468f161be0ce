"""`astral diff` on the design's `let`s and `check`s: a check known by where it is written and
its condition, its outcome, sides and margin (of the tightest distinct instance), paired across
a change of its text; `--exit-code` and JSON agree with the text (the fixture cases
tests/fixtures/diff/let-* and check-* hold the text)."""
from __future__ import annotations

import json
from pathlib import Path

import astral_dsl
from astral_dsl.outputs.diff.checks import check_facts, pairs
from clirun import astral

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "fixtures" / "diff"

# one H is 8 x 700 W = 5.6 kW; R(n = 4) holds 22.4 kW, R(n = 5) 28 kW
DESIGN = """\
gpu G { power = 700 W }
host H { gpus = 8 x G }
let limit = LIMIT
rack R(n = 4) {
  hosts = n x H
  check power <= limit else error "over the busway"
}
site S {
  racks = [2 x R, 3 x R(n = 5)]
  utilization = 75 %
  check racks.power <= 45 kW
  rack spare { hosts = 1 x H, check power   // a condition on two lines
     <= 10 kW }
}
check limit > 0 W
"""


def _facts(tmp_path, limit="25 kW"):
    f = tmp_path / "d.astral"
    f.write_text(DESIGN.replace("LIMIT", limit), encoding="utf-8")
    design = astral_dsl.load(str(f))
    return design, check_facts(design.checks, design.file, lambda p: p)


def test_a_check_is_known_by_where_it_is_written(tmp_path):
    design, (facts, anchors) = _facts(tmp_path)
    assert list(facts) == ["R: power <= limit", "S: racks.power <= 45 kW",
                           "S.spare: power <= 10 kW", "top level: limit > 0 W"]
    # R's check, evaluated for its two distinct instances: 3 of the 5 racks (28 kW) fail 25 kW;
    # the sides shown are the tightest one's, 25 - 28 = -3 kW
    assert facts["R: power <= limit"] == {
        "check": "power <= limit", "in": "R", "severity": "error", "message": "over the busway",
        "outcome": "fails", "failing": 3, "instances": 5, "left": "28 kW", "right": "25 kW",
        "margin": "-3 kW", "at": "S.racks[2]"}
    # a group against one value: the largest rack's 28 kW, 45 - 28 = 17 kW
    assert facts["S: racks.power <= 45 kW"] == {
        "check": "racks.power <= 45 kW", "in": "S", "severity": "error", "outcome": "holds",
        "left": "28 kW", "right": "45 kW", "margin": "17 kW"}
    # written over two lines with a comment between: one line, without the comment; 10 - 5.6
    assert facts["S.spare: power <= 10 kW"]["margin"] == "4.4 kW"
    assert facts["top level: limit > 0 W"]["margin"] == "25000 W"     # in the right's unit
    assert anchors["R: power <= limit"] == ("", "R", "over the busway", "power")


def test_a_failing_check_written_over_two_lines_names_its_condition(tmp_path):
    f = tmp_path / "d.astral"
    f.write_text(DESIGN.replace("LIMIT", "45 kW").replace("<= 10 kW", "<= 5 kW"),
                 encoding="utf-8")
    proc = astral("check", str(f))
    # it said "check failed: `...`"
    assert "error[E500]: check failed: `power <= 5 kW`" in proc.stdout + proc.stderr
    assert "left side: 5.6 kW; right side: 5 kW" in proc.stdout + proc.stderr


def test_sides_compare_by_value(tmp_path):
    """`let limit = 25_000 W` is `25 kW`: the checks that use it do not change."""
    from astral_dsl import api

    a = tmp_path / "a.astral"
    b = tmp_path / "b.astral"
    a.write_text(DESIGN.replace("LIMIT", "25 kW"), encoding="utf-8")
    b.write_text(DESIGN.replace("LIMIT", "25_000 W"), encoding="utf-8")
    assert api.diff(str(a), str(b)).changes == ()
    b.write_text(DESIGN.replace("LIMIT", "30 kW"), encoding="utf-8")
    changes = {c.key: c for c in api.diff(str(a), str(b)).changes}
    assert set(changes) == {"limit", "R: power <= limit", "top level: limit > 0 W",
                            "error[E500] over the busway"}          # the E500 is gone
    assert (changes["limit"].before, changes["limit"].after) == ("25 kW", "30 kW")
    after = changes["R: power <= limit"].after
    # 30 kW holds all five racks; the tightest is 30 - 28 = 2 kW
    assert (after["outcome"], after["margin"], after["at"]) == ("holds", "2 kW", "S.racks[2]")
    assert "failing" not in after


def test_pairing_by_text_then_message_then_left_side():
    def anchor(owner, message="", subject=""):
        return ("", owner, message, subject)

    a = {"R: power <= 45 kW": anchor("R", subject="power"),
         "R: gpus == 32": anchor("R", "a rack of 32 GPUs", "gpus"),
         "R: count(hosts) == 4": anchor("R", subject="count(hosts)"),
         "S: power <= 1 MW": anchor("S", subject="power"),
         "S: power >= 1 kW": anchor("S", subject="power")}
    b = {"R: power <= 44 kW": anchor("R", subject="power"),
         "R: gpus == 40": anchor("R", "a rack of 32 GPUs", "gpus"),
         "R: count(hosts) == 4": anchor("R", subject="count(hosts)"),
         "S: power <= 2 MW": anchor("S", subject="power"),
         "S: power >= 2 kW": anchor("S", subject="power"),
         "T: power <= 44 kW": anchor("T", subject="power")}
    assert pairs(list(a), list(b), a, b) == [
        ("R: power <= 45 kW", "R: power <= 44 kW"),      # the only `power` of R left
        ("R: gpus == 32", "R: gpus == 40"),              # the same message
        ("R: count(hosts) == 4", "R: count(hosts) == 4"),
        ("S: power <= 1 MW", None),                      # two `power`s of S: no guess
        ("S: power >= 1 kW", None),
        (None, "S: power <= 2 MW"), (None, "S: power >= 2 kW"), (None, "T: power <= 44 kW")]


def test_json_and_exit_code_agree_with_the_text():
    folder = CASES / "check-flipped"
    proc = astral("diff", "a.astral", "b.astral", "--format", "json", cwd=folder)
    assert proc.returncode == 1                      # B's check fails: an error
    doc = json.loads(proc.stdout)
    assert doc["changes"]["lets"] == [{"key": "limit", "kind": "changed", "before": "45 kW",
                                       "after": "40 kW"}]
    # 4 servers x 10.2 kW = 40.8 kW: 45 - 40.8 = 4.2 kW, then 40 - 40.8 = -0.8 kW
    message = "the rack draws more than its busway's rating"
    assert doc["changes"]["checks"] == [{
        "key": "Rack: power <= limit", "kind": "changed",
        "before": {"check": "power <= limit", "in": "Rack", "severity": "error",
                   "message": message, "outcome": "holds", "left": "40.8 kW",
                   "right": "45 kW", "margin": "4.2 kW"},
        "after": {"check": "power <= limit", "in": "Rack", "severity": "error",
                  "message": message, "outcome": "fails", "failing": 1, "instances": 1,
                  "left": "40.8 kW", "right": "40 kW", "margin": "-0.8 kW"}}]
    for case, code in (("check-limit", 1), ("check-added", 1), ("check-removed", 1),
                       ("let-value", 1), ("let-respelt", 0)):
        proc = astral("diff", "a.astral", "b.astral", "--exit-code", cwd=CASES / case)
        assert proc.returncode == code, (case, proc.stdout)


def test_a_check_of_an_imported_module_names_its_file(tmp_path):
    (tmp_path / "astral.toml").write_text("", encoding="utf-8")
    (tmp_path / "lib.astral").write_text("let budget = 45 kW\ncheck budget > 40 kW\n",
                                         encoding="utf-8")
    main = "import lib\ngpu G { power = 700 W }\nsite S { gpus = 1 x G, utilization = 75 % }\n"
    (tmp_path / "a.astral").write_text(main, encoding="utf-8")
    (tmp_path / "b.astral").write_text(main + "check 1 W > 0 W\n", encoding="utf-8")
    proc = astral("diff", "a.astral", "b.astral", "--format", "json", cwd=tmp_path)
    doc = json.loads(proc.stdout)
    assert [c["key"] for c in doc["changes"]["checks"]] == ["top level: 1 W > 0 W"]
    proc = astral("diff", "a.astral", "a.astral", "--format", "json", cwd=tmp_path)
    assert json.loads(proc.stdout)["identical"]
    from astral_dsl.api import check, compile as compile_

    design = check(compile_(str(tmp_path / "a.astral"))).design
    facts, _ = check_facts(design.checks, design.file,
                           lambda p: str(Path(p).relative_to(tmp_path)))
    assert list(facts) == ["top level (lib.astral): budget > 40 kW"]
