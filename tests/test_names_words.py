"""Names against the words of enumeration fields and against built-in functions
(docs/language.md 5.3): a declaration never changes the meaning of a field's word, a value that
would is W213 at the use, a template named as a built-in is W214 at its declaration, and a value
named as a built-in does not hide it from calls."""
from __future__ import annotations

from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.lsp.analysis import analyse
from astral_dsl.lsp.navigation import Resolver

REPO = Path(__file__).resolve().parents[1]

# 2 racks of 3 hosts under a ToR tier per rack and an agg tier per pod; a DC feeder on side A
BASE = """
fabric F {
  rails = 1, planes = 1, max_oversubscription = 1
  tier tor { switch = Sw, scope = rack, per = [rail, plane], down = 3 x 100 Gb/s, up = 3 x 100 Gb/s }
  tier agg { switch = Sw, scope = pod, down = 3 x 100 Gb/s }
}
gpu G { power = 500 W }  nic N { ports = 2, port_speed = 100 Gb/s }
switch Sw { ports = 8, port_speed = 100 Gb/s, power = 400 W }
host H { gpus = 4 x G, nics = 1 x N }
rack R { hosts = 3 x H }
pod P {
  racks = 2 x R, fabric = F
  feeder fa { current = dc, voltage = 400 V, side = A, capacity = 100 kW, serves = racks }
}
site S { pods = 1 x P }
"""


def _design(extra: str, base: str = BASE):
    return astral_dsl.loads(base + extra, name="t.astral", root=REPO)


def _field(design, path: str, name: str):
    (inst,) = [i for i in design.instances if i.path == path]
    return str(inst.field(name))


def _diags(design):
    return [(d.code, d.message) for d in design.diagnostics]


@pytest.mark.parametrize("extra", [
    "scenario rack { fail S.pods[0].fabric.agg[0] }",           # the brief's case
    "scenario pod { }",                                          # an empty what-if
    "site A { pods = 1 x P }",                                   # a site named as a side
    "rack rail { hosts = 1 x H }",                               # a template named as a `per`
    "import stdlib.power as dc",                                 # an import `as` a current
])
def test_a_declaration_named_as_a_word_leaves_the_fields_word_alone(extra):
    """Each was E303 at every field that wrote the word (`scope = rack`: "not a scenario
    `rack`"), far from the declaration; a declaration is never a word's value, so the word
    wins, silently."""
    d = _design(extra)
    assert [x for x in d.diagnostics if x.severity.value == "error"] == [], _diags(d)
    assert not [x for x in d.diagnostics if x.code == "W213"]
    assert _field(d, "S.pods[0].fabric.tor", "scope") == "rack"
    assert _field(d, "S.pods[0].fabric.agg", "scope") == "pod"
    assert _field(d, "S.pods[0].fabric.tor", "per") == "[rail, plane]"
    assert _field(d, "S.pods[0].fa", "side") == "A"
    assert _field(d, "S.pods[0].fa", "current") == "dc"


def test_a_value_named_as_a_word_is_w213_at_the_use_and_the_word_wins():
    """`let pod = 3`: `scope = pod` was E303 "not a number" with the hint to write one of the
    words, the word it did write; now the word, and W213 at the use naming the let."""
    d = _design("let pod = 3\ncheck pod == 3\n")
    (w,) = [x for x in d.diagnostics if x.code == "W213"]
    assert w.severity.value == "warning"
    assert (w.span.start.line, w.span.start.column) == (5, 35)     # `pod` in `scope = pod`: 13 + 13 + 8 columns before it
    assert w.message == ("`pod` is the word `pod` in `scope` here, not the let `pod` "
                         "(declared at 16:5)")
    assert "rename the let `pod`" in w.hint and '`"pod"`' in w.hint
    assert _field(d, "S.pods[0].fabric.agg", "scope") == "pod"
    assert d.valid                       # the let keeps its value elsewhere: `check pod == 3`


def test_a_template_parameter_named_as_a_word_is_w213():
    d = _design('tier T(pod = "rack") { switch = Sw, scope = pod, down = 3 x 100 Gb/s }\n'
                "fabric F2 { rails = 1, tier t = T() }\n")
    (w,) = [x for x in d.diagnostics if x.code == "W213"]
    assert w.message == "`pod` is the word `pod` in `scope` here, not the parameter `pod`"
    assert (w.span.start.line, w.span.start.column) == (16, 45)     # 23 + 13 + 8 columns before it


