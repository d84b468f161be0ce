"""Slips an author of .astral files makes, each reported where it is with a code and a hint:
a template parameter's default that needs its own template, a cycle of `let`s, a quoted value
given to `--set`, a `_` in a number's fraction or a second exponent, a bracket too many or left
open."""
from __future__ import annotations

import ast
import json
import re
import shlex
import textwrap

import pytest

import astral_dsl


def build(text: str, tmp_path, **kw):
    return astral_dsl.loads(textwrap.dedent(text).lstrip("\n"), name="main.astral",
                            root=tmp_path, **kw)


def only(design, code: str):
    found = [d for d in design.diagnostics if d.severity.name == "ERROR"]
    assert [d.code for d in found] == [code], [(d.code, d.message) for d in found]
    return found[0]


def at(d):
    return (d.span.start.line, d.span.start.column, d.span.end.line, d.span.end.column)


# ---- parameter defaults -----------------------------------------------------------------------
def test_a_default_that_needs_its_own_template_is_a_cycle_at_the_default(tmp_path):
    # was E402 "nests too deeply" at 1:1 (the comment line): a RecursionError caught late
    d = only(build("""
        // a comment
        gpu G(p: power = G.power) { power = p }
        site S { g = G }
    """, tmp_path), "E404")
    assert at(d) == (2, 18, 2, 25)                      # `G.power`
    assert "default of `p` of `G`" in d.message and "`G`" in d.hint


def test_defaults_needing_each_others_template_are_a_cycle(tmp_path):
    design = build("""
        gpu A(p: power = B.power) { power = p }
        gpu B(q: power = A.power) { power = q }
        site S { g = A }
    """, tmp_path)
    assert {(d.code, d.span.start.line) for d in design.diagnostics
            if d.severity.name == "ERROR"} == {("E404", 1), ("E404", 2)}


def test_a_default_given_its_own_argument_is_no_cycle(tmp_path):
    design = build("""
        gpu G(p: power = G(p = 300 W).power * 2) { power = p }
        site S { g = G, check g.power == 600 W }
    """, tmp_path)
    assert not [d for d in design.diagnostics if d.severity.name == "ERROR"]


def test_a_default_with_ever_changing_arguments_stops_at_the_default(tmp_path):
    d = only(build("""
        // line one
        host H(n: count = 1, m: count = H(n = n + 1).m) { }
        site S { h = H }
    """, tmp_path), "E402")
    assert at(d)[:2] == (2, 33) and "never ends" in d.hint


def test_a_cycle_of_lets_has_a_hint(tmp_path):
    d = only(build("let a = b\nlet b = a\ncheck a == 1\n", tmp_path), "E404")
    assert d.hint and "cycle" in d.hint


# ---- --set ---------------------------------------------------------------------------------------
def test_a_quoted_number_given_to_set_is_shown_quoted_with_a_hint(tmp_path):
    # was: expected a number like the default `4`, got `4` (the value given read as the default)
    d = only(build("param n = 4\nparam p = 45 kW\nsite S {}\n", tmp_path,
                   overrides={"n": '"4"'}), "E310")
    assert (d.message, d.hint) == (
        "overrides['n']: expected a number like the default `4`, got \"4\"",
        "write it without the double quotes, e.g. `with_params(n=4)`")          # from the API (loads)
    cli = json.loads(check_json("param n = 4\nsite S {}\n", tmp_path, "--set", 'n="4"'))
    (e310,) = [d for d in cli["diagnostics"] if d["severity"] == "error"]
    assert (e310["message"], e310["hint"]) == (
        '--set n: expected a number like the default `4`, got "4"',
        "write it without the double quotes, e.g. `--set n=4`")                  # from the command
    d = only(build("param p = 45 kW\nsite S {}\n", tmp_path, overrides={"p": "45 GB"}), "E310")
    assert d.message.endswith("got `45 GB`") and "dimension" in d.hint


