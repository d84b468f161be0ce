"""Work and memory bounded by the description, and the edges of the API and of rendering.

The domain violations of single fields are cases of the bad-input corpus (tests/bad/EXPECTED,
`domain_*`); here: what needs more than one file or a process of its own (import depth, the
command line's last-resort handler), memory in proportion to the input, the Python API's inputs,
and user text in pictures."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.diagnostics import DiagnosticError
from astral_dsl.semantics.modules import MAX_IMPORT_DEPTH
from astral_dsl.units import Quantity

REPO = Path(__file__).resolve().parents[1]
BAD = REPO / "tests" / "bad"


def _here(*args):
    """`astral ARGS` in this process (tests/clirun.py): the command's code path without the
    ~0.25 s of CPU a new interpreter takes (`_astral` below is a process: for what runs past a
    limit, with a timeout)."""
    from clirun import astral

    return astral(*args)


def _astral(*args, cwd=REPO, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("NO_COLOR", None)
    return subprocess.run([sys.executable, "-m", "astral_dsl.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _codes(design):
    return [(d.code, d.span.start.line, d.span.start.column) if d.span else (d.code,)
            for d in design.diagnostics]


# ---- imports ------------------------------------------------------------------------------------
def _chain(folder: Path, depth: int) -> Path:
    (folder / "astral.toml").write_text("")
    for i in range(depth):
        (folder / f"m{i}.astral").write_text(f"import m{i + 1}\n")
    (folder / f"m{depth}.astral").write_text("let end = 1\n")
    main = folder / "main.astral"
    main.write_text("import m0\nsite S { }\n")
    return main


def test_a_deep_import_chain_is_a_diagnostic(tmp_path):
    design = astral_dsl.load(_chain(tmp_path, 350))
    e406 = [d for d in design.diagnostics if d.code == "E406"]
    assert len(e406) == 1 and not design.valid, _codes(design)
    assert e406[0].span.file.endswith(f"m{MAX_IMPORT_DEPTH - 2}.astral")
    assert "E402" not in {d.code for d in design.diagnostics}


def test_an_import_chain_within_the_bound_compiles(tmp_path):
    design = astral_dsl.load(_chain(tmp_path, MAX_IMPORT_DEPTH - 2))
    assert design.valid, _codes(design)


# ---- memory in proportion to the input -------------------------------------------------------------
LONG = {
    "string": 'let s = "' + "a" * 250_000 + '"\n',                   # was ~600 bytes a character
    "escapes": 'let s = "' + "ab\\n" * 62_500 + '"\n',
    "comment": "/*" + "a" * 1_000_000 + "*/\nlet s = 1\n",
    "stars": "/*" + "* a " * 250_000 + "*/\nlet s = 1\n",
    # a syntax error after it: the brackets are matched to say where (was ~120 bytes a character)
    "broken": 'let s = "' + "a" * 250_000 + '"\nlet b = (\n',
}


@pytest.mark.parametrize("kind", sorted(LONG))
def test_long_strings_and_comments_cost_memory_in_proportion(kind):
    body = LONG[kind]
    from astral_dsl.fmt import format_text
    from astral_dsl.syntax.larkroad import lark_parser
    from astral_dsl.syntax.parser import parse
    from astral_dsl.syntax.source import Source

    lark_parser()                                # both roads' parsers built before measuring
    parse(Source("warm.astral", "x = 1"))
    for run in (lambda: parse(Source("long.astral", body)), lambda: format_text(body)):
        tracemalloc.start()
        try:
            try:
                run()
            except DiagnosticError:
                assert kind == "broken"
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 40 * len(body), f"{peak / len(body):.0f} bytes per character"


def test_a_list_past_the_token_limit_is_e108_before_it_is_parsed(monkeypatch):
    """A token costs ~450 bytes through the parse and as much compiled: a list of 400,000 numbers
    in 800 kB (under the 8 MiB cap) took 390 MB and 7.7 s; 8 MiB of them about 4 GB. Past
    MAX_TOKENS (250,000; 20,000 here, for time) the text is refused where the limit is passed,
    counted in memory in proportion to the text (as the long strings above are parsed)."""
    from astral_dsl.syntax import parser

    assert parser.MAX_TOKENS == 250_000
    monkeypatch.setattr(parser, "MAX_TOKENS", 20_000)
    # `let xs = [` is 4 tokens, then `1,` 2 an item: token k > 4 starts at offset 10 + (k - 5);
    # token 20,001 at 10 + 19,996 = 20,006, column 20,007
    text = "let xs = [" + "1," * 10_000 + "1]\n"
    astral_dsl.loads(text, name="warm.astral")       # what the first compile imports and builds
    tracemalloc.start()
    try:
        design = astral_dsl.loads(text, name="long.astral")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert _codes(design) == [("E108", 1, 20_007)]
    d = design.diagnostics[0]
    assert "more than 20,000 tokens" in d.message and "replication" in d.hint
    assert peak < 40 * len(text), f"{peak / len(text):.0f} bytes per character"


def test_the_token_limit_counts_tokens_not_comments_or_strings(monkeypatch):
    """At a limit of 40 tokens: 40 pass, 41 do not; comments count nothing, a string or a
    quantity one; the formatter refuses the text too, and no statement after it is parsed
    for more syntax errors (each would be refused again)."""
    from astral_dsl.fmt import format_text
    from astral_dsl.syntax import parser

    monkeypatch.setattr(parser, "MAX_TOKENS", 40)
    comments = "// 1, 2, 3, 4, 5, 6, 7, 8, 9, 10\n/* 1, 2, 3, 4, 5, 6, 7, 8, 9 */\n"
    # 4 + 36 = 40 tokens: `let xs = [`, 17 x `2 kW,` (34), `"s"`, `]`
    fits = comments + "let xs = [" + "2 kW," * 17 + '"s"]\n'
    assert len(fits) > 40
    assert "E108" not in {c[0] for c in _codes(astral_dsl.loads(fits, name="f.astral"))}
    over = fits.replace("[", "[1,", 1) + "let b = (\n" * 30      # 42 tokens, then 30 errors
    design = astral_dsl.loads(over, name="o.astral")
    # token 41 is `"s"`: after `let xs = [1,` (6) and 17 x `2 kW,` (34); line 3, column
    # len("let xs = [1,") + 17 * len("2 kW,") + 1 = 12 + 85 + 1 = 98
    assert _codes(design) == [("E108", 3, 98)]
    with pytest.raises(DiagnosticError) as exc:
        format_text(over)
    assert exc.value.diagnostic.code == "E108"


def test_a_unit_is_read_as_the_grammar_reads_it_when_tokens_are_counted():
    """A unit swallowing `-` made `[1 a-a-a-...]` (199 subtractions an item, under the nesting
    bound) count 2 tokens an item instead of ~400: the limit bounded nothing again."""
    from astral_dsl.syntax.parser import count_tokens

    # `let`, `y`, `=`, `[`, `1 a`, then `-`, `a` three times, `]`: 4 + 1 + 6 + 1 = 12
    assert count_tokens("let y = [1 a-a-a-a]", 100) == (12, None)
    # the 6th is the first `-`, after `let y = [1 a` (12 characters)
    assert count_tokens("let y = [1 a-a-a-a]", 5) == (6, 12)
    # one token each, as the lexer's QUANTITY: a compound unit with its powers
    assert count_tokens("[2.5e3 W/m^2, 3 m^-2*kg]", 100) == (5, None)


def test_blanks_count_no_token_and_the_one_past_the_limit_is_where_it_starts():
    """The blanks between tokens (every kind Python's `\\s` reads, Unicode's too) are skipped
    whole; the offset named is the token's own, not that of the blanks before it (E108's
    column), and a text that ends in blanks or an open block comment ends the count."""
    from astral_dsl.syntax.parser import count_tokens

    text = "a \u00a0\t\r\n\u2003\x0b\x0c\x1c\x85  b // c d\n  /* e */ f   "
    assert count_tokens(text, 100) == (3, None)
    assert count_tokens(text, 1) == (2, text.index("b"))
    assert count_tokens(text, 2) == (3, text.index("f"))
    assert count_tokens("a  /* b c", 100) == (1, None)
    assert count_tokens(" " * 100_000 + "x", 0) == (1, 100_000)


def test_a_designs_modules_are_held_to_the_token_limit_together(tmp_path, monkeypatch):
    """Hard links to one file (or a revision's paths to one blob) cost no disk: a design that
    imported 48 links to one 8 MiB file took 442 MB; as many of 249,999 tokens each would have
    taken about 10 GB. At a limit of 60 tokens: the entry holds 8, a 40, b 40."""
    from astral_dsl.syntax import parser

    monkeypatch.setattr(parser, "MAX_TOKENS", 60)
    (tmp_path / "astral.toml").write_text("")
    main = tmp_path / "main.astral"
    main.write_text("import a\nimport b\nsite S { }\n")          # 2 + 2 + 4 tokens
    for name in ("a", "b"):                                         # 4 + 34 + 2 tokens
        (tmp_path / f"{name}.astral").write_text(f"let x{name} = [" + "1," * 17 + "1]\n")
    design = astral_dsl.load(main)
    # b may hold 60 - 8 - 40 = 12: its token 13 starts at offset 10 + (13 - 5) = 18, column 19
    assert _codes(design) == [("E108", 1, 19)]
    d = design.diagnostics[0]
    assert d.span.file.endswith("b.astral")
    assert "it and the modules before it hold more than 60 tokens" in d.message


def test_a_designs_modules_are_held_to_the_byte_limit_together(tmp_path, monkeypatch):
    """Past MAX_DESIGN_BYTES (100 bytes here) the import that passes it is E108 and nothing
    more is read (c, whose syntax error would be E103, is not)."""
    from astral_dsl.semantics import modules

    monkeypatch.setattr(modules, "MAX_DESIGN_BYTES", 100)
    (tmp_path / "astral.toml").write_text("")
    main = tmp_path / "main.astral"
    main.write_text("import a\nimport b\nimport c\n")              # 27 bytes
    for name in ("a", "b"):
        (tmp_path / f"{name}.astral").write_text("// " + "x" * 36 + "\n")   # 40 bytes each
    (tmp_path / "c.astral").write_text("let = \n")
    design = astral_dsl.load(main)
    # 27 + 40 = 67, + 40 = 107 > 100: at `import b`, line 2
    assert _codes(design) == [("E108", 2, 1)]
    assert "together 107 bytes, past the limit of 100 bytes" in design.diagnostics[0].message


def test_the_last_resort_handler_survives_memory_exhaustion(tmp_path):
    """A MemoryError (here forced by a command that hoards memory under a 600 MB address-space
    limit; the command itself maps about 20 MB) is reported in one line and exit 3, not as a
    raw traceback."""
    script = tmp_path / "hog.py"
    script.write_text(
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (600_000_000, 600_000_000))\n"
        "import astral_dsl.cli as cli, astral_dsl.cli.check as check\n"
        "def hog(args, overrides):\n"
        "    held = []\n"
        "    while True:\n"
        "        held.append(bytearray(10 ** 7))\n"
        "check.run = hog\n"
        "raise SystemExit(cli.main(['check', 'x.astral']))\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 3, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("error[E000]: out of memory")


# ---- the Python API --------------------------------------------------------------------------------
def test_loads_with_a_lone_surrogate_is_a_diagnostic():
    design = astral_dsl.loads('site S { }\nlet a = "x\ud800y"\n', name="s.astral")
    assert _codes(design) == [("E101", 2, 11)]
    assert "surrogate" in design.diagnostics[0].message


def test_loads_accepts_bytes():
    design = astral_dsl.loads(b"site S { }\n\xff\n", name="b.astral")
    assert _codes(design) == [("E101", 2, 1)]


@pytest.mark.parametrize("value,valid", [
    (4, True), ("4", True), (4.0, True), (5, False),        # 5 hosts overload the racks
])
def test_overrides_take_numbers(value, valid):
    design = astral_dsl.load(REPO / "examples" / "astral.astral",
                             overrides={"hosts_per_rack": value})
    assert design.valid is valid, _codes(design)
    if valid:
        assert astral_dsl.summary(design)["gpus"] == 524288


def test_overrides_take_quantities_and_bare_numbers_take_the_default_unit():
    path = REPO / "examples" / "astral.astral"
    as_number = astral_dsl.load(path, overrides={"rack_limit": 39})           # 39 kW
    as_quantity = astral_dsl.load(path, overrides={"rack_limit": Quantity.of(39, "kW")})
    as_text = astral_dsl.load(path, overrides={"rack_limit": "39 kW"})
    assert _codes(as_number) == _codes(as_quantity) == _codes(as_text)
    assert any(d.code == "E500" for d in as_number.diagnostics)     # 40.8 kW racks exceed 39 kW


@pytest.mark.parametrize("value,code", [
    (float("nan"), "E310"), (10 ** 400, "E310"), (Quantity.of(5, "m"), "E310"),
])
def test_other_override_values_are_diagnostics(value, code):
    design = astral_dsl.load(REPO / "examples" / "astral.astral",
                             overrides={"rack_limit": value})
    assert code in {d.code for d in design.diagnostics} and not design.valid


@pytest.mark.parametrize("value", [[1], None])
def test_an_override_of_no_value_kind_is_the_callers_type_error(value):
    """A list or None is not a value of the language (int, float, bool, str or Quantity): the
    caller's mistake, the TypeError docs/api.md ("Errors") gives, as with_params does; it was a
    diagnostic, E310, from load/compile/check alone."""
    with pytest.raises(TypeError, match="rack_limit"):
        astral_dsl.load(REPO / "examples" / "astral.astral", overrides={"rack_limit": value})


def test_an_override_named_by_a_non_string_is_a_diagnostic():
    design = astral_dsl.load(REPO / "examples" / "astral.astral", overrides={4: "5"})
    assert "E213" in {d.code for d in design.diagnostics}


def test_an_overflowing_power_prints_no_inf_and_json_works():
    proc = _here("check", "--format", "json", "tests/bad/domain_power_literal_overflow.astral")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert [d["code"] for d in doc["diagnostics"]] == ["E309"]
    human = _here("check", "--color", "never", "tests/bad/domain_power_literal_overflow.astral")
    assert "inf" not in human.stdout


# ---- pictures ----------------------------------------------------------------------------------------
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")

TEXT_DESIGN = r"""
gpu G { power = 700 W }
nic N { ports = 1, port_speed = 400 Gb/s }
host H { gpus = 8 x G, nics = 8 x N }
rack R {
  hosts = 4 x H
  check power <= 1 kW else error "ends in a backslash \\"
  check power <= 2 kW else error "\\l \\N \\G <b>bold</b> & \"q\" \\"
  check power <= 3 kW else error "entities &#xD800; &#1; &lt; &foo;"
}
site S { racks = 2 x R }
"""


@needs_dot
@pytest.mark.parametrize("view", ["cluster", "pod", "rack", "power", "cooling"])
def test_user_text_reaches_the_picture_literally(tmp_path, view):
    import xml.dom.minidom

    src = tmp_path / "text.astral"
    src.write_text(TEXT_DESIGN)
    out = tmp_path / f"{view}.svg"
    proc = _here("render", str(src), "-o", str(out), "--view", view, "--color", "never")
    assert proc.returncode == 1, proc.stderr        # drawn, with the failed checks in red
    svg = out.read_text(encoding="utf-8")
    xml.dom.minidom.parseString(svg)                 # well-formed
    text = svg.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"') \
        .replace("&amp;", "&")
    assert '\\l \\N \\G <b>bold</b> & "q" \\' in text       # shown as written
    assert "\\l \\N cluster" not in text and "\\l \\N \\G" in text   # no escString expanded
    assert "ends in a backslash \\" in text
    # Graphviz reads entities in a tooltip: `&#xD800;` was written as bytes that are not
    # UTF-8, `&#1;` as a control character (the SVG not well-formed), `&lt;` as `<`
    assert "entities &#xD800; &#1; &lt; &foo;" in text


@needs_dot
def test_a_host_with_nics_and_no_gpus_renders(tmp_path):
    out = tmp_path / "rack.svg"
    proc = _here("render", "tests/bad/jobs/no_gpus.astral", "-o", str(out), "--view", "rack")
    assert proc.returncode == 1, proc.stderr          # E758 drawn; `dot` succeeded
    assert "E701" not in proc.stderr and out.stat().st_size > 0


def test_dot_source_has_no_raw_user_markup():
    from astral_dsl.outputs.render import render

    ws = astral_dsl.compiles(TEXT_DESIGN, name="text.astral")
    design = ws.design
    checked = astral_dsl.check(ws)
    source = render(design, "rack", None, None, checked).source
    assert "&lt;b&gt;bold&lt;/b&gt;" in source          # escaped in the HTML labels
    for line in source.splitlines():                      # raw only inside quoted tooltips
        for at in [i for i in range(len(line)) if line.startswith("<b>bold", i)]:
            assert line.rfind('tooltip="', 0, at) > line.rfind("label=<", 0, at), line[:200]


# ---- sizing's work ---------------------------------------------------------------------------------
@pytest.mark.parametrize("options, combinations", [("(? in 1..1999)", 1999),
                                                    ("(? in 1..<258)", 257)])
def test_sizing_compiles_at_most_256_combinations(tmp_path, options, combinations):
    """One `?` of 2,000 options in the reference cost 86 s of CPU (a compile and check per
    option); beyond 256 combinations sizing refuses at once with E661."""
    text = (REPO / "examples" / "astral.astral").read_text(encoding="utf-8")
    assert "conductors = 4," in text
    design = tmp_path / "astral.astral"         # the first feeder's conductors
    design.write_text(text.replace("conductors = 4,", f"conductors = {options},", 1))
    proc = _astral("check", "--format", "json", str(design))
    assert proc.returncode == 1, proc.stderr
    found = [d for d in json.loads(proc.stdout)["diagnostics"] if d["code"] == "E661"]
    assert len(found) == 1, proc.stdout[:2000]
    assert f"{combinations:,} combinations, more than the 256" in found[0]["message"]


def _required(n: int) -> str:
    return "".join(f"scenario r{i} {{ required = true }}\n" for i in range(n))


def test_one_check_runs_at_most_64_scenarios():
    """Each scenario is a whole compile: one check runs the first 64 of those it should, and
    E408 names the first one left out (an 8 MiB file holds 100,000 of them)."""
    from astral_dsl.pipeline_scenarios import MAX_SCENARIOS

    base = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nsite S { hosts = 1 x H }\n"
    ws = astral_dsl.compiles(base + _required(70), name="many.astral")
    checked = astral_dsl.check(ws)
    assert len(checked.scenarios) == MAX_SCENARIOS == 64
    e408 = [d for d in checked.diagnostics if d.code == "E408"]
    assert len(e408) == 1 and "70 scenarios to check" in e408[0].message
    assert "`r64` and the 5 after it are not checked" in e408[0].message
    assert e408[0].span.start.line == 3 + 65
    assert not [d for d in astral_dsl.check(astral_dsl.compiles(
        base + _required(64), name="ok.astral")).diagnostics if d.code == "E408"]
    everything = astral_dsl.check(astral_dsl.compiles(
        base + _required(1) + "".join(f"scenario w{i} {{ }}\n" for i in range(64)),
        name="all.astral"), all_scenarios=True)
    assert [d.code for d in everything.diagnostics if d.code == "E408"] == ["E408"]


def test_sizing_compiles_at_most_1024_designs_with_its_required_scenarios():
    """Each combination that holds is compiled again under every required scenario: 100
    combinations (`1..100` includes both ends) with 10 required scenarios (1,100 compiles) are
    refused at once with E661; with 9 (1,000 compiles) they are planned."""
    from astral_dsl.analyses import sizing

    text = ("gpu G { power = 700 W }\nhost H { gpus = 8 x G }\n"
            "rack R { hosts = (? in 1..100) x H }\nsite S { racks = 1 x R }\n" + _required(10))
    checked = astral_dsl.check(astral_dsl.compiles(text, name="sized.astral"))
    e661 = [d for d in checked.diagnostics if d.code == "E661"]
    assert len(e661) == 1 and "100 combinations, each compiled with its 10 required " \
        "scenario(s): 1,100 compiles, more than the 1,024 sizing runs" in e661[0].message
    fewer = astral_dsl.compiles(text.replace(_required(10), _required(9)), name="s.astral")
    plan = sizing.combinations(fewer.design)
    assert plan.refused is None and len(plan.items) == 100


@contextlib.contextmanager
def _instantiators():
    """The Instantiators (one per compile) made inside the block: their step counts."""
    from astral_dsl.semantics import instantiate

    made = []
    original = instantiate.Instantiator.__init__

    def remember(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    instantiate.Instantiator.__init__ = remember
    try:
        yield made
    finally:
        instantiate.Instantiator.__init__ = original


@pytest.mark.parametrize("text", [
    # 10,000 distinct instantiations of a 200-line template: 2,000,000 fields and more
    "host Big(k: count = 0) {\n" + "".join(f"  let v{j} = k * {j} W\n" for j in range(200))
    + "  power = v199\n}\nsite S { hosts = [Big(k = i) for i in 0..10000] }\n",
    # a list aggregated inside a `for`: 3,000 sums of 3,000 numbers
    "site S {\n  let xs = [i for i in 0..3000]\n  let ys = [sum(xs) for i in 0..3000]\n"
    "  check sum(ys) >= 0\n}\n",
], ids=["distinct-instances", "aggregate-in-a-for"])
def test_a_compile_evaluates_at_most_two_million_steps(text, monkeypatch):
    """A few kilobytes of text can ask for billions of evaluations; one compile stops at
    MAX_STEPS with one E409, and nothing more is reported about what was left. The limit the
    package ships is 2,000,000; the compiles here run under a tenth of it (the texts ask for
    far more either way; each step is counted alike), which costs a tenth of the CPU."""
    from astral_dsl.semantics import evaluate

    assert evaluate.MAX_STEPS == 2_000_000
    monkeypatch.setattr(evaluate, "MAX_STEPS", 200_000)
    with _instantiators() as made:
        design = astral_dsl.loads(text, name="costly.astral")
    e409 = [d for d in design.diagnostics if d.code == "E409"]
    assert len(e409) == 1 and "more than 200,000 steps" in e409[0].message
    assert [d.code for d in design.diagnostics if d.is_error] == ["E409"]
    # past the limit each evaluation still counts as it is abandoned, at most once for each
    # expression of what was made before: bounded by the limit itself
    assert max(m.steps for m in made) <= 2 * evaluate.MAX_STEPS


def test_the_reference_is_far_below_the_step_limit():
    from astral_dsl.semantics import evaluate

    with _instantiators() as made:
        astral_dsl.check(astral_dsl.compile(REPO / "examples" / "astral.astral"),
                         all_scenarios=True)
    assert made and max(m.steps for m in made) < evaluate.MAX_STEPS / 1000


def test_a_templates_products_spell_their_unit_and_read_their_literals_once(monkeypatch):
    """A compile at the evaluation budget is mostly a template's `let`s at each of its
    distinct instances (benchmarks/bench_limits.py): the unit of `k * 3 W` (a count times
    watts: `W`) is worked out once per pair of units, not at each instance, and the literal
    `3 W` is read once per compile, not once per evaluation (what that costs is measured in
    benchmarks/, not here). `0..40` is 41 instances x 2 products of (count, W): 82 products,
    1 spelling and 81 reuses of it; the 3 literals (`3 W` twice, `1 kW`) read once each
    although each is evaluated 41 times."""
    from astral_dsl.semantics.evaluate import Expressions
    from astral_dsl.units import quantity

    reads = []
    read = Expressions._literal
    monkeypatch.setattr(Expressions, "_literal", lambda self, e: reads.append(e.text) or
                        read(self, e))
    quantity._spelled.cache_clear()
    design = astral_dsl.loads(
        "host Big(k: count = 0) {\n  let a = k * 3 W\n  let b = k * 3 W\n  power = b + 1 kW\n}\n"
        "site S {\n  hosts = [Big(k = i) for i in 0..40]\n}\n")
    assert design.valid, design.diagnostics
    assert quantity._spelled.cache_info().misses == 1
    assert quantity._spelled.cache_info().hits == 2 * 41 - 1
    assert sorted(reads) == ["1 kW", "3 W", "3 W"]
