"""The parser: AST node types for every construct of grammar/astral.lark, spans (1-based lines
and columns, end exclusive, columns in Unicode code points) and syntax diagnostics."""
from __future__ import annotations

import pytest

import astral_dsl
from astral_dsl.diagnostics import DiagnosticError
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse, parse_expression
from astral_dsl.syntax.source import Source, decode


def P(text: str) -> ast.Module:
    return parse(Source("f.astral", text))


def E(text: str):
    return parse_expression(Source("e.astral", text))


def only(text: str):
    """The single statement of a file."""
    module = P(text)
    assert len(module.items) == 1, module.items
    return module.items[0]


def body_stmt(text: str):
    """The single statement inside `site S { ... }`."""
    decl = only("site S {\n" + text + "\n}\n")
    assert isinstance(decl, ast.Decl)
    assert len(decl.body) == 1, decl.body
    return decl.body[0]


def pos(span):
    return (span.start.line, span.start.column, span.end.line, span.end.column)


def syntax_error(text: str):
    with pytest.raises(DiagnosticError) as info:
        P(text)
    return info.value.diagnostic


def start(d):
    return (d.span.start.line, d.span.start.column)


# ---- spans --------------------------------------------------------------------------------------

def test_a_sources_lines_are_split_once():
    """The checks quote a line of the source per check (semantics/checks.py `span_text`): the
    text was split at each quote, about a second of the check of a 1 MB generated design of
    1,238 checks (3.9 -> 1.5 s of CPU for `astral check` of it, warm). Lines end at \\n only,
    a \\r before it is dropped, and a pickled source carries its text, not its lines."""
    import pickle

    splits = []

    class Text(str):
        def split(self, *args):
            splits.append(args)
            return super().split(*args)

    src = Source("a.astral", Text("gpu G {\r\n  power = 7 W\n}\n"))
    assert [src.line(n) for n in (0, 1, 2, 3, 4, 5)] == ["", "gpu G {", "  power = 7 W", "}",
                                                        "", ""]
    assert [src.line(n) for n in (3, 2, 1)] == ["}", "  power = 7 W", "gpu G {"]
    assert len(splits) == 1
    plain = Source("a.astral", str(src.text))
    plain.line(1)
    again = pickle.loads(pickle.dumps(plain))
    assert again == plain and "_lines" not in vars(again) and again.line(2) == "  power = 7 W"


def test_spans_are_one_based_and_end_exclusive():
    decl = only("site S { power_limit = 45 kW }")
    assert pos(decl.span) == (1, 1, 1, 31)
    assert pos(decl.kind.span) == (1, 1, 1, 5)
    assert pos(decl.name.span) == (1, 6, 1, 7)
    (field,) = decl.body
    assert pos(field.span) == (1, 10, 1, 29)
    assert pos(field.name.span) == (1, 10, 1, 21)
    assert isinstance(field.value, ast.QuantityLit)
    assert pos(field.value.span) == (1, 24, 1, 29)
    assert pos(field.value.unit_span) == (1, 27, 1, 29)


def test_spans_across_lines():
    module = P("// header\n\nsite S {\n  power_limit = 45 kW\n}\n")
    (decl,) = module.items
    assert pos(decl.span) == (3, 1, 5, 2)
    (field,) = decl.body
    assert pos(field.span) == (4, 3, 4, 22)


def test_columns_count_code_points_after_non_ascii_comment_and_string():
    text = '// café, 45 °C\nsite S {\n  note = "µ", power = 5 kW\n}\n'
    (decl,) = P(text).items
    note, power = decl.body
    # line 3: two spaces, `note` at 3..6, `=` at 8, `"µ"` at 10..12 (3 code points, 4 bytes)
    assert pos(note.name.span) == (3, 3, 3, 7)
    assert isinstance(note.value, ast.String) and note.value.value == "µ"
    assert pos(note.value.span) == (3, 10, 3, 13)
    # `power` right after `"µ", ` starts at column 15 (it would be 16 if bytes were counted)
    assert pos(power.name.span) == (3, 15, 3, 20)
    assert pos(power.value.span) == (3, 23, 3, 27)
    assert pos(power.value.unit_span) == (3, 25, 3, 27)


def test_columns_count_astral_plane_characters_as_one():
    # U+1F600 is one code point (two UTF-16 units, four UTF-8 bytes)
    (decl,) = P('site S { note = "\U0001F600", power = 5 kW }').items
    power = decl.body[1]
    assert pos(power.name.span) == (1, 22, 1, 27)


def test_expression_spans():
    e = E("a.b[3].c[0..4]")
    assert isinstance(e, ast.Index)
    assert pos(e.span) == (1, 1, 1, 15)
    assert isinstance(e.selector, ast.Range)
    assert pos(e.selector.span) == (1, 10, 1, 14)
    attr = e.obj
    assert isinstance(attr, ast.Attr) and attr.name.name == "c"
    assert pos(attr.name.span) == (1, 8, 1, 9)


