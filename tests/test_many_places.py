"""A warning about a value of the stdlib's that the user's files bring in at many places (W212,
W215, W216) is said once, at the first place, the next MAX_PLACES as its related spans ("also
brought in here") and a note for the rest, as rustc and Elm would: in the text with a snippet
each, in JSON as `related`, in an editor as relatedInformation. Before, W212 and W216 were said
at every place (a stdlib NVL72 brought in from 1,000 lines: 3,000 W212 and 5,000 W216, 94,000
lines of text) and W215 at the first place only. Places that different `allow`s accept stay
apart, so each still accepts what it did."""
from __future__ import annotations

import json
from collections import Counter

import astral_dsl
from astral_dsl.diagnostics import MAX_PLACES, Diagnostic, Severity, Span, gathered
from astral_dsl.lsp.analysis import analyse
from astral_dsl.lsp.placed import placed
from astral_dsl.lsp.published import converted
from astral_dsl.outputs.human import render
from clirun import astral
from test_lsp_publish import _Client

ALSO = "also brought in here"


def _racks(n: int) -> str:
    return "import stdlib.hardware { NVL72 }\nsite S {\n" + \
        "".join(f"  r{i} = 1 x NVL72\n" for i in range(n)) + "}\n"


def _found(text: str):
    return astral_dsl.check(astral_dsl.compiles(text, name="d.astral")).diagnostics


def _also(d):
    """The lines of the further places `d` names."""
    return [r.span.start.line for r in d.related if r.message == ALSO]


def test_a_thousand_places_give_as_many_warnings_as_one():
    one, many = _found(_racks(1)), _found(_racks(1000))
    counts = Counter(d.code for d in many)
    assert counts == Counter(d.code for d in one)
    assert counts["W212"] == 3 and counts["W216"] == 5       # were 3,000 and 5,000
    for d in many:
        if d.code in ("W212", "W216"):
            assert d.span.start.line == 3                    # the first place: `r0 = 1 x NVL72`
            assert _also(d) == list(range(4, 4 + MAX_PLACES))
            assert d.notes[-1] == f"and {1000 - 1 - MAX_PLACES} more places bring it in"
            # the stdlib's line, where the warning has one, is still the first related span
            assert all(r.message != ALSO and r.span.file.startswith("stdlib/")
                       for r in d.related[:-MAX_PLACES])
    # a few places: each named, no note of more
    (w,) = [d for d in _found(_racks(3)) if d.code == "W212" and "NVL72_Rest" in d.message]
    assert _also(w) == [4, 5] and not any("more place" in n for n in w.notes)


