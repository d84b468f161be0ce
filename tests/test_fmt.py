"""`astral fmt`: the canonical layout.

- every example, stdlib file and docs snippet (```astral blocks of docs/*.md) is already formatted;
- the layout is canonical: an example whose indentation and spacing are scrambled formats back to
  the example;
- properties on generated designs (hypothesis): formatting is idempotent, keeps every comment
  (in order, text unchanged) and never changes meaning: the compiled model before and after is the
  same apart from source positions;
- the layout rules on small inputs, and the command line (`--check`, `--diff`, in place, stdin).
"""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astral_dsl.api import loads
from astral_dsl.diagnostics import DiagnosticError
from astral_dsl.fmt import format_text
from astral_dsl.fmt.cst import concrete
from astral_dsl.outputs.export import export_design
from clirun import astral as _astral_cli  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted((REPO / "examples").glob("*.astral")) + sorted((REPO / "stdlib").glob("*.astral"))


def _doc_blocks():
    sys.path.insert(0, str(Path(__file__).parent))
    from test_docs import BLOCKS

    return [b for b in BLOCKS if b.lang == "astral"]


DOC_BLOCKS = _doc_blocks()


# ---- the repository is formatted -----------------------------------------------------------------
@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_examples_and_stdlib_are_formatted(path):
    text = path.read_text(encoding="utf-8")
    assert format_text(text, str(path)) == text, f"run `astral fmt {path.relative_to(REPO)}`"


@pytest.mark.parametrize("block", DOC_BLOCKS, ids=lambda b: b.id)
def test_docs_snippets_are_formatted(block):
    formatted = format_text(block.text, block.id)
    if formatted != block.text:
        import difflib

        diff = "".join(difflib.unified_diff(block.text.splitlines(True),
                                            formatted.splitlines(True), "docs", "astral fmt"))
        pytest.fail(f"{block.id} is not in the canonical layout:\n{diff}")


# ---- model comparison ----------------------------------------------------------------------------
_POSITION_KEYS = {"source", "line", "column", "file", "at"}   # `at`: where a chosen `?` is


def _strip(o):
    if isinstance(o, dict):
        return {k: _strip(v) for k, v in o.items() if k not in _POSITION_KEYS}
    if isinstance(o, list):
        return [_strip(x) for x in o]
    if isinstance(o, str):
        return " ".join(o.split())      # a check's message quotes its source text
    return o


def fingerprint(design) -> str:
    """The compiled model without source positions (and without the spelling of whitespace in
    the source snippets that unnamed checks quote)."""
    diags = [(d.code, d.severity.value, re.sub(r"\d+:\d+", "L:C", " ".join(d.message.split())),
              d.hint) for d in design.diagnostics]
    doc = {"diagnostics": diags}
    if design.valid:
        doc["model"] = _strip(export_design(design))
    return json.dumps(doc, sort_keys=True, default=str)


def compile_(text: str):
    return loads(text, "generated.astral", REPO)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_scrambled_layout_formats_back(path):
    """Indentation, spacing and blank lines scrambled (comment columns kept) -> the original,
    and the same compiled model."""
    text = path.read_text(encoding="utf-8")
    rng = random.Random(path.name)
    # the original's model, compiled once for the three scrambles (it was compiled per scramble)
    original = fingerprint(compile_(text)) if path.parent.name == "examples" else None
    for _ in range(3):
        scrambled = scramble(text, rng)
        assert scrambled != text
        assert format_text(scrambled, str(path)) == text
        if original is not None:
            assert fingerprint(compile_(scrambled)) == original


_GLUE = {"LPAR", "RPAR", "LSQB", "RSQB", "COMMA", "EQUAL", "COLON", "LBRACE", "RBRACE"}


def scramble(text: str, rng: random.Random) -> str:
    """The same tokens with other whitespace: each line that holds only tokens (no comment, no
    statement separator) is re-indented and re-spaced token by token (a quantity's number and
    unit too); blank lines get spaces or are doubled."""
    cst = concrete(text)
    commented = set()
    for c in cst.comments:
        commented.update(range(c.line, c.line + c.text.count("\n") + 1))
    by_line = {}
    for t in cst.tokens:
        by_line.setdefault(t.line, []).append(t)
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        toks = by_line.get(n)
        if not line.strip():
            out.append(rng.choice(["", "   ", "\t"]))
            if rng.random() < 0.3:
                out.append("")
            continue
        if n in commented or not toks or not _only_tokens(line, toks):
            out.append(line)
            continue
        pieces = [rng.choice(["", " ", "  ", "\t", "    "])]
        prev = None
        for t in toks:
            if prev is not None:
                glue = prev.type in _GLUE or t.type in _GLUE
                pieces.append(rng.choice(["", " ", "   "] if glue else [" ", "  ", "\t"]))
            word = text[t.start:t.end]
            if t.type == "QUANTITY":
                m = re.match(r"^(\S+?)[ \t]*([A-Za-z\u00b0\u00b5%].*)$", word)
                word = m.group(1) + rng.choice(["", " ", "  ", "\t"]) + m.group(2)
            pieces.append(word)
            prev = t
        out.append("".join(pieces))
    return "\n".join(out)


