"""The documentation is tested: every example in docs/*.md compiles as the text around it says.

Fenced blocks whose info string starts with

- ```astral        must pass `astral check` with no error diagnostic (warnings are allowed): the
                   front end and the engineering checks; the compiled design must also summarise
                   and export as `astral check` / `astral export` do;
- ```astral-error  must start with a comment `// error: CODE` (or `// warning: CODE`) and yield
                   that code; every other error in it must carry the same code (an error example
                   demonstrates one thing). A `// warning:` example must have no error at all.
                   A constraint broken only under a scenario is reported inside E680/W680, as a
                   note `breaks: [CODE] ...`; such a note counts as its code.

Examples are checked as `astral check` checks them: a design with unknowns (`?`) is sized first.

Other fences (```console, ```text, ```json ...) are not compiled.

Conventions inside an example:

- `// set: NAME=VALUE` lines in the leading comments pass `--set NAME=VALUE` (`overrides`);
- `// scenario: NAME` lines pass `--scenario NAME`, `// all-scenarios` passes `--all-scenarios`;
- `// file: lib/parts.astral` starts another file of the same example: the text before the first
  such line is the entry file, the rest are written below a temporary project root so that
  `import lib.parts` finds them. Without `// file:` lines the project root is the repository
  root (so `import stdlib...` works).

An example documenting the correct behaviour of something the implementation still gets wrong is
marked in its info string, as in a fence opened with `astral xfail: REASON` (no backticks in the
reason); it is an expected failure, strict: once the implementation is fixed the test fails
with XPASS, and the marker must go.

The other tests keep the reference in step with the implementation: every diagnostic code has a
section in docs/diagnostics.md and vice versa, and every kind and field has a row in the kind
tables of docs/language.md and vice versa.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

import pytest

import astral_dsl
from astral_dsl.diagnostics.codes import CODES
from astral_dsl.model.kinds import KINDS
from astral_dsl.outputs.export import export_design

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
DOC_FILES = sorted(DOCS.glob("*.md"))

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>```+)(?P<info>[^`]*)$")
_EXPECT = re.compile(r"^//\s*(?P<sev>error|warning):\s*(?P<code>[EW]\d{3})\b")
_SET = re.compile(r"^//\s*set:\s*(?P<name>[A-Za-z_]\w*)=(?P<value>.*)$")
_FILE = re.compile(r"^//\s*file:\s*(?P<path>\S+)\s*$")
_SCENARIO = re.compile(r"^//\s*scenario:\s*(?P<name>[A-Za-z_]\w*)\s*$")


class Block(NamedTuple):
    doc: str
    line: int              # line of the opening fence
    lang: str              # astral | astral-error
    xfail: Optional[str]   # the reason, when the example documents a known defect
    text: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def extract(path: Path) -> List[Block]:
    """Every ```astral and ```astral-error block of one markdown file."""
    blocks: List[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        ticks, info = m.group("ticks"), m.group("info").strip()
        start = i
        body: List[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != ticks:
            body.append(lines[i])
            i += 1
        i += 1
        lang, _, rest = info.partition(" ")
        if lang not in ("astral", "astral-error"):
            continue
        rest = rest.strip()
        xfail = None
        if rest.startswith("xfail"):
            xfail = rest[len("xfail"):].lstrip(":").strip() or "known defect"
        elif rest:
            raise AssertionError(f"{path.name}:{start + 1}: unknown fence option `{rest}`")
        blocks.append(Block(path.name, start + 1, lang, xfail, "\n".join(body) + "\n"))
    return blocks


BLOCKS = [b for f in DOC_FILES for b in extract(f)]


def _params(lang: str):
    out = []
    for b in BLOCKS:
        if b.lang != lang:
            continue
        marks = [pytest.mark.xfail(reason=b.xfail, strict=True)] if b.xfail else []
        out.append(pytest.param(b, id=b.id, marks=marks))
    return out


def _split(text: str) -> tuple[str, Dict[str, str]]:
    """The entry text and the other files of a multi-file example."""
    entry: List[str] = []
    files: Dict[str, List[str]] = {}
    current = entry
    for line in text.splitlines():
        m = _FILE.match(line.strip())
        if m:
            current = files.setdefault(m.group("path"), [])
            continue
        current.append(line)
    return "\n".join(entry) + "\n", {k: "\n".join(v) + "\n" for k, v in files.items()}


def _leading_comments(text: str) -> List[str]:
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s.startswith("//"):
            if s:
                break
            continue
        out.append(s)
    return out


def _overrides(text: str) -> Dict[str, str]:
    out = {}
    for s in _leading_comments(text):
        m = _SET.match(s)
        if m:
            out[m.group("name")] = m.group("value").strip()
    return out


def _scenarios(text: str) -> tuple[List[str], bool]:
    names, every = [], False
    for s in _leading_comments(text):
        m = _SCENARIO.match(s)
        if m:
            names.append(m.group("name"))
        elif re.match(r"^//\s*all-scenarios\s*$", s):
            every = True
    return names, every


def compile_block(block: Block, tmp_path: Path):
    entry, files = _split(block.text)
    root = REPO
    if files:
        root = tmp_path
        for rel, text in files.items():
            target = tmp_path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    overrides = _overrides(block.text) or None
    return astral_dsl.compiles(entry, name="example.astral", root=root, overrides=overrides)


def check_block(block: Block, tmp_path: Path):
    """What `astral check` reports: the (sized) design and all its diagnostics (front end,
    sizing, engineering checks and the scenarios asked for)."""
    ws = compile_block(block, tmp_path)
    names, every = _scenarios(block.text)
    checked = astral_dsl.check(ws, names, every)
    return checked.design, checked.diagnostics


_BROKEN = re.compile(r"^breaks: \[(?P<code>[EW]\d{3})\]")


def _codes(d) -> set:
    """The code of a diagnostic and those of the constraints it reports broken."""
    return {d.code} | {m.group("code") for n in d.notes for m in [_BROKEN.match(n)] if m}


def _show(diagnostics) -> str:
    return "\n".join(f"  {d.code} {d.severity.value} {d.span or d.filename}: {d.message}"
                      + "".join(f"\n      note: {n}" for n in d.notes)
                      for d in diagnostics) or "  (no diagnostics)"


# ---- the examples ------------------------------------------------------------------------------------

def test_docs_have_examples():
    assert (DOCS / "language.md").is_file() and (DOCS / "diagnostics.md").is_file()
    assert sum(b.lang == "astral" for b in BLOCKS) >= 40
    assert sum(b.lang == "astral-error" for b in BLOCKS) >= 40


@pytest.mark.parametrize("block", _params("astral"))
def test_example_compiles(block: Block, tmp_path: Path):
    design, diagnostics = check_block(block, tmp_path)
    errors = [d for d in diagnostics if d.is_error]
    assert not errors, f"{block.id}: the example does not pass:\n{_show(diagnostics)}"
    # what `astral check` and `astral export` do with a valid design
    astral_dsl.summary(design)
    export_design(design)


@pytest.mark.parametrize("block", _params("astral-error"))
def test_error_example_yields_its_code(block: Block, tmp_path: Path):
    first = block.text.lstrip().splitlines()[0].strip()
    m = _EXPECT.match(first)
    assert m, f"{block.id}: an astral-error block starts with `// error: CODE`, not `{first}`"
    code, severity = m.group("code"), m.group("sev")
    assert code in CODES, f"{block.id}: `{code}` is not a diagnostic code"
    _, diagnostics = check_block(block, tmp_path)
    found = set().union(*[_codes(d) for d in diagnostics]) if diagnostics else set()
    assert code in found, f"{block.id}: expected {code}, got:\n{_show(diagnostics)}"
    if severity == "error":
        others = [d for d in diagnostics if d.is_error and code not in _codes(d)]
        assert not others, f"{block.id}: expected only {code} errors, got:\n{_show(diagnostics)}"
    else:
        assert not any(d.is_error for d in diagnostics), \
            f"{block.id}: a warning example must have no errors:\n{_show(diagnostics)}"
    bare = _unhelpful(diagnostics)
    assert not bare, f"{block.id}: the compiler's diagnostics need a span and a hint:\n" \
                     f"{_show(bare)}"


# The compiler's codes no example can show: about the files read, or the invocation
_NO_EXAMPLE = {
    "E100", "E101", "E102", "E108", "W100",   # unreadable, not UTF-8, binary, too large, empty
    "W101",                                   # an invisible character: written with printf
    "E207",                                   # an import outside the project (a path here)
    "E221",                                   # an unknown --job (an option of a command)
    "E406",                                   # imports 64 deep (64 files)
    "E407",                                   # the language server's time limit
    "E410",                                   # the language server's memory limit
}


def test_every_compiler_code_has_an_example():
    """So that the walk of test_error_example_yields_its_code (a span and a hint) reaches every
    code of E1xx to E4xx the compiler can give from a small .astral input."""
    text = (REPO / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    headed = re.findall(r"^### ([EW][1-4]\d\d):", text, re.M)
    shown = {m.group("code") for b in BLOCKS if b.lang == "astral-error"
             for m in [_EXPECT.match(b.text.lstrip().splitlines()[0].strip())] if m}
    assert sorted(c for c in headed if c not in shown and c not in _NO_EXAMPLE) == []
    assert sorted(_NO_EXAMPLE - set(headed)) == []


# Codes said of an invocation, not of a place in the source: a --set or --scenario name or value
# (docs/diagnostics.md, "Reading a diagnostic": such a diagnostic has no range)
_WHOLE_FILE = {"E213", "E216", "E310"}


def _unhelpful(diagnostics) -> list:
    """The compiler's diagnostics (E1xx to E4xx: reading, names, units and values, templates)
    without a span (unless said of the invocation) or, for an error, without a hint. Walked
    over every astral-error example, so every such code the docs show is held to it; the
    constraints (E5xx: the author's own message) and the analyses' codes are not."""
    return [d for d in diagnostics if d.code[1] in "1234" and
            ((d.span is None and d.code not in _WHOLE_FILE) or (d.is_error and not d.hint))]


def test_every_fence_is_well_formed():
    """A typo in a fence (```astrl, a backtick in the info string, an unclosed block) would
    silently drop examples from the tests."""
    for path in DOC_FILES:
        open_at = None
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.lstrip().startswith("```"):
                continue
            m = _FENCE.match(line)
            assert m, f"{path.name}:{n}: malformed fence (no backticks in the info string)"
            info = m.group("info").strip()
            if open_at is None:
                if info.startswith("astr"):
                    lang = info.split()[0]
                    assert lang in ("astral", "astral-error"), f"{path.name}:{n}: fence `{lang}`"
                open_at = n
            else:
                assert not info, f"{path.name}:{n}: a fence opens inside the block of line {open_at}"
                open_at = None
        assert open_at is None, f"{path.name}:{open_at}: fence never closed"


# ---- diagnostics.md <-> codes.py -------------------------------------------------------------------------

_CODE_HEADING = re.compile(r"^#{2,4}\s+`?(?P<code>[EW]\d{3})`?\b", re.M)


def documented_codes() -> List[str]:
    return _CODE_HEADING.findall((DOCS / "diagnostics.md").read_text(encoding="utf-8"))


def test_every_code_is_documented():
    missing = sorted(set(CODES) - set(documented_codes()))
    assert not missing, f"codes without a section in docs/diagnostics.md: {missing}"


def test_every_documented_code_exists():
    codes = documented_codes()
    unknown = sorted(set(codes) - set(CODES))
    assert not unknown, f"docs/diagnostics.md documents codes that do not exist: {unknown}"
    twice = sorted({c for c in codes if codes.count(c) > 1})
    assert not twice, f"codes documented twice: {twice}"


def test_language_md_families_cover_every_code():
    """docs/language.md, section 18's table of code families (`E1xx`, `E75x-E77x`, `W800`)
    covers every code: it stopped at E6xx and W680 while E7xx and E8xx grew beside it."""
    text = (DOCS / "language.md").read_text(encoding="utf-8")
    table = text[text.index("| codes | about |"):]
    table = table[:table.index("\n\n")]
    spans = []
    for cell in re.findall(r"^\| ([^|]+) \|", table, re.M)[1:]:
        for token in cell.split(","):
            ends = [e.strip() for e in token.split("-")]
            low, high = ends[0].replace("x", "0"), ends[-1].replace("x", "9")
            spans.append((low[0], int(low[1:]), int(high[1:])))
    outside = sorted(c for c in CODES
                     if not any(c[0] == k and lo <= int(c[1:]) <= hi for k, lo, hi in spans))
    assert not outside, f"codes in no family of docs/language.md's table: {outside}"


def test_code_summaries_match():
    """The heading of each code's section is `### CODE: summary`, the summary of codes.py."""
    text = (DOCS / "diagnostics.md").read_text(encoding="utf-8")
    for code, summary in CODES.items():
        m = re.search(rf"^#{{2,4}}\s+{code}:\s+(?P<title>.+?)\s*$", text, re.M)
        assert m, f"{code}: no heading `### {code}: {summary}` in docs/diagnostics.md"
        assert m.group("title") == summary, \
            f"{code}: the heading says `{m.group('title')}`, codes.py says `{summary}`"


def test_every_code_has_an_example():
    """Every code that source text can trigger has an astral-error example in diagnostics.md."""
    shown = set()
    for b in BLOCKS:
        if b.lang == "astral-error" and b.doc == "diagnostics.md":
            m = _EXPECT.match(b.text.lstrip().splitlines()[0].strip())
            if m:
                shown.add(m.group("code"))
    # codes whose trigger cannot be written as one source text (unreadable, binary or non-UTF-8
    # files, an empty file, a file over the size limit, symlinks out of the project, a chain of
    # 65 imports, an internal
    # error, a failure of the
    # sizing solver, the language server's time limit, a trace too large to write) are shown as
    # console sessions instead
    # (and a climate file shorter than a year: a second file)
    by_console = {"E000", "E100", "E101", "E102", "E108", "E207", "E406", "E407", "E410", "E662",
                  "W100", "W101",
                  "W643",
                  "E700", "E701", "E702", "E703", "E704", "E705", "E706", "W707", "E707", "E708",
                  "E709", "W709",
                  "E800", "E801", "E802", "E803", "W800"}
    # codes of `astral forecast --scenario` only (a job under a scenario's failures), and of
    # a `--job` the design does not declare (a command-line option, not source text)
    by_console |= {"E775", "E776", "E221"}
    # codes about runs tables and the systems they run on (`astral runs`, `astral calibrate`),
    # and the envelope of a forecast (`astral forecast`, not `astral check`)
    by_console |= {"E766", "E767", "E777", "W753", "W759", "W769", "W778", "W779"}
    # codes about observed files (`astral diagnose --observed`), not about source text
    by_console |= {c for c in CODES if c[1:3] == "78"} | {"E790", "W791", "E792", "W793",
                                                         "W794", "W795", "W796", "W797"}
    # a job that `astral synth` cannot drill (a command's refusal, not the design's error)
    by_console |= {"E798"}
    missing = sorted(set(CODES) - shown - by_console)
    assert not missing, f"codes without an astral-error example in diagnostics.md: {missing}"


# ---- language.md kind tables <-> kinds.py ------------------------------------------------------------------

_KIND_HEADING = re.compile(r"^####\s+`(?P<kind>[a-z_]+)`")
_FIELD_ROW = re.compile(r"^\|\s*`(?P<field>[A-Za-z_]\w*)`\s*\|")


def documented_kinds() -> Dict[str, List[str]]:
    """kind -> fields, from the `#### `kind`` sections between the kinds markers."""
    out: Dict[str, List[str]] = {}
    current = None
    in_kinds = False
    for line in (DOCS / "language.md").read_text(encoding="utf-8").splitlines():
        if line.strip() in ("<!-- kinds:begin -->", "<!-- kinds:end -->"):
            in_kinds = line.strip() == "<!-- kinds:begin -->"
            current = None
            continue
        if not in_kinds:
            continue
        m = _KIND_HEADING.match(line)
        if m:
            current = out.setdefault(m.group("kind"), [])
            continue
        m = _FIELD_ROW.match(line)
        if m and current is not None:
            current.append(m.group("field"))
    return out


def test_every_kind_and_field_is_documented():
    documented = documented_kinds()
    common = {"source", "vendor", "note", "price"}
    assert set(documented) == set(KINDS), (
        f"kinds missing from docs/language.md: {sorted(set(KINDS) - set(documented))}; "
        f"documented but unknown: {sorted(set(documented) - set(KINDS))}")
    for kind, spec in KINDS.items():
        fields = set(spec.fields) - common
        listed = set(documented[kind])
        assert fields == listed, (f"`{kind}`: fields missing from the docs: "
                                  f"{sorted(fields - listed)}; unknown: {sorted(listed - fields)}")
