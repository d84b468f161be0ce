"""Property tests: whatever text or bytes come in, the compiler answers with a Design and
diagnostics, never with an exception.

Deterministic and bounded: every test runs with `derandomize=True` (the same examples on every
run, so CI is reproducible) and at most 150 examples; nothing here measures time.
"""
from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import astral_dsl
from astral_dsl.diagnostics import CODES, Diagnostic, Severity

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Imports in fuzzed text resolve against an empty project folder (and the stdlib).
_ROOT = Path(tempfile.mkdtemp(prefix="astral_fuzz_"))
atexit.register(shutil.rmtree, _ROOT, True)

SEED = """\
// A small valid design: the seed the mutation test starts from.
param hosts_per_rack = 4
param limit: power = 45 kW
let spare = 2

gpu G { power = 700 W, memory = 80 GB, max_supply = 45 degC }
nic N { ports = 1, port_speed = 400 Gb/s, protocol = infiniband }

host Node(n: count = 8) {
  gpus = n x G
  nics = [N, N]
  power = 10 kW
  check power >= 1 kW else warning "tiny host"
}

rack R {
  hosts = hosts_per_rack x Node(n = 8)
  power_limit = limit
  utilization = 80 %
  check power <= power_limit
}

site S {
  racks = [4 x R, spare x R]
  let total = sum(racks.power)
  check count(racks) == 6
  check all(racks.power <= 45 kW)
  check total to kW <= 300 kW
  check if spare > 1 then true else false
  feeder hvdc { current = dc, voltage = 240 V, capacity = 400 kW, serves = racks }
}

model M { layers = 4, hidden = 512, heads = 8 }

job J {
  model = M
  parallel { tp = 8, pp = 2 }
  batch { global_batch = 64, micro = 1 }
  recompute = selective
}

scenario LoseRack {
  fail S.hvdc
  set S.racks[1].utilization = 90 %
  check (40 degC - 30 degC) to K == 10 K
}
"""

# Tokens of the language (and a few near misses) that mutations insert.
VOCABULARY = [
    "x", "{", "}", "[", "]", "(", ")", "..", ".", ",", ";", "=", "==", "!=", "<=", ">", "?",
    "[*]", "*", "/", "+", "-", "^", "kW", "W", "degC", "K", "Gb/s", "GB", "%", "L/min", "to",
    "if", "then", "else", "and", "or", "not", "for", "in", "check", "fail", "set", "let",
    "param", "import", "stdlib", "as", "site", "hall", "pod", "rack", "host", "gpu", "nic",
    "scenario", "job", "model", "parallel", "minimize", "maximize", "error", "warning", "true",
    "false", "sum", "count", "max", "all", "0", "1", "-1", "2.5", "1_000", "7e2", "8 x",
    "45 kW", "40 degC", "400 Gb/s", "400", "1e400", "10 ^ 400", '"s"', '"\\q"', "'", "/*", "*/", "//", "\n", " ", "\t",
    "racks", "power", "S", "R", "Node", "G", "M", "\u00e9", "\u00b0C", "\U0001F680", "#", "@",
]

# What a `replace_word` mutation puts in place of a number or a name of the seed: same shape,
# other meaning, so that many mutants get past the parser into the semantic passes.
NUMBERS = ["0", "1", "-1", "2.5", "1_000", "7e2", "400", "1e400", "10 ^ 400", "45 kW", "40 degC",
           "400 Gb/s", "80 %", "?", "true", '"s"', "G", "[1, 2]", "0..4"]
NAMES = ["racks", "hosts", "gpus", "power", "memory", "utilization", "limit", "spare",
         "hosts_per_rack", "S", "R", "Node", "G", "N", "M", "J", "x", "kW", "degC", "true", "sum",
         "count", "max", "all", "selective", "roce", "error", "warning", "gpu", "rack", "site",
         "pod", "scenario", "fluid", "n", "total", "H800"]

_TOKEN = re.compile(r"\s+|\w+|\.\.|[=!<>]=|\S")


def _check_design(design, text: str | None = None, name: str | None = None) -> None:
    """A Design whose diagnostics each have a known code, a message, and a span or a file; a
    span in the compiled text itself lies inside that text."""
    assert hasattr(design, "diagnostics") and hasattr(design, "valid")
    assert isinstance(design.diagnostics, tuple)
    lines = None
    if text is not None:
        body = text[1:] if text.startswith("\ufeff") else text
        lines = body.split("\n")
    for d in design.diagnostics:
        assert isinstance(d, Diagnostic)
        assert d.code in CODES and d.code != "E000", d
        assert isinstance(d.severity, Severity)
        assert isinstance(d.message, str) and d.message.strip(), d
        assert d.span is not None or d.file, d
        if d.span is not None and lines is not None and d.span.file == name:
            line, column = d.span.start.line, d.span.start.column
            assert 1 <= line <= len(lines), (d, len(lines))
            assert 1 <= column <= len(lines[line - 1]) + 1, (d, lines[line - 1])
    if design.valid:
        assert not any(d.is_error for d in design.diagnostics)


def _loads(text: str):
    return astral_dsl.loads(text, name="fuzz.astral", root=_ROOT)


# ---- (1) random text --------------------------------------------------------------------------------
_GRAMMARISH = st.text(
    alphabet=st.sampled_from(list("{}[]()=,;.?*x^+-/<>!\"'\\ \n\t\r0123456789_eE"
                                  "abcdefghijklmnopqrstuvwxyzWkGBKCdg%#@\x00\x0b\x0c"
                                  "\u00e9\u00b0\u00b5\u2028\ufeff\U0001F680")),
    max_size=300)
