"""A diagnostic that the user's use of a stdlib template causes stands on the user's line that
brings the template in (its call, `racks = 2 x NVL72`, or the user's template deriving it), as
rustc puts its primary span in the user's code; the stdlib's line is its related span (a
labelled secondary span: `note:` with its own snippet in the text, `related` ranges in JSON,
relatedInformation in the language server). Before, W212 of NVL72's trays, W642, W631 and W626
at a stdlib template's declaration, E627 and E644 at a value the stdlib states and a scenario's
`set` on a stdlib instance's field stood in the stdlib, which the user does not edit, with a
note naming the user's line (or none)."""
from __future__ import annotations

import json

import jsonschema

import astral_dsl
from astral_dsl import resources
from astral_dsl.diagnostics import Diagnostic, Related, Severity, Span
from astral_dsl.outputs.human import MAX_SHOWN, render
from clirun import astral


def _at(text: str, needle: str):
    """(line, column) of `needle` in `text`, 1-based."""
    at = text.index(needle)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def _stdlib_line(name: str, needle: str) -> int:
    text = (resources.stdlib_dir() / name).read_text(encoding="utf-8")
    return text.count("\n", 0, text.index(needle)) + 1


def _found(text: str, code: str, word: str = ""):
    ws = astral_dsl.compiles(text, name="d.astral")
    return [d for d in astral_dsl.check(ws).diagnostics if d.code == code and word in d.message]


def _primary(d):
    return d.span.file, d.span.start.line, d.span.start.column


def _related(d):
    return [(r.message, r.span.file, r.span.start.line) for r in d.related]


RACKS = """import stdlib.hardware { NVL72 }
import stdlib.power { Transformer }
site S {
  racks = 2 x NVL72
  mv = Transformer(rating = 2500 kVA)
}
"""


def test_w212_of_the_trays_stands_at_the_users_nvl72_the_stdlibs_line_related():
    # stood at stdlib/hardware.astral:499:16 (NVL72's `18 x GB200_Tray(...)`) with a note
    # "host `GB200_Tray` comes into the design at d.astral:4:15"
    found = _found(RACKS, "W212", "GB200_Tray")
    assert len(found) == 2
    tray = _stdlib_line("hardware.astral", "x GB200_Tray(nic = nic, dpu = dpu)")
    for w in found:
        assert _primary(w) == ("d.astral",) + _at(RACKS, "NVL72\n")
        assert _related(w) == [("host `GB200_Tray` is made here", "stdlib/hardware.astral", tray)]
        assert not any("comes into the design" in n for n in w.notes)


def test_w626_and_w631_at_a_stdlib_templates_declaration_stand_at_the_users_line():
    (w626,) = _found(RACKS, "W626")
    assert _primary(w626) == ("d.astral",) + _at(RACKS, "NVL72\n")
    assert _related(w626) == [("rack `NVL72` is declared here", "stdlib/hardware.astral",
                               _stdlib_line("hardware.astral", "rack NVL72("))]
    (w631,) = _found(RACKS, "W631")
    assert _primary(w631) == ("d.astral",) + _at(RACKS, "Transformer(rating")
    assert _related(w631) == [("transformer `Transformer` is declared here",
                               "stdlib/power.astral",
                               _stdlib_line("power.astral", "transformer Transformer("))]


DOORS = """import stdlib.cooling { RearDoor }
host H { power = 15 kW }
rack R { hosts = 4 x H }
site S {
  racks = 2 x R
  doors = RearDoor()
}
"""


def test_w642_and_e644_of_a_bare_reardoor_stand_at_the_users_call():
    (w,) = _found(DOORS, "W642", "dew_point")
    assert _primary(w) == ("d.astral",) + _at(DOORS, "RearDoor()")
    assert _related(w) == [("air `RearDoor` is declared here", "stdlib/cooling.astral",
                            _stdlib_line("cooling.astral", "air RearDoor("))]
    (e,) = _found(DOORS, "E644")
    assert _primary(e) == ("d.astral",) + _at(DOORS, "RearDoor()")
    assert _related(e) == [("`RearDoor` states `max_rack_heat` here", "stdlib/cooling.astral",
                            _stdlib_line("cooling.astral", "max_rack_heat = rated"))]


