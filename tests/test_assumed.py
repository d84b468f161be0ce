"""`assumed "why"`: a value stated as an assumption (docs/language.md, 18.2) gives the design that
uses it W216, on the user's line that brings it in, its related span where it is stated; once
per assumption and place, however far the design replicates the part; silenced by a value of
the user's own, accepted by `allow`. Before, the stdlib marked ~70 values `[assumed]` in
comments only: a design built on them got those numbers with no warning at all."""
from __future__ import annotations

import json

import pytest

import astral_dsl
from astral_dsl.cli import main as cli_main
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse
from astral_dsl.syntax.source import Source

PARTS = """import stdlib.hardware { NVLinkSwitchTray }
import stdlib.cooling { CDU }
gpu G { power = 700 W, memory = 80 GB }
host H { gpus = 8 x G, power = 10.2 kW }
"""
TRAYS = PARTS + """rack R { hosts = 4 x H, trays = 2 x @TRAY@ }
site S { racks = @N@ x R }
"""


def _at(text: str, needle: str, nth: int = 0):
    """(line, column) of the `nth` occurrence of `needle` in `text`, 1-based."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def _design(text: str, **kw):
    return astral_dsl.check(astral_dsl.compiles(text, name="d.astral", **kw))


def _w216(text: str, **kw):
    return [d for d in _design(text, **kw).diagnostics if d.code == "W216"]


def _trays(tray: str = "NVLinkSwitchTray", n: int = 2) -> str:
    return TRAYS.replace("@TRAY@", tray).replace("@N@", str(n))


def test_assumed_parses_after_a_field_a_parameters_default_and_a_param():
    tree = parse(Source("a.astral", 'param n = 4 assumed "four"\n'
                                    'switch Sw(p: power = 0.8 kW assumed "no data", q = 3) {\n'
                                    '  power = p\n'
                                    '  liquid_share = 85 % assumed "cold plates"\n'
                                    '  units = 1 U\n'
                                    '}\n'))
    param, decl = tree.items
    assert param.assumed.reason.value == "four" and param.default.value == 4
    p, q = decl.params
    assert p.assumed.reason.value == "no data" and p.default.text == "0.8 kW"
    assert q.assumed is None
    power, share, units = decl.body
    assert power.assumed is None and units.assumed is None
    assert share.assumed.reason.value == "cold plates" and share.value.text == "85 %"
    assert (share.assumed.span.start.line, share.assumed.span.start.column) == (4, 23)
    # `assumed` is never a unit: `4 assumed` is the number 4, assumed
    tree = parse(Source("b.astral", 'gpu G { sms = 4 assumed "x" }'))
    (field,) = tree.items[0].body
    assert isinstance(field.value, ast.Number) and field.assumed is not None


def test_a_stdlib_assumption_warns_on_the_users_line_naming_the_value_unit_and_reason():
    text = _trays()
    found = {d.message.split(" is assumed")[0]: d for d in _w216(text)}
    assert set(found) == {"`power` of switch `NVLinkSwitchTray`",
                          "`liquid_share` of switch `NVLinkSwitchTray`"}
    d = found["`power` of switch `NVLinkSwitchTray`"]
    assert d.message == ("`power` of switch `NVLinkSwitchTray` is assumed: 0.8 kW (no data "
                         "sheet gives it)")
    # the user's `2 x NVLinkSwitchTray`, not the stdlib's line
    assert (d.span.file, d.span.start.line, d.span.start.column) == \
        ("d.astral",) + _at(text, "NVLinkSwitchTray }", 1)
    stdlib = (astral_dsl.resources.stdlib_dir() / "hardware.astral").read_text(encoding="utf-8")
    line, column = _at(stdlib, "0.8 kW assumed")
    # the stdlib's line that states it: the related span
    (r,) = d.related
    assert (r.message, r.span.file, r.span.start.line, r.span.start.column) == \
        ("assumed here", "stdlib/hardware.astral", line, column)
    assert "switch MyNVLinkSwitchTray = NVLinkSwitchTray { power = ... }" in d.hint
    assert 'allow W216 "why"' in d.hint


def test_a_parameters_assumed_default_warns_where_the_template_is_used():
    text = PARTS + ("rack R { hosts = 4 x H }\n"
                    "site S {\n  racks = 2 x R\n  loop l { supply = 35 degC, rise = 10 K, "
                    "cdu = CDU(capacity = 1 MW), cdus = 1, serves = racks }\n}\n")
    found = sorted(d.message for d in _w216(text))
    assert found == [
        "parameter `gap` of cdu `CDU` takes its assumed default: 3 K (data sheets rate "
        "liquid-to-liquid CDUs at 2-5 K)",
        "parameter `rise` of cdu `CDU` takes its assumed default: 10 K (the usual warm-water "
        "secondary-loop rise)"]                      # not `capacity`: the design gives it
    for d in _w216(text):
        assert (d.span.file,) + (d.span.start.line, d.span.start.column) == \
            ("d.astral",) + _at(text, "CDU(capacity")
        assert [(r.message, r.span.file) for r in d.related] == \
            [("assumed here", "stdlib/cooling.astral")]


def test_a_value_of_the_users_own_silences_it():
    # a part of the user's own that states both values, and an argument for the default
    mine = PARTS + ("switch Tray = NVLinkSwitchTray { power = 0.9 kW, liquid_share = 80 % }\n"
                    "rack R { hosts = 4 x H, trays = 2 x Tray }\nsite S { racks = 2 x R }\n")
    assert _w216(mine) == []
    by_argument = _trays("NVLinkSwitchTray(power = 0.9 kW, liquid_share = 80 %)")
    assert _w216(by_argument) == []
    half = _trays("NVLinkSwitchTray(power = 0.9 kW)")
    assert [d.message.split(" is")[0] for d in _w216(half)] == \
        ["`liquid_share` of switch `NVLinkSwitchTray`"]
    # a body that sets the field the default is read by: HGX8's assumed 75 % is not used
    hgx = ("import stdlib.hardware { HGX8, H100_SXM, CX7_400G }\n"
           "host N = HGX8(gpu = H100_SXM, nic = CX7_400G)@BODY@\nsite S { h = 2 x N }\n")
    assert any("liquid_share" in d.message for d in _w216(hgx.replace("@BODY@", "")))
    assert _w216(hgx.replace("@BODY@", " { liquid_share = 0 % }")) == []


def _places(d):
    """(line, column) of `d`'s first place and of the further places its related spans name."""
    return [(d.span.start.line, d.span.start.column)] + \
        [(r.span.start.line, r.span.start.column) for r in d.related
         if r.message == "also brought in here"]