def test_walk_visits_every_node_in_source_order():
    module = P("site S { a = 1 + 2 }")
    names = [type(n).__name__ for n in ast.walk(module)]
    assert names[:2] == ["Module", "Decl"]
    assert names.count("Number") == 2


# ---- every construct -------------------------------------------------------------------------------

def test_import_with_names():
    node = only("import stdlib.hardware { H800, CX7_2x200G, }")
    assert isinstance(node, ast.Import)
    assert node.dotted == "stdlib.hardware"
    assert [n.name for n in node.names] == ["H800", "CX7_2x200G"]
    assert node.alias is None


def test_import_with_alias():
    node = only("import lib.common as c")
    assert isinstance(node, ast.Import)
    assert node.dotted == "lib.common"
    assert node.names is None
    assert node.alias.name == "c"
    assert pos(node.alias.span) == (1, 22, 1, 23)


def test_plain_import():
    node = only("import lib.common")
    assert isinstance(node, ast.Import) and node.names is None and node.alias is None


def test_param_plain_and_typed():
    p1, p2 = P("param hosts_per_rack = 4\nparam limit: power = 45 kW\n").items
    assert isinstance(p1, ast.Param) and p1.type is None and isinstance(p1.default, ast.Number)
    assert isinstance(p2, ast.Param) and p2.type.name == "power"
    assert isinstance(p2.default, ast.QuantityLit) and p2.default.unit == "kW"


def test_let_at_top_level():
    node = only("let name = 3")
    assert isinstance(node, ast.Let) and node.name.name == "name"


def test_declaration_with_params_base_and_body():
    node = only("host Node(p: power = 10 kW, n) = HGX8(gpu = H800) { units = 8 U }")
    assert isinstance(node, ast.Decl)
    assert node.kind.name == "host" and node.name.name == "Node"
    assert [p.name.name for p in node.params] == ["p", "n"]
    assert isinstance(node.params[0], ast.ParamDef)
    assert node.params[0].type.name == "power"
    assert node.params[1].type is None and node.params[1].default is None
    assert isinstance(node.base, ast.Call)
    assert len(node.body) == 1 and isinstance(node.body[0], ast.Field)


def test_declaration_with_base_only_and_body_only():
    a, b = P("host Small = HGX8(n = 4)\nrack R { }\n").items
    assert isinstance(a, ast.Decl) and a.body is None and isinstance(a.base, ast.Call)
    assert isinstance(b, ast.Decl) and b.base is None and b.body == ()
    assert b.params is None


def test_declaration_needs_a_base_or_a_body():
    d = syntax_error("host H(x: count = 1)\n")
    assert d.code == "E105"


def test_body_statements():
    decl = only("""site S {
  power_limit = 45 kW
  let x = 3
  tier tor { switch = Sw }
  parallel { tp = 8, pp = 16 }
  check x > 2
  check x > 2 else error "too few"
  check x > 2 else warning "too few"
  fail pods[0]
  set pods[0].power = 5 kW; let y = 4
}""")
    kinds = [type(s).__name__ for s in decl.body]
    assert kinds == ["Field", "Let", "Decl", "Record", "Check", "Check", "Check", "Fail",
                     "SetStmt", "Let"]
    check0, check1, check2 = decl.body[4:7]
    assert check0.severity is None and check0.message is None
    assert check1.severity.name == "error" and check1.message.value == "too few"
    assert check2.severity.name == "warning"
    assert isinstance(decl.body[7].target, ast.Index)
    assert isinstance(decl.body[8].target, ast.Attr)
    rec = decl.body[3]
    assert rec.name.name == "parallel" and len(rec.body) == 2


def test_objectives():
    decl = only("site S {\n  power_limit = 45 kW\n  minimize power\n  maximize gpus\n}")
    kinds = [type(s).__name__ for s in decl.body]
    assert kinds == ["Field", "Objective", "Objective"]
    assert [o.sense for o in decl.body[1:]] == ["minimize", "maximize"]
    assert isinstance(decl.body[1].expr, ast.Name) and decl.body[1].expr.name == "power"
    assert pos(decl.body[1].span) == (3, 3, 3, 17)


def test_objective_as_the_first_statement_and_with_separators():
    decl = only("site S { minimize power, maximize gpus }")
    assert [type(s).__name__ for s in decl.body] == ["Objective", "Objective"]


def test_check_else_without_message():
    stmt = body_stmt("check 1 < 2 else warning")
    assert isinstance(stmt, ast.Check) and stmt.severity.name == "warning" and stmt.message is None