def test_what_the_stdlib_states_of_the_users_own_derived_part_stands_at_its_line():
    # `transformer mv = Transformer(rating = 500 kVA)`: the user's part, made from a stdlib
    # template; E634 stood at Transformer's `count = units` in stdlib/power.astral
    text = RACKS.replace("  mv = Transformer(rating = 2500 kVA)",
                         "  transformer mv = Transformer(rating = 100 kVA)")
    (e,) = _found(text, "E634")
    assert _primary(e) == ("d.astral",) + _at(text, "mv = Transformer")
    assert _related(e) == [("the stdlib states `count` of `mv` here", "stdlib/power.astral",
                            _stdlib_line("power.astral", "count = units"))]
    # a value the user's line gives stays where it is written
    two = text.replace("(rating = 100 kVA)", "(rating = 100 kVA, units = 2)")
    (e,) = _found(two, "E634")
    line, column = _at(two, "units = 2")
    assert _primary(e) == ("d.astral", line, column + len("units = "))
    assert _related(e) == [("`mv` reads it as `count`", "stdlib/power.astral",
                            _stdlib_line("power.astral", "count = units"))]


def test_a_scenarios_set_on_a_stdlib_instances_field_stands_at_the_set():
    # `set S.doors.max_rack_heat = 10 kW` breaks E644: it stood at RearDoor's
    # `max_rack_heat = rated` in stdlib/cooling.astral
    text = DOORS.replace("15 kW", "5 kW").replace("RearDoor()", "RearDoor(rated = 40 kW)") + \
        "scenario hot {\n  set S.doors.max_rack_heat = 10 kW\n}\n"
    ws = astral_dsl.compiles(text, name="d.astral")
    (hot,) = astral_dsl.check(ws, all_scenarios=True).scenarios
    (e,) = [d for d in hot.broken if d.code == "E644"]
    assert e.span.file == "d.astral" and e.span.start.line == _at(text, "set S.doors")[0]


def test_the_text_shows_the_related_span_as_a_note_with_its_snippet():
    (w,) = _found(DOORS, "W642", "dew_point")
    lines = {"d.astral": DOORS.split("\n"),
             "stdlib/cooling.astral": (resources.stdlib_dir() / "cooling.astral")
             .read_text(encoding="utf-8").split("\n")}
    shown = render(w, lambda f, n: lines[f][n - 1] if n <= len(lines[f]) else None)
    decl = _stdlib_line("cooling.astral", "air RearDoor(")
    head, note = shown.split("\nnote: ")
    assert "--> d.astral:6:11" in head and "doors = RearDoor()" in head
    # the declaration's line as a snippet shows a line: whole, or cut to MAX_SHOWN characters
    # from its start (the span is at column 1) and marked `...` (its `assumed` reasons made it
    # long)
    line = lines["stdlib/cooling.astral"][decl - 1]
    shown_line = line if len(line) <= MAX_SHOWN else line[:MAX_SHOWN] + "..."
    assert note.split("\n")[:4] == [
        "air `RearDoor` is declared here",
        f"  --> stdlib/cooling.astral:{decl}:1",
        "   |",
        f"{decl} | " + shown_line]


