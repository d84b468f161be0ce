"""One compile of a document for the editor: the design, every diagnostic (front end and
engineering checks, as `astral check` reports them), the modules it loaded (with their syntax
trees and scopes, for navigation) and the value of every expression the compiler evaluated (for
hover).

The compiler's pipeline is reused as it is: a Workspace (workspace.py) compiles the document
with a Trace (semantics/trace.py) that records the values for hover. The text of open documents
replaces the files on disk through the loader's `read` hook."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.design import Design
from astral_dsl.semantics.modules import LoadedModule, ModuleLoader
from astral_dsl.semantics.scope import ModuleScope
from astral_dsl.semantics.source_files import read_file
from astral_dsl.syntax import ast
from astral_dsl.semantics.trace import Trace
from astral_dsl.syntax.source import Source, encode

@records.define(eq=False)
class Module:
    """A module of an analysis: the entry document or an imported file."""
    key: str                       # "stdlib.hardware", "lib.common", or the entry's name
    name: str                      # the file name used in spans and diagnostics
    path: Optional[Path]
    source: Optional[Source]
    tree: Optional[ast.Module]
    scope: Optional[ModuleScope]
    is_stdlib: bool
    is_entry: bool = False

    @property
    def uri(self) -> Optional[str]:
        return self.path.resolve().as_uri() if self.path is not None else None


@records.define(eq=False)
class Analysis:
    uri: str
    version: Optional[int]
    text: str
    entry: Module
    modules: Dict[str, Module]                # by file name (Span.file)
    design: Optional[Design]
    diagnostics: Tuple[Diagnostic, ...]
    trace: Optional[Trace]
    frames: List[Any] = attrs.field(factory=list)
    # the text of each imported file it read (by real path) and whether it was the editor's
    # (else the disk's), and the server's count of file events when it ran (file_events.py `stale`)
    inputs: Dict[str, Tuple[Optional[str], bool]] = attrs.field(factory=dict)
    files: int = 0

    @property
    def parsed(self) -> bool:
        return self.entry.tree is not None

    def module(self, file: str) -> Optional[Module]:
        return self.modules.get(file)

    def values_of(self, node) -> List[Any]:
        return self.trace.values_of(node) if self.trace is not None else []


class Reader:
    """The loader's `read`: open documents first, then the disk."""

    def __init__(self, overlay: Callable[[Path], Optional[str]]):
        self.overlay = overlay
        self.read_paths: List[Path] = []

    def __call__(self, path: Path) -> bytes:
        self.read_paths.append(path)
        text = self.overlay(path)
        if text is not None:
            return encode(text)
        return read_file(path)


def analyse(uri: str, path: Optional[Path], text: str, version: Optional[int] = None,
            overlay: Callable[[Path], Optional[str]] = lambda p: None,
            engineering: bool = True) -> Analysis:
    """Compile `text` as the file `path` (None for an unsaved document) and check it.

    Analyses may run at once in several threads (the server's jobs, workers.py), and one may be
    abandoned half-way: they share no lock. What a compile shares is thread-safe: functools'
    caches (the parsers, units, fluid properties) and per-compile objects; CoolProp, which is
    not, is called under its own lock (analyses/fluids.py)."""
    ws = workspace(uri, path, text, overlay)
    trace = Trace()
    compiled = ws.compile(trace=trace)
    instantiator = trace.evaluator
    design: Optional[Design] = compiled if ws.parsed else None
    if design is not None and not design.roots and not design.jobs and not design.scenarios \
            and any(d.code == "E402" for d in design.diagnostics):
        design = None                 # nested too deeply to compile: nothing to show
    modules = _modules(ws.loader, trace.scopes, ws.entry)
    all_diagnostics: Tuple[Diagnostic, ...] = compiled.diagnostics
    if design is not None and engineering:
        all_diagnostics = engineering_diagnostics(ws, design)
    return Analysis(uri, version, text, modules[_module_name(ws.entry)], modules, design,
                    all_diagnostics, trace if instantiator is not None else None,
                    list(instantiator.frames) if instantiator is not None else [])