@pytest.mark.parametrize("source, given, hint, python", [
    # was: "give it in a unit of the default's dimension": `300K` read as the absolute one
    ("param t = 90 degC", "300K", "`K` is a temperature difference in astral, not an absolute "
     "temperature: write an absolute one in `degC` or `degF`, e.g. {} for 300 K above "
     "absolute zero", ("`--set 't=26.85 degC'`", "`with_params(t='26.85 degC')`")),
    ("param t = 90 degC", "25 K", "`K` is a temperature difference in astral, not an absolute "
     "temperature: write an absolute one in `degC` or `degF`, e.g. {}",
     ("`--set 't=25 degC'`", "`with_params(t='25 degC')`")),
    ("param t = 10 K", "30 degC", "`degC` is an absolute temperature; a difference is written "
     "in `K` (or `delta_degC`), e.g. {} for 30 degC above 0 degC",
     ("`--set 't=30 K'`", "`with_params(t='30 K')`")),
    ("param t: temperature = 90 degC", "300 K", "`K` is a temperature difference in astral, "
     "not an absolute temperature: write an absolute one in `degC` or `degF`, e.g. "
     "{} for 300 K above absolute zero", ("`26.85 degC`", "`26.85 degC`")),
])
def test_set_says_k_is_a_temperature_difference(source, given, hint, python, tmp_path):
    """The command's example is a `--set`, quoted for a shell to paste (it was unquoted:
    `--set t=26.85 degC` is two arguments); the API's (loads here) a with_params call."""
    cli = json.loads(check_json(source + "\nsite S {}\n", tmp_path, "--set", f"t={given}"))
    (e310,) = [d for d in cli["diagnostics"] if d["severity"] == "error"]
    assert (e310["code"], e310["hint"]) == ("E310", hint.format(python[0]))
    d = only(build(source + "\nsite S {}\n", tmp_path, overrides={"t": given}), "E310")
    assert d.hint == hint.format(python[1])


@pytest.mark.parametrize("source, given", [
    ('param label = "x"', "label=4"),              # was `--set label="x"`, "(quoted for the shell)"
    ("param t = 90 degC", "t=300K"),               # was `--set t=26.85 degC`: two arguments
    ("param t = 10 K", "t=30 degC"),
    ("param p = 45 kW", "p=5 kg"),                 # was `--set p=45 kW`
    ("param p = 45 kW", 'p="45 kW"'),
])
def test_a_set_hints_example_pastes_into_a_shell(source, given, tmp_path):
    """The example of an E310 hint from the command is a `--set` quoted for a POSIX shell: read
    as a shell reads it, it is one option and one value, which the command accepts."""
    cli = json.loads(check_json(source + "\nsite S {}\n", tmp_path, "--set", given))
    (e310,) = [d for d in cli["diagnostics"] if d["severity"] == "error"]
    example = re.search(r"e\.g\. `([^`]*)`", e310["hint"]).group(1)
    words = shlex.split(example)
    assert len(words) == 2 and words[0] == "--set", example
    again = json.loads(check_json(source + "\nsite S {}\n", tmp_path, *words))
    assert not [d for d in again["diagnostics"] if d["severity"] == "error"], example


def check_json(text: str, tmp_path, *args) -> str:
    """`astral check --format json` of `text` (main.astral in tmp_path) with `args`: stdout."""
    import contextlib
    import io

    from astral_dsl.cli import main

    path = tmp_path / "main.astral"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", str(path), "--format", "json", *args])
    return out.getvalue()


def test_a_huge_value_given_to_set_is_not_echoed_back_whole(tmp_path):
    # a 120 KB value was repeated whole in the message (and the hint)
    huge = "a" * 120_000
    for given in (huge, f'"{huge}"', "1 + " + "1 + " * 30_000 + "1"):
        d = only(build("param n = 4\nparam s = \"x\"\nsite S {}\n", tmp_path,
                       overrides={"n": given}), "E310")
        assert len(d.message) < 200 and "..." in d.message, d.message[:300]
    d = only(build("param s = \"x\"\nsite S {}\n", tmp_path, overrides={"s": "b" * 120_000}),
             "E310")
    assert len(d.message) < 200 and len(d.hint) < 400



