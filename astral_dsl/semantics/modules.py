"""Finding, reading and parsing the modules a design imports.

`import stdlib.X` resolves in the shipped stdlib; `import a.b` resolves to `<project>/a/b.astral`,
where the project root is the nearest folder above the entry file holding `astral.toml` (else the
entry file's folder). Nothing outside the project and the stdlib can be imported (symlinks
included), and an import cycle is a diagnostic."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Optional

import attrs

from astral_dsl import resources
from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse_all
from astral_dsl.syntax.source import Source, decode

Reader = Callable[[Path], bytes]


def read_file(path: Path) -> bytes:
    return path.read_bytes()


@attrs.define
class LoadedModule:
    key: str                      # "stdlib.hardware", "lib.common" or the entry's display name
    path: Optional[Path]
    source: Optional[Source]
    tree: Optional[ast.Module]
    is_stdlib: bool = False


def project_root(entry: Path) -> Path:
    entry = entry.resolve()
    for folder in [entry.parent, *entry.parent.parents]:
        if (folder / "astral.toml").is_file():
            return folder
    return entry.parent


def display_name(path: Path) -> str:
    """Paths in diagnostics: relative to the working directory when below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class ModuleLoader:
    def __init__(self, root: Path, diagnostics: List[Diagnostic], read: Reader = read_file):
        self.root = root.resolve()
        self.stdlib = resources.stdlib_dir().resolve()
        self.read = read
        self.diagnostics = diagnostics
        self.modules: Dict[str, LoadedModule] = {}
        self._loading: List = []
        self.resolved: Dict[int, Optional[LoadedModule]] = {}   # id(import node) -> module

    # -- entry points -------------------------------------------------------------------------------
    def load_entry_text(self, name: str, data: bytes, path: Optional[Path] = None) -> LoadedModule:
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
        try:
            data = self.read(path)
        except OSError as exc:
            self._error("E100", f"cannot read module `{key}`: {exc.strerror or exc}", node.span)
            return None
        module = self._parse(key, path, data, is_stdlib=key.startswith("stdlib."))
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
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):
            resolved = path
        if not (_inside(resolved, base)):
            self._error("E207", f"module `{node.dotted}` resolves outside the project "
                                f"({display_name(resolved)})", node.span,
                        "imports resolve only inside the project and the stdlib")
            return None
        if not resolved.is_file():
            where = "the stdlib" if parts[0] == "stdlib" else f"the project ({display_name(base)})"
            hint = None
            folder = resolved.parent
            if folder.is_dir():
                from astral_dsl.diagnostics import did_you_mean

                names = [p.stem for p in folder.glob("*.astral")]
                hint = did_you_mean(rel[-1], names)
                if hint:
                    hint = hint.replace("`", "`" + ".".join(parts[:-1]) + ".", 1)
            self._error("E205", f"module `{node.dotted}` not found in {where}",
                        Span(node.span.file, node.path[0].span.start, node.path[-1].span.end), hint)
            return None
        return resolved

    @staticmethod
    def _path_key(path: Optional[Path], key: str) -> str:
        return str(path.resolve()) if path is not None else key

    # -- parsing -------------------------------------------------------------------------------------
    def _parse(self, key: str, path: Optional[Path], data: bytes, is_stdlib: bool) -> LoadedModule:
        name = display_name(path) if path is not None else key
        try:
            source = decode(name, data)
        except DiagnosticError as exc:
            self.diagnostics.append(exc.diagnostic)
            return LoadedModule(key, path, None, None, is_stdlib)
        try:
            tree, errors = parse_all(source)
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
        return LoadedModule(key, path, source, tree, is_stdlib)

    def _error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, Severity.ERROR, message, span, hint))


def _inside(path: Path, base: Path) -> bool:
    try:
        path.relative_to(base)
        return True
    except ValueError:
        return False
