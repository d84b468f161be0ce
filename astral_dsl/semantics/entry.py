"""The front end's passes over the entry module, after parsing: its scopes, its roots
instantiated, unused templates linted, canonical paths, size limits, user checks and the frozen
model. pipeline.py calls them in order; each is a plain function of the evaluation so far."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from astral_dsl.diagnostics import Diagnostic, Severity, Span, sort_diagnostics
from astral_dsl.model.design import Design, UnknownSite
from astral_dsl.model.kinds import KINDS
from astral_dsl.semantics.checks import Written, owners, run_checks, span_text
from astral_dsl.semantics.frames import Env, Frame
from astral_dsl.semantics.errors import Poisoned
from astral_dsl.semantics.freeze import Freezer
from astral_dsl.semantics.assumptions import report as report_assumptions, unsaid
from astral_dsl.semantics.defaults import report as report_defaults
from astral_dsl.semantics.keywords import keyword_names
from astral_dsl.semantics.instantiate import Instantiator
from astral_dsl.semantics.modules import LoadedModule, ModuleLoader
from astral_dsl.semantics.scope import (LetSymbol, ModuleScope, ParamSymbol, Template,
                                        build_scope)
from astral_dsl.syntax import ast

MAX_GPUS = 10**9


def empty(name: str, diagnostics) -> Design:
    """The design of an entry that cannot be evaluated (unreadable, or nothing parsed)."""
    return Design(name, (), (), (), (), (), (), sort_diagnostics(diagnostics))


def module_scope(module: LoadedModule, loader: ModuleLoader, scopes: Dict[int, ModuleScope],
                 diagnostics) -> ModuleScope:
    """The scope of `module` and, through its imports, of every module it reaches (kept in
    `scopes` by id(module): each is built once per compile)."""
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

    if not module.is_stdlib:
        diagnostics.extend(_unreadable_names(module.tree, loader))
    return build_scope(scope, module.tree, resolve, diagnostics)


def _unreadable_names(tree: ast.Module, loader: ModuleLoader) -> Tuple[Diagnostic, ...]:
    """keyword_names' E222s of `tree` and the E223s of its reasonless `assumed`, found once per
    tree of the loader (one walk of the whole tree for both; every compile of a workspace
    reuses its loader's trees)."""
    hit = loader.unreadable_names.get(id(tree))
    if hit is not None and hit[0] is tree:
        return hit[1]
    found: List[Diagnostic] = []
    nodes = list(ast.walk(tree))
    keyword_names(nodes, found)
    unsaid(nodes, found)
    loader.unreadable_names[id(tree)] = (tree, tuple(found))
    return tuple(found)


Roots = Tuple[List[Frame], List[Frame], List[Frame]]


def instantiate_roots(ev: Instantiator, scope: ModuleScope) -> Roots:
    """The entry's sites, jobs and scenarios instantiated (templates of other kinds that need
    no argument too, so that their errors show), and its module-level values evaluated."""
    roots: List[Frame] = []
    jobs: List[Frame] = []
    scenarios: List[Frame] = []
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
            module_value(ev, scope, name)
    return roots, jobs, scenarios


def module_value(ev: Instantiator, scope: ModuleScope, name: str) -> None:
    """The `param` or `let` `name` of `scope` evaluated, after the module's values it names,
    in dependency order: each then finds those evaluated, instead of evaluating them inside its
    own evaluation (a chain of 100 `let`s, each naming the one below it, nested past Python's
    recursion limit: E402 at 1:1). A cycle is left to the evaluation, which reports it (E404)."""
    for dep in _dependencies(scope, name):
        if dep not in scope.values:
            ev.guarded(lambda: ev.symbol_value(scope.own[dep], scope.spans[dep]), default=None)


def _dependencies(scope: ModuleScope, name: str) -> List[str]:
    """`name` and the module values it needs, directly or through others, needed ones first
    (an iterative depth-first walk); only `name` when they hold a cycle."""
    def needs(n: str) -> List[str]:
        node = scope.own[n].node
        expr = node.value if isinstance(node, ast.Let) else node.default
        return [x.name for x in ast.walk(expr) if isinstance(x, ast.Name) and x.name != n
                and isinstance(scope.own.get(x.name), (LetSymbol, ParamSymbol))
                and x.name not in scope.values]

    order: List[str] = []
    state: Dict[str, bool] = {name: False}        # False: being visited; True: done
    stack = [(name, iter(needs(name)))]
    while stack:
        n, todo = stack[-1]
        dep = next(todo, None)
        if dep is None:
            stack.pop()
            state[n] = True
            order.append(n)
        elif dep not in state:
            state[dep] = False
            stack.append((dep, iter(needs(dep))))
        elif not state[dep]:
            return [name]                           # a cycle: the evaluation says E404
    return order


def imported_values(ev: Instantiator, scopes: Dict[int, ModuleScope], entry: ModuleScope) -> None:
    """The `param`s and `let`s of the project's other modules evaluated, used or not, so that
    their errors show as the entry's own do (`let budget = 45 kW + 3 m` in an imported module
    is E301 even when the entry imports only a template from it). The stdlib's are not: they
    are known to evaluate, and are evaluated where used."""
    for scope in scopes.values():
        if scope is entry or scope.is_stdlib:
            continue
        for name, symbol in scope.own.items():
            if not isinstance(symbol, Template):
                module_value(ev, scope, name)


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
    lint.lenient, lint.option = True, ev.option
    for symbol in unused:
        lint.guarded(lambda: lint.instantiate(symbol, [], Env(scope), symbol.decl.name.span),
                     default=None)
    lint.complete_all()
    seen = {(d.code, d.span, d.message) for d in diagnostics}
    diagnostics.extend(d for d in found if (d.code, d.span, d.message) not in seen)


def warn_no_site(entry: LoadedModule, scope: ModuleScope, roots, diagnostics) -> None:
    """W400: the entry declares parts but no site to hold them (not said of a standard-library
    file, a library of parts by design, even when it is opened as a file)."""
    if not roots and scope.own and not _is_stdlib(entry) and any(
            isinstance(s, Template) and s.module is scope and s.kind in ("rack", "row", "block",
                                                                          "pod", "hall")
            for s in scope.own.values()):
        diagnostics.append(Diagnostic(
            "W400", Severity.WARNING, "no `site` is declared, so nothing is built",
            Span.at(entry.key, 1, 1), "declare `site Name { ... }` holding the design's parts"))


def _is_stdlib(module: LoadedModule) -> bool:
    if module.is_stdlib:
        return True
    if module.path is None:
        return False
    from astral_dsl import resources

    return module.path.resolve().is_relative_to(resources.stdlib_dir().resolve())


def size_limits(ev: Instantiator, roots, diagnostics) -> None:
    """E405: a site beyond MAX_GPUS GPUs."""
    from astral_dsl.model.rollup import count_of

    for root in roots:
        try:
            gpus = count_of(root, ("gpu",), ev.rollups, ev.view)
        except Poisoned:          # a member failed to evaluate: already reported
            continue
        if gpus > MAX_GPUS:
            diagnostics.append(Diagnostic(
                "E405", Severity.ERROR,
                f"site `{root.name}` holds {gpus:,} GPUs, beyond the limit of {MAX_GPUS:,}",
                root.template.decl.name.span if root.template else root.span,
                "check the replication counts"))


def user_checks(ev: Instantiator, everything, paths, mult, scopes, loader: ModuleLoader):
    """Every user `check` of every distinct instance and module (semantics/checks.py), and the
    canonical paths again when a check instantiated a template (`check H(racks) == 0`: its
    frames are named too; the frames named before keep their paths, new ones come last)."""
    from astral_dsl.semantics.paths import canonical_paths

    module_checks = [(c, Env(s)) for s in scopes.values() for c in s.checks]
    sources = {m.source.name: m.source for m in loader.modules.values() if m.source is not None}

    def text(span: Span) -> str:
        src = sources.get(span.file)
        return "..." if src is None else span_text(src.line, span)

    trees = tuple(m.tree for m in loader.modules.values() if m.tree is not None)
    kept = loader.check_owners
    if kept is None or len(kept[0]) != len(trees) or \
            any(a is not b for a, b in zip(kept[0], trees)):
        kept = loader.check_owners = (trees, owners(trees))     # a function of the trees
    written = Written(text, kept[1])
    results = run_checks(ev, ev.frames, mult, paths, module_checks, written, ev.scenario)
    if any(id(f) not in paths for f in ev.frames):
        paths = canonical_paths(everything, ev.frames)
    return results, paths


def freeze(ev: Instantiator, entry: LoadedModule, scope: ModuleScope, found: Roots, paths,
           results, diagnostics, allows=()) -> Design:
    """The frozen model: every frame as an Instance at its canonical path, the params, the
    unknowns in source order, and the diagnostics sorted, with W212 and W215 for the stdlib's
    defaults and tables its instances read since the frames were completed
    (semantics/defaults.py) and W216 for the assumed values that it holds
    (semantics/assumptions.py), each once at the places that bring it in, apart where
    different `allows` accept them (semantics/brought_in.py)."""
    roots, jobs, scenarios = found
    report_defaults(ev, allows)
    report_assumptions(ev, allows)
    freezer = Freezer(paths)
    frozen_roots = tuple(freezer.instance(f) for f in roots)
    frozen_jobs = tuple(freezer.instance(f) for f in jobs)
    frozen_scen = tuple(freezer.instance(f) for f in scenarios)
    for f in ev.frames:
        freezer.instance(f)
    params, lets = ((tuple((n, freezer.value(scope.values[n], False))
                           for n, s in scope.own.items()
                           if n in scope.values and type(s).__name__ == kind))
                    for kind in ("ParamSymbol", "LetSymbol"))
    instances = tuple(sorted(freezer.order, key=lambda i: i.path))
    unknowns = tuple(_unknown_site(key, site, paths, freezer)
                     for key, site in sorted(ev.unknown_sites.items(),
                                             key=lambda kv: _span_order(kv[1][0])))
    return Design(entry.key, frozen_roots, frozen_jobs, frozen_scen, params, instances,
                  tuple(results), sort_diagnostics(diagnostics), unknowns,
                  assignments=tuple(sorted(ev.assignments.items())), lets=lets)


def _span_order(span: Span):
    return (span.file, span.start.line, span.start.column)


def _unknown_site(key, site, paths, freezer) -> UnknownSite:
    span, role, options, kw = site
    frame = kw.get("frame")
    return UnknownSite(key, span, role, tuple(freezer.value(o, False) for o in options),
                       kw.get("low", 0), kw.get("high", 10**6),
                       paths.get(id(frame), "") if frame is not None else "", kw.get("field", ""),
                       kw.get("inclusive_end", False))


def too_deep(exc: RecursionError, file: str) -> Diagnostic:
    """E402 for an evaluation nested past Python's recursion limit, at the outermost field or
    module value whose evaluation went that deep (found in the traceback; else at 1:1 of
    `file`): a chain of some hundred values each naming the next, in a body."""
    tb = exc.__traceback__
    while tb is not None:
        code, local = tb.tb_frame.f_code, tb.tb_frame.f_locals
        frame, name, symbol = local.get("frame"), local.get("name"), local.get("symbol")
        if code.co_name == "field" and isinstance(frame, Frame) and name in frame.defs:
            return _deep(f"`{name}` of {frame.kind} `{frame.display}`",
                         frame.defs[name].name_span)
        if code.co_name == "module_value" and isinstance(symbol, (LetSymbol, ParamSymbol)):
            return _deep(f"`{symbol.node.name.name}`", symbol.node.name.span)
        tb = tb.tb_next
    return Diagnostic("E402", Severity.ERROR, "the design nests too deeply to compile",
                      Span.at(file, 1, 1), "reduce the nesting of expressions or templates")


def _deep(what: str, span: Span) -> Diagnostic:
    return Diagnostic("E402", Severity.ERROR,
                      f"evaluating {what} nests too deeply to compile", span,
                      "its value needs values that need others, some hundred deep (a long chain "
                      "of `let`s or fields each naming the next): compute it in fewer steps")