def workspace(uri: str, path: Optional[Path], text: str,
              overlay: Callable[[Path], Optional[str]] = lambda p: None):
    """The workspace of a document: `text` as the file `path` (None for an unsaved one),
    other open documents through `overlay`, the rest from the disk. Its hints set a value as
    the editor's user would, with the command's `--set NAME=...`, not the Python API's
    `with_params` (command_line)."""
    from astral_dsl.semantics.overrides import command_line
    from astral_dsl.workspace import Workspace

    reader = Reader(lambda p: text if path is not None and _same_path(p, path) else overlay(p))
    if path is not None:
        return Workspace.open(path, None, reader, command_line)
    return Workspace.of_text(text, uri, None, None, reader, command_line)


def engineering_diagnostics(ws, design: Design) -> Tuple[Diagnostic, ...]:
    """The constraint, physical and scenario checks of `astral check` (sizing first when the
    design has unknowns), in the same workspace; the warnings an `allow` accepts are kept, as
    information saying what accepted them (as `astral check` lists them apart), not dropped."""
    from astral_dsl import api

    front = design.diagnostics
    try:
        checked = api.check(ws, design=design)
    except Exception as exc:  # noqa: BLE001 - an analysis bug must not take the editor down
        return front + (Diagnostic("E000", Severity.WARNING,
                                   f"the engineering checks failed: {type(exc).__name__}: {exc}",
                                   None, file=design.file),)
    return checked.diagnostics + tuple(_as_accepted(a) for a in checked.accepted)


def _as_accepted(a) -> Diagnostic:
    """An accepted warning, for the editor: information, its message saying what accepted it."""
    by = f"`allow` at line {a.by.start.line}" if a.by is not None else f"baseline {a.baseline}"
    return attrs.evolve(a.diagnostic, severity=Severity.INFO,
                        message=f"{a.diagnostic.message} (accepted by {by}: {a.reason})")


def _module_name(m: LoadedModule) -> str:
    return m.source.name if m.source is not None else m.key


def _modules(loader: ModuleLoader, scopes: Dict[int, ModuleScope],
             entry: LoadedModule) -> Dict[str, Module]:
    out: Dict[str, Module] = {}
    for m in loader.modules.values():
        name = _module_name(m)
        out[name] = Module(m.key, name, m.path, m.source, m.tree, scopes.get(id(m)),
                           m.is_stdlib, m is entry)
    return out


def project_files(root: Path, limit: int = 200, max_dirs: int = 2000) -> List[Path]:
    """The .astral files below a project root, bounded (a file opened outside any project makes
    its folder the root, which may be a home directory): hidden folders and node_modules are
    skipped, and the walk stops after `max_dirs` folders or `limit` files; a root that is the
    filesystem's root or the user's home (a file opened as `file:///x.astral`, or one in ~) is
    not walked down: only its own files are listed. Only what the
    compiler would read is listed: regular files of at most MAX_SOURCE_BYTES, no FIFO, device
    or socket (reading one would block or never end), no link that leads out of the project,
    no folder reached through a link (os.walk does not follow them)."""
    import os
    import stat

    from astral_dsl.semantics.modules import inside
    from astral_dsl.semantics.source_files import MAX_SOURCE_BYTES

    root = root.resolve()
    out: List[Path] = []
    seen_dirs = 0
    shallow = root == Path(root.anchor) or root == _home()
    for folder, dirs, files in os.walk(root):
        seen_dirs += 1
        dirs[:] = [] if shallow else sorted(
            d for d in dirs if not d.startswith(".") and d not in (
                "node_modules", "__pycache__", "build", "dist"))
        for name in sorted(files):
            if not name.endswith(".astral"):
                continue
            path = Path(folder) / name
            try:
                if path.is_symlink() and not inside(path.resolve(strict=True), root):
                    continue
                st = path.stat()
            except (OSError, RuntimeError):
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
                continue
            out.append(path)
            if len(out) >= limit:
                return out
        if seen_dirs >= max_dirs:
            break
    return out


def _home() -> Optional[Path]:
    """The user's home folder, resolved (None when it cannot be told)."""
    try:
        return Path.home().resolve()
    except (OSError, RuntimeError, KeyError):
        return None


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b