def test_statements_separated_by_commas_and_semicolons():
    decl = only("site S { a = 1, b = 2; c = 3 }")
    assert [s.name.name for s in decl.body] == ["a", "b", "c"]


def test_string_escapes():
    stmt = body_stmt(r'note = "a \"q\" \\ b\n\tc"')
    assert stmt.value.value == 'a "q" \\ b\n\tc'


@pytest.mark.parametrize("text, node_type", [
    ("45 kW", ast.QuantityLit),
    ("524_288", ast.Number),
    ('"text"', ast.String),
    ("true", ast.Bool),
    ("false", ast.Bool),
    ("name", ast.Name),
    ("?", ast.Unknown),
    ("? in 1..4", ast.Unknown),
    ("(1)", ast.Number),
    ("[1, 2,]", ast.ListExpr),
    ("[]", ast.ListExpr),
    ("[Row(slot = i) for i in 0..8]", ast.Comprehension),
    ("a.b", ast.Attr),
    ("a[0]", ast.Index),
    ("a[0..4]", ast.Index),
    ("f(1, k = 2)", ast.Call),
    ("f()", ast.Call),
    ("-a", ast.Neg),
    ("a ^ 2", ast.Binary),
    ("a * b", ast.Binary),
    ("a / b", ast.Binary),
    ("a + b", ast.Binary),
    ("a - b", ast.Binary),
    ("0..8", ast.Range),
    ("45 kW to BTU/h", ast.Convert),
    ("4 x Node", ast.Replicate),
    ("a == b", ast.Compare),
    ("a != b", ast.Compare),
    ("a < b", ast.Compare),
    ("a <= b", ast.Compare),
    ("a > b", ast.Compare),
    ("a >= b", ast.Compare),
    ("not a", ast.Not),
    ("a and b", ast.Logic),
    ("a or b", ast.Logic),
    ("if a then b else c", ast.If),
])
def test_expression_node_types(text, node_type):
    assert isinstance(E(text), node_type)


def test_expression_details():
    assert E("true").value is True and E("false").value is False
    assert E("?").domain is None
    assert isinstance(E("? in 1..4").domain, ast.Range)
    call = E("f(1, k = 2)")
    assert call.args[0].name is None and call.args[1].name.name == "k"
    assert E("f()").args == ()
    assert E("[]").items == ()
    comp = E("[Row(slot = i) for i in 0..8]")
    assert comp.var.name == "i" and isinstance(comp.element, ast.Call)
    assert isinstance(comp.iterable, ast.Range)
    conv = E("45 kW to BTU/h")
    assert conv.unit == "BTU/h" and pos(conv.unit_span) == (1, 10, 1, 15)
    for op in ("==", "!=", "<", "<=", ">", ">="):
        assert E(f"a {op} b").op == op
    assert E("a and b").op == "and" and E("a or b").op == "or"
    assert E("a ^ 2").op == "^"


def test_wildcard_selector():
    e = E("pods[*].racks")
    assert isinstance(e, ast.Attr)
    assert isinstance(e.obj, ast.Index) and isinstance(e.obj.selector, ast.Wildcard)
    assert pos(e.obj.selector.span) == (1, 6, 1, 7)


def test_precedence():
    e = E("1 + 2 * 3")
    assert isinstance(e, ast.Binary) and e.op == "+" and e.right.op == "*"
    e = E("-a ^ 2")
    assert isinstance(e, ast.Neg) and e.operand.op == "^"
    e = E("not a and b or c")
    assert e.op == "or" and e.left.op == "and" and isinstance(e.left.left, ast.Not)
    e = E("a + 1 < b * 2")
    assert isinstance(e, ast.Compare) and isinstance(e.left, ast.Binary)
    e = E("1 - 2 - 3")        # left associative
    assert e.op == "-" and isinstance(e.left, ast.Binary) and isinstance(e.right, ast.Number)


def test_numbers_and_quantities():
    assert E("524_288").value == 524288.0
    q = E("1.5 L/min")
    assert isinstance(q, ast.QuantityLit) and q.value == 1.5 and q.unit == "L/min"
    q = E("0.01724 ohm*mm^2/m")
    assert q.unit == "ohm*mm^2/m" and q.value == pytest.approx(0.01724)
    q = E("4.178 kJ/kg/K")
    assert q.unit == "kJ/kg/K"
    q = E(".5 kW")
    assert q.value == 0.5 and q.unit == "kW"
    q = E("75 %")
    assert q.unit == "%" and q.value == 75
    q = E("35 °C")
    assert q.unit == "°C"
    q = E("5kW")      # the space between number and unit is optional
    assert q.value == 5 and q.unit == "kW"


def test_scientific_notation_number():
    # the grammar's number has an exponent part: `1e5` is the plain number 100000
    e = E("1e5")
    assert isinstance(e, ast.Number)
    assert e.value == 100000.0


