"""The modules of one entry file, read and parsed once, and the one place that compiles them.

    ws = Workspace.open("examples/astral.astral", {"hosts_per_rack": "4"})
    ws.design                                   # the design as written (compiled once, kept)
    ws.sized                                    # with the values sizing chose for its `?`s
    ws.compile(overrides={...})                 # the same parsed source with other `--set`s
    ws.recompile(design, assignments={...})     # as `design` was compiled, other values of `?`
    ws.under(scenario)                          # compiled under a scenario, as sized

Reading, parsing and resolving imports happen in `open` (pipeline.py passes 1-4); every compile
runs passes 5-15 (`pipeline.front_end`) on the same syntax trees. A Design records what it was
compiled with (overrides, assignments, scenario) and nothing more: it holds no pointer back."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Tuple, Union

import attrs

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity, sort_diagnostics
from astral_dsl.model.design import Design, Instance
from astral_dsl.pipeline import front_end, front_end_errors, unsized
from astral_dsl.pipeline_sizing import size
from astral_dsl.semantics.modules import LoadedModule, ModuleLoader, project_root
from astral_dsl.semantics.overrides import Option, from_python
from astral_dsl.semantics.source_files import read_file
from astral_dsl.syntax.source import encode

if TYPE_CHECKING:
    from astral_dsl.units import Quantity

# what a parameter may be set to from Python (`Workspace.with_params`, `astral_dsl.load`)
ParamValue = Union[bool, int, float, str, "Quantity"]


@records.define(eq=False)
class Workspace:
    entry: LoadedModule
    loader: ModuleLoader
    overrides: Mapping[str, object]
    load_diagnostics: Tuple[Diagnostic, ...]     # reading, parsing and imports
    _design: Optional[Design] = None
    _sizing: Optional[Any] = None
    # how the messages of an override name it (semantics/overrides.py): `overrides['NAME']`
    # from Python (open, of_text, with_params, the API's functions), `--set NAME` for the
    # command, which says so (cli/common.py open_path)
    option: Option = from_python

    def __repr__(self) -> str:
        # what a REPL shows: the entry and its overrides, not every module's text and tree
        # (160 kB for the reference design)
        return f"Workspace({self.entry.key!r}, overrides={dict(self.overrides)!r})"

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(cls, path, overrides: Optional[Mapping[str, object]] = None,
             read=read_file, option: Option = from_python) -> "Workspace":
        """Read and parse the file at `path` and everything it imports (`read`: how a file is
        read, e.g. the language server's open documents first; `option`: how an override is
        named, by default the API's `overrides['NAME']` (semantics.overrides.from_python), the
        command's `--set NAME` with semantics.overrides.command_line)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"the path of a design must be a str or a path, not "
                            f"{type(path).__name__}")
        _check_overrides(overrides, values=True)
        from astral_dsl.semantics.modules import display_name
        from astral_dsl.semantics.source_files import unreadable

        given, path = os.fspath(path), Path(path)
        diagnostics: List[Diagnostic] = []
        loader = ModuleLoader(project_root(path), diagnostics, read)
        name = display_name(path) if given else ""
        if not given:     # Path("") is ".": "cannot read `.`: Is a directory", of a folder
            diagnostics.append(Diagnostic(                                  # never named
                "E100", Severity.ERROR, "cannot read ``: the path is empty: it names no file",
                None, "name a .astral file", file=name))
            return cls(LoadedModule(name, path, None, None), loader, dict(overrides or {}),
                       tuple(diagnostics), option=option)
        try:
            data = read(path)
        except OSError as exc:
            diagnostics.append(unreadable(f"`{name}`", exc, file=name))
            entry = LoadedModule(name, path, None, None)
        else:
            entry = loader.load_entry_text(name, data, path)
        return cls(entry, loader, dict(overrides or {}), tuple(diagnostics), option=option)

    @classmethod
    def of_text(cls, text, name: str = "<string>", root=None,
                overrides: Optional[Mapping[str, object]] = None,
                read=read_file, option: Option = from_python) -> "Workspace":
        """Parse source text (str, or bytes as a file holds them); imports resolve against
        `root` (default: the current directory) and the stdlib; `option` as open's."""
        if not isinstance(text, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"the source of a design must be str or bytes, not "
                            f"{type(text).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"the name of a design must be a str, not {type(name).__name__}")
        if root is not None and not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"the root of a design's imports must be a str or a path, not "
                            f"{type(root).__name__}")
        _check_overrides(overrides, values=True)
        diagnostics: List[Diagnostic] = []
        loader = ModuleLoader(Path(root) if root is not None else Path.cwd(), diagnostics, read)
        data = bytes(text) if not isinstance(text, str) else encode(text)
        entry = loader.load_entry_text(name, data)
        return cls(entry, loader, dict(overrides or {}), tuple(diagnostics), option=option)

    # -- what was read ---------------------------------------------------------------------------
    @property
    def modules(self):
        """The modules read, by path key: LoadedModule (source, syntax tree, imports)."""
        return self.loader.modules

    @property
    def root(self) -> Path:
        """The project root: imports resolve against it."""
        return self.loader.root

    @property
    def parsed(self) -> bool:
        return self.entry.tree is not None

    def read_beside(self, relative: str) -> Tuple[str, Optional[bytes], Optional[str]]:
        """A data file a design names (an inventory), relative to the entry file's folder, read
        as imports are (a regular file of at most 8 MiB, inside the project; the design's data
        files at most MAX_DATA_BYTES together): (its name as diagnostics show it, its bytes or
        None, why it could not be read)."""
        from astral_dsl.semantics.modules import display_name, inside

        folder = self.entry.path.parent if self.entry.path is not None else self.root
        path = Path(folder) / relative
        name = display_name(path)
        try:
            real = path.resolve()
        except (OSError, RuntimeError) as exc:
            return name, None, str(exc)
        if not inside(real, self.root.resolve()):
            return name, None, "it is outside the project (data files, as imports, stay inside it)"
        try:
            data = self.loader.read(real)
        except OSError as exc:
            return name, None, exc.strerror or str(exc)
        over = self.loader.charge_data(real, len(data))
        return (name, None, over) if over is not None else (name, data, None)

    def files(self) -> Tuple[str, ...]:
        """The files of the modules read (the design's and its imports', the stdlib's too),
        sorted: what an output must not be written over (outputs/overwrite.py)."""
        return tuple(sorted(str(m.path) for m in self.modules.values() if m.path is not None))

    def sources(self) -> Tuple[Tuple[str, str], ...]:
        """(file name, text) of every module read, sorted by name."""
        return tuple(sorted({m.source.name: m.source.text for m in self.modules.values()
                             if m.source is not None}.items()))

    def with_params(self, **params: "ParamValue") -> "Workspace":
        """The same parsed source with these parameters set, by name and as Python values:
        `ws.with_params(hosts_per_rack=5, rack_limit=Quantity.of(50, "kW"))` (a number takes
        the unit of the parameter's default, as `--set` does; a str is read as `--set` reads
        its text). They add to the workspace's own overrides; nothing is read or parsed again.
        A value of another Python type raises TypeError; a name the design does not declare,
        or a value of the wrong dimension, is a diagnostic of the new design (E213, E310)."""
        _check_values(params)
        return Workspace(self.entry, self.loader, {**self.overrides, **params},
                         self.load_diagnostics, option=from_python)     # the API's words

    # -- compiling -------------------------------------------------------------------------------
    @property
    def design(self) -> Design:
        """The design with the workspace's overrides, compiled on first use and kept."""
        if self._design is None:
            self._design = self.compile()
        return self._design

    def sizing(self, design: Optional[Design] = None):
        """`design` (default: the workspace's own) sized (pipeline_sizing.size: every `?`
        chosen), the workspace's own design once per workspace (and once per user:
        sizing_cache.py)."""
        if design is not None and design is not self.design:
            return size(self, design)
        if self._sizing is None:
            self._sizing = size(self, self.design)
        return self._sizing

    @property
    def sized(self) -> Design:
        """The design as every command uses it: with the values sizing chose for its `?`s
        (marked in `chosen`); the design as compiled when it has none, or errors no choice can
        mend; with sizing's diagnostics (E660, ...) when no choice satisfies it."""
        return self.sized_of(self.design)

    def sized_of(self, design: Design) -> Design:
        """`design` (of this workspace) as `sized` gives the workspace's own."""
        if not design.needs_sizing:
            return design
        if front_end_errors(design):
            return attrs.evolve(design, diagnostics=tuple(unsized(design)))
        result = self.sizing(design)
        if result.diagnostics:
            return attrs.evolve(design, diagnostics=sort_diagnostics(
                unsized(design) + list(result.diagnostics)))
        return result.design

    def compile(self, overrides: Optional[Mapping[str, object]] = None,
                assignments: Optional[Mapping[str, Any]] = None,
                scenario: Optional[Instance] = None, trace=None,
                option: Optional[Option] = None) -> Design:
        """The parsed source evaluated again: with `overrides` (default: the workspace's),
        `assignments` for its unknowns (sizing), under `scenario` (a scenario instance of a
        design of this workspace), telling `trace` every value (semantics/trace.py), naming
        an override as `option` does (default: the workspace's)."""
        if overrides is not None:
            _check_overrides(overrides)
        return front_end(self.entry, self.loader, self.load_diagnostics,
                         self.overrides if overrides is None else overrides,
                         assignments or {}, scenario, trace, option or self.option)

    def recompile(self, design: Design, assignments: Optional[Mapping[str, Any]] = None,
                  scenario: Optional[Instance] = None) -> Design:
        """`design` (of this workspace) compiled again as it was, with other `assignments`
        (default: its own) and under `scenario`."""
        return self.compile(dict(design.overrides),
                            dict(design.assignments) if assignments is None else assignments,
                            scenario)

    def under(self, scenario: Union[Instance, str], design: Optional[Design] = None) -> Design:
        """`design` (default: the workspace's) compiled under `scenario` (one of its scenarios,
        or its name), as sized: the parts its `fail`s and `set`s name are isolated (their own
        instances, at their own paths), the `set`s in place, and its own checks run. A name
        the design does not declare raises ValueError; anything but a scenario, TypeError."""
        design = self.design if design is None else design
        if isinstance(scenario, str):
            found = next((s for s in design.scenarios if s.template == scenario), None)
            if found is None:
                known = ", ".join(s.template for s in design.scenarios) or "it declares none"
                raise ValueError(f"the design has no scenario `{scenario}` ({known})")
            scenario = found
        elif not isinstance(scenario, Instance) or scenario.kind != "scenario":
            what = scenario.kind if isinstance(scenario, Instance) else type(scenario).__name__
            raise TypeError(f"under() takes a scenario of the design or its name, not {what}")
        return self.recompile(design, scenario=scenario)


def _check_overrides(overrides, values: bool = False) -> None:
    """Overrides are a mapping of parameter names to values (a wrong name, or a value of the
    wrong dimension, is a diagnostic; a wrong kind of argument is the caller's mistake: a
    TypeError); `values`: the caller's, each a Python value as with_params takes it."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a mapping of parameter names to values, e.g. "
                        f"{{\"hosts_per_rack\": 8}}, not {type(overrides).__name__}")
    if values and overrides:
        _check_values(overrides)


def _check_values(params: Mapping) -> None:
    """TypeError for a parameter value that is not an int, float, bool, str or Quantity
    (`compile(path, overrides={"n": [1]})` was E310 "a list is not a value", with_params's
    the TypeError the API's docs say)."""
    from astral_dsl.units import Quantity

    for name, value in params.items():
        if not isinstance(value, (bool, int, float, str, Quantity)):
            raise TypeError(f"parameter `{name}`: a value is an int, float, bool, str or "
                            f"Quantity, not {type(value).__name__}")