_TEXT = st.one_of(
    st.text(max_size=300),                                    # any code points but surrogates
    st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=300),  # ASCII incl. controls
    _GRAMMARISH,
    st.lists(st.sampled_from(VOCABULARY), max_size=60).map(" ".join),
)


def test_seed_is_valid():
    design = _loads(SEED)
    assert design.valid, [str(d.span) + " " + d.message for d in design.diagnostics]


@FUZZ
@given(_TEXT)
@example("")
@example("\x00")
@example("\ufeff")
@example("{")
@example("/*")
@example('"\\')
@example("site S { racks = 0 x R }")
@example("let a = " + "(" * 200 + "1" + ")" * 200)
@example("let a = " + "-" * 3000 + "1")
@example("let a = " + " + ".join(["1"] * 5000))
def test_random_text_gives_diagnostics(text):
    _check_design(_loads(text), text, "fuzz.astral")


# ---- (2) mutations of a valid design ----------------------------------------------------------------
_OPS = st.sampled_from(["delete_char", "duplicate_char", "swap_chars", "delete_token",
                        "duplicate_token", "swap_tokens", "insert_token", "insert_token_glued",
                        "replace_word", "replace_word"])


def _mutate(text: str, ops) -> str:
    for op, i, j, word in ops:
        if op.endswith("_char"):
            if not text:
                continue
            k = i % len(text)
            if op == "delete_char":
                text = text[:k] + text[k + 1:]
            else:
                text = text[:k + 1] + text[k:]
        elif op == "swap_chars":
            if len(text) < 2:
                continue
            k = i % (len(text) - 1)
            text = text[:k] + text[k + 1] + text[k] + text[k + 2:]
        else:
            tokens = _TOKEN.findall(text)
            if not tokens:
                tokens = [""]
            k, m = i % len(tokens), j % len(tokens)
            words = [n for n, t in enumerate(tokens) if t[:1].isalnum() or t[:1] == "_"]
            if op == "replace_word":
                # keeps the shape of the text, so more mutants get past the parser
                if words:
                    n = words[i % len(words)]
                    pool = NUMBERS if tokens[n][0].isdigit() else NAMES
                    tokens[n] = pool[j % len(pool)]
            elif op == "delete_token":
                del tokens[k]
            elif op == "duplicate_token":
                tokens.insert(k, tokens[k])
            elif op == "swap_tokens":
                tokens[k], tokens[m] = tokens[m], tokens[k]
            elif op == "insert_token":
                tokens.insert(k, f" {word} ")
            else:
                tokens.insert(k, word)
            text = "".join(tokens)
    return text


_MUTATIONS = st.lists(
    st.tuples(_OPS, st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(VOCABULARY)),
    min_size=1, max_size=4)


@FUZZ
@given(_MUTATIONS)
@example([("insert_token", 0, 0, "}")])
@example([("delete_token", 10**6 - 1, 0, "x")])
@example([("insert_token_glued", 500, 0, "[*]")])
def test_mutated_design_gives_diagnostics(ops):
    text = _mutate(SEED, ops)
    _check_design(_loads(text), text, "fuzz.astral")


_SEMANTIC = st.lists(
    st.tuples(st.just("replace_word"), st.integers(0, 10**6), st.integers(0, 10**6),
              st.just("")), min_size=1, max_size=3)


@FUZZ
@given(_SEMANTIC)
def test_semantic_mutations_give_diagnostics(ops):
    """Numbers and names swapped for others: mostly still parses, so this reaches the name, unit,
    type, count and structure checks."""
    text = _mutate(SEED, ops)
    _check_design(_loads(text), text, "fuzz.astral")


# ---- (3) random bytes through a file ------------------------------------------------------------------
def _with_bad_byte(pair):
    text, (pos, byte) = pair
    data = text.encode("utf-8")
    k = pos % (len(data) + 1)
    return data[:k] + bytes([byte]) + data[k:]


_BYTES = st.one_of(
    st.binary(max_size=400),
    st.text(max_size=200).map(lambda t: t.encode("utf-8")),
    st.text(max_size=200).map(lambda t: b"\xef\xbb\xbf" + t.encode("utf-8")),
    st.tuples(st.sampled_from([SEED, "gpu G { power = 700 W }\n", ""]),
              st.tuples(st.integers(0, 10**6), st.integers(0x80, 0xFF))).map(_with_bad_byte),
    st.tuples(st.text(max_size=100), st.tuples(st.integers(0, 10**6), st.just(0)))
      .map(_with_bad_byte),
    st.text(max_size=100).map(lambda t: t.encode("utf-16")),
    st.text(max_size=100).map(lambda t: t.encode("latin-1", errors="replace")),
)


@FUZZ
@given(_BYTES)
@example(b"")
@example(b"\x00")
@example(b"\xef\xbb\xbf")
@example(b"\xff\xfe")
@example(b"\xc3")
@example(b"\r\n\r\n}")
def test_random_bytes_give_diagnostics(data):
    with tempfile.TemporaryDirectory(prefix="astral_fuzz_") as folder:
        path = Path(folder) / "fuzz.astral"
        path.write_bytes(data)
        design = astral_dsl.load(path)
        _check_design(design)
        for d in design.diagnostics:
            if d.code in ("E101", "E102"):
                assert d.span is not None and d.span.start.line >= 1