def test_scientific_notation_quantity():
    q = E("2.5e3 kW")
    assert isinstance(q, ast.QuantityLit)
    assert q.value == 2500.0
    assert q.unit == "kW"
    assert pos(q.unit_span) == (1, 7, 1, 9)


def test_scientific_notation_quantity_in_the_language():
    design = astral_dsl.loads("let p = 2.5e3 kW\ncheck p == 2.5 MW\ncheck 1E-3 s == 1 ms\n",
                              name="f.astral")
    assert design.valid, design.diagnostics
    assert [c.passed for c in design.checks] == [True, True]


# ---- `x` replication versus quantities, keywords versus units ---------------------------------------

def test_replicate_count_of_template():
    e = E("4 x Node")
    assert isinstance(e, ast.Replicate)
    assert isinstance(e.count, ast.Number) and e.count.value == 4
    assert isinstance(e.item, ast.Name) and e.item.name == "Node"
    assert pos(e.span) == (1, 1, 1, 9)


def test_replicate_bundle_of_quantities():
    e = E("2 x 200 Gb/s")
    assert isinstance(e, ast.Replicate)
    assert isinstance(e.count, ast.Number) and e.count.value == 2
    assert isinstance(e.item, ast.QuantityLit)
    assert e.item.value == 200 and e.item.unit == "Gb/s"


def test_replicate_pods():
    e = E("8 x Pod")
    assert isinstance(e, ast.Replicate) and e.item.name == "Pod" and e.count.value == 8


def test_replicate_without_spaces_and_with_a_name_count():
    e = E("4x Node")
    assert isinstance(e, ast.Replicate) and e.count.value == 4
    e = E("hosts_per_rack x Node")
    assert isinstance(e, ast.Replicate) and isinstance(e.count, ast.Name)


def test_replicate_nests_to_the_right():
    e = E("2 x 4 x Node")
    assert isinstance(e, ast.Replicate) and e.count.value == 2
    assert isinstance(e.item, ast.Replicate) and e.item.count.value == 4


def test_replicate_in_a_list():
    e = E("[16 x GpuRack, 2 x NetRack]")
    assert isinstance(e, ast.ListExpr)
    assert all(isinstance(i, ast.Replicate) for i in e.items)


def test_x_is_still_a_name():
    assert isinstance(E("x"), ast.Name)
    e = E("2 x x")
    assert isinstance(e, ast.Replicate) and e.item.name == "x"


def test_keywords_are_not_units():
    e = E("if a then 5 else 6")
    assert isinstance(e, ast.If)
    assert isinstance(e.then, ast.Number) and e.then.value == 5
    assert isinstance(e.other, ast.Number) and e.other.value == 6
    e = E("n > 4 and m < 2 or k == 1")
    assert isinstance(e, ast.Logic)
    assert isinstance(e.left.left.right, ast.Number)
    e = E("[1 for i in 0..4]")
    assert isinstance(e, ast.Comprehension) and isinstance(e.element, ast.Number)
    e = E("5 to W")
    assert isinstance(e, ast.Convert) and isinstance(e.operand, ast.Number)
    e = E("not 3 in_range")   # `in_range` is a unit-like word, not the keyword `in`
    assert isinstance(e, ast.Not) and isinstance(e.operand, ast.QuantityLit)


def test_a_statement_keyword_after_a_number_is_no_unit():
    # docs/language.md 2.5 and 2.8: no keyword is ever a unit, so a statement may follow a
    # bare number on its line; `allow` (a keyword since section 18.1) was one: `4 allow` read
    # as a quantity in the unit `allow`, then `W100 "reason"` was E103
    module = P('let a = 4 allow W100 "reason"\n')
    let, allow = module.items
    assert isinstance(let, ast.Let) and isinstance(let.value, ast.Number) and let.value.value == 4
    assert isinstance(allow, ast.Allow) and allow.code.name == "W100"
    module = P("let a = 4 let b = 3\n")
    assert [type(i) for i in module.items] == [ast.Let, ast.Let]
    assert [i.value.value for i in module.items] == [4, 3]


def test_a_letter_after_a_number_is_a_unit():
    # the documented pitfall: `4 b` is four bits
    e = E("4 b")
    assert isinstance(e, ast.QuantityLit) and e.unit == "b"


# ---- syntax errors -----------------------------------------------------------------------------------

def test_e103_unexpected_token():
    d = syntax_error("site S {\n  power = = 5 kW\n}\n")
    assert d.code == "E103"
    assert start(d) == (2, 11)
    assert (d.span.end.line, d.span.end.column) == (2, 12)
    assert d.span.file == "f.astral"


