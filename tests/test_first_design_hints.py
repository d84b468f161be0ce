"""The slips a first design makes, each with a hint that says what to write: a stdlib template
used without its import (E200 names the module), `8 * G` for replication (E303: `8 x G`), a block
written `parallel = { ... }` (E103) or a part declared without a name (E203), and W656's
`facility NAME { ... }`."""
from __future__ import annotations

import textwrap

import pytest

import astral_dsl
from astral_dsl.model.kinds import KINDS
from astral_dsl.syntax.errors import RECORD_BLOCKS


def build(text: str, tmp_path):
    return astral_dsl.loads(textwrap.dedent(text).lstrip("\n"), name="main.astral",
                            root=tmp_path)


def only(design, code: str):
    found = [d for d in design.diagnostics if d.is_error]
    assert [d.code for d in found] == [code], [(d.code, d.message) for d in found]
    return found[0]


@pytest.mark.parametrize("name, module", [("H100", "stdlib.hardware"),
                                          ("Llama3_70B", "stdlib.models"),
                                          ("PG25", "stdlib.cooling"),
                                          ("HVDC240", "stdlib.power")])
def test_a_stdlib_template_without_its_import_names_the_module(name, module, tmp_path):
    # was: "import it (`import MODULE { H100 }`)", leaving the module to guess
    d = only(build(f"let x = {name}\n", tmp_path), "E200")
    assert d.hint == f"`{name}` is in the stdlib: import it (`import {module} {{ {name} }}`)"


def test_a_stdlib_name_written_in_other_case_names_it_and_its_module(tmp_path):
    d = only(build("let x = llama3_70b\n", tmp_path), "E200")
    assert d.hint == ("did you mean `Llama3_70B`? It is in the stdlib: import it "
                      "(`import stdlib.models { Llama3_70B }`)")


def test_a_name_nothing_declares_keeps_the_general_hint(tmp_path):
    d = only(build("let x = Nowhere42\n", tmp_path), "E200")
    assert d.hint.startswith("nothing named `Nowhere42` is declared here or imported")


def test_a_name_declared_in_another_body_says_where_and_why_it_is_not_seen(tmp_path):
    # a hall's air unit naming the site's facility water: was "nothing named `fws` is declared
    # here or imported: declare it (`let fws = ...`...)", though the file declares it
    d = only(build("""
        host H { power = 10 kW }
        rack R { hosts = 4 x H }
        hall Hall {
          racks = 2 x R
          air crah { supply = 25 degC, rise = 12 K, facility = fws }
        }
        site DC {
          halls = 1 x Hall
          facility fws { supply = 14 degC, rise = 6 K }
        }
        """, tmp_path), "E200")
    assert d.hint == ("`fws` is the facility declared in `DC` (main.astral:9): a name declared "
                      "in a body is seen only inside that body (docs/language.md, section 5.3); "
                      "a loop's or air unit's `facility` left out draws on the circuit declared "
                      "nearest above it")
    # any other kind: name it from inside, or declare it at the top level
    d = only(build("""
        site S { gpu inner { power = 1 kW } }
        let x = inner
        """, tmp_path), "E200")
    assert d.hint.endswith("(docs/language.md, section 5.3): name it from inside that body, or "
                           "declare it at the top level")


@pytest.mark.parametrize("expr, written", [("8 * G", "8 x G"), ("n * G", "n x G")])
def test_star_for_replication_says_x(expr, written, tmp_path):
    d = only(build(f"""
        gpu G {{ power = 700 W }}
        param n = 4
        host N {{ gpus = {expr} }}
        """, tmp_path), "E303")
    assert d.hint == f"replication is written with `x`, not `*`: `{written}`"


def test_a_quantity_times_a_template_keeps_the_arithmetic_hint(tmp_path):
    d = only(build("gpu G { power = 700 W }\nlet y = 2 W * G\n", tmp_path), "E303")
    assert d.hint.startswith("arithmetic works on numbers and quantities")


def test_record_block_with_equals_and_braces_is_e103_with_a_hint(tmp_path):
    # was E103 with no hint at all ("unexpected `{`; expected `(`, ...")
    d = only(build("""
        job j {
          parallel = { tp = 8, pp = 4 }
        }
        """, tmp_path), "E103")
    assert (d.span.start.line, d.span.start.column) == (2, 14)
    assert d.hint == "a block is written without `=`: `parallel { ... }`"


def test_braces_after_a_field_say_how_a_part_is_declared(tmp_path):
    d = only(build("site S { fabric = { rails = 8 } }\n", tmp_path), "E103")
    assert d.hint == ("braces hold no value: declare a part here with its kind and a name "
                      "(`fabric NAME { ... }`), or set the field to a template's name "
                      "(`fabric = NAME`)")


def test_the_record_blocks_the_syntax_hint_knows_are_the_kinds():
    records = {name for spec in KINDS.values() for name in spec.records}
    assert set(RECORD_BLOCKS) == records