def test_json_carries_the_related_ranges_and_validates(tmp_path):
    path = tmp_path / "d.astral"
    path.write_text(DOORS, encoding="utf-8")
    proc = astral("check", str(path), "--format", "json", cwd=tmp_path)
    doc = json.loads(proc.stdout)
    schema = json.loads((resources.schema_dir() / "check.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    (w,) = [d for d in doc["diagnostics"] if d["code"] == "W642" and "dew_point" in d["message"]]
    line, column = _at(DOORS, "RearDoor()")
    assert w["range"]["start"] == {"line": line, "column": column}
    decl = _stdlib_line("cooling.astral", "air RearDoor(")
    (related,) = w["related"]
    assert related["message"] == "air `RearDoor` is declared here"
    assert related["file"].endswith("stdlib/cooling.astral")     # as its primary's would be
    assert related["range"]["start"] == {"line": decl, "column": 1}
    assert related["range"]["end"]["line"] >= decl


def test_a_diagnostic_without_related_spans_has_no_related_key():
    from astral_dsl.outputs.jsonout import diagnostic_json

    d = Diagnostic("W626", Severity.WARNING, "m", Span.at("a.astral", 1, 1))
    assert "related" not in diagnostic_json(d)
    d = Diagnostic("W626", Severity.WARNING, "m", Span.at("a.astral", 1, 1),
                   related=(Related(Span.at("b.astral", 2, 3, 2, 5), "here"),))
    assert diagnostic_json(d)["related"] == [
        {"message": "here", "file": "b.astral",
         "range": {"start": {"line": 2, "column": 3}, "end": {"line": 2, "column": 5}}}]


def test_a_failed_check_of_a_stdlib_templates_body_stands_at_the_users_call():
    # GB300_NVL72's `check power <= 8 * 33 kW / 2 else warning ...` with a 30 kW rest: W500
    # stood at stdlib/hardware.astral (the check's condition), with no word of the user's line
    text = ("import stdlib.hardware { GB300_NVL72, NVL72_Rest }\n"
            "switch Big = NVL72_Rest { power = 30 kW }\n"
            "site S {\n  racks = 2 x GB300_NVL72(rest = Big)\n}\n")
    (w,) = _found(text, "W500", "power shelves")
    assert _primary(w) == ("d.astral",) + _at(text, "GB300_NVL72(rest")
    assert _related(w) == [("rack `GB300_NVL72` checks it here", "stdlib/hardware.astral",
                            _stdlib_line("hardware.astral", "check power <= 8 * 33 kW / 2"))]
    assert w.notes[0] == "left side: 150.6 kW; right side: 132 kW"


def test_w690_of_a_stdlib_switch_without_power_stands_where_the_user_uses_it():
    text = "import stdlib.hardware { Switch51T }\nsite S { sw = 2 x Switch51T }\n"
    (w,) = _found(text, "W690")
    line, column = _at(text, "x Switch51T")
    assert _primary(w) == ("d.astral", line, column + 2)
    assert _related(w) == [("switch `Switch51T` is declared here", "stdlib/hardware.astral",
                            _stdlib_line("hardware.astral", "switch Switch51T {"))]
    assert w.hint.startswith("`Switch51T` is the stdlib's, not yours to edit")
    assert "`switch MySwitch51T = Switch51T { power = ... }`" in w.hint


def test_w690_of_the_users_own_part_says_to_declare_its_power():
    text = "switch Mine { ports = 64 }\nsite S { sw = 2 x Mine }\n"
    (w,) = _found(text, "W690")
    assert w.hint == ("declare `power` on `Mine` (its data sheet figure), or on the part that "
                      "holds it")


def test_the_review_page_lists_the_related_span_with_the_notes():
    from astral_dsl.outputs.report.sections import diagnostic

    class Review:
        def source(self, file):
            return None

    d = Diagnostic("W626", Severity.WARNING, "no feeder", Span.at("d.astral", 4, 15),
                   notes=("n",), related=(Related(Span.at("stdlib/hardware.astral", 498, 1),
                                                  "rack `NVL72` is declared here"),))
    page = diagnostic(Review(), d)
    assert "<li>note: n</li><li>note: rack `NVL72` is declared here " \
           "(stdlib/hardware.astral:498:1)</li>" in page


def test_the_terminal_shows_the_first_related_spans_and_counts_the_others():
    """E680 of a scenario that breaks 2,000 constraints has a related span each: the terminal
    showed a snippet of each (12,000 lines under its 2,000 notes); now the first 10 and a line
    that counts the others. JSON keeps them all."""
    from astral_dsl.outputs.human import MAX_RELATED
    from astral_dsl.outputs.jsonout import diagnostic_json

    places = tuple(Related(Span.at("d.astral", n, 3, n, 7), "[E628] breaks here")
                   for n in range(1, 2001))
    d = Diagnostic("E680", Severity.ERROR, "required scenario `s` breaks 2000 constraint(s)",
                   Span.at("d.astral", 1, 1), related=places)
    text = render(d, lambda file, n: "  feeder f { }")
    assert MAX_RELATED == 10
    assert text.count("note: [E628] breaks here") == 10
    assert text.endswith("\nnote: and 1,990 more related places, not shown (`--format json` "
                         "lists every one)")
    assert len(text.split("\n")) < 100
    assert "\n 1 |   feeder f { }" in text      # the gutter of the lines shown (10), not 2000's
    assert len(diagnostic_json(d)["related"]) == 2000