@pytest.mark.parametrize("value", ["North Hall", "it's", 'say "hi"', "back\\slash", "two\nlines",
                                   "tab\there"])
def test_the_quoting_a_text_value_is_given_is_pasteable(value, tmp_path):
    """E310's hint for a text given unquoted gives the override that gives it, in the caller's
    words: with a quote, a backslash or a line end in it they did not read back as the value
    (`--set 'label="it's"'` closes the shell's quote). The command's is the option alone, the
    API's the call alone (each was given both, `--set ... (from Python, with_params(...))`)."""
    source = "param label = \"x\"\nsite S {}\n"
    hint = only(build(source, tmp_path, overrides={"label": value}), "E310").hint
    python = re.fullmatch(r"`label` is text: quote its value, with_params\(label=(.*)\)", hint)
    assert python, hint
    cli = json.loads(check_json(source, tmp_path, "--set", f"label={value}"))
    (e310,) = [d for d in cli["diagnostics"] if d["severity"] == "error"]
    option = re.fullmatch(r"`label` is text: quote its value, --set (.*)", e310["hint"], re.S)
    assert option, e310["hint"]
    (word,) = shlex.split(option.group(1))       # one word for the shell, `label=...`
    name, given = word.split("=", 1)
    assert name == "label"
    for override in (given, ast.literal_eval(python.group(1))):
        assert dict(build(source, tmp_path, overrides={"label": override}).params)["label"] \
            == value


def test_a_long_text_value_is_not_quoted_cut(tmp_path):
    """The hint quoted the value cut to its start and end (`--set 'label="aaa...aaa"'`), which
    read as the value to give; it gives the form with VALUE in its place and the length, in
    the caller's words."""
    value = "a" * 100 + "z"
    source = "param label = \"x\"\nsite S {}\n"
    d = only(build(source, tmp_path, overrides={"label": value}), "E310")
    assert "..." in d.message                     # the message shows the value cut
    said = " with VALUE the 101 characters given (the message shows them cut to their start " \
           "and end)"
    assert d.hint == "`label` is text: quote its value, with_params(label='\"VALUE\"')" + said
    cli = json.loads(check_json(source, tmp_path, "--set", f"label={value}"))
    (e310,) = [d for d in cli["diagnostics"] if d["severity"] == "error"]
    assert e310["hint"] == "`label` is text: quote its value, --set 'label=\"VALUE\"'" + said

# ---- numbers ----------------------------------------------------------------------------------------
def test_a_separator_in_a_fraction_is_e106_at_the_number(tmp_path):
    # was E103 "unexpected `b`" at 2:5: the number stopped at `0.000`, `_001` read as a name
    d = only(build("let tol = 0.000_001\nlet b = 2\n", tmp_path), "E106")
    assert at(d) == (1, 11, 1, 20)
    assert d.hint.endswith("write `0.000001`")
    d = only(build("gpu G { power = 0.7_5 kW }\nsite S { g = G }\n", tmp_path), "E106")
    assert at(d) == (1, 17, 1, 22) and d.hint.endswith("`0.75`")
    d = only(build("let a = 1.5e1_0\n", tmp_path), "E106")
    assert "exponent" in d.message and d.hint.endswith("`1.5e10`")


