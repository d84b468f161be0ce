"""The front-end pipeline: read -> parse -> resolve imports and names -> instantiate templates ->
evaluate and unit-check -> design model -> constraint checks. Each step is a function of its own
module; this one only wires them together."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

import attrs

from astral_dsl import gcpause
from astral_dsl.diagnostics import Diagnostic, Severity, Span, sort_diagnostics
from astral_dsl.model.design import Design, Instance, UnknownSite
from astral_dsl.model.kinds import KINDS
from astral_dsl.semantics.checks import run_checks
from astral_dsl.semantics.frames import Env
from astral_dsl.semantics.freeze import Freezer
from astral_dsl.semantics.instantiate import Instantiator
from astral_dsl.semantics.modules import LoadedModule, ModuleLoader, project_root, read_file
from astral_dsl.semantics.overrides import parse_overrides
from astral_dsl.semantics.paths import canonical_paths, multiplicities
from astral_dsl.semantics.scope import ModuleScope, Template, build_scope
from astral_dsl.syntax import ast
from astral_dsl.syntax.source import encode

MAX_GPUS = 10**9


@attrs.define(eq=False)
class Compilation:
    """Everything one compile builds: the modules it read and parsed (with their imports
    resolved), their scopes, the instantiator (frames and the value of every expression) and the
    design. `recompile` evaluates the same parsed source again with values for the design's
    unknowns (sizing) or under a scenario (its routes isolated), without reading or parsing
    anything again."""
    entry: LoadedModule
    loader: ModuleLoader
    overrides: Mapping[str, object]
    load_diagnostics: Tuple[Diagnostic, ...]     # reading, parsing and imports
    design: Design
    scopes: Dict[int, ModuleScope] = attrs.field(factory=dict)
    instantiator: Optional[Instantiator] = None

    @property
    def modules(self) -> Dict[str, LoadedModule]:
        return self.loader.modules

    def recompile(self, assignments: Optional[Mapping[str, object]] = None,
                  scenario: Optional[Instance] = None) -> "Compilation":
        """The same source with `assignments` for its unknowns, under `scenario` (a scenario
        instance of this design, or None)."""
        from astral_dsl.semantics.isolate import plan

        return _evaluate(self.entry, self.loader, self.load_diagnostics, self.overrides,
                         dict(assignments or {}),
                         scenario.template if scenario is not None else None,
                         plan(scenario.actions) if scenario is not None else None)

    def under(self, scenario: Instance) -> Design:
        """The design compiled under `scenario`, as sized: the parts its `fail`s and `set`s
        name are isolated (their own instances, at their own paths), the `set`s in place, and
        its own checks run."""
        return self.recompile(dict(self.design.assignments), scenario).design


def compile_path(path: str | Path, overrides: Optional[Mapping[str, object]] = None,
                 read=read_file, expressions=None, instantiator=None) -> Compilation:
    """Read, parse and compile a file; see Compilation. Tools that watch the evaluation (the
    language server's hover, margins) pass their own `expressions` or `instantiator` class."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"the path of a design must be a str or a path, not "
                        f"{type(path).__name__}")
    _check_overrides(overrides)
    path = Path(path)
    diagnostics: List[Diagnostic] = []
    loader = ModuleLoader(project_root(path), diagnostics, read)
    from astral_dsl.semantics.modules import display_name

    name = display_name(path)
    try:
        data = read(path)
    except OSError as exc:
        from astral_dsl.semantics.modules import unreadable

        diagnostics.append(unreadable(f"`{name}`", exc, file=name))
        entry = LoadedModule(name, path, None, None)
    else:
        entry = loader.load_entry_text(name, data, path)
    return _evaluate(entry, loader, tuple(diagnostics), overrides, {}, None, None,
                     expressions, instantiator)