def test_e103_two_statements_on_one_line_without_a_separator():
    # `4 b` is read as 4 bits, so the parser stops at the second `=`
    d = syntax_error("site S {\n  a = 4 b = 3\n}\n")
    assert d.code == "E103"
    assert start(d) == (2, 11)


def test_e103_hint_explains_the_unit_pitfall():
    d = syntax_error("site S {\n  a = 4 b = 3\n}\n")
    assert d.hint is not None
    assert "4 b" in d.hint and "," in d.hint


def test_e103_the_unit_pitfall_is_looked_for_in_linear_time():
    """The hint searches the line before the `=` for `NUMBER UNIT` at its end: tried from every
    digit of a run, each scanning to the run's end, 20,000 digits before an `=` took 24 s of
    `astral check` (40,000 digits, over a minute). Now from where a run starts only, with the
    same answer: the number from the run's first digit."""
    import time

    start_s = time.thread_time()
    d = syntax_error("site S {\n  a = " + "1" * 40_000 + " = 3\n}\n")
    assert d.code == "E103" and time.thread_time() - start_s < 5     # about 0.1 s
    d = syntax_error("site S {\n  a = 1_000.5 b = 3\n}\n")
    assert "`1_000.5 b` was read as a quantity with the unit `b`" in d.hint


def test_e103_extra_closing_brace():
    d = syntax_error("site S { a = 1 }}")
    assert d.code == "E103"
    assert start(d) == (1, 17)


def test_e103_position_after_non_ascii_line():
    d = syntax_error("// café\nsite S { a = 1 ) }")
    assert d.code == "E103"
    assert start(d) == (2, 16)


def test_e103_unexpected_number():
    d = syntax_error("site S {\n  power = 5 kW 3\n}")
    assert d.code == "E103"
    assert start(d) == (2, 16)


def test_e104_unexpected_character():
    d = syntax_error("site S { a = @ }")
    assert d.code == "E104"
    assert start(d) == (1, 14)
    assert (d.span.end.line, d.span.end.column) == (1, 15)


def test_e104_single_quote_hint():
    d = syntax_error("site S { a = 'x' }")
    assert d.code == "E104" and start(d) == (1, 14)
    assert "double quotes" in d.hint


def test_e104_hash_comment_hint():
    d = syntax_error("site S {\n  a = # no\n}")
    assert d.code == "E104" and start(d) == (2, 7)
    assert "//" in d.hint


def test_e104_an_unclosed_comment_after_a_value():
    # was E103 "unexpected `*`" without a hint: the `/` read as a division after `1`
    for text, at in (("let a = 1 /* no end\nlet b = 2\n", (1, 11)),
                     ("let a = 1\n/* no end\nlet b = 2\n", (2, 1))):
        d = syntax_error(text)
        assert (d.code, start(d), d.hint) == ("E104", at, "end it with `*/`")
        assert (d.span.end.line, d.span.end.column) == (at[0], at[1] + 2)
    # a `*` after a spaced `/` is no comment
    assert syntax_error("let a = 4 / *b\n").code == "E103"


@pytest.mark.parametrize("text, code, hint", [
    # other languages' operators: each was a bare E104 or E103, without a hint
    ("let a = true && false\n", "E104", "the logical and is the word `and`: `a and b`"),
    ("let a = true || false\n", "E104", "the logical or is the word `or`: `a or b`"),
    ("let a = !true\n", "E104", "the negation is the word `not`: `not a` (`!=` compares)"),
    ("let a = 2 ** 3\n", "E103", "a power is written with `^`: `2 ^ 3`"),
    ("let a = 7 % 2\n", "E103", "`%` is the unit percent (`3 %` is 0.03), not a remainder: the "
                                "language has no remainder operator; write `a - floor(a / b) * "
                                "b`"),
    # a value left out, a colon for `=`, a comma left out: each was E103 without a hint
    ("rack R { hosts = }\n", "E103", "a value is missing before this `}`: complete the "
                                     "expression, or delete it"),
    ("rack R(n =) { }\n", "E103", "a value is missing before this `)`: complete the expression, "
                                  "or delete it"),
    ("rack R { hosts: 3 }\n", "E103", "a field or a `let` is set with `=`, not `:` (`hosts = 4 x "
                                      "H`)"),
    ("let a = max(1 2)\n", "E103", "separate the items with `,` (the statements of a body: with "
                                   "`,` or a new line)"),
    ("import lib { a b }\n", "E103", "separate the items with `,` (the statements of a body: "
                                     "with `,` or a new line)"),
])
def test_common_slips_have_a_hint(text, code, hint):
    d = syntax_error(text)
    assert (d.code, d.hint) == (code, hint)


def test_e104_column_counts_code_points():
    d = syntax_error('site S { n = "µ" $ }')
    assert d.code == "E104"
    assert start(d) == (1, 18)
    d = syntax_error("site S { café = 1 }")
    assert d.code == "E104"
    assert start(d) == (1, 13)      # the `é`


