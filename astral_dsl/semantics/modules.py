"""Finding, reading (source_files.py) and parsing the modules a design imports.

`import stdlib.X` resolves in the shipped stdlib; `import a.b` resolves to `<project>/a/b.astral`,
where the project root is the nearest folder above the entry file holding `astral.toml` (else the
entry file's folder). Nothing outside the project and the stdlib can be imported (symlinks
included), and an import cycle is a diagnostic."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from astral_dsl import gcpause, records, resources
from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.semantics.missing import missing_module_hint
from astral_dsl.semantics.source_files import MAX_SOURCE_BYTES, read_file, too_large, unreadable
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse_all
from astral_dsl.syntax.bidi import bidi_warnings
from astral_dsl.syntax.source import Source, decode

Reader = Callable[[Path], bytes]


MAX_IMPORT_DEPTH = 64           # a chain of imports (each waits for the next to load)
# All the modules of one design together (four files at the 8 MiB cap, the entry among them;
# the shipped stdlib is ~100 kB):
# the caps of one file bounded nothing when a design imported hundreds of them (hard links to
# one 8 MiB file, or a revision's paths to one blob, cost no disk: 48 took 442 MB)
MAX_DESIGN_BYTES = 32 * 1024 * 1024
# The data files a design names (inventories), each file once, together: one `inventory` each
# over hard links to one 8 MiB file took 4 s of CPU each, without bound
MAX_DATA_BYTES = 32 * 1024 * 1024


@records.define
class LoadedModule:
    key: str                      # "stdlib.hardware", "lib.common" or the entry's display name
    path: Optional[Path]
    source: Optional[Source]
    tree: Optional[ast.Module]
    is_stdlib: bool = False


def project_root(entry: Path) -> Path:
    try:
        entry = entry.resolve()
    except (OSError, RuntimeError, ValueError):   # a symbolic link in a loop, a NUL in the
        entry = entry.absolute()                    # path: reading it says so (E100)
    for folder in [entry.parent, *entry.parent.parents]:
        if (folder / "astral.toml").is_file():
            return folder
    return entry.parent


def display_name(path: Path) -> str:
    """Paths in diagnostics: a file of the shipped stdlib by its one name wherever the package
    is installed (`stdlib/power.astral`: resources.stdlib_name; resources.source_file leads
    back to the file); any other relative to the working directory when below it, else (the
    working directory itself among them) as given, with `./` before one that would read as a stdlib file's name (in a folder `stdlib`
    of the user's own: no name stands for two files)."""
    try:
        resolved = path.resolve()
        stdlib = resources.stdlib_name(resolved)
        if stdlib is not None:
            return stdlib
        name = str(resolved.relative_to(Path.cwd().resolve()))
        if name == ".":          # the working directory itself, named as given (not `.`)
            name = str(path)
    except (ValueError, OSError, RuntimeError):    # outside it; a symbolic link in a loop
        name = str(path)
    return "./" + name if resources.is_stdlib_name(name) else name