def test_a_second_exponent_is_e106_at_the_number(tmp_path):
    # was E103 "unexpected `z`" at 2:5: `1e3e3` read as the number `1e3` and the name `e3`
    d = only(build("let x = 1e3e3\nlet z = 2\n", tmp_path), "E106")
    assert at(d) == (1, 9, 1, 14)
    assert d.message == "number `1e3e3` has a second exponent: `1e3` then `e3`"
    assert d.hint.startswith("a number takes one exponent (`1e6` for 1e3 x 10^3)")
    # in a body (was E103 at the `}`), with a fraction and a negative exponent: 10^(-3+2)
    d = only(build("site S { x = 2.5e-3e2 }\n", tmp_path), "E106")
    assert at(d) == (1, 14, 1, 22) and "(`2.5e-1` for 2.5e-3 x 10^2)" in d.hint
    # a string's and a comment's are no number: the file's error is its own
    only(build('let s = "1e3e3" // 1e3e3\nlet a = (\n', tmp_path), "E105")


def test_separators_in_strings_comments_and_names_are_no_number(tmp_path):
    design = build("""
        let s = "0.000_001"   // 1.0_0
        let CX7_2x200G = 1
        let a = (
    """, tmp_path)
    assert [d.code for d in design.diagnostics] == ["E105"]


# ---- brackets ---------------------------------------------------------------------------------------
def test_a_closing_brace_too_many_says_so(tmp_path):
    d = only(build("site S {\n  x = 1\n}\n}\n", tmp_path), "E103")
    assert at(d)[:2] == (4, 1) and d.hint.startswith("this `}` closes no `{`")


def test_a_parenthesis_left_open_is_named_where_the_next_line_fails(tmp_path):
    d = only(build("let a = (1 + 2\nlet b = 3\n", tmp_path), "E103")
    assert at(d)[:2] == (2, 1)
    assert d.hint == "the `(` at line 1, column 9 is not closed: close it with `)` before this"
    d = only(build("let a = [1, 2\nlet b = 3\n", tmp_path), "E103")
    assert "the `[` at line 1, column 9" in d.hint


# ---- imports ----------------------------------------------------------------------------------------
def test_a_name_a_module_imports_itself_says_where_to_import_it_from(tmp_path):
    # was E208 without a hint: imports are not re-exported, and the author looked for it there
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "parts.astral").write_text(
        "import stdlib.power { LeadAcid }\nimport stdlib.hardware as hw\nlet budget = 45 kW\n")
    design = build("""
        import lib.parts { LeadAcid }
        import lib.parts as p
        site S { k = p.hw.H800, check p.budget == 45 kW, check p.budgt == 1 W }
    """, tmp_path)
    hints = {(d.span.start.line, d.span.start.column): d.hint for d in design.diagnostics
             if d.code == "E208"}
    assert hints == {
        (1, 20): "`lib.parts` imports `LeadAcid` from `stdlib.power` and does not re-export it: "
                 "write `import stdlib.power { LeadAcid }`",
        (3, 16): "`hw` is a module that `lib.parts` imports (imports are not re-exported): "
                 "write `import stdlib.hardware as hw`",
        (3, 58): "did you mean `budget`?",
    }


# ---- built-in functions on temperature points --------------------------------------------------
def test_the_mean_of_temperature_points_is_a_point(tmp_path):
    # was E302 "cannot sum temperature points": mean(loops.supply) is a fair question
    design = build("""
        let a = mean(10 degC, 20 degC)
        let b = mean([40 degC, 104 degF])      // 104 degF is 40 degC
        let c = mean([30 degC, 30 degC, 60 degC])   // (2 * 303.15 K + 333.15 K) / 3 = 40 degC
        check a == 15 degC and b == 40 degC and c == 40 degC
    """, tmp_path)
    assert not design.diagnostics, [(d.code, d.message) for d in design.diagnostics]
    d = only(build("check mean([10 degC, 5 K]) == 1 K\n", tmp_path), "E302")
    assert d.hint
    d = only(build("check sum([1 degC]) == 1 degC\n", tmp_path), "E302")
    assert "`mean`" in d.hint


def test_abs_of_a_temperature_point_is_e302(tmp_path):
    # was the point itself: `abs(-10 degC)` read -10 degC
    d = only(build("let t = abs(-10 degC)\n", tmp_path), "E302")
    assert at(d) == (1, 9, 1, 22) and "difference" in d.hint
    design = build("check abs(10 degC - 25 degC) == 15 K\n", tmp_path)
    assert not design.diagnostics