def test_replication_does_not_multiply_it_and_each_place_is_told():
    one, many = (sorted(d.message for d in _w216(_trays(n=n))) for n in (1, 100_000))
    assert one == many and len(many) == 2           # 200,000 trays: still two warnings
    # two places of the user's file that ask for the same instance: each is told, in one
    # warning at the first, the second its related span (there were two warnings)
    text = PARTS + ("rack R { hosts = 4 x H, trays = 2 x NVLinkSwitchTray }\n"
                    "rack Q { hosts = 2 x H, trays = 4 x NVLinkSwitchTray }\n"
                    "site S { racks = [R, Q] }\n")
    found = sorted((d.message.split(" is")[0], _places(d)) for d in _w216(text))
    r, q = _at(text, "NVLinkSwitchTray }", 1), _at(text, "NVLinkSwitchTray }", 2)
    assert found == [("`liquid_share` of switch `NVLinkSwitchTray`", [r, q]),
                     ("`power` of switch `NVLinkSwitchTray`", [r, q])]
    assert all([x.message for x in d.related] == ["assumed here", "also brought in here"]
               for d in _w216(text))


def test_the_parts_a_stdlib_body_asks_for_warn_where_the_user_asks_for_that_template():
    # NVL72's body asks for its 9 switch trays: each of the user's two racks of NVL72s is told,
    # the first at the warning, the second its related span
    text = ("import stdlib.hardware { NVL72 }\n"
            "site S {\n  a = 2 x NVL72\n  b = 3 x NVL72\n}\n")
    (trays,) = [_places(d) for d in _w216(text)
                if "`power` of switch `NVLinkSwitchTray`" in d.message]
    assert trays == [_at(text, "NVL72\n"), _at(text, "NVL72\n", 1)]