class ModuleLoader:
    def __init__(self, root: Path, diagnostics: List[Diagnostic], read: Reader = read_file):
        self.root = root.resolve()
        self.stdlib = resources.stdlib_dir().resolve()
        self.read = read
        self.diagnostics = diagnostics
        self.modules: Dict[str, LoadedModule] = {}
        self._loading: List = []
        self.resolved: Dict[int, Optional[LoadedModule]] = {}   # id(import node) -> module
        self._bytes = 0                 # of the sources read so far
        self._tokens = 0                # theirs: counted, or a text's length (no fewer)
        self._estimated: List[Source] = []      # the texts whose length stands for their tokens
        self.full = False               # past a limit of the design (E108): nothing more is read
        self.data_bytes: Dict[str, int] = {}    # data file -> its size (charge_data)
        # id(tree) -> (the tree, its E222s: semantics/keywords.py), a function of the tree
        # alone, found once instead of at every compile (a walk of the whole tree: 1 ms of the
        # reference's 7); the tree is held, so its id names it while the entry lives
        self.unreadable_names: Dict[int, Tuple[ast.Module, Tuple[Diagnostic, ...]]] = {}
        # (the trees, id(check) -> the declaration holding it: semantics/checks.py `owners`)
        # for the modules loaded, likewise found once
        self.check_owners: Optional[Tuple[Tuple[ast.Module, ...], Dict[int, str]]] = None

    # -- entry points -------------------------------------------------------------------------------
    @gcpause.pausing            # the modules' syntax trees: long-lived, none of it garbage
    def load_entry_text(self, name: str, data: bytes, path: Optional[Path] = None) -> LoadedModule:
        if len(data) > MAX_SOURCE_BYTES:        # a text, not a file: `loads`, an editor's buffer
            self.diagnostics.append(unreadable(f"`{name}`", too_large(data, name), file=name))
            module = LoadedModule(name, path, None, None)
            self.modules[self._path_key(path, name)] = module
            return module
        module = self._parse(name, path, data, is_stdlib=False)
        self.modules[self._path_key(path, name)] = module
        self._load_imports(module)
        return module

    # -- imports -------------------------------------------------------------------------------------
    def _load_imports(self, module: LoadedModule) -> None:
        if module.tree is None:
            return
        self._loading.append((self._path_key(module.path, module.key), module.key))
        try:
            for item in module.tree.items:
                if isinstance(item, ast.Import):
                    self.resolve(item, module)
        finally:
            self._loading.pop()

    def resolve(self, node: ast.Import, importer: LoadedModule) -> Optional[LoadedModule]:
        module = self._resolve(node, importer)
        self.resolved[id(node)] = module
        return module

    def _resolve(self, node: ast.Import, importer: LoadedModule) -> Optional[LoadedModule]:
        key = node.dotted
        path = self._locate(node, importer)
        if path is None:
            return None
        pkey = self._path_key(path, key)
        loading = [k for k, _ in self._loading]
        if pkey in loading:
            names = [name for _, name in self._loading[loading.index(pkey):]]
            chain = " -> ".join(names + [key])
            self._error("E206", f"import cycle: {chain}", node.span,
                        "move the shared declarations into a module both can import")
            return None
        if pkey in self.modules:
            return self.modules[pkey]
        if len(self._loading) >= MAX_IMPORT_DEPTH:
            chain = " -> ".join([name for _, name in self._loading[:3]] + ["..."] +
                                [name for _, name in self._loading[-2:]] + [key])
            self._error("E406", f"imports nest more than {MAX_IMPORT_DEPTH} modules deep: "
                                f"{chain}", node.span,
                        "import the shared modules from the entry file instead of through a "
                        "chain")
            return None
        if self.full:
            return None
        try:
            data = self.read(path)
            if len(data) > MAX_SOURCE_BYTES:    # a reader of texts (the language server's)
                raise too_large(data, str(path))
        except OSError as exc:
            self.diagnostics.append(unreadable(f"module `{key}`", exc, node.span))
            return None
        module = self._parse(key, path, data, is_stdlib=key.startswith("stdlib."), at=node.span)
        self.modules[pkey] = module
        self._load_imports(module)
        return module

    def _locate(self, node: ast.Import, importer: LoadedModule) -> Optional[Path]:
        parts = [p.name for p in node.path]
        if parts[0] == "stdlib":
            base, rel = self.stdlib, parts[1:]
            if not rel:
                self._error("E205", "`import stdlib` needs a module name",
                            Span(node.span.file, node.path[0].span.start, node.path[-1].span.end),
                            "for example `import stdlib.hardware { H800 }`")
                return None
        else:
            base, rel = self.root, parts
        path = base.joinpath(*rel[:-1], rel[-1] + ".astral")
        span = Span(node.span.file, node.path[0].span.start, node.path[-1].span.end)
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError) as exc:   # RuntimeError: a link to itself, or a ring
            why = "is a symbolic link in a loop" if isinstance(exc, RuntimeError) else \
                f"cannot be followed ({exc.strerror or exc})"
            self._error("E100", f"cannot read module `{node.dotted}`: {display_name(path)} "
                                f"{why}", span,
                        "point the link at the module's file, or replace it with the file")
            return None
        if not (inside(resolved, base)):
            self._error("E207", f"module `{node.dotted}` resolves outside the project "
                                f"({display_name(resolved)})", node.span,
                        "imports resolve only inside the project and the stdlib")
            return None
        try:
            resolved.is_file()
        except OSError as exc:      # a name past the file system's (ENAMETOOLONG): was E000
            self._error("E100", f"cannot read module `{node.dotted}`: {exc.strerror or exc}",
                        span, "a module's path names a .astral file: check the import's names")
            return None
        if resolved.exists() and not resolved.is_file():
            self._error("E100", f"cannot read module `{node.dotted}`: "
                                f"{display_name(resolved)} is not a regular file", span,
                        "a module is a .astral file: rename the folder or special file that "
                        "has its name, or import another module")
            return None
        if not resolved.is_file():
            where = "the stdlib" if parts[0] == "stdlib" else f"the project ({display_name(base)})"
            self._error("E205", f"module `{node.dotted}` not found in {where}", span,
                        missing_module_hint(base, parts, parts[0] == "stdlib"))
            return None
        return resolved

    @staticmethod
    def _path_key(path: Optional[Path], key: str) -> str:
        return str(path.resolve()) if path is not None else key

    # -- parsing -------------------------------------------------------------------------------------
    def _parse(self, key: str, path: Optional[Path], data: bytes, is_stdlib: bool,
               at: Optional[Span] = None) -> LoadedModule:
        name = display_name(path) if path is not None else key
        try:
            source = decode(name, data)
        except DiagnosticError as exc:
            self.diagnostics.append(exc.diagnostic)
            return LoadedModule(key, path, None, None, is_stdlib)
        over = self._over_budget(source, len(data), at)
        if over is not None:
            self.full = True
            self.diagnostics.append(over)
            return LoadedModule(key, path, source if over.span.file == name else None, None,
                                is_stdlib)
        try:
            tree, errors = _parse_source(source, is_stdlib, self.read is read_file)
            if errors:
                self.diagnostics.extend(errors)
                return LoadedModule(key, path, source, None, is_stdlib)
        except RecursionError:
            self.diagnostics.append(Diagnostic(
                "E402", Severity.ERROR, "expressions are nested too deeply to compile",
                Span.at(name, 1, 1), "split the expression with `let` names"))
            return LoadedModule(key, path, source, None, is_stdlib)
        if not tree.items and not source.text.strip():
            self.diagnostics.append(Diagnostic("W100", Severity.WARNING, "the file is empty",
                                               Span.at(name, 1, 1)))
        self.diagnostics.extend(bidi_warnings(source))
        return LoadedModule(key, path, source, tree, is_stdlib)

    def _over_budget(self, source: Source, size: int, at: Optional[Span]) -> Optional[Diagnostic]:
        """E108 when this module brings the design's sources past MAX_DESIGN_BYTES, or their
        tokens past the parser's MAX_TOKENS (at the token past it), before it is parsed or
        taken from the cache. A text's tokens are counted only once the lengths of the texts
        so far could pass the limit (a token is at least a character): no design pays for it."""
        from astral_dsl.syntax import parser

        self._bytes += size
        if self._bytes > MAX_DESIGN_BYTES:
            return Diagnostic(
                "E108", Severity.ERROR, f"`{source.name}` is too large to compile with the "
                f"modules before it: together {self._bytes:,} bytes, past the limit of "
                f"{MAX_DESIGN_BYTES:,} bytes for one design", at or Span.at(source.name, 1, 1),
                "import fewer or smaller modules: describe repetition with replication and "
                "templates")
        if self._tokens + len(source.text) <= parser.MAX_TOKENS:
            self._tokens += len(source.text)
            self._estimated.append(source)
            return None
        for earlier in self._estimated:
            self._tokens += parser.count_tokens(earlier.text, parser.MAX_TOKENS)[0] - \
                len(earlier.text)
        self._estimated.clear()
        count, past = parser.count_tokens(source.text, parser.MAX_TOKENS - self._tokens)
        self._tokens += count
        if past is None:
            return None
        return parser.too_many_tokens(source, past, "it and the modules before it hold" if
                                      self._tokens > count else "it holds")

    def charge_data(self, path: Path, size: int) -> Optional[str]:
        """Why a data file the design names (at `path`, resolved) cannot be used with those
        read before it: past MAX_DATA_BYTES together; None when it can (a file read again, for
        another scenario or inventory, costs nothing more)."""
        self.data_bytes[str(path)] = size
        total = sum(self.data_bytes.values())
        if total <= MAX_DATA_BYTES:
            return None
        self.data_bytes.pop(str(path), None)     # (another thread may have taken it out)
        return f"with the data files read before it, {total:,} bytes, past the limit of " \
               f"{MAX_DATA_BYTES:,} bytes for one design"

    def _error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, Severity.ERROR, message, span, hint))


