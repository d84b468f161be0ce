"""The instantiator: templates -> frames. It binds parameters (semantics/arguments.py), applies
a base template and overrides, memoises instantiations so replication stays symbolic, and owns
what one compile builds: the frames, the memo, module-level values (evaluated by
semantics/module_values.py), the unknowns and the roll-up cache. It evaluates expressions with
an `Expressions` (semantics/evaluate.py) whose host it is, and the fields of its frames with
semantics/fields.py (whole frames: semantics/complete.py)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, did_you_mean
from astral_dsl.model.kinds import KINDS
from astral_dsl.model.values import POISON
from astral_dsl.semantics.assumptions import reading_defaults
from astral_dsl.semantics.brought_in import asked
from astral_dsl.semantics.coerce import ANNOTATIONS, coerce, type_from_annotation
from astral_dsl.semantics import complete, defaults, fields, module_values
from astral_dsl.semantics.errors import Poisoned, fail, unknown_key, unknown_name
from astral_dsl.semantics.evaluate import Expressions
from astral_dsl.semantics.arguments import Deferred, bind, memo_key, override
from astral_dsl.semantics.fields import _Given
from astral_dsl.semantics.frames import Env, FieldDef, Frame
from astral_dsl.semantics.overrides import command_line
from astral_dsl.semantics.scope import ModuleScope, Template
from astral_dsl.syntax import ast

MAX_DEPTH = 64


class Instantiator:
    def __init__(self, diagnostics: List[Diagnostic], overrides: Dict[str, Any] | None = None,
                 entry: Optional[ModuleScope] = None,
                 assignments: Optional[Dict[str, Any]] = None,
                 scenario: Optional[str] = None, plan=None, trace=None):
        from astral_dsl.semantics.isolate import Isolator

        self.expr = Expressions(self)
        self.diagnostics = diagnostics
        self.scenario = scenario      # compiling under this scenario: its own checks run
        self.assignments = assignments or {}
        # the scenario's routes, isolated as the frames on them are made (semantics/isolate.py)
        self.isolator = Isolator(self, plan) if plan is not None and not plan.empty else None
        self.lenient = False    # missing required arguments are POISON (entry.lint_templates)
        self.unknown_sites: Dict[str, Any] = {}
        self.rollups: Dict = {}
        self.view = fields.FrameView(self)    # how roll-ups see the frames (model/rollup.py)
        self.frames: List[Frame] = []
        self.memo: Dict = {}
        self.steps = 0                # evaluation steps of this compile (evaluate.MAX_STEPS)
        self.step_limit = 0           # steps at which evaluate.py looks again (_at_limit)
        self.overrides = overrides or {}
        # how an override is named in its messages (semantics/overrides.py: `--set NAME`, from
        # the API `overrides['NAME']`); front_end sets the caller's
        self.option = command_line
        self.entry = entry
        self.module_busy: set = set()    # (id(scope), name): module values being evaluated
        self.defaulting: set = set()      # parameter defaults being evaluated (arguments.bind)
        self._duplicates: set = set()     # spans of fields set twice in a block, said once
        self.assumptions_said: set = set()    # (assumption, place): W216 said (assumptions.py)
        self.defaulted: list = []    # assumed defaults bound, until their instance is made
        self.assumed_defaults: list = []    # ... and those their instances read
        self.asked: Dict[int, dict] = {}    # id(frame) -> who asked for it (brought_in.py)
        self.brought: list = []    # (frame, W212): said at each of its places (defaults.py)
        # value provenance (semantics/trace.py), told as values are made; without a trace the
        # evaluation runs unwrapped
        self.trace = trace
        if trace is not None and trace.per_value:
            self._trace_hooks(trace)

    def _trace_hooks(self, trace) -> None:
        expr, plain_eval, plain_derived = self.expr, self.expr.eval, self.expr.derived
        plain_field = self.field

        def eval_(e, env):
            value = plain_eval(e, env)
            trace.evaluated(e, env, value)
            return value

        def derived(frame, name):
            value = plain_derived(frame, name)
            trace.derived(frame, name, value)
            return value

        def field(frame, name, span=None):
            value = plain_field(frame, name, span)
            trace.field(frame, name, value)
            return value

        expr.eval, expr.derived, self.field = eval_, derived, field

    # -- what the expressions and the rest of the compiler ask of the instantiator --------------
    def eval(self, expr, env: Env):
        return self.expr.eval(expr, env)

    def field(self, frame: Frame, name: str, span: Span | None = None):
        """The value of field `name` of `frame` (evaluated on first use)."""
        return fields.field(self, frame, name, span)

    def complete_all(self) -> None:
        complete.complete_all(self)
        defaults.report(self)

    def constructs(self, d: FieldDef) -> bool:
        return fields.constructs(self, d)

    def symbol_value(self, symbol, span: Span):
        return self.expr.symbol_value(symbol, span)

    def record_unknown(self, key, span, role, options=(), **kw):
        if key not in self.unknown_sites:
            self.unknown_sites[key] = (span, role, options, kw)

    # -- diagnostics ----------------------------------------------------------------------------------
    def guarded(self, fn, default=POISON):
        """Run fn(); a diagnostic is recorded and `default` returned instead."""
        try:
            return fn()
        except DiagnosticError as exc:
            self.diagnostics.append(exc.diagnostic)
        except Poisoned:
            pass
        return default

    # -- module-level params and lets: their values (semantics/module_values.py, as a method: no
    # call more a level of a chain of lets) -----------------------------------------------------------
    module_value = module_values.module_value

    def annotated(self, type_ident, value, span, what):
        if type_ident is None:
            return value
        t = type_from_annotation(type_ident.name)
        if t is None:
            fail("E303", f"unknown type `{type_ident.name}`", type_ident.span,
                 did_you_mean(type_ident.name, ANNOTATIONS) or
                 "types: a dimension (power, bandwidth, ...), count, ratio, bool, string, "
                 "or a kind")
        out = coerce(value, t, span, what)
        if self.trace is not None:
            self.trace.converted(value, out)
        return out

    # -- templates ---------------------------------------------------------------------------------------
    def instantiate(self, template: Template, args: List[ast.Arg], caller: Env, span: Span,
                    used_in: Optional[Env] = None):
        """`template(args)`: its instance for those arguments, made once (the memo)."""
        frame = reading_defaults(self, lambda: self._instance(template, args, caller, span,
                                                              used_in))
        asked(self, frame, used_in or caller, span)
        return frame

    def _instance(self, template: Template, args: List[ast.Arg], caller: Env, span: Span,
                  used_in: Optional[Env]):
        params, overrides, origins = bind(self, template, args, caller, span, used_in)
        key = (id(template), memo_key(params),
               memo_key({n: (unknown_key(v.arg.value.span) if isinstance(v, Deferred) else v)
                     for n, (v, _, _) in overrides.items()}))
        frame = self.memo.get(key)
        if frame is not None:
            return frame
        depth = (caller.frame.depth + 1) if caller.frame is not None else 0
        if depth > MAX_DEPTH:
            fail("E402", f"templates nest more than {MAX_DEPTH} deep (at `{template.name}`)", span,
                 "a template that instantiates itself with changing arguments never ends")
        frame = self._make(template, params, overrides, depth, origins)
        frame.called_at = span
        frame.asked_in = used_in or caller
        self.memo[key] = frame
        if self.isolator is not None:
            self.isolator.made(frame, bare=not args)
        return frame

    def _make(self, template: Template, params, overrides, depth: int, origins) -> Frame:
        frame = Frame(template.kind, KINDS[template.kind], template.name, template.decl.span,
                      template, depth, args=params,
                      recipe=(template, params, overrides, origins))
        self.frames.append(frame)
        self._apply(frame, template, params, set(), origins)
        for name, (value, arg_span, origin) in overrides.items():
            frame.defs[name] = override(value, Env(template.module, frame), arg_span, origin)
        return frame

    def copy(self, frame: Frame) -> Frame:
        """A private copy of a template's instance (to isolate replicas a scenario names)."""
        if frame.recipe is None:
            return frame
        return self._make(*frame.recipe[:3], frame.depth, frame.recipe[3])

    def given(self, frame: Frame, name: str, value, at: Optional[Span] = None) -> None:
        """Give field `name` of a frame not yet evaluated this value (a scenario's `set`, at
        `at`: where the user's files set it, a stdlib template's field included)."""
        span = frame.defs[name].name_span if name in frame.defs else frame.span
        frame.defs[name] = FieldDef(_Given(value), Env(frame.template.module if frame.template
                                                       else self.entry, frame), span, None,
                                    origin=at)
        frame.values.pop(name, None)

    def _apply(self, frame: Frame, template: Template, params: Dict[str, Any], seen: set,
               origins: Dict[str, Span]):
        """Lay the statements of `template` (after those of its base) onto `frame`; `origins`:
        where the user's files set its parameters (semantics/origins.py)."""
        if id(template) in seen:
            fail("E215", f"`{template.name}` is derived from itself", template.decl.name.span,
                 "a declaration's base must be another template")
        seen.add(id(template))
        env = Env(template.module, frame, params, origins=origins, template=template)
        decl = template.decl
        if decl.base is not None:
            base, base_args = self._base(decl, env)
            self._derive(frame, base, base_args, env, decl.base.span, seen)
        self.lay_body(frame, decl.body or (), env)

    def _derive(self, frame: Frame, base: Template, args, env: Env, span: Span, seen: set):
        """Lay `base(args)` onto `frame`: its statements, then the keyword overrides."""
        base_params, base_overrides, origins = bind(self, base, args, env, span)
        self._apply(frame, base, base_params, seen, origins)
        for name, (value, at, origin) in base_overrides.items():
            frame.defs[name] = override(value, env, at, origin)

    def _base(self, decl: ast.Decl, env: Env):
        symbol, args = self._template_of(decl.base, env)
        if symbol.kind != decl.kind.name:
            fail("E303", f"{decl.kind.name} `{decl.name.name}` cannot be based on "
                         f"{symbol.kind} `{symbol.name}`", decl.base.span,
                 f"declare it as `{symbol.kind} {decl.name.name} = ...`")
        return symbol, args

    def _template_of(self, expr, env: Env,
                     wrong: str = "a declaration can only be based on a template, e.g. "
                                  "`host Node = HGX8(gpu = H800) { ... }`"):
        """The template (and its arguments) an expression such as `HGX8(gpu = H800)` or
        `hw.Rectifier` names: the base of a derived declaration or instance."""
        base = expr
        args: List[ast.Arg] = []
        if isinstance(expr, ast.Call):
            args = list(expr.args)
            expr = expr.func
        symbol = None
        if isinstance(expr, ast.Name):
            symbol = env.module.lookup(expr.name)
            if symbol is None and expr.name in env.module.unresolved:
                raise Poisoned()           # its import failed: that is the diagnostic
            if symbol is None:
                unknown_name(expr.name, expr.span, env.module.symbols)
        elif isinstance(expr, ast.Attr):
            ns = self.eval(expr.obj, Env(env.module))
            symbol = getattr(ns, "scope", None) and ns.scope.own.get(expr.name.name)
        if not isinstance(symbol, Template):
            fail("E303", wrong, base.span, "name a declared template (`HGX8`, `hw.Rectifier`), "
                                           "not a value or an instance")
        return symbol, args

    def lay_body(self, frame: Frame, body, env: Env):
        spec = frame.spec
        self.steps += len(body)       # a step each (evaluate.MAX_STEPS): the next eval stops
        named: Dict[str, Any] = {}
        for stmt in body:
            if isinstance(stmt, (ast.Field, ast.Let, ast.Decl, ast.Record)):
                self._once_in_block(named, stmt.name)
            if isinstance(stmt, ast.Field):
                frame.defs[stmt.name.name] = FieldDef(stmt, env, stmt.name.span, stmt.value)
            elif isinstance(stmt, ast.Let):
                frame.defs[stmt.name.name] = FieldDef(stmt, env, stmt.name.span, stmt.value, True)
            elif isinstance(stmt, (ast.Decl, ast.Record)):
                frame.defs[stmt.name.name] = FieldDef(stmt, env, stmt.name.span, None)
            elif isinstance(stmt, ast.Check):
                frame.checks.append((stmt, env))
            elif isinstance(stmt, ast.Allow):
                continue                   # collected by semantics/allows.py
            else:
                form = {ast.Fail: "fail", ast.SetStmt: "set", ast.Objective: "objective"}[type(stmt)]
                allowed = spec.statements + (("objective",) if spec.name == "site" else ())
                if form not in allowed:
                    self.diagnostics.append(Diagnostic(
                        "E210", Severity.ERROR, f"`{stmt.sense if form == 'objective' else form}` "
                        f"is not allowed in a {spec.name}", stmt.span,
                        "`fail` and `set` belong in a scenario; objectives in a site"))
                    continue
                frame.actions.append((stmt, env))

    def _once_in_block(self, named: Dict[str, Any], name) -> None:
        """E202 for a name set twice in one block: `recompute = full` after `recompute =
        selective` would silently win."""
        first = named.setdefault(name.name, name.span)
        if first is name.span or name.span in self._duplicates:
            return
        self._duplicates.add(name.span)
        self.diagnostics.append(Diagnostic(
            "E202", Severity.ERROR, f"`{name.name}` is already set in this block (at "
                                    f"{first.start.line}:{first.start.column})", name.span,
            "remove one of them: a block sets each field once (a derived template or an "
            "argument overrides it)"))

    def nested(self, parent: Frame, decl: ast.Decl, env: Env) -> Frame:
        kind = decl.kind.name
        spec = KINDS.get(kind)
        if spec is None:
            fail("E201", f"unknown kind of declaration `{kind}`", decl.kind.span,
                 did_you_mean(kind, KINDS))
        pspec = parent.spec
        lower_physical = (spec.physical and pspec.physical and pspec.open_members
                          and spec.level < pspec.level)
        if spec.physical and pspec.physical and spec.level >= pspec.level:
            fail("E403", f"a {pspec.name} cannot contain a {kind}", decl.kind.span,
                 "containment goes down the hierarchy: site > hall > pod > row > rack > "
                 "host > gpu/nic")
        if kind not in pspec.nested and not lower_physical:
            allowed = ", ".join(pspec.nested) or "nothing"
            fail("E210", f"a {kind} cannot be declared inside a {pspec.name}", decl.kind.span,
                 f"a {pspec.name} may declare: {allowed}")
        if decl.params or decl.renamed:
            fail("E210", "a declaration inside a body cannot take parameters",
                 (decl.params or decl.renamed)[0].span,
                 "declare it at the top of the file to make a template")
        frame = Frame(kind, spec, decl.name.name, decl.name.span, None, parent.depth + 1)
        asked(self, frame, env, decl.name.span)
        self.frames.append(frame)
        inner = Env(env.module, frame, {}, {}, env)

        def lay() -> Frame:
            if decl.base is not None:
                base, base_args = self._base(decl, env)
                self._derive(frame, base, base_args, env, decl.base.span, set())
            self.lay_body(frame, decl.body or (), inner)
            return frame
        return reading_defaults(self, lay)

    def derived_value(self, parent: Frame, stmt: ast.Field, env: Env) -> Frame:
        """`name = Base(args) { body }`: an instance of Base with the body laid on it, made
        for this field (as a nested declaration is, whatever the kind of the field)."""
        template, args = self._template_of(
            stmt.value, env, "only a template's instance takes a body `{ ... }` here, e.g. "
                             "`battery = LeadAcid(autonomy = 10 min) { strings = 4 }`")
        spec = KINDS[template.kind]
        frame = Frame(template.kind, spec, template.name, stmt.value.span, None, parent.depth + 1)
        asked(self, frame, env, stmt.value.span)
        self.frames.append(frame)

        def lay() -> Frame:
            self._derive(frame, template, args, env, stmt.value.span, set())
            self.lay_body(frame, stmt.body, Env(env.module, frame, {}, {}, env))
            return frame
        return reading_defaults(self, lay)