def test_allow_accepts_it_and_the_json_carries_it(tmp_path, capsys):
    path = tmp_path / "d.astral"
    path.write_text(_trays(), encoding="utf-8")
    assert cli_main(["check", "--format", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    (d,) = [d for d in doc["diagnostics"] if d["code"] == "W216" and "`power`" in d["message"]]
    assert d["severity"] == "warning" and d["file"] == str(path)
    assert (d["range"]["start"]["line"], d["range"]["start"]["column"]) == \
        _at(_trays(), "NVLinkSwitchTray }", 1)
    assert [(r["message"], r["file"]) for r in d["related"]] == \
        [("assumed here", "stdlib/hardware.astral")]
    assert "no data sheet gives it" in d["message"] and doc["accepted"] == []
    path.write_text('allow W216 "the vendor sends the tray\'s data sheet in June"\n' + _trays(),
                    encoding="utf-8")
    assert cli_main(["check", "--format", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d for d in doc["diagnostics"] if d["code"] == "W216"] == []
    accepted = doc["accepted"]
    assert sorted(a["code"] for a in accepted) == ["W216", "W216"]
    assert all("data sheet in June" in json.dumps(a) for a in accepted)


def test_an_assumption_in_the_users_own_file_warns_at_itself_once():
    text = PARTS + ('switch Tray(power: power = 0.8 kW assumed "no data sheet") {\n'
                    '  power = power\n  liquid_share = 85 % assumed "cold plates"\n}\n'
                    "rack R { hosts = 4 x H, trays = 2 x Tray, more = 3 x Tray }\n"
                    "rack Q { hosts = 4 x H, trays = 2 x Tray(power = 1 kW) }\n"
                    "site S { racks = [R, Q] }\n")
    found = sorted(((d.span.start.line, d.span.start.column), d.message, d.related)
                   for d in _w216(text))
    assert found == [
        (_at(text, "0.8 kW"), "parameter `power` of switch `Tray` takes its assumed default: "
                              "0.8 kW (no data sheet)", ()),
        (_at(text, "85 %"), "`liquid_share` of switch `Tray` is assumed: 85 % (cold plates)", ())]


def test_a_param_left_to_its_assumed_default_warns_and_set_silences_it():
    text = 'param racks = 8 assumed "a hall of 8 racks until the floor plan"\n' + \
        PARTS + "rack R { hosts = 4 x H }\nsite S { r = racks x R }\n"
    (d,) = _w216(text)
    assert d.message == "parameter `racks` is assumed: 8 (a hall of 8 racks until the floor plan)"
    assert (d.span.start.line, d.span.start.column) == _at(text, "8 assumed")
    assert _w216(text, overrides={"racks": 4}) == []


def test_the_hint_of_an_assumed_param_sets_it_in_the_callers_words(tmp_path, capsys):
    """W216's hint said `--set racks=...` to a Python caller too, who sets it by with_params
    (or `overrides`)."""
    text = 'param racks = 8 assumed "until the floor plan"\n' + \
        PARTS + "rack R { hosts = 4 x H }\nsite S { r = racks x R }\n"
    said = 'state it from a source (or set it: `{}`), or accept it: `allow W216 "why"`'
    (d,) = _w216(text)
    assert d.hint == said.format("with_params(racks=...)")
    path = tmp_path / "d.astral"
    path.write_text(text, encoding="utf-8")
    cli_main(["check", "--format", "json", str(path)])
    (d,) = [d for d in json.loads(capsys.readouterr().out)["diagnostics"] if d["code"] == "W216"]
    assert d["hint"] == said.format("--set racks=...")


def test_assumed_without_a_reason_is_an_error_used_or_not():
    text = "gpu G { power = 700 W assumed, memory = 80 GB }\ngpu Unused { power = 1 kW assumed "\
           '"" }\n'
    found = [d for d in _design(text).diagnostics if d.code == "E223"]
    assert [(d.span.start.line, d.span.start.column) for d in found] == \
        [_at(text, "assumed"), _at(text, "assumed", 1)]
    assert all("says no reason" in d.message and d.hint for d in found)


@pytest.mark.parametrize("value, shown", [("1.2 MW", "1.2 MW"), ("11.80548578 kW",
                                                                     "about 11.81 kW")])
def test_the_value_is_shown_in_its_unit_rounded_to_four_digits(value, shown):
    text = f'gpu G {{ power = {value} assumed "why", memory = 80 GB }}\nsite S {{ g = G }}\n'
    (d,) = _w216(text)
    assert d.message == f"`power` of gpu `G` is assumed: {shown} (why)"


def test_a_forecast_that_does_not_run_leaves_out_the_warnings_the_design_accepts(capsys):
    # examples/gb200_nvl72.astral accepts the stdlib's stated assumptions (W212, W216): an
    # unknown --job printed each of them as a warning above its E221
    assert cli_main(["forecast", "examples/gb200_nvl72.astral", "--job", "nope",
                     "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("error[E221]: --job nope: no such job") and "warning[" not in out


def test_assumed_where_it_cannot_stand_is_a_syntax_error_that_says_where_it_can():
    text = 'let x = 3 assumed "three"\nsite S { }\n'
    (d,) = [d for d in _design(text).diagnostics if d.is_error]
    assert d.code == "E103" and (d.span.start.line, d.span.start.column) == _at(text, "assumed")
    assert d.hint.startswith('`assumed "why"` follows a field\'s value, a template parameter\'s '
                             "default or a `param`'s value")