def test_the_json_carries_the_further_places_as_related_and_is_the_same_each_run(tmp_path):
    path = tmp_path / "d.astral"
    path.write_text(_racks(20), encoding="utf-8")
    runs = [astral("check", "--format", "json", str(path), cwd=tmp_path) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and runs[0].returncode == 0
    doc = json.loads(runs[0].stdout)
    (w,) = [d for d in doc["diagnostics"] if d["code"] == "W216" and "`power`" in d["message"]]
    assert w["range"]["start"]["line"] == 3 and w["notes"] == ["and 11 more places bring it in"]
    related = [(r["message"], r["file"], r["range"]["start"]["line"]) for r in w["related"]]
    assert related[0][:2] == ("assumed here", "stdlib/hardware.astral")
    assert w["file"] == "d.astral"
    assert related[1:] == [(ALSO, "d.astral", line) for line in range(4, 4 + MAX_PLACES)]


def test_the_text_shows_each_further_place_with_its_snippet(tmp_path):
    # W215, said at the first place only before: now at both, as W212 and W216
    text = ("import stdlib.power { Transformer }\nsite S {\n"
            "  a = Transformer(rating = 3000 kVA)\n  b = Transformer(rating = 3000 kVA)\n}\n")
    (tmp_path / "d.astral").write_text(text, encoding="utf-8")
    out = astral("check", "d.astral", cwd=tmp_path).stdout
    block = out[out.index("warning[W215]"):]
    block = block[:block.index("\n\n")].split("\n")
    assert block[1:] == [
        " --> d.astral:3:7",
        "  |",
        "3 |   a = Transformer(rating = 3000 kVA)",
        "  |       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "  = hint: state the value from the equipment's data sheet, or keep to the table's "
        "range (15 kVA to 2500 kVA)",
        f"note: {ALSO}",
        " --> d.astral:4:7",
        "  |",
        "4 |   b = Transformer(rating = 3000 kVA)",
        "  |       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"]
    # 1,000 places: some lines per warning, not some 94,000 in all
    (tmp_path / "many.astral").write_text(_racks(1000), encoding="utf-8")
    many = astral("check", "many.astral", cwd=tmp_path).stdout
    assert many.count("warning[W216]") == 5 and len(many.split("\n")) < 600


def test_an_editor_gets_the_further_places_as_related_information(tmp_path):
    text = _racks(3)
    main = tmp_path / "main.astral"
    main.write_text(text, encoding="utf-8")
    found = placed(analyse(main.as_uri(), main, text, 1))
    (d,) = [d for d in converted(_Client(True), found, text, main.as_uri())
            if d.code == "W216" and "`power`" in d.message]
    assert d.range.start.line == 2                   # 0-based: `r0 = 1 x NVL72`
    also = [(i.location.uri, i.location.range.start.line) for i in d.related_information
            if i.message == ALSO]
    assert also == [(main.as_uri(), 3), (main.as_uri(), 4)]


PARTS = """import stdlib.hardware { NVLinkSwitchTray }
gpu G { power = 700 W, memory = 80 GB }
host H { gpus = 8 x G, power = 10.2 kW }
"""


def test_places_an_allow_accepts_stay_apart_from_those_it_does_not(tmp_path):
    # an `allow` in rack R's body covers R's place, not Q's: R's warnings are accepted, Q's
    # reported, whichever place comes first, and the allow is not stale
    for order in ("[R, Q]", "[Q, R]"):
        text = PARTS + ("rack R {\n  allow W216 \"the vendor's tray data sheet is due\"\n"
                        "  hosts = 4 x H, trays = 2 x NVLinkSwitchTray\n}\n"
                        "rack Q { hosts = 2 x H, trays = 4 x NVLinkSwitchTray }\n"
                        f"site S {{ racks = {order} }}\n")
        (tmp_path / "d.astral").write_text(text, encoding="utf-8")
        doc = json.loads(astral("check", "--format", "json", "d.astral", cwd=tmp_path).stdout)
        q = text.count("\n", 0, text.index("rack Q")) + 1
        r = text.count("\n", 0, text.index("trays = 2 x")) + 1
        reported = [(d["code"], d["range"]["start"]["line"], d.get("related", [])[1:])
                    for d in doc["diagnostics"] if d["code"] == "W216"]
        assert reported == [("W216", q, []), ("W216", q, [])], order
        assert [(a["code"], a["range"]["start"]["line"]) for a in doc["accepted"]] == \
            [("W216", r), ("W216", r)]


def test_gathered_keeps_apart_what_differs_and_each_place_once():
    def w(line: int, message: str = "m", code: str = "W216") -> Diagnostic:
        return Diagnostic(code, Severity.WARNING, message, Span.at("d.astral", line, 1))

    found = gathered([w(3), w(1, "other"), w(2), w(3), w(4, code="W212"), w(5)])
    assert [(d.code, d.message, d.span.start.line, [r.span.start.line for r in d.related])
            for d in found] == [("W216", "m", 3, [2, 5]), ("W216", "other", 1, []),
                                ("W212", "m", 4, [])]
    # `apart`: the same finding that different allows accept, as two
    apart = gathered([w(1), w(2), w(3)], lambda d: d.span.start.line == 2)
    assert [(d.span.start.line, [r.span.start.line for r in d.related]) for d in apart] == \
        [(1, [3]), (2, [])]