def test_e105_unexpected_end_of_file():
    # a bracket left open is reported where it opens, not at the end of the file
    d = syntax_error("site S {\n  power = 5 kW\n")
    assert d.code == "E105"
    assert start(d) == (1, 8)
    assert d.message == "this `{` is never closed: the file ends at line 3 before its `}`"
    d = syntax_error("site S { a = 1 ")
    assert d.code == "E105" and start(d) == (1, 8)
    d = syntax_error("site S (")
    assert d.code == "E105" and start(d) == (1, 8)
    # nothing left open: the end of the file, and no bracket is blamed
    d = syntax_error("param limit =\n")
    assert d.code == "E105" and start(d) == (2, 1)
    assert d.hint == "the last statement stops in the middle: complete it, or delete it"
    d = syntax_error("let x = 5 W to\n")
    assert d.message == "unexpected end of file; expected a unit" and "bracket" not in d.hint


# a unit's look-alike characters were "names use ASCII letters" (the Greek mu beside the
# micro sign `µW`, which is read)
@pytest.mark.parametrize("text, column, hint", [
    ("let p = 5 \u03bcW\n", 11,
     "the micro prefix is `u` or `\u00b5` (U+00B5 MICRO SIGN), not the Greek letter: `5 uW`"),
    ("let t = 1 kW/\u03bcs\n", 14,
     "the micro prefix is `u` or `\u00b5` (U+00B5 MICRO SIGN), not the Greek letter: `5 uW`"),
    ("let r = 0.08 \u03a9/km\n", 14, "the unit of resistance is written `ohm`: `0.08 ohm/km`"),
    ("let r = 10 \u2126\n", 12, "the unit of resistance is written `ohm`: `0.08 ohm/km`"),
    ("let t = 45 \u2103\n", 12, "write `degC` (or `\u00b0C`): `45 degC`"),
    ("let t = 45 \u00baC\n", 12,
     "a degree is `\u00b0` (U+00B0 DEGREE SIGN), or write `degC`: `45 degC`"),
    # a name, not a unit: the hint about names
    ("let \u03bc = 1\n", 5, "names use ASCII letters, digits and `_`; other text belongs in a "
                          "\"string\""),
])
def test_e104_a_unit_s_look_alike_character_says_how_the_unit_is_written(text, column, hint):
    d = syntax_error(text)
    assert (d.code, start(d), d.hint) == ("E104", (1, column), hint)


@pytest.mark.parametrize("text, named", [
    ("let a = 1\u00a0\n", "NO-BREAK SPACE"), ("let a =\u200b1\n", "ZERO WIDTH SPACE")])
def test_e104_an_invisible_character_is_named(text, named):
    d = syntax_error(text)
    assert d.code == "E104" and d.hint == (
        f"an invisible character ({named}), often pasted from a web page or a document: "
        "replace it with a plain space, or delete it")
    d = syntax_error("let a = 1\x07\n")
    assert d.message == "unexpected character `U+0007`" and d.hint == "a control character: delete it"


def test_e105_names_the_brace_the_indentation_says_is_open():
    """The `}` at column 1 closes `site S {` by its indentation: `rack R {` is the one left
    open, although bracket counting alone would blame the site."""
    d = syntax_error("site S {\n  rack R {\n  power = 3 kW\n}\n\ngpu G { power = 1 W }\n")
    assert d.code == "E105" and start(d) == (2, 10)
    # brackets in strings and comments do not count
    d = syntax_error('site S {\n  note = "a { b"  // {\n  y = 1\n  /* { */\n')
    assert d.code == "E105" and start(d) == (1, 8)


def test_e107_unterminated_string():
    d = syntax_error('site S {\n  name = "abc\n}\n')
    assert d.code == "E107"
    assert start(d) == (2, 10)
    d = syntax_error('"abc')
    assert d.code == "E107" and start(d) == (1, 1)


def test_e107_invalid_escape():
    d = syntax_error('site S { note = "a\\qb" }')
    assert d.code == "E107"
    assert start(d) == (1, 17)
    assert "\\q" in d.message


def test_invalid_escape_through_the_compiler_is_a_diagnostic():
    design = astral_dsl.loads('site S { note = "a\\qb" }\n', name="f.astral")
    assert [d.code for d in design.diagnostics] == ["E107"]


def test_syntax_error_through_the_compiler():
    design = astral_dsl.loads("site S {\n  power = = 5 kW\n}\n", name="f.astral")
    assert not design.valid
    (d,) = design.diagnostics
    assert d.code == "E103" and start(d) == (2, 11) and d.span.file == "f.astral"


# ---- reading source bytes ----------------------------------------------------------------------------