def test_a_nested_kind_without_a_name_says_to_name_it(tmp_path):
    # was E203 "a site has no block `fabric`" with no hint
    d = only(build("site S { fabric { rails = 8 } }\n", tmp_path), "E203")
    assert d.hint == "a fabric declared here needs a name: `fabric NAME { ... }`"


def checked(text: str, tmp_path):
    path = tmp_path / "main.astral"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return astral_dsl.check(str(path))


NO_FACILITY = """
    import stdlib.cooling { Water }
    gpu G { power = 700 W, liquid_share = 80 % }
    host N { gpus = 8 x G }
    rack R { hosts = 4 x N }
    site S {
      racks = 2 x R
      utilization = 80 %
      loop plates { fluid = Water, supply = 40 degC, rise = 10 K, serves = racks }
      air room { supply = 27 degC, rise = 12 K }
    }
    """


def test_w656_hint_declares_a_named_facility(tmp_path):
    design = checked(NO_FACILITY, tmp_path)
    w656 = [d for d in design.diagnostics if d.code == "W656"]
    assert w656 and w656[0].hint.startswith("declare `facility NAME { ... }` in the site")
    # and what it says to write is accepted
    air = "air room { supply = 27 degC, rise = 12 K }"
    fixed = checked(NO_FACILITY.replace(
        air, air + "\n      facility water { supply = 16 degC, rise = 6 K }"), tmp_path)
    assert not [d for d in fixed.diagnostics if d.is_error or
                d.message.startswith("no `facility` is declared")], fixed.diagnostics


def test_a_check_message_without_its_severity_says_else_error(tmp_path):
    # was E103 "unexpected `\"too much\"`; expected a name" with no hint
    d = only(build('site S {\n  check power <= 1 MW else "too much"\n}\n', tmp_path), "E103")
    assert (d.span.start.line, d.span.start.column) == (2, 28)
    assert d.hint == ('`else` takes the severity before the message: `else error "too much"` '
                      '(or `warning`)')
    # an `if`'s `else` takes a string as its value, as before
    assert not build('let a = if true then "x" else "y"\n', tmp_path).diagnostics


NODE = "gpu G { power = 700 W }\nhost N { gpus = 8 x G, power = 10.2 kW }\n"


def test_a_member_named_after_a_param_that_is_also_a_roll_up_says_so(tmp_path):
    # `hosts = hosts x N` reads the rack's roll-up `hosts`, not the param: the hint said only
    # "break the cycle: one of the values must not refer back"
    d = only(build("param hosts = 4\n" + NODE + "rack R { hosts = hosts x N }\n"
                   "site S { racks = 2 x R }\n", tmp_path), "E404")
    assert d.message == "`hosts` of rack `R` depends on itself"
    assert d.hint == ("in rack `R`, `hosts` is its roll-up (what it holds, this field included), "
                      "not the module's `hosts`: rename that (e.g. `hosts_per_rack`)")
    # renamed, it holds
    assert not [x for x in build("param hosts_per_rack = 4\n" + NODE +
                                 "rack R { hosts = hosts_per_rack x N }\n"
                                 "site S { racks = 2 x R }\n", tmp_path).diagnostics if x.is_error]


def test_a_member_built_from_a_roll_up_beside_a_param_of_its_name_says_so(tmp_path):
    # `param racks = 8` and `site S { r = racks x R }`: `racks` there is the site's roll-up
    # (section 5.3: the roll-ups come before the module), which holds `r`; it said only
    # "`r` of site `S` depends on itself", at `r`, "break the cycle: ..."
    d = only(build("param racks = 8\n" + NODE + "rack R { hosts = 4 x N }\n"
                   "site S { r = racks x R }\n", tmp_path), "E404")
    assert d.message == "`r` of site `S` depends on itself through the roll-up `racks`"
    assert (d.span.start.line, d.span.start.column, d.span.end.column) == (5, 14, 19)
    assert d.hint == ("in site `S`, `racks` is its roll-up (what it holds, `r` included), "
                      "not the module's `racks`: rename that (e.g. `racks_per_site`)")
    # as the hint says, it holds: 8 racks
    design = build("param racks_per_site = 8\n" + NODE + "rack R { hosts = 4 x N }\n"
                   "site S { r = racks_per_site x R\n  check count(racks) == 8 }\n", tmp_path)
    assert not [x for x in design.diagnostics if x.is_error], design.diagnostics
    # no param of that name: the roll-up still holds the member; in an argument, in a pod too
    d = only(build(NODE + "rack R { hosts = 4 x N }\nsite S { r = racks x R }\n", tmp_path),
             "E404")
    assert d.hint == ("in site `S`, `racks` is its roll-up (what it holds, `r` included), so "
                      "`r` cannot use it: give the value it needs a name of its own "
                      "(`param n = 4`)")
    d = only(build(NODE + "rack R(n: count = 1) { hosts = 4 x N }\n"
                   "site S { racks = 2 x R(n = count(gpus)) }\n", tmp_path), "E404")
    assert d.message == "`racks` of site `S` depends on itself through the roll-up `gpus`"
    d = only(build("param racks = 2\n" + NODE + "rack R { hosts = 4 x N }\n"
                   "site S { pod p { r = racks x R } }\n", tmp_path), "E404")
    assert d.message == "`r` of pod `p` depends on itself through the roll-up `racks`"
    assert d.hint.endswith("not the module's `racks`: rename that (e.g. `racks_per_pod`)")