def test_a_quoted_word_is_no_warning():
    d = _design("let pod = 3\n", BASE.replace("scope = pod", 'scope = "pod"'))
    assert not [x for x in d.diagnostics if x.code == "W213"], _diags(d)


def test_words_in_a_template_argument_a_scenario_set_and_an_if():
    """The same rule where a field's value is written elsewhere: a keyword argument of a
    template, a scenario's `set`, the branches of an `if` (not its condition)."""
    d = _design("""
scenario dc { set S.pods[0].fa.side = if B > 1 then B else A }
let B = 2
tier T { switch = Sw, down = 3 x 100 Gb/s }
fabric F2 { rails = 1, tier t = T(scope = rack) }
pod Q { racks = 1 x R, fabric = F2 }
site S2 { pods = 1 x Q }
""")
    assert not [x for x in d.diagnostics if x.severity.value == "error"], _diags(d)
    assert _field(d, "S2.pods[0].fabric.t", "scope") == "rack"
    # `B` in the `if`'s branch: the word, with W213 for the let; in its condition, the let
    (w,) = [x for x in d.diagnostics if x.code == "W213"]
    assert w.message == ("`B` is the word `B` in `side` here, not the let `B` (declared at "
                         "18:5)")
    assert (w.span.start.line, w.span.start.column) == (17, 53)
    ws = astral_dsl.compiles(BASE + "scenario dc { set S.pods[0].fa.side = if B > 1 then B "
                             "else A }\nlet B = 2\n", name="t.astral", root=REPO)
    assert astral_dsl.check(ws, ["dc"]).scenarios[0].name == "dc"


def test_a_comparison_beside_a_word_reads_the_words_peer():
    """`recompute != full` beside a `let full = 1` was E303 "cannot compare a name with a
    number". Here `side != B` beside a `let B`: `B` is a word of the enumeration the side's
    value `A` belongs to, so the word; the feeder's side is A, so `== B` fails (E500)."""
    d = _design("let B = 1\ncheck S.pods[0].fa.side != B\ncheck B == 1\n")
    assert d.valid, _diags(d)
    (w,) = [x for x in d.diagnostics if x.code == "W213"]
    assert "a comparison with `A`" in w.message and "the let `B`" in w.message
    failed = _design("check S.pods[0].fa.side == B\n")
    assert not failed.valid and [x.code for x in failed.diagnostics] == ["E500"], \
        _diags(failed)


def test_a_value_named_as_a_builtin_does_not_hide_it_from_calls():
    """`let max = 3` then `max(1, 2)` was E306 "a number cannot be called"."""
    d = _design("let max = 3\ncheck max(1, 2) == 2\ncheck max == 3\n")
    assert d.valid and not d.diagnostics, _diags(d)


def test_a_template_named_as_a_builtin_is_w214_at_its_declaration():
    """`rack max { ... }` then `max(1, 2)` was E307 "`max` takes 0 positional argument(s)" at
    the call only: now W214 at the declaration says the template hides the built-in."""
    d = _design("rack max { hosts = 1 x H }\n")
    (w,) = [x for x in d.diagnostics if x.code == "W214"]
    assert (w.span.start.line, w.span.start.column) == (16, 6)
    assert w.message == ("rack `max` hides the built-in function `max` in this module: "
                         "`max(...)` instantiates the template")
    assert w.hint == "rename the template (e.g. `MaxRack`) to keep the built-in"


def test_the_editor_takes_a_word_for_no_declaration():
    """Go to definition (and so references and rename) on `rack` in `scope = rack` named the
    scenario `rack`; a word names nothing, the scenario's own uses still resolve."""
    text = BASE + "scenario rack { fail S.pods[0].fabric.agg[0] }\n"
    a = analyse("file:///t.astral", None, text, engineering=False)
    resolver = Resolver(a, a.entry)
    line = text.splitlines().index(
        [x for x in text.splitlines() if "tier tor" in x][0])
    col = text.splitlines()[line].index("scope = rack") + len("scope = ") + 1
    chain, found = resolver.at(line + 1, col + 1)
    assert chain[-1].name == "rack" and found is None
    per = text.splitlines()[line].index("[rail") + 2
    assert resolver.at(line + 1, per + 1)[1] is None
    # the scenario's own name still resolves to its declaration
    last = len(text.splitlines())
    chain, found = resolver.at(last, len("scenario r") + 1)
    assert found is not None and found.what == "declaration"