def test_decode_drops_a_bom_and_rejects_bad_bytes():
    assert decode("f", b"\xef\xbb\xbfsite S { }").text == "site S { }"
    with pytest.raises(DiagnosticError) as info:
        decode("f", b"site S {\n  a = \xff\n}")
    assert info.value.diagnostic.code == "E101"
    assert start(info.value.diagnostic) == (2, 7)
    with pytest.raises(DiagnosticError) as info:
        decode("f", b"ab\x00cd")
    assert info.value.diagnostic.code == "E102"


@pytest.mark.parametrize("text, value", [("5e-324", 5e-324), ("0e-999", 0.0), ("0.000e5", 0.0),
                                         ("0_0e-400", 0.0)])
def test_a_number_is_zero_only_when_written_as_zero(text, value):
    """The smallest float is 4.9e-324 (a subnormal): 5e-324 is it, a written zero is 0."""
    (item,) = parse(Source("t.astral", f"let x = {text}\n")).items
    assert item.value.value == value


@pytest.mark.parametrize("text", ["1e-400", "1e-400 kW", "2.5E-999", "0.0001e-330", "1_000e-330"])
def test_a_nonzero_number_below_the_smallest_float_is_e106(text):
    """It was read as 0 without a word: `check 1e-400 W == 0 W` passed."""
    with pytest.raises(DiagnosticError) as info:
        parse(Source("t.astral", f"let x = {text}\n"))
    d = info.value.diagnostic
    assert d.code == "E106" and d.span.start.column == 9
    assert d.message == f"number `{text}` is too small to represent: it would be read as 0"
    assert d.hint == ("the smallest number above zero is about 5e-324: write it in a smaller "
                      "unit (`1 pW` rather than `1e-12 W`), or write 0")


def test_a_lone_carriage_return_is_e104_where_an_editor_breaks_the_line():
    # CRLF is a line end; a CR alone (old Mac files) is one for editors and the LSP but not for
    # the grammar, where `// c\rlet b = 2` would be one comment: rejected at the first, line 2
    # column 5 (`// c` is columns 1-4), before anything is parsed or formatted
    assert decode("f", b"let a = 1\r\nlet b = 2\r\n").text == "let a = 1\r\nlet b = 2\r\n"
    for text in (b"let a = 1\r\n// c\rlet b = 2\r", b"let a = 1\n// c\rlet b = 2\n"):
        with pytest.raises(DiagnosticError) as info:
            decode("f", text)
        d = info.value.diagnostic
        assert (d.code, start(d)) == ("E104", (2, 5)) and "LF" in d.hint
    from astral_dsl.fmt import format_text
    with pytest.raises(DiagnosticError) as info:
        format_text("let a = 1\n// c\rlet b = 2\n")
    assert (info.value.diagnostic.code, start(info.value.diagnostic)) == ("E104", (2, 5))


@pytest.mark.parametrize("text, hint", [
    # a double holds up to 1.797e308; 1e999 is beyond it
    ("let a = 1e999\n", "the largest number is about 1.8e308: write it in a larger unit, or "
                        "smaller"),
    # and down to 4.9e-324 (a subnormal): 1e-999 would be 0, silently
    ("let a = 1e-999 W\n", "the smallest number above zero is about 5e-324: write it in a "
                           "smaller unit (`1 pW` rather than `1e-12 W`), or write 0"),
])
def test_e106_a_number_a_float_cannot_hold_says_why(text, hint):
    d = syntax_error(text)
    assert (d.code, start(d), d.hint) == ("E106", (1, 9), hint)


def test_zero_and_tiny_numbers_are_read():
    # 0e-999 and 0.000e5 are zero as written; 1e-320 is a subnormal float, not 0
    assert [i.value.value for i in P("let a = 0e-999\nlet b = 0.000e5\nlet c = 1e-320\n").items] \
        == [0.0, 0.0, 1e-320]


@pytest.mark.parametrize("text, fixed", [
    ("1__000", "1_000"), ("1_000_", "1_000"), ("1_.5", "1.5"), ("1_e3", "1e3"),
    ("1_000_ W", "1_000 W"), ("2__5 kW", "2_5 kW"),
])
def test_a_misplaced_underscore_is_e106_with_the_number_as_it_should_read(text, fixed):
    """The grammar's number takes any run of digits and `_`; the language puts a `_` between
    two digits only: `1_000_` read as 1000 without a word."""
    d = syntax_error(f"let a = {text}\n")
    assert (d.code, start(d)) == ("E106", (1, 9))
    assert d.message == f"number `{text}` has a `_` that is not between two digits"
    assert d.hint == f"a `_` goes between two digits (`65_536`): write `{fixed}`"
    (item,) = parse(Source("t.astral", f"let a = {fixed}\n")).items      # which reads
    assert item.value.value in (1000.0, 1.5, 25.0)


