"""Data flows one way: source text -> syntax -> semantics -> model -> analyses -> Seer -> the
pipeline (its check spans both) -> outputs -> explore ... -> the API -> the command line and the
language server. No module imports a later layer (also
not inside a function), and the modules of one package import each other without cycles."""
from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parents[1] / "astral_dsl"

# each layer may import itself and the layers listed before it
ORDER = ["records", "diagnostics", "units", "resources", "syntax", "model", "semantics",
         "analyses", "seer", "pipeline", "runs", "outputs", "fmt", "explore", "observe", "diagnose",
         "api", "lsp", "cli"]
# the workspace is the pipeline's (the only place that compiles): `astral check` as a function
# (pipeline.check) runs the front end, the engineering analyses and Seer's job validation, so
# it sits above both; so are the scenarios it runs (pipeline_scenarios) and its sizing
# (pipeline_sizing)
# the collector's pause (gcpause) serves the parser and the module loader: it imports nothing;
# the byte code of attrs' generated methods (methodcache) serves the records; a file's digest
# remembered (filedigest) serves the analyses, through the user cache only; reading another's
# JSON (jsonin) serves the analyses, Seer's calibration and the commands: it imports regularfile;
# opening a file that must be regular (regularfile) serves the module loader, the trace reader
# and the files the commands are given (jsonin, the runs and operator tables); a thread's stop
# (cancel) serves the evaluator, which asks it, and the language server, which states it: it
# imports nothing
# the one cache type (kept) serves Seer, the runs, the pictures and the explore engines: it
# imports nothing of the package
# where a line ends (line_ends) serves the runs tables, the rank logs and the language server:
# it imports nothing; so does text in a wide encoding (encodings), which serves the runs tables
# and the trace reader
LAYER_OF = {"astral_dsl.workspace": "pipeline", "astral_dsl.gcpause": "records",
            "astral_dsl.cancel": "records", "astral_dsl.methodcache": "records",
            "astral_dsl.filedigest": "records", "astral_dsl.jsonin": "records",
            "astral_dsl.launch": "cli", "astral_dsl.pools": "records",
            "astral_dsl.pipeline_scenarios": "pipeline", "astral_dsl.pipeline_sizing": "pipeline",
            "astral_dsl.regularfile": "records",
            "astral_dsl.line_ends": "records", "astral_dsl.encodings": "records",
            "astral_dsl.kept": "records"}


def _layer(module: str) -> str:
    for name, layer in LAYER_OF.items():
        if module == name or module.startswith(name + "."):
            return layer
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> Dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        out[name] = path
    return out


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once for the tests here (which only read it)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path, name: str, top_level_only: bool = False) -> List[str]:
    tree = _tree(path)
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = []
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.append(mod)
            found += [f"{mod}.{a.name}" for a in node.names]
    return [m for m in found if m.startswith("astral_dsl")]


def test_no_module_imports_a_later_layer():
    bad = []
    for name, path in _modules().items():
        mine = _layer(name)
        if mine not in ORDER:
            continue
        for target in _imports(path, name):
            theirs = _layer(target)
            if theirs in ORDER and ORDER.index(theirs) > ORDER.index(mine):
                bad.append(f"{name} imports {target}")
    assert not bad, "\n".join(sorted(set(bad)))


def test_no_analysis_imports_seer():
    """Seer builds on the analyses, never the reverse: what needs both is the pipeline's."""
    bad = [f"{name} imports {target}" for name, path in _modules().items()
           if _layer(name) == "analyses" for target in _imports(path, name)
           if _layer(target) == "seer"]
    assert not bad, "\n".join(sorted(set(bad)))


def test_every_package_has_a_layer():
    """A new package of astral_dsl gets its place in ORDER (or it escapes this test)."""
    free = {"__init__", "records", "stdio", "usercache", "synth", "_vendor"}
    missing = sorted({_layer(name) for name in _modules()} - set(ORDER) - free)
    assert not missing, missing


def test_top_level_imports_have_no_cycles():
    modules = _modules()
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        graph[name] = {t for t in _imports(path, name, top_level_only=True) if t in modules
                       and t != name and not name.startswith(t + ".")}
    state: Dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(cycles)