# A user's file of fewer characters than this, in a process that has Lark imported already (a
# language server, a sweep, a test suite: what the tree cache saves a start, importing Lark, is
# spent), is parsed, its cache entry neither read nor written: Lark parses 2,000 characters in
# about a millisecond, about what writing its entry costs (the entry, the folder pruned: ~1 ms),
# and reading one back saves a fraction of that (benchmarks/bench_hot_spots.py: 100 such files
# compiled twice). (Here, not in syntax/astcache.py, whose source keys the shipped trees.)
SMALL_TREE = 2048


def worth_caching(source) -> bool:
    """Whether a user's file's tree is read from and written to the per-user cache (decided
    before it is parsed, which imports Lark)."""
    return len(source.text) >= SMALL_TREE or "lark" not in sys.modules


def _parse_source(source, is_stdlib: bool, from_disk: bool = True):
    """(tree, syntax errors): a stdlib module's tree from the per-user cache (it is shipped and
    does not change: syntax/astcache.py); a user's file from the same cache when this text
    parsed cleanly before, else parsed with error recovery (and cached when it has no error
    and was read from disk: an editor's unsaved buffers, read through the language server's
    own reader, would fill the cache with texts never seen again; nor a small file once Lark
    is imported, which parses it faster: worth_caching)."""
    from astral_dsl.syntax import astcache

    if is_stdlib:
        from astral_dsl.syntax.parser import parse

        tree = astcache.shipped(source)        # shipped with the package: nothing to parse
        if tree is not None:
            return tree, []
        try:
            return astcache.parse_cached(source, parse), []
        except DiagnosticError:
            pass                       # its errors, all of them, from parse_all
        return parse_all(source)
    if not from_disk or not worth_caching(source):
        return parse_all(source)
    tree, entry = astcache.cached(source)
    if tree is not None:
        return tree, []
    tree, errors = parse_all(source)
    if not errors and tree is not None:
        astcache.store(entry, tree)
    return tree, errors


def inside(path: Path, base: Path) -> bool:
    """Whether `path` lies in the folder `base` (both resolved)."""
    try:
        path.relative_to(base)
        return True
    except ValueError:
        return False