def test_percent_is_a_unit_atom_after_a_slash_too():
    """`50 W/%` (a sensitivity) was E103 without a hint while `2 %/s` read."""
    for text, unit in (("50 W/%", "W/%"), ("3 W/%^2", "W/%^2"), ("5 W*%", "W*%"),
                       ("2 %/s", "%/s")):
        (item,) = parse(Source("t.astral", f"let a = {text}\n")).items
        assert item.value.unit == unit


def test_a_declaration_without_its_name_says_so():
    import astral_dsl
    d = astral_dsl.loads("rack { }\n", name="t.astral")
    (e,) = [x for x in d.diagnostics if x.is_error]
    assert (e.code, e.hint) == ("E210", "a declaration names its template: `rack Name { ... }`")


@pytest.mark.parametrize("text, digit, value", [
    ("1\u06600 kW", "\u0660", 0),            # ARABIC-INDIC DIGIT ZERO: reads as 1.0 kW, was 100 kW
    ("\u0663", "\u0663", 3),
    ("\uff18", "\uff18", 8),                 # FULLWIDTH DIGIT EIGHT
    ("3e\u0663", "\u0663", 3),
    ("4\U0001d7d3", "\U0001d7d3", 5),       # MATHEMATICAL BOLD DIGIT FIVE
])
def test_a_digit_other_than_0_to_9_is_e106_with_what_it_would_read_as(text, digit, value):
    """The grammar's `\\d` and float() take any script's decimal digits: `1٠0 kW` was 100 kW
    where a reader sees 1.0 kW."""
    d = syntax_error(f"let a = {text}\n")
    assert (d.code, start(d)) == ("E106", (1, 9))
    assert d.message.startswith(f"number `{text}` has `{digit}` (U+{ord(digit):04X} ")
    assert d.message.endswith("), a digit other than 0-9")
    assert d.hint == f"write the number with the digits 0-9 (`{digit}` would be read as {value})"


def test_a_units_exponent_other_than_0_to_9_is_not_read():
    from astral_dsl.units.table import UnitSpecError, parse_unit

    with pytest.raises(UnitSpecError, match="malformed unit"):
        parse_unit("m^\u0662")
    assert parse_unit("m^2").dims == parse_unit("m*m").dims


HINT_W101 = ("delete it: it reorders how editors and terminals show the rest of the line "
             "(\"Trojan Source\", CVE-2021-42574), and right-to-left words show in their order "
             "without it")


@pytest.mark.parametrize("point", ["\u202a", "\u202e", "\u2066", "\u2069"])
def test_w101_a_bidi_control_in_a_comment_or_string_is_a_warning(point):
    """A bidirectional control character ("Trojan Source", CVE-2021-42574) in a comment or a
    string was accepted silently: W101 at the first one of each comment or string."""
    from astral_dsl.syntax.bidi import bidi_warnings
    import unicodedata

    text = (f'let a = "x{point}y{point}" // z{point}\n'
            f'/* one\n two {point} */ let b = 1\n'
            f'let c = 2 // none\n')
    P(text)                                          # it parses: the warning is all
    found = bidi_warnings(Source("m.astral", text))
    name = unicodedata.name(point)
    assert [(d.code, d.severity.value, start(d), d.message, d.hint) for d in found] == [
        ("W101", "warning", pos_, f"{where} holds a bidirectional control character, "
                                  f"U+{ord(point):04X} ({name}): the line may read other than "
                                  f"it compiles", HINT_W101)
        for pos_, where in [((1, 11), "a string"), ((1, 20), "a comment"), ((3, 6), "a comment")]]
    assert bidi_warnings(Source("m.astral", "let a = \"\u05d0\u05d1\" // \u00e9\n")) == []


def test_w101_a_design_says_it_and_fmt_keeps_the_character(tmp_path):
    text = 'let a = 4 // limit \u202e\u2066 then 8\nsite S { power = 1 W }\n'
    design = astral_dsl.loads(text, name="m.astral", root=tmp_path)
    assert [(d.code, start(d)) for d in design.diagnostics] == [("W101", (1, 20))]
    assert design.valid
    from astral_dsl.fmt import format_text
    assert format_text(text) == text


def test_w101_twenty_are_said_the_last_counting_the_rest():
    from astral_dsl.syntax.bidi import MAX_SAID, bidi_warnings

    text = "".join(f"let a{i} = 1 // \u202e\n" for i in range(25))
    found = bidi_warnings(Source("m.astral", text))
    assert len(found) == MAX_SAID == 20 and start(found[-1]) == (20, 16)
    assert found[-1].message.endswith("(and 5 more comment(s) or string(s) hold one)")
    assert "more" not in found[-2].message