def test_a_bundle_of_temperature_points_is_e302(tmp_path):
    # was accepted, its total "temperature difference (degC)": E301 where it was used
    d = only(build("let b = 2 x 30 degC\n", tmp_path), "E302")
    assert at(d) == (1, 13, 1, 20) and d.hint


# ---- members -------------------------------------------------------------------------------------
def test_a_member_list_mixing_instances_and_values_says_so(tmp_path):
    # was E203 "a rack has no field `hosts`" at the name: `hosts` is a member's name
    design = build("""
        gpu G { power = 700 W }
        host H { gpus = 8 x G }
        rack R { hosts = [H, 3] }
        rack R5 { hosts = [] }
        site S { racks = [R, R5] }
    """, tmp_path)
    found = {(d.code, d.span.start.line, d.span.start.column): (d.message, d.hint)
             for d in design.diagnostics if d.severity.name == "ERROR"}
    assert set(found) == {("E303", 3, 18), ("E303", 4, 19)}
    assert found[("E303", 3, 18)][0] == "`hosts` mixes instances with `3`, a number"
    assert found[("E303", 4, 19)] == ("`hosts` is an empty list, not a member",
                                      "a member holds at least one instance: leave `hosts` out")


# ---- lists compared ----------------------------------------------------------------------------
def test_lists_compare_item_by_item_as_values_do(tmp_path):
    # was Python's equality of the items: `[1 W] == [1 GB]` silently false, not E301
    d = only(build("check [1 W] == [1 GB]\n", tmp_path), "E301")
    assert at(d) == (1, 7, 1, 22)
    design = build("""
        check [1 kW] == [1000 W] and [0.1 + 0.2] == [0.3]      // within 1e-9, as `==` is
        check [[1, 2], ["a"]] == [[1, 2], ["a"]] and [1, 2] != [1, 2, 3] and [] == []
    """, tmp_path)
    assert not design.diagnostics and all(c.passed for c in design.checks)


def test_a_dimension_starting_with_a_vowel_takes_an(tmp_path):
    # was "`memory` expects a information"
    d = only(build("gpu G { power = 700 W, memory = 3 W }\nsite S { g = G }\n", tmp_path),
             "E304")
    assert d.message == "`memory` expects an information, got power (W)"
    assert d.hint == "expected an information such as `GB`"


def test_a_unit_given_to_a_field_that_takes_none_says_how_it_is_written(tmp_path):
    # was "`liquid_share` expects a number, got power (kW)" with no hint, where every field
    # of a dimension has one ("expected a power such as `kW`")
    d = only(build("host H { liquid_share = 75 kW }\nsite S { h = H }\n", tmp_path), "E304")
    assert at(d) == (1, 25, 1, 30)                      # `75 kW`
    assert d.message == "`liquid_share` expects a ratio, got power (kW)"
    assert d.hint == ("a ratio is written as a percentage, e.g. `75 %`, or as a fraction, "
                      "`0.75`, without a unit")
    d = only(build("nic N { ports = 2 kW }\nsite S { n = N }\n", tmp_path), "E304")
    assert d.message == "`ports` expects a whole number, got power (kW)"
    assert d.hint == "a count is a whole number without a unit, e.g. `8`"


# ---- long chains of values -----------------------------------------------------------------------
def _chain(n: int, indent: str = "") -> list:
    """`let a0 = 1` ... `let a{n-1} = a{n-2} + 1`, last first: a{n-1} is n."""
    lines = [f"{indent}let a0 = 1"] + [f"{indent}let a{i} = a{i - 1} + 1" for i in range(1, n)]
    return lines[::-1]