def compile_source(text: str, name: str = "<string>", root: str | Path | None = None,
                   overrides: Optional[Mapping[str, object]] = None, read=read_file,
                   expressions=None, instantiator=None) -> Compilation:
    if not isinstance(text, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"the source of a design must be str or bytes, not {type(text).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"the name of a design must be a str, not {type(name).__name__}")
    _check_overrides(overrides)
    diagnostics: List[Diagnostic] = []
    loader = ModuleLoader(Path(root) if root is not None else Path.cwd(), diagnostics, read)
    data = bytes(text) if not isinstance(text, str) else encode(text)
    entry = loader.load_entry_text(name, data)
    return _evaluate(entry, loader, tuple(diagnostics), overrides, {}, None, None,
                     expressions, instantiator)


def compile_file(path: str | Path, overrides: Optional[Mapping[str, object]] = None,
                 read=read_file) -> Design:
    return compile_path(path, overrides, read).design


def compile_text(text: str, name: str = "<string>", root: str | Path | None = None,
                 overrides: Optional[Mapping[str, object]] = None, read=read_file) -> Design:
    return compile_source(text, name, root, overrides, read).design


def _check_overrides(overrides) -> None:
    """Overrides are a mapping of parameter names to values (a wrong name or value is a
    diagnostic; a wrong kind of argument is the caller's mistake: a TypeError)."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a mapping of parameter names to values, e.g. "
                        f"{{\"hosts_per_rack\": 8}}, not {type(overrides).__name__}")


def _empty(name: str, diagnostics) -> Design:
    return Design(name, (), (), (), (), (), (), sort_diagnostics(diagnostics))


@gcpause.pausing                # frames, values and the frozen design: long-lived
def _evaluate(entry: LoadedModule, loader: ModuleLoader, load_diagnostics, overrides,
              assignments, scenario: Optional[str], plan, expressions=None,
              instantiator=None) -> Compilation:
    diagnostics: List[Diagnostic] = list(load_diagnostics)
    comp = Compilation(entry, loader, dict(overrides or {}), tuple(load_diagnostics),
                       _empty(entry.key, diagnostics))
    if entry.tree is None:
        comp.design = attrs.evolve(_empty(entry.key, diagnostics), compilation=comp)
        return comp
    entry_scope = module_scope(entry, loader, comp.scopes, diagnostics)
    given = parse_overrides(overrides or {}, entry_scope, diagnostics)
    kw = {"expressions": expressions} if expressions is not None else {}
    ev = (instantiator or Instantiator)(diagnostics, given, entry_scope, dict(assignments),
                                        scenario, plan, **kw)
    comp.instantiator = ev
    try:
        design = evaluate_entry(ev, entry, entry_scope, comp.scopes, loader, diagnostics)
    except RecursionError:
        diagnostics.append(Diagnostic("E402", Severity.ERROR,
                                      "the design nests too deeply to compile",
                                      Span.at(entry.key, 1, 1),
                                      "reduce the nesting of expressions or templates"))
        design = _empty(entry.key, diagnostics)
    comp.design = attrs.evolve(design, scenario=scenario, compilation=comp)
    return comp


def module_scope(module: LoadedModule, loader: ModuleLoader, scopes: Dict[int, ModuleScope],
           diagnostics) -> ModuleScope:
    hit = scopes.get(id(module))
    if hit is not None:
        return hit
    scope = ModuleScope(module.key, module.source.name if module.source else module.key,
                        module.is_stdlib)
    scopes[id(module)] = scope

    def resolve(node: ast.Import) -> Optional[ModuleScope]:
        target = loader.resolved.get(id(node))
        if target is None or target.tree is None:
            return None
        return module_scope(target, loader, scopes, diagnostics)

    return build_scope(scope, module.tree, resolve, diagnostics)


def evaluate_entry(ev: Instantiator, entry: LoadedModule, scope: ModuleScope, scopes, loader,
              diagnostics) -> Design:
    roots, jobs, scenarios = [], [], []
    for name, symbol in scope.own.items():
        if isinstance(symbol, Template):
            spec = KINDS[symbol.kind]
            frame = ev.guarded(lambda: ev.instantiate(symbol, [], Env(scope), symbol.decl.name.span)
                               if spec.root or not symbol.decl.params or
                               all(p.default is not None for p in symbol.decl.params) else None,
                               default=None)
            if frame is None or not spec.root:
                continue
            {"site": roots, "job": jobs, "scenario": scenarios}[symbol.kind].append(frame)
        else:
            ev.guarded(lambda: ev.symbol_value(symbol, scope.spans[name]), default=None)
    ev.complete_all()
    lint_templates(ev, scope, diagnostics)
    if not roots and scope.own and not entry.is_stdlib and any(
            isinstance(s, Template) and s.module is scope and s.kind in ("rack", "row", "block",
                                                                          "pod", "hall")
            for s in scope.own.values()):
        diagnostics.append(Diagnostic(
            "W400", Severity.WARNING, "no `site` is declared, so nothing is built",
            Span.at(entry.key, 1, 1), "declare `site Name { ... }` holding the design's parts"))
    everything = roots + jobs + scenarios
    paths = canonical_paths(everything, ev.frames)
    mult = multiplicities(everything)
    _size_limits(ev, roots, diagnostics)
    module_checks = [(c, Env(s)) for s in scopes.values() for c in s.checks]
    sources = {m.source.name: m.source for m in loader.modules.values() if m.source is not None}

    def snippet(span: Span) -> str:
        src = sources.get(span.file)
        if src is None or span.start.line != span.end.line:
            return "..."
        return src.line(span.start.line)[span.start.column - 1:span.end.column - 1]

    results = run_checks(ev, ev.frames, mult, paths, module_checks, snippet, ev.scenario)
    if any(id(f) not in paths for f in ev.frames):
        # a check may instantiate a template (`check H(racks) == 0`): name its frames too (the
        # frames named before keep their paths: new ones come last)
        paths = canonical_paths(everything, ev.frames)
    freezer = Freezer(paths)
    frozen_roots = tuple(freezer.instance(f) for f in roots)
    frozen_jobs = tuple(freezer.instance(f) for f in jobs)
    frozen_scen = tuple(freezer.instance(f) for f in scenarios)
    for f in ev.frames:
        freezer.instance(f)
    params = tuple((n, freezer.value(scope.values[n], False)) for n, s in scope.own.items()
                   if n in scope.values and type(s).__name__ == "ParamSymbol")
    instances = tuple(sorted(freezer.order, key=lambda i: i.path))
    unknowns = tuple(_unknown_site(key, site, paths, freezer)
                     for key, site in sorted(ev.unknown_sites.items(),
                                             key=lambda kv: _span_order(kv[1][0])))
    return Design(entry.key, frozen_roots, frozen_jobs, frozen_scen, params, instances,
                  tuple(results), sort_diagnostics(diagnostics), unknowns,
                  assignments=tuple(sorted(ev.assignments.items())))


def lint_templates(ev: Instantiator, scope: ModuleScope, diagnostics) -> None:
    """Check the bodies of the entry's templates that nothing instantiated because they need
    arguments: bound to values already in error, the arguments silence what depends on them,
    and every other mistake in the body is reported."""
    used = {id(f.template) for f in ev.frames if f.template is not None}
    unused = [s for s in scope.own.values() if isinstance(s, Template) and id(s) not in used
              and s.module is scope and s.decl.params
              and any(p.default is None for p in s.decl.params)]
    if not unused:
        return
    found: List[Diagnostic] = []
    lint = Instantiator(found, ev.overrides, scope, {})
    lint.lenient = True
    for symbol in unused:
        lint.guarded(lambda: lint.instantiate(symbol, [], Env(scope), symbol.decl.name.span),
                     default=None)
    lint.complete_all()
    seen = {(d.code, d.span, d.message) for d in diagnostics}
    diagnostics.extend(d for d in found if (d.code, d.span, d.message) not in seen)


def _span_order(span: Span):
    return (span.file, span.start.line, span.start.column)


def _unknown_site(key, site, paths, freezer) -> UnknownSite:
    span, role, options, kw = site
    frame = kw.get("frame")
    return UnknownSite(key, span, role, tuple(freezer.value(o, False) for o in options),
                       kw.get("low", 0), kw.get("high", 10**6),
                       paths.get(id(frame), "") if frame is not None else "", kw.get("field", ""))


def _size_limits(ev: Instantiator, roots, diagnostics) -> None:
    from astral_dsl.model.rollup import count_of

    for root in roots:
        gpus = count_of(root, ("gpu",), ev.rollups, ev.view)
        if gpus > MAX_GPUS:
            diagnostics.append(Diagnostic(
                "E405", Severity.ERROR,
                f"site `{root.name}` holds {gpus:,} GPUs, beyond the limit of {MAX_GPUS:,}",
                root.template.decl.name.span if root.template else root.span,
                "check the replication counts"))