@pytest.mark.parametrize("extra, message", [
    # a let `rail`: the comprehension's element read it (E303 "not a number"); now the word
    ("let rail = 3\n", "`rail` is the word `rail` in `per` here, not the let `rail` "
                       "(declared at 16:5)"),
    # a template `rail`: E303 "not a rack `rail`"; a declaration is never a word's value
    ("rack rail { hosts = 1 x H }\n", None),
])
def test_a_comprehensions_items_follow_the_word_rule(extra, message):
    """`per = [rail for i in 0..0]` (one item: `0..0` is inclusive) and `per = [p for p in
    [plane]]` looked `rail` and `plane` up as values, unlike `per = [rail]`."""
    base = BASE.replace("per = [rail, plane]", "per = [rail for i in 0..0]") \
        .replace("scope = pod,", "scope = pod, per = [p for p in [plane]],")
    d = _design(extra, base)
    assert not [x for x in d.diagnostics if x.severity.value == "error"], _diags(d)
    assert _field(d, "S.pods[0].fabric.tor", "per") == "[rail]"
    assert _field(d, "S.pods[0].fabric.agg", "per") == "[plane]"
    assert [x.message for x in d.diagnostics if x.code == "W213"] == \
        ([message] if message else [])


def test_a_loop_variable_named_as_a_word_is_w213_in_its_element():
    """`[rail for rail in 0..0]`: the element `rail` is the word, the variable is not read."""
    d = _design("", BASE.replace("per = [rail, plane]", "per = [rail for rail in 0..0]"))
    assert _field(d, "S.pods[0].fabric.tor", "per") == "[rail]"
    (w,) = [x for x in d.diagnostics if x.code == "W213"]
    assert w.message == "`rail` is the word `rail` in `per` here, not the loop variable `rail`"
    # `  tier tor { ` 13, `switch = Sw, ` 13, `scope = rack, ` 14, `per = [` 7: column 48
    assert (w.span.start.line, w.span.start.column) == (4, 48)


def test_the_editor_takes_a_comprehensions_word_for_no_declaration():
    text = BASE.replace("per = [rail, plane]", "per = [p for p in [rail]]") + \
        "rack rail { hosts = 1 x H }\n"
    a = analyse("file:///t.astral", None, text, engineering=False)
    resolver = Resolver(a, a.entry)
    lines = text.splitlines()
    line = [i for i, x in enumerate(lines) if "tier tor" in x][0]
    col = lines[line].index("in [rail") + len("in [")
    chain, found = resolver.at(line + 1, col + 1)
    assert chain[-1].name == "rail" and found is None


def test_a_template_named_as_a_builtin_is_w214_at_its_import(tmp_path):
    """`import lib { max }` hid the built-in `max` in the importing module with no warning
    there (only at the declaration, in lib's file): `max(1, 2)` then failed as E307. Now W214 at
    the import's name, once; a namespace import (`lib.max`) hides nothing."""
    (tmp_path / "lib.astral").write_text(
        "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nrack max { hosts = 2 x H }\n")
    d = astral_dsl.loads("import lib { max, H }\nimport lib as l\n"
                         "site S { racks = 1 x max, r = l.max }\n", name="main.astral",
                         root=tmp_path)
    ws = [x for x in d.diagnostics if x.code == "W214" and x.span.file.endswith("main.astral")]
    (w,) = ws
    assert (w.span.start.line, w.span.start.column, w.span.end.column) == (1, 14, 17)
    assert w.message == ("the imported rack `max` (from `lib`) hides the built-in function "
                         "`max` in this module: `max(...)` instantiates the template")
    assert w.hint == ("import the module as a namespace instead (`import lib as m`, then "
                      "`m.max`) to keep the built-in, or rename the template in `lib`")