def test_a_long_chain_of_module_lets_in_any_order_evaluates(tmp_path):
    # 300 lets, each naming the one below it: was E402 "nests too deeply" at 1:1 from ~100 on,
    # while the same lets written first to last compiled
    design = build("\n".join(_chain(300)) + "\ncheck a299 == 300\n", tmp_path)
    assert not design.diagnostics and [c.passed for c in design.checks] == [True]


def test_a_chain_too_deep_in_a_body_is_e402_at_its_first_value(tmp_path):
    # was E402 at 1:1, the `site S {` line: now at the value whose evaluation went that deep
    text = "site S {\n" + "\n".join(_chain(400, "  ")) + "\n  check a399 == 400\n}\n"
    d = only(build(text, tmp_path), "E402")
    assert at(d) == (2, 7, 2, 11) and d.message.startswith("evaluating `a399` of site `S`")


# ---- keywords as names ------------------------------------------------------------------------------
def test_a_name_no_expression_can_read_is_e222_where_it_is_named(tmp_path):
    # `let true = 0` then `check true` passed: the check read the literal, the let never
    d = only(build("let true = 0\ncheck true\n", tmp_path), "E222")
    assert at(d) == (1, 5, 1, 9)
    assert d.message == ("`true` cannot name a `let`: where a value is read, `true` is always "
                         "the yes/no value `true`")
    assert d.hint == "rename it (e.g. `true_value`)"
    # a template parameter `if` (each read was E103), a loop variable `false`, a param `not`
    design = build("rack R(if = 1) { }\nlet l = [1 for false in 0..1]\n"
                   "param not = 2\n", tmp_path)
    assert [(d.code, at(d)[:2]) for d in design.diagnostics if d.is_error] == \
        [("E222", (1, 8)), ("E222", (2, 16)), ("E222", (3, 7))]


def test_keywords_that_read_back_as_names_are_no_error(tmp_path):
    # contextual keywords (language.md 2.3): 3 + 1 == 4 and 1 == 1 both hold
    design = build("let import = 3\nlet check = 1\ncheck import + 1 == 4\ncheck check == 1\n",
                   tmp_path)
    assert [d.code for d in design.diagnostics] == []


def test_if_or_not_read_as_a_name_after_a_tighter_operator_is_e222_at_the_word(tmp_path):
    # after `+` the parser cannot start a `not` expression and read the word as a name: it was
    # E200 "unknown name `not`" with the hint to declare `let not = ...`, itself E222
    d = only(build("let y = 1 + not\n", tmp_path), "E222")
    assert at(d) == (1, 13, 1, 16)
    assert d.message.startswith("`not` cannot be read as a name: where a value is read, `not` "
                                "starts a `not` expression")
    assert d.hint == "put the `not` expression in parentheses (`a == (not b)`); nothing can be " \
                     "named `not`"
    # a call of it (`not(1)`) and an `if` after `x` alike; another unknown name is still E200
    design = build("let a = 2 * not(1)\nlet b = 4 x if\nlet c = 1 + nto\n", tmp_path)
    assert [(d.code, at(d)[:2]) for d in design.diagnostics if d.is_error] == \
        [("E222", (1, 13)), ("E222", (2, 13)), ("E200", (3, 13))]
    # an expression after the word fails to parse further on: the syntax error says why
    for text, code, word in (("let y = 1 + not x\n", "E105", "`not` after `+`"),
                             ("let y = 1 + if true then 2 else 3\n", "E103", "`if` after `+`"),
                             ("check 1 <= not true\n", "E105", "`not` after `<=`")):
        d = only(build(text, tmp_path), code)
        assert d.hint.startswith(f"{word} is read as a name: it starts an expression only "
                                 "where a whole condition can stand; put the"), (text, d.hint)
    # not in a string, nor after `=`: the last statement is simply unfinished
    d = only(build('let s = "1 + not"\nlet y = 1 +\n', tmp_path), "E105")
    assert d.hint == "the last statement stops in the middle: complete it, or delete it"


