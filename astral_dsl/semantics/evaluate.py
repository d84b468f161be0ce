"""Expression evaluation with unit checking.

Errors raise DiagnosticError with the span of the offending expression; the field being evaluated
records it and becomes POISON, which silences every error that would only follow from it."""
from __future__ import annotations

import math
from functools import lru_cache

import attrs

from astral_dsl import cancel
from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.model.rollup import PLURALS, group_of, power_of
from astral_dsl.model.values import ListValue, Symbol, type_name
from astral_dsl.semantics.builtins import BUILTINS, BuiltinError, call_builtin
from astral_dsl.semantics.defaults import FORMS
from astral_dsl.semantics.frames import Env, Frame
from astral_dsl.semantics.scope import LetSymbol, Namespace, ParamSymbol, Template, missing_hint
from astral_dsl.semantics import access, collections, operators
from astral_dsl.semantics.errors import Poisoned, check, fail, unknown_name
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, format_number, parse_unit
from astral_dsl.units.table import UnitSpecError, is_unit



MAX_STRING = 1 << 20        # characters in one string value (concatenation doubles it)
# The steps of one compile's evaluation: every expression evaluated, every statement of a
# template laid on an instance, and every element of each list an expression gives (a list
# made, or handed to an aggregate: `[sum(xs) for i in ...]` walks xs once per element). The work of a compile is then bounded whatever the text
# amplifies: templates instantiated with distinct arguments, `for` bodies, lists aggregated in
# a loop (an 11 KB design of 2,000 distinct instantiations of a 500-line template took 3
# million steps, 30 s and 460 MB; `[sum(xs) for i in 0..100000]` over 100,000 numbers would
# have taken hours). A step costs 1.5 to 12 us of CPU here, so a compile's evaluation costs at
# most ~25 s; the reference takes under 1,000 steps, a design of distinct templates about
# 100,000 per MB of text (830,000 at the 8 MiB file cap: benchmarks/bench_limits.py). Past it,
# E409, and the rest of the design is left unevaluated.
MAX_STEPS = 2_000_000


def _shown(expr) -> str:
    if isinstance(expr, (ast.Number, ast.QuantityLit)):
        unit = f" {expr.unit}" if isinstance(expr, ast.QuantityLit) else ""
        return f"`{format_number(expr.value)}{unit}`"
    return "the value"


def keyword_fields(word: str):
    """[(kind, field)] of the enum fields that have `word` among their values, for a word that
    starts with a digit (`1f1b`) and so reads as a quantity."""
    if not word[:1].isdigit():
        return []
    return list(_digit_keywords().get(word, ()))


@lru_cache(maxsize=1)
def _digit_keywords():
    """word -> ((kind, field), ...) for the enum values that start with a digit: every quantity
    literal asks, so the kinds are searched once, not once per literal."""
    from astral_dsl.model.kinds import KINDS, EnumType

    out = {}
    for kind in KINDS.values():
        for name, spec in kind.fields.items():
            if isinstance(spec.type, EnumType):
                for value in spec.type.values:
                    if value[:1].isdigit():
                        out.setdefault(value, []).append((kind.name, name))
    return {word: tuple(fields) for word, fields in out.items()}