def _only_tokens(line: str, toks) -> bool:
    """The line holds these tokens and whitespace, nothing else (no separator)."""
    rest = list(line)
    for t in toks:
        for i in range(t.column - 1, t.column - 1 + (t.end - t.start)):
            rest[i] = " "
    return not "".join(rest).strip()


# ---- generated designs (hypothesis) --------------------------------------------------------------
class Layout:
    """Random whitespace and comments between tokens; every comment is unique and recorded."""

    def __init__(self, draw):
        self.draw = draw
        self.comments: List[str] = []

    def comment(self, line: bool) -> str:
        text = f"// note {len(self.comments)}" if line else f"/* c{len(self.comments)} */"
        if not line and self.draw(st.booleans()):
            text = f"/* c{len(self.comments)}\n   spans lines */"
        self.comments.append(text)
        return text

    def gap(self, glue: bool = False) -> str:
        """Between two tokens of one statement."""
        choice = self.draw(st.integers(0, 9))
        if choice == 0 and glue:
            return ""
        if choice in (1, 2, 3):
            return " "
        if choice == 4:
            return "   "
        if choice == 5:
            return "\t"
        if choice == 6:
            return "\n" + " " * self.draw(st.integers(0, 6))
        if choice == 7:
            return " " + self.comment(False) + " "
        if choice == 8:
            return " " + self.comment(True) + "\n  "
        return " "

    def between(self) -> str:
        """Between two statements."""
        choice = self.draw(st.integers(0, 9))
        if choice in (0, 1, 2):
            return "\n" + " " * self.draw(st.integers(0, 5))
        if choice == 3:
            return "\n\n\n"
        if choice == 4:
            return ", "
        if choice == 5:
            return " ; "
        if choice == 6:
            return ",\n"
        if choice == 7:
            return "   " + self.comment(True) + "\n"
        if choice == 8:
            return "\n" + self.comment(True) + "\n\n"
        return " " + self.comment(False) + "\n"


def quantity(draw, number: str, unit: str) -> str:
    return number + draw(st.sampled_from(["", " ", "  ", "\t"])) + unit


def render(layout: Layout, tokens: List[str]) -> str:
    out = [tokens[0]]
    for prev, tok in zip(tokens, tokens[1:]):
        glue = prev in "()[]{},=:" or tok in "()[]{},=:"
        out.append(layout.gap(glue))
        out.append(tok)
    return "".join(out)


@st.composite
def power_expr(draw, layout: Layout, names: List[str], depth: int = 0) -> List[str]:
    choice = draw(st.integers(0, 5 if depth < 2 else 1))
    if choice == 0:
        return [quantity(draw, str(draw(st.integers(1, 900))), draw(st.sampled_from(["W", "kW"])))]
    if choice == 1 and names:
        return [draw(st.sampled_from(names))]
    if choice == 1:
        return [quantity(draw, "1.5", "kW")]
    if choice == 2:
        return (draw(power_expr(layout, names, depth + 1)) + [draw(st.sampled_from("+-"))] +
                draw(power_expr(layout, names, depth + 1)))
    if choice == 3:
        return ["("] + draw(power_expr(layout, names, depth + 1)) + [")", "*",
                                                                     str(draw(st.integers(1, 4)))]
    if choice == 4:
        return (["(", "if", draw(st.sampled_from(["true", "false"])), "then"] +
                draw(power_expr(layout, names, depth + 1)) + ["else"] +
                draw(power_expr(layout, names, depth + 1)) + [")"])
    return (["("] + draw(power_expr(layout, names, depth + 1)) +
            ["to", draw(st.sampled_from(["kW", "W", "BTU/h"])), ")"])