def test_a_module_path_with_a_dot_too_many_or_a_slash_has_a_hint(tmp_path):
    # `import lib..a` was E103 "unexpected `.`; expected a name" with no hint
    for text, code, col in (("import lib..a\n", "E103", 12), ("import .a { v }\n", "E103", 8),
                            ("import lib/a\n", "E103", 11), ("import a. { v }\n", "E103", 11),
                            ("import lib.a.\n", "E105", 1)):
        d = only(build(text, tmp_path), code)
        assert at(d)[1] == col and d.hint.startswith(
            "a module path is names joined by single dots, none before the first, after the "
            "last or doubled (`import lib.common` is"), (text, d.hint)
    # a slip after a whole path is not the path's
    d = only(build("import lib.a { v } as\n", tmp_path), "E105")
    assert d.hint == "the last statement stops in the middle: complete it, or delete it"


def test_a_point_with_no_digit_after_it_is_e106_at_the_number(tmp_path):
    # `5.e3` was E209 "a number has no member `e3`" without a hint; `5.` at the end of a line
    # E209 "no member `let`" at the next line; `5.e3 W` in a body E103 at the `}`
    d = only(build("let a = 5.e3\n", tmp_path), "E106")
    assert (at(d), d.message, d.hint) == ((1, 9, 1, 13), "number `5.e3` has no digit after its "
                                          "point", "write `5e3` or `5.0e3`")
    # one diagnostic: the parser had joined `5.` and the next line's `let` (`b = 2` then E210)
    d = only(build("let a = 5.\nlet b = 2\n", tmp_path), "E106")
    assert (at(d), d.hint) == ((1, 9, 1, 11), "write `5` or `5.0`")
    d = only(build("site S { p = 5.e3 W }\n", tmp_path), "E106")
    assert at(d) == (1, 14, 1, 18) and d.hint == "write `5e3` or `5.0e3`"
    # a member of a number written apart is E209, now with a hint
    d = only(build("let a = 5 .x\n", tmp_path), "E209")
    assert d.hint.startswith("members belong to instances")


def test_unreadable_names_are_found_once_per_syntax_tree(tmp_path):
    """E222 depends on the syntax tree alone: found at the first compile of a workspace and
    reused by the next ones (its loader's trees), never for another tree."""
    from astral_dsl.semantics.entry import _unreadable_names
    from astral_dsl.workspace import Workspace

    path = tmp_path / "main.astral"
    path.write_text("let true = 0\nlet b = 1\n")
    ws = Workspace.open(str(path), {})
    first = [d for d in ws.compile().diagnostics if d.code == "E222"]
    again = [d for d in ws.compile(overrides={}).diagnostics if d.code == "E222"]
    assert [at(d) for d in first] == [at(d) for d in again] == [(1, 5, 1, 9)]
    tree = ws.entry.tree
    assert ws.loader.unreadable_names[id(tree)] == (tree, tuple(first))
    # an entry under the tree's id that holds another tree is not this tree's result
    path.write_text("let b = 1\n")
    other = Workspace.open(str(path), {})
    ws.loader.unreadable_names[id(other.entry.tree)] = (tree, tuple(first))
    assert _unreadable_names(other.entry.tree, ws.loader) == ()
    assert not [d for d in other.compile().diagnostics if d.code == "E222"]


def test_the_declarations_holding_checks_are_found_once_per_set_of_trees(tmp_path):
    """Which declaration each user check is written in (a check result's `owner`) depends on
    the syntax trees alone: found at the first compile, reused while the loader holds the same
    trees, found again for others."""
    from astral_dsl.workspace import Workspace

    path = tmp_path / "main.astral"
    path.write_text("rack R {\n  check 1 < 2 else error \"r\"\n}\nsite S { r = R }\n"
                    "check 2 > 1 else error \"top\"\n")
    ws = Workspace.open(str(path), {})
    first = ws.compile()
    kept = ws.loader.check_owners
    assert kept[0] == (ws.entry.tree,)
    assert sorted((c.message, c.owner) for c in first.checks) == [("r", "R"), ("top", "")]
    again = ws.compile(overrides={})
    assert ws.loader.check_owners is kept
    assert [c.owner for c in again.checks] == [c.owner for c in first.checks]
    # another tree than the one the owners were found in: found again, not read from it
    other = Workspace.open(str(path), {})
    ws.loader.check_owners = ((other.entry.tree,), {})
    assert sorted(c.owner for c in ws.compile().checks) == ["", "R"]
    assert ws.loader.check_owners[0] == (ws.entry.tree,)