def test_power_from_its_own_roll_up_says_to_total_the_members(tmp_path):
    d = only(build(NODE + "rack R { hosts = 4 x N, power = power * 1.1 }\n"
                   "site S { racks = 2 x R }\n", tmp_path), "E404")
    assert d.hint.endswith(": total its members instead (`sum(MEMBER.power) * 1.1`)")


def test_a_field_naming_a_roll_up_that_does_not_count_it_is_unchanged(tmp_path):
    design = build(NODE + "rack R { hosts = 4 x N, gpus = gpus }\nsite S { racks = 2 x R }\n",
                   tmp_path)
    assert not [d for d in design.diagnostics if d.is_error]


FEEDERS = """
host H { power = 10 kW }
rack R { hosts = 4 x H }
site S {
  racks = 2 x R
  utilization = 80 %
  feeder f { current = dc, voltage = 240 V, capacity = 100 kW, efficiency = 95 %, serves = racks SIDE_F }
  feeder g { current = dc, voltage = 240 V, capacity = 100 kW, efficiency = 95 %, serves = racks SIDE_G }
}
"""


@pytest.mark.parametrize("side_f, side_g, warned", [
    ("", "", "no `side`"), (", side = A", ", side = A", "side A"),
    (", side = A", ", side = B", None), (", side = A", "", None)])
def test_two_feeders_on_one_side_serving_the_same_racks_are_w634(side_f, side_g, warned,
                                                                  tmp_path):
    # each was taken to carry the whole load with no word: two feeders carrying 80 % of 80 kW
    # each (and losing 5 % of it each), where a 2N pair carries it once between them
    result = checked(FEEDERS.replace("SIDE_F", side_f).replace("SIDE_G", side_g), tmp_path)
    w634 = [d for d in result.diagnostics if d.code == "W634"]
    carried = sum(f.average_w for f in result.engineering.power.feeders)
    if warned is None:
        assert not w634
        assert carried == pytest.approx(64e3)
        return
    assert [d.message for d in w634] == [
        f"feeders `S.f` and `S.g` serve the same parts on {warned}: each is taken to carry all "
        "of their load, which is counted twice (their losses too)"]
    assert w634[0].span.start.line == 7 and "count = 2" in w634[0].hint
    assert carried == pytest.approx(2 * 64e3)


@pytest.mark.parametrize("objective, shown", [("maximize gpus", "maximize gpus = 1,280"),
                                              ("maximize 2 * gpus", "maximize expression = 2,560")])
def test_the_sizing_report_names_an_objective_by_what_it_says(objective, shown, tmp_path):
    # `maximize gpus`, which language.md section 15 gives as the example, was reported as
    # "objective: maximize expression = 1,280"
    path = tmp_path / "main.astral"
    path.write_text(f"gpu G {{ power = 700 W }}\nhost H {{ gpus = 8 x G, power = 14.3 kW }}\n"
                    f"rack R {{ hosts = (? in 2..6) x H, power_limit = 80 kW }}\n"
                    f"site S {{\n  racks = 32 x R\n  {objective}\n}}\n", encoding="utf-8")
    objective = astral_dsl.size(str(path)).objective
    sense, name, value = shown.replace(" = ", " ").split(" ")
    assert (objective["sense"], objective["name"]) == (sense, name)
    assert objective["value"] == float(value.replace(",", ""))


@pytest.mark.parametrize("imported, alias", [("import stdlib.hardware", "hardware"),
                                             ("import stdlib.hardware as hw", "hw")])
def test_a_stdlib_name_of_a_module_imported_whole_says_its_qualified_name(imported, alias,
                                                                          tmp_path):
    d = only(build(f"{imported}\nhost N {{ gpus = 8 x B200 }}\n", tmp_path), "E200")
    assert d.hint == (f"`B200` is in `stdlib.hardware`, imported here as `{alias}`: write "
                      f"`{alias}.B200`, or import it by name (`import stdlib.hardware {{ B200 }}`)")
    # what it says to write compiles
    assert not [x for x in build(f"{imported}\nhost N {{ gpus = 8 x {alias}.B200 }}\n",
                                 tmp_path).diagnostics if x.is_error]