@st.composite
def design(draw):
    layout = Layout(draw)
    items: List[str] = []
    if draw(st.booleans()):
        items.append(layout.comment(True))
    items.append(render(layout, ["import", "stdlib", ".", "hardware", "{", "H800", ",",
                                 "CX7_2x200G", ",", "HGX8", "}"]))
    names = []
    for i in range(draw(st.integers(0, 2))):
        name = f"limit{i}"
        items.append(render(layout, ["param", name, "="] +
                            [quantity(draw, str(draw(st.integers(20, 90))), "kW")]))
        names.append(name)
    items.append(render(layout, ["param", "per_rack", "=", str(draw(st.integers(1, 4)))]))
    # a GPU template with a few fields, written as a body of statements
    fields = [["power", "="] + draw(power_expr(layout, [])),
              ["memory", "=", quantity(draw, str(draw(st.integers(16, 192))), "GB")],
              ["flops_bf16", "=", quantity(draw, "989", "TFLOP/s")],
              ["source", "=", '"generated"']]
    fields = fields[:draw(st.integers(1, len(fields)))]
    items.append(block(layout, ["gpu", "Accel"], fields))
    host_fields = [["gpus", "=", "8", "x", "Accel"],
                   ["power", "="] + draw(power_expr(layout, names)),
                   ["liquid_share", "=", quantity(draw, str(draw(st.integers(0, 100))), "%")]]
    host_fields = host_fields[:draw(st.integers(1, 3))]
    items.append(block(layout, ["host", "Node"], host_fields))
    items.append(block(layout, ["host", "Hgx", "=", "HGX8", "(", "gpu", "=", "H800", ",", "nic",
                                "=", "CX7_2x200G", ")"],
                       [["let", "spare", "=", quantity(draw, "2", "kW")]]))
    rack_stmts = [["hosts", "=", "per_rack", "x", "Node"],
                  ["check", "power", "<=", quantity(draw, "200", "kW"), "else", "warning", '"hot"'],
                  ["others", "=", "[", "1", "x", "Hgx", ",", "2", "x", "Node", "]"]]
    if names:
        rack_stmts.append(["check", "power", ">=", names[0], "else", "warning", '"low"'])
    items.append(block(layout, ["rack", "Rack"], rack_stmts))
    items.append(block(layout, ["site", "S"],
                       [["racks", "=", str(draw(st.integers(1, 3))), "x", "Rack"],
                        ["check", "gpus", ">", "0"]]))
    text = ""
    for item in items:
        text += item + draw(st.sampled_from(["\n", "\n\n", "\n\n\n", "   \n"]))
    return text, layout.comments


def block(layout: Layout, head: List[str], stmts: List[List[str]]) -> str:
    """`head { stmt stmt ... }` with random separators and layout."""
    # `4 kW` followed by a name on the same line would read as a quantity: statements are
    # separated by a newline or a separator (Layout.between)
    parts = [render(layout, head), " {",
             layout.draw(st.sampled_from([" ", "\n", "\n    ", "\n\n"])) if stmts else ""]
    if stmts and layout.draw(st.booleans()):
        parts.append(" " + layout.comment(True) + "\n")
    for i, stmt in enumerate(stmts):
        if i:
            parts.append(layout.between())
        parts.append(render(layout, stmt))
    parts.append(layout.draw(st.sampled_from([" ", "\n", ",\n", ";  "])))
    parts.append("}")
    return "".join(parts)


@given(design())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_designs(case):
    text, comments = case
    try:
        before = compile_(text)
    except DiagnosticError:   # pragma: no cover - the generator writes valid syntax
        raise
    assert not any(d.code.startswith("E1") for d in before.diagnostics), \
        f"generator wrote bad syntax:\n{text}\n{before.diagnostics}"
    out = format_text(text, "generated.astral")
    # idempotent
    assert format_text(out, "generated.astral") == out
    # every comment, in order, text unchanged
    pos = 0
    for c in comments:
        i = out.find(c, pos)
        assert i >= 0, f"comment {c!r} lost or moved:\n{out}"
        pos = i + len(c)
    assert out.count("//") + out.count("/*") == len(comments)
    # the same meaning
    assert fingerprint(compile_(out)) == fingerprint(before)


# ---- the layout rules ----------------------------------------------------------------------------
@pytest.mark.parametrize("source, expected", [
    ("host   A{power=700W}", "host A { power = 700 W }\n"),
    ("param a=4kW;param b : power=1kW", "param a = 4 kW\nparam b: power = 1 kW\n"),
    ("rack R {\nhosts=4 x N\n\n\n  check power<=45kW else error \"x\"\n}\n",
     "rack R {\n  hosts = 4 x N\n\n  check power <= 45 kW else error \"x\"\n}\n"),
    ("site S { racks = 2 x R\n tier t { a = 1 } }\n",
     "site S {\n  racks = 2 x R\n  tier t { a = 1 }\n}\n"),
    ("site S { a = b c = 2 }", "site S { a = b, c = 2 }\n"),
    ("site S { a = 1; b = 2 }", "site S { a = 1; b = 2 }\n"),
    ("site S {\n  a = 1,\n  b = 2;\n}", "site S {\n  a = 1\n  b = 2\n}\n"),
    ("let x = -(a)+b*c/d^2", "let x = -(a) + b * c / d ^ 2\n"),
    ("let r = pods[ 0 .. 4 ] . racks [*]", "let r = pods[0..4].racks[*]\n"),
    ("let c = [ Row( slot=i ) for i in 0..8 ]", "let c = [Row(slot = i) for i in 0..8]\n"),
    ("let q = 45 kW to BTU/h", "let q = 45 kW to BTU/h\n"),
    ("let u = ? in [A,B]", "let u = ? in [A, B]\n"),
    ("host N(p:power=1kW,q=2)=HGX8(gpu=H800)\n{\npower=p}",
     "host N(p: power = 1 kW, q = 2) = HGX8(gpu = H800) {\n  power = p\n}\n"),
    ("site S {\n  x = [1,\n2,\n3]\n}", "site S {\n  x = [1,\n    2,\n    3]\n}\n"),
    ("check a and\nb", "check a and\n  b\n"),
    ("host A {}", "host A {}\n"),
    ("\n\n// header\n\n\nparam a = 1\n\n\n", "// header\n\nparam a = 1\n"),
])
def test_layout(source, expected):
    assert format_text(source) == expected
    assert format_text(expected) == expected