def test_a_flat_sum_of_many_terms_says_each_operator_nests_and_how_to_write_it(tmp_path):
    # 300 terms chained by `+` nest 299 levels (each operator one): the message said "nest more
    # than 200 levels deep" of what reads as a flat line; it says why and gives `sum([...])`
    d = only(build("let x = " + " + ".join(["1"] * 300) + "\n", tmp_path), "E402")
    assert "each operator of a chain such as `a + b + c` nests one level" in d.message
    assert "sum([a, b, c, ...])" in d.hint
    listed = build("let x = sum([" + ", ".join(["1"] * 300) + "])\ncheck x == 300\n", tmp_path)
    assert not [e for e in listed.diagnostics if e.is_error]


@pytest.mark.parametrize("text, says, hint", [
    # 150 records, each in the one before: was "expressions nest more than 200 levels deep"
    ("site S {\n" + "r {\n" * 150 + "x = 1\n" + "}\n" * 150 + "}\n",
     "blocks `{ ... }` nest inside each other more than 100 deep here", "templates of their own"),
    ("let x = " + "[" * 250 + "1" + "]" * 250 + "\n",
     "lists `[...]` nest inside each other more than 200 deep here", "flatten the list"),
    ("let x = " + "(" * 250 + "1" + ")" * 250 + "\n",
     "brackets `( ... )` nest inside each other more than 200 deep here", "group nothing"),
    ("let x = " + "f(" * 150 + "1" + ")" * 150 + "\n",
     "calls nest inside each other's arguments more than 100 deep here", "with `let`"),
    # a run of unary minus signs: was "expressions nest ... each operator of a chain such as
    # `a + b + c`" with a hint to split it with `let` or write `sum([...])`, which fits no run
    ("let x = " + "-" * 250 + "1\n",
     "unary minus signs `-` nest one inside the next more than 200 deep here",
     "a run of them is the value itself when the count is even and its negation when it is "
     "odd: write `x` or `-x`"),
    ("check " + "not " * 250 + "true\n", "`not`s nest one inside the next more than 200 deep",
     "write `c` or `not c`"),
])
def test_too_deep_a_nesting_says_what_nests(tmp_path, text, says, hint):
    d = only(build(text, tmp_path), "E402")
    assert d.message.startswith(says), d.message
    assert hint in d.hint
    assert d.span is not None and d.span.start.line > 0


def test_a_huge_unit_or_name_given_to_set_is_not_echoed_back_whole(tmp_path):
    """`--set p=5 kkk...` (a 100,000-letter unit) was E310 "unknown unit `kkk...`" of 100 KB,
    and `--set zzz...=1` E213 naming the 100 KB name twice: both are cut to their start and
    end, as the values of test_a_huge_value_given_to_set_is_not_echoed_back_whole."""
    d = only(build("param p = 5 kW\nsite S {}\n", tmp_path,
                   overrides={"p": "5 " + "k" * 100_000}), "E310")
    assert d.message.startswith("overrides['p']: unknown unit `kkk") and len(d.message) <= 216
    assert "..." in d.message
    name = "z" * 100_000
    d = only(build("param p = 5 kW\nsite S {}\n", tmp_path, overrides={name: "1"}), "E213")
    assert len(d.message) < 200 and d.message.startswith("overrides['zzz") and "..." in d.message