class Expressions:
    """Evaluates expressions in an environment. Its `host` (semantics/instantiate.py, the
    Instantiator) owns the frames: it gives a frame's fields (`field`), instantiates templates
    (`instantiate`), evaluates module-level params and lets (`module_value`), records the
    unknowns (`record_unknown`, `assignments`) and memoises roll-ups (`rollups`, `view`).
    Member access and indexing live in access.py, replication, ranges, lists and unknowns in
    collections.py, arithmetic, comparison and logic in operators.py: plain functions this
    class dispatches to."""

    def __init__(self, host):
        self.host = host
        # id(literal) -> (the literal, its Quantity): a quantity literal is worth the same
        # wherever it is evaluated (a template's `let v = k * 3 W` at each of its instances),
        # so its unit is parsed and its checks run once per compile (the node is held, so its
        # id is not reused); one that fails fails each time, as it did
        self.literals = {}

    def eval(self, expr, env: Env):
        host = self.host
        host.steps += 1
        if host.steps > host.step_limit:           # MAX_STEPS, or the next question (_at_limit)
            self._at_limit(expr)
        value = check(_HANDLERS[type(expr)](self, expr, env))
        if type(value) is ListValue:
            host.steps += len(value.items)
        if isinstance(value, Quantity) and not math.isfinite(value.si):
            # a literal such as `1e308 kW` (1e311 W) or a result beyond the range of a float:
            # no later step, and no analysis, ever sees inf or NaN
            fail("E309", f"{_shown(expr)} is too large to represent (beyond 1.8e308 in SI "
                         f"units)", expr.span, "write it in a larger unit or check the number")
        if isinstance(value, str) and len(value) > MAX_STRING:
            fail("E316", f"a string of {len(value):,} characters is beyond the limit of "
                         f"{MAX_STRING:,}", expr.span)
        return value

    def _at_limit(self, expr) -> None:
        """Past MAX_STEPS: E409. Else the thread is asked whether its compile should stop
        (cancel.py: the language server's job was cancelled or ran out of time; Cancelled then),
        and the next question is POLL_STEPS steps on: one comparison a step, as before."""
        host = self.host
        if host.steps > MAX_STEPS:
            self._over_budget(expr)
        cancel.check()
        host.step_limit = min(MAX_STEPS, host.steps + cancel.POLL_STEPS)

    def _over_budget(self, expr) -> None:
        """E409 once, then every evaluation of this compile is abandoned silently."""
        host = self.host
        if not getattr(host, "over_budget", False):
            host.over_budget = True
            host.diagnostics.append(Diagnostic(
                "E409", Severity.ERROR, f"evaluating this design takes more than "
                f"{MAX_STEPS:,} steps, the limit of one compile: it stopped here, and what is "
                f"left is not evaluated", expr.span,
                "a template instantiated with many distinct arguments, a long `for`, or a "
                "list aggregated inside a `for` multiplies the work: replicate with `N x "
                "Template`, or compute totals once with `let`"))
        raise Poisoned()

    # -- literals -----------------------------------------------------------------------------------
    def _e_Number(self, e: ast.Number, env):
        return Quantity(e.value)

    def _e_QuantityLit(self, e: ast.QuantityLit, env):
        hit = self.literals.get(id(e))
        if hit is not None:
            return hit[1]
        q = self._literal(e)
        self.literals[id(e)] = (e, q)
        return q

    def _literal(self, e: ast.QuantityLit):
        word = e.text.replace(" ", "")
        fields = keyword_fields(word)
        if fields:                    # `1f1b` outside its field: a keyword, not a quantity
            try:
                parse_unit(e.unit)
            except UnitSpecError:
                kind, name = fields[0]
                fail("E300", f"`{word}` reads as the number {format_number(e.value)} with an "
                             f"unknown unit `{e.unit}`: it is a keyword, not a quantity", e.span,
                     f"`{word}` is a value of `{name}` (in `{kind}`): write it as that field's "
                     f"value, bare or quoted (`{name} = {word}`); anywhere else it is a string: "
                     f"`\"{word}\"`")
        if e.unit[:1] == "x" and e.unit[1:2].isalpha() and not is_unit(e.unit):
            number = e.text[:len(e.text) - len(e.unit)].rstrip()     # `8xG`: a replication
            fail("E300", f"unknown unit `{e.unit}`", e.unit_span,
                 f"`{e.text}` reads `{e.unit}` as the unit of {number}: to replicate, put spaces "
                 f"around `x`, as in `{number} x {e.unit[1:]}`")
        q = Quantity.from_unit(e.value, self.unit(e.unit, e.unit_span))
        if q.si == 0 and e.value != 0 and not q.point:     # `1e-320 pW` is 1e-332 W
            fail("E309", f"`{e.text}` is too small to represent: it would be read as 0 (in SI "
                         f"units)", e.span, "the smallest number above zero is about 5e-324 in "
                         "SI units: check the exponent, or write 0")
        return q

    def unit(self, spec: str, span: Span):
        try:
            return parse_unit(spec)
        except UnitSpecError as exc:
            hint = exc.hint
            if exc.code == "E300" and ("/" in spec or "*" in spec):
                op = "/" if "/" in spec else "*"
                spaced = f"to divide or multiply by a name, put spaces around `{op}`"
                hint = f"{spaced} ({hint})" if hint else spaced
            fail(exc.code, str(exc), span, hint)

    def _e_String(self, e, env):
        return e.value

    def _e_Bool(self, e, env):
        return e.value

    def _e_Wildcard(self, e, env):
        fail("E103", "`*` selects every member and only stands inside `[...]`", e.span)

    # -- names --------------------------------------------------------------------------------------
    def _e_Name(self, e: ast.Name, env: Env):
        return self.lookup(e.name, env, e.span)

    def lookup(self, name: str, env: Env, span: Span):
        scope = env
        cycle = None
        while scope is not None:
            if name in scope.locals:
                return scope.locals[name]
            frame = scope.frame
            if frame is not None:
                if name in frame.defs and frame.busy.get(name):
                    # `supply = supply`: a field naming itself means the outer `supply`
                    cycle = frame
                elif name in frame.defs:
                    return self.host.field(frame, name, span)
                if name in scope.params:
                    return scope.params[name]
                derived = self.rollup(frame, name, env, span)
                if derived is not None:
                    return derived
            elif name in scope.params:
                return scope.params[name]
            if scope.outer is None:
                break
            scope = scope.outer
        symbol = env.module.lookup(name)
        if symbol is not None:
            return self.symbol_value(symbol, span, env)
        if cycle is not None:
            self.host.field(cycle, name, span)     # reports the cycle
        if name in BUILTINS or name in FORMS:
            fail("E303", f"`{name}` is a function; call it, e.g. `{name}(racks.power)`", span,
                 f"a function's value is its result: write `{name}(...)`")
        if env.symbols:
            return Symbol(name)
        if name in env.module.unresolved:
            raise Poisoned()               # its import failed: that is the diagnostic
        unknown_name(name, span, self.visible(env),
                     {a: s.scope.key for a, s in env.module.symbols.items()
                      if isinstance(s, Namespace)}, env.module)

    def visible(self, env: Env):
        names = set(env.module.symbols)
        scope = env
        while scope is not None:
            names.update(scope.locals)
            names.update(scope.params)
            if scope.frame is not None:      # not a field being evaluated: `h = hw` is no `h`
                names.update(n for n in scope.frame.defs if not scope.frame.busy.get(n))
                if scope.frame.spec.physical:
                    names.update(PLURALS)
                    names.add("power")
            scope = scope.outer
        return names

    def symbol_value(self, symbol, span: Span, used_in=None):
        """A declaration's value; a template named bare (`8 x NVL72`) is instantiated in its own
        module, and `used_in`, the scope that names it, says where the design brings it in
        (a W212 of the stdlib's names the user's line: semantics/defaults.py)."""
        if isinstance(symbol, Template):
            return self.host.instantiate(symbol, [], Env(symbol.module), span, used_in)
        if isinstance(symbol, (ParamSymbol, LetSymbol)):
            return self.host.module_value(symbol, span)
        if isinstance(symbol, Namespace):
            return symbol
        raise AssertionError(symbol)

    def rollup(self, frame: Frame, name: str, env: Env, span: Span):
        """The roll-up `name` of `frame`, named in one of its fields. The roll-up holds the
        frame's members: one whose value names it (`hosts = hosts x N` in a rack; `r = racks x
        R` in a site) depends on itself, E404, whose hint says that the name is the roll-up
        there and not the module's `param` of that name (section 5.3: the roll-ups come
        before the module); at the name, when the member is another field."""
        try:
            return self.derived(frame, name)
        except DiagnosticError as exc:
            d = exc.diagnostic
            member = next((m for m in frame.defs if frame.busy.get(m) and d.message ==
                           f"`{m}` of {frame.kind} `{frame.display}` depends on itself"), None)
            if d.code != "E404" or member is None:
                raise
            outer = env.module.lookup(name)
            itself = member == name
            hint = f"in {frame.kind} `{frame.display}`, `{name}` is its roll-up (what it " \
                   f"holds, {'this field' if itself else f'`{member}`'} included)" + (
                f", not the module's `{name}`: rename that (e.g. `{name}_per_{frame.kind}`)"
                if isinstance(outer, (ParamSymbol, LetSymbol)) else
                ": total its members instead (`sum(MEMBER.power) * 1.1`)"
                if itself and name == "power" else
                f": give the count a name of its own (`param n = 4`, `{name} = n x ...`)"
                if itself else
                f", so `{member}` cannot use it: give the value it needs a name of its own "
                "(`param n = 4`)")
            if itself:
                raise DiagnosticError(attrs.evolve(d, hint=hint)) from None
            raise DiagnosticError(attrs.evolve(
                d, message=f"{d.message} through the roll-up `{name}`", span=span,
                hint=hint)) from None

    def derived(self, frame: Frame, name: str):
        """Roll-ups every physical instance answers: gpus, hosts, racks, ..., power."""
        if not frame.spec.physical:
            return None
        if name in PLURALS:
            return group_of(frame, PLURALS[name], self.host.rollups, self.host.view)
        if name == "power":
            return power_of(frame, self.host.rollups, self.host.view)
        return None

    # -- calls ----------------------------------------------------------------------------------------
    def _e_Call(self, e: ast.Call, env):
        func = e.func
        symbol = None
        if isinstance(func, ast.Name):
            if func.name in FORMS and not self._shadowed(func.name, env):
                return FORMS[func.name](self, e, env)
            if func.name in BUILTINS and not self._shadowed(func.name, env):
                args = []
                for a in e.args:
                    if a.name is not None:
                        fail("E307", f"`{func.name}` takes no named arguments", a.name.span,
                             f"drop `{a.name.name} =`: pass the value alone")
                    args.append(self.eval(a.value, env))
                try:
                    return call_builtin(func.name, args)
                except BuiltinError as exc:
                    fail(exc.code, exc.message, e.span, exc.hint)
            symbol = self._template_symbol(func, env)
        elif isinstance(func, ast.Attr):
            ns = self.eval(func.obj, env)
            if isinstance(ns, Namespace):
                symbol = ns.scope.own.get(func.name.name)
                if symbol is None:
                    fail("E208", f"module `{ns.name}` has no declaration `{func.name.name}`",
                         func.name.span, missing_hint(ns.scope, ns.name, func.name.name))
        if isinstance(symbol, Template):
            return self.host.instantiate(symbol, list(e.args), env, e.span)
        target = self.eval(func, env)
        fail("E306", f"a {type_name(target)} cannot be called", func.span,
             "only templates and built-in functions take arguments")

    def _shadowed(self, name, env) -> bool:
        """Does a call `name(...)` of a built-in's name mean a template of the module (W214
        at its declaration)? A value of that name (a `let`, a parameter, a field) cannot be
        called: beside it, the call is the built-in's."""
        scope = env
        while scope is not None:
            if name in scope.locals or name in scope.params or (
                    scope.frame is not None and name in scope.frame.defs):
                return False
            scope = scope.outer
        return isinstance(env.module.lookup(name), Template)

    def _template_symbol(self, func: ast.Name, env: Env):
        scope = env
        while scope is not None:
            if func.name in scope.locals or func.name in scope.params or (
                    scope.frame is not None and func.name in scope.frame.defs):
                return None
            scope = scope.outer
        symbol = env.module.lookup(func.name)
        if symbol is None and func.name in env.module.unresolved:
            raise Poisoned()               # its import failed: that is the diagnostic
        if symbol is None:
            unknown_name(func.name, func.span, self.visible(env) | set(BUILTINS) | set(FORMS))
        return symbol


_HANDLERS = {
    ast.Number: Expressions._e_Number, ast.QuantityLit: Expressions._e_QuantityLit,
    ast.String: Expressions._e_String, ast.Bool: Expressions._e_Bool,
    ast.Wildcard: Expressions._e_Wildcard, ast.Name: Expressions._e_Name,
    ast.Call: Expressions._e_Call, ast.Binary: operators.eval_binary,
    ast.Neg: operators.eval_neg, ast.Convert: operators.eval_convert,
    ast.Compare: operators.eval_compare, ast.Logic: operators.eval_logic,
    ast.Not: operators.eval_not, ast.If: operators.eval_if,
    ast.Attr: access.eval_attr, ast.Index: access.eval_index,
    ast.Unknown: collections.eval_unknown, ast.Replicate: collections.eval_replicate,
    ast.Range: collections.eval_range, ast.ListExpr: collections.eval_list,
    ast.Comprehension: collections.eval_comprehension,
}