def test_comments_keep_their_place_and_text():
    source = ("// head   \n"
              "rack R {   // trailing\n"
              "      // own line\n"
              "  hosts = 4 x N    /* inline */ , power = 1 kW   // aligned\n"
              "  /* a block\n     over lines */\n"
              "}\n")
    column = source.split("\n")[3].index("// aligned")          # kept: there is room
    code = "  hosts = 4 x N, /* inline */ power = 1 kW"
    assert format_text(source) == ("// head\n"
                                   "rack R {   // trailing\n"
                                   "  // own line\n" +
                                   code.ljust(column) + "// aligned\n"
                                   "  /* a block\n     over lines */\n"
                                   "}\n")


def test_a_trailing_comment_keeps_its_column_when_there_is_room():
    source = "param a=1          // x\nparam bb = 2       // y\n"
    assert format_text(source) == "param a = 1        // x\nparam bb = 2       // y\n"
    crowded = "param a = 1 // x\n"
    assert format_text("param   a   =   1 // x\n") == "param a = 1       // x\n"
    assert format_text(crowded) == crowded


def test_quantities_squared_keep_their_meaning():
    # `2 m ^ 2` squares a quantity; `2 m^2` is an area: the space before `^` stays
    assert format_text("let a = 2 m ^ 2\nlet b = 2 m^2\n") == "let a = 2 m ^ 2\nlet b = 2 m^2\n"


def test_a_syntax_error_is_the_compilers_diagnostic():
    with pytest.raises(DiagnosticError) as exc:
        format_text("site S { racks = }", "bad.astral")
    d = exc.value.diagnostic
    assert d.code == "E103" and d.span.file == "bad.astral" and d.span.start.column == 18


def test_crlf_and_bom():
    assert format_text("\ufeffparam a = 1\r\nparam b = 2\r\n") == "param a = 1\nparam b = 2\n"


# ---- the command line ----------------------------------------------------------------------------
def astral(*args, stdin=None, cwd=None):
    """`astral ...` of this checkout (tests/clirun.py), in the working directory given or the
    current one."""
    return _astral_cli(*args, input=stdin, cwd=cwd)


def test_the_command_line_is_this_checkout(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import astral_dsl; print(astral_dsl.__file__)"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert Path(proc.stdout.strip()).resolve() == REPO / "astral_dsl" / "__init__.py"


def test_cli_check_diff_and_rewrite(tmp_path):
    good = tmp_path / "good.astral"
    good.write_text("site S { racks = 2 x R }\n")
    messy = tmp_path / "messy.astral"
    messy.write_text("site   S{racks=2 x R}\n")
    r = astral("fmt", "--check", str(good), str(messy))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [str(messy)]
    assert messy.read_text() == "site   S{racks=2 x R}\n"          # --check writes nothing
    r = astral("fmt", "--diff", str(messy))
    assert r.returncode == 0
    assert "-site   S{racks=2 x R}" in r.stdout and "+site S { racks = 2 x R }" in r.stdout
    assert messy.read_text() == "site   S{racks=2 x R}\n"
    r = astral("fmt", str(tmp_path))                                 # a folder: its files
    assert r.returncode == 0, r.stderr
    assert messy.read_text() == "site S { racks = 2 x R }\n"
    assert astral("fmt", "--check", str(good), str(messy)).returncode == 0


def test_cli_syntax_error_and_stdin(tmp_path):
    bad = tmp_path / "bad.astral"
    bad.write_text("site S {\n  racks = \n}\n")
    r = astral("fmt", str(bad))
    assert r.returncode == 1
    assert "error[E103]" in r.stderr and "bad.astral:3:1" in r.stderr
    assert bad.read_text() == "site S {\n  racks = \n}\n"
    r = astral("fmt", "-", stdin="param  a=1\n")
    assert r.returncode == 0 and r.stdout == "param a = 1\n"
    r = astral("fmt", str(tmp_path / "missing.astral"))
    assert r.returncode == 2
