"""Expression evaluation with unit checking.

Errors raise DiagnosticError with the span of the offending expression; the field being evaluated
records it and becomes POISON, which silences every error that would only follow from it."""
from __future__ import annotations

from typing import Any, Dict, List

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, did_you_mean
from astral_dsl.model.kinds import KINDS
from astral_dsl.model.rollup import PLURALS, group_of, power_of
from astral_dsl.model.values import (POISON, Bundle, Choice, FabricAxis, FabricSelection, Group,
                                     ListValue, RangeValue, Run, Symbol, plane_label,
                                     UnknownValue, Values, concat, type_name)
from astral_dsl.semantics.builtins import BUILTINS, BuiltinError, call_builtin
from astral_dsl.semantics.frames import Env, Frame
from astral_dsl.semantics.scope import LetSymbol, Namespace, ParamSymbol, Template
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, UnitError, parse_unit
from astral_dsl.units.table import UnitSpecError

MAX_COUNT = 10**9           # one replication count
MAX_ITERATIONS = 100_000    # one comprehension


def unknown_key(span: Span) -> str:
    return f"{span.file}:{span.start.line}:{span.start.column}"


class Poisoned(Exception):
    """An operand is POISON: abandon the expression without a new diagnostic."""


def fail(code: str, message: str, span: Span, hint: str | None = None):
    raise DiagnosticError(Diagnostic(code, Severity.ERROR, message, span, hint))


def _check(value):
    if value is POISON:
        raise Poisoned()
    return value


class ExpressionEvaluator:
    """The expression half of the evaluator; `semantics.instantiate.Evaluator` adds templates,
    frames and fields (`field`, `instantiate`, `lookup_frame`, `param_value`)."""

    diagnostics: List[Diagnostic]
    rollups: Dict

    def eval(self, expr, env: Env):
        method = getattr(self, "_e_" + type(expr).__name__)
        return _check(method(expr, env))

    # -- literals -----------------------------------------------------------------------------------
    def _e_Number(self, e: ast.Number, env):
        return Quantity(e.value)

    def _e_QuantityLit(self, e: ast.QuantityLit, env):
        return Quantity.from_unit(e.value, self.unit(e.unit, e.unit_span))

    def unit(self, spec: str, span: Span):
        try:
            return parse_unit(spec)
        except UnitSpecError as exc:
            hint = exc.hint
            if "/" in spec or "*" in spec:
                op = "/" if "/" in spec else "*"
                spaced = f"to divide or multiply by a name, put spaces around `{op}`"
                hint = f"{spaced} ({hint})" if hint else spaced
            fail("E300", str(exc), span, hint)

    def _e_String(self, e, env):
        return e.value

    def _e_Bool(self, e, env):
        return e.value

    def _e_Unknown(self, e: ast.Unknown, env):
        """A structural unknown: the value assigned by sizing, else the first option (so that the
        front end can go on; the design is then provisional until `astral size` chooses)."""
        key = unknown_key(e.span)
        options = self.unknown_options(e, env)
        if key in self.assignments:
            chosen = self.assignments[key]
            return options[chosen.index] if isinstance(chosen, Choice) else chosen
        self.record_unknown(key, e.span, "structural", options)
        return options[0]

    def unknown_options(self, e: ast.Unknown, env):
        if e.domain is None:
            fail("E312", "an unknown here needs its options: write `? in 1..16` or "
                         "`? in [A, B]`", e.span,
                 "only equipment counts (feeder `count`, loop `cdus`, rectifier `modules`, "
                 "battery `strings`) may be a bare `?`")
        domain = self.eval(e.domain, env)
        if isinstance(domain, RangeValue):
            if len(domain) == 0:
                fail("E309", f"the range {domain} is empty", e.domain.span)
            if len(domain) > 4096:
                fail("E401", f"the range {domain} has more than 4,096 options", e.domain.span,
                     "narrow it")
            return tuple(Quantity(float(i)) for i in range(domain.start, domain.stop))
        if isinstance(domain, ListValue) and domain.items:
            return tuple(domain.items)
        if isinstance(domain, Group) and domain.count:
            return tuple(i for _, i in domain.flat())
        fail("E303", f"the options of `?` must be a range or a non-empty list, not a "
                     f"{type_name(domain)}", e.domain.span)

    def record_unknown(self, key, span, role, options=(), **kw):
        if key not in self.unknown_sites:
            self.unknown_sites[key] = (span, role, options, kw)

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
                    return self.field(frame, name, span)
                if name in scope.params:
                    return scope.params[name]
                derived = self.derived(frame, name)
                if derived is not None:
                    return derived
            elif name in scope.params:
                return scope.params[name]
            if scope.outer is None:
                break
            scope = scope.outer
        symbol = env.module.lookup(name)
        if symbol is not None:
            return self.symbol_value(symbol, span)
        if cycle is not None:
            self.field(cycle, name, span)     # reports the cycle
        if name in BUILTINS:
            fail("E303", f"`{name}` is a function; call it, e.g. `{name}(racks.power)`", span)
        if env.symbols:
            return Symbol(name)
        fail("E200", f"unknown name `{name}`", span, did_you_mean(name, self.visible(env)))

    def visible(self, env: Env):
        names = set(env.module.symbols)
        scope = env
        while scope is not None:
            names.update(scope.locals)
            names.update(scope.params)
            if scope.frame is not None:
                names.update(scope.frame.defs)
                if scope.frame.spec.physical:
                    names.update(PLURALS)
                    names.add("power")
            scope = scope.outer
        return names

    def symbol_value(self, symbol, span: Span):
        if isinstance(symbol, Template):
            return self.instantiate(symbol, [], Env(symbol.module), span)
        if isinstance(symbol, (ParamSymbol, LetSymbol)):
            return self.module_value(symbol, span)
        if isinstance(symbol, Namespace):
            return symbol
        raise AssertionError(symbol)

    def derived(self, frame: Frame, name: str):
        """Roll-ups every physical instance answers: gpus, hosts, racks, ..., power."""
        if not frame.spec.physical:
            return None
        if name in PLURALS:
            return group_of(frame, PLURALS[name], self.rollups)
        if name == "power":
            return power_of(frame, self.rollups)
        return None

    # -- member access ------------------------------------------------------------------------------
    def _e_Attr(self, e: ast.Attr, env):
        obj = self.eval(e.obj, env)
        return self.attribute(obj, e.name.name, e.name.span, e.span)

    def attribute(self, obj, name: str, name_span: Span, span: Span):
        if isinstance(obj, Frame) and obj.kind == "fabric" and name in ("rail", "plane") \
                and name not in obj.defs:
            return FabricAxis(FabricSelection(obj), name)
        if isinstance(obj, FabricSelection):
            return self._fabric_part(obj, name, name_span)
        if isinstance(obj, Frame) and obj.kind == "fabric" and name in obj.defs and \
                isinstance(obj.defs[name].stmt, ast.Decl) and obj.defs[name].stmt.kind.name == "tier":
            return FabricSelection(obj, None, None, name)     # `fabric.core`: every core switch
        if isinstance(obj, Frame):
            if name in obj.defs and not obj.defs[name].is_let:
                return self.field(obj, name, name_span)
            derived = self.derived(obj, name)
            if derived is not None:
                return derived
            known = [n for n, d in obj.defs.items() if not d.is_let]
            if obj.spec.physical:
                known += list(PLURALS) + ["power"]
            hint = did_you_mean(name, known)
            if hint is None and name in obj.spec.fields:
                hint = f"`{obj.display}` does not set `{name}`; declare `{name} = ...` in it"
            fail("E209", f"{obj.kind} `{obj.display}` has no member `{name}`", name_span, hint)
        if isinstance(obj, Group):
            return self._over_group(obj, lambda item: self.attribute(item, name, name_span, span))
        if isinstance(obj, Values):
            return self._collect([(c, self.attribute(v, name, name_span, span))
                                  for c, v in obj.runs])
        if isinstance(obj, Namespace):
            symbol = obj.scope.own.get(name)
            if symbol is None:
                fail("E208", f"module `{obj.name}` has no declaration `{name}`", name_span,
                     did_you_mean(name, obj.scope.own))
            return self.symbol_value(symbol, name_span)
        if isinstance(obj, Bundle):
            if name == "count":
                return Quantity(float(obj.count))
            if name in ("each", "speed"):
                return obj.item
            if name == "total":
                return obj.total
            fail("E209", f"a bundle has `count`, `each` and `total`, not `{name}`", name_span)
        if isinstance(obj, ListValue) and name == "count":
            return Quantity(float(len(obj.items)))
        fail("E209", f"a {type_name(obj)} has no member `{name}`", name_span)

    def _over_group(self, group: Group, fn):
        """An attribute of every member: a Group again (order kept) when the results are
        instances or groups, else the values as runs."""
        results = {}
        for _, item in group.flat():
            results[id(item)] = fn(item)
        if all(isinstance(v, (Frame, Group)) for v in results.values()):
            return _regroup(group, results)
        return self._collect([(c, results[id(item)]) for c, item in group.flat()])

    @staticmethod
    def _collect(pairs):
        merged = []
        for c, v in pairs:
            if isinstance(v, Values):
                merged.extend((c * c2, v2) for c2, v2 in v.runs)
            elif isinstance(v, Group):
                merged.extend((c * c2, v2) for c2, v2 in v.flat())
            else:
                merged.append((c, v))
        return Values(tuple(merged))

    def _fabric_part(self, sel: FabricSelection, name: str, span: Span):
        if sel.tier is not None and name not in ("rail", "plane"):
            tier = self.field(sel.fabric, sel.tier, span)       # `fabric.core.down`
            return self.attribute(tier, name, span, span)
        if name in ("rail", "plane"):
            if getattr(sel, name) is not None:
                fail("E209", f"`{name}` is already selected in `{sel.display}`", span)
            return FabricAxis(sel, name)
        fabric = sel.fabric
        tier = fabric.defs.get(name)
        if tier is None or not isinstance(tier.stmt, ast.Decl) or tier.stmt.kind.name != "tier" \
                or sel.tier is not None:
            tiers = [n for n, d in fabric.defs.items()
                     if isinstance(d.stmt, ast.Decl) and d.stmt.kind.name == "tier"]
            fail("E209", f"`{sel.display}` has no tier `{name}`", span,
                 did_you_mean(name, tiers + ["rail", "plane"]) or
                 "select with `.rail[i]`, `.plane[A]` and a tier name")
        return FabricSelection(fabric, sel.rail, sel.plane, name)

    def _fabric_index(self, axis: FabricAxis, e: ast.Index, env):
        sel = axis.selection
        limit_q = self.field(sel.fabric, axis.axis + "s") if axis.axis + "s" in sel.fabric.defs \
            else Quantity(1.0)
        limit = int(limit_q.si) if isinstance(limit_q, Quantity) else 1
        value = self.eval(e.selector, env.as_symbols())
        if isinstance(value, Symbol) and axis.axis == "plane" and len(value.name) == 1 \
                and value.name.isupper():
            i = ord(value.name) - ord("A")
        else:
            i = self.whole(value, e.selector.span, f"a {axis.axis} index")
        if not 0 <= i < limit:
            labels = f"A to {plane_label(limit - 1)}" if axis.axis == "plane" else \
                f"0 to {limit - 1}"
            fail("E214", f"{axis.axis} {i if axis.axis == 'rail' else plane_label(i)} is out of "
                         f"range: the fabric has {limit} {axis.axis}s ({labels})",
                 e.selector.span)
        return FabricSelection(sel.fabric, i if axis.axis == "rail" else sel.rail,
                               i if axis.axis == "plane" else sel.plane, sel.tier)

    def _e_Index(self, e: ast.Index, env):
        obj = self.eval(e.obj, env)
        if isinstance(obj, FabricAxis) and not isinstance(e.selector, ast.Wildcard):
            return self._fabric_index(obj, e, env)
        if isinstance(e.selector, ast.Wildcard):
            if isinstance(obj, (Group, ListValue)):
                return obj
            fail("E303", f"`[*]` selects from a group, not from a {type_name(obj)}", e.span)
        sel = self.eval(e.selector, env)
        if isinstance(obj, Group):
            size = obj.count
            if isinstance(sel, RangeValue):
                if sel.start < 0 or sel.stop > size or sel.start >= sel.stop:
                    fail("E214", f"range {sel} is outside 0..{size} for this group of {size}",
                         e.selector.span)
                return obj.slice(sel.start, sel.stop)
            i = self.whole(sel, e.selector.span, "an index")
            if not 0 <= i < size:
                fail("E214", f"index {i} is out of range: the group has {size} "
                             f"(indices 0 to {size - 1})", e.selector.span)
            return obj.at(i)
        if isinstance(obj, ListValue):
            i = self.whole(sel, e.selector.span, "an index")
            if not 0 <= i < len(obj.items):
                fail("E214", f"index {i} is out of range: the list has {len(obj.items)} items",
                     e.selector.span)
            return obj.items[i]
        fail("E303", f"cannot index a {type_name(obj)}", e.span)

    # -- calls ----------------------------------------------------------------------------------------
    def _e_Call(self, e: ast.Call, env):
        func = e.func
        symbol = None
        if isinstance(func, ast.Name):
            if func.name in BUILTINS and not self._shadowed(func.name, env):
                args = []
                for a in e.args:
                    if a.name is not None:
                        fail("E307", f"`{func.name}` takes no named arguments", a.name.span)
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
                         func.name.span, did_you_mean(func.name.name, ns.scope.own))
        if isinstance(symbol, Template):
            return self.instantiate(symbol, list(e.args), env, e.span)
        target = self.eval(func, env)
        fail("E306", f"a {type_name(target)} cannot be called", func.span,
             "only templates and built-in functions take arguments")

    def _shadowed(self, name, env) -> bool:
        scope = env
        while scope is not None:
            if name in scope.locals or name in scope.params or (
                    scope.frame is not None and name in scope.frame.defs):
                return True
            scope = scope.outer
        return env.module.lookup(name) is not None

    def _template_symbol(self, func: ast.Name, env: Env):
        scope = env
        while scope is not None:
            if func.name in scope.locals or func.name in scope.params or (
                    scope.frame is not None and func.name in scope.frame.defs):
                return None
            scope = scope.outer
        symbol = env.module.lookup(func.name)
        if symbol is None:
            fail("E200", f"unknown name `{func.name}`", func.span,
                 did_you_mean(func.name, self.visible(env) | set(BUILTINS)))
        return symbol

    # -- arithmetic -----------------------------------------------------------------------------------
    def numeric(self, value, span: Span):
        """Groups count as their size, bundles as their total, in arithmetic."""
        if isinstance(value, Group):
            return Quantity(float(value.count))
        if isinstance(value, Bundle):
            return value.total
        return value

    def _e_Binary(self, e: ast.Binary, env):
        left = self.numeric(self.eval(e.left, env), e.left.span)
        right = self.numeric(self.eval(e.right, env), e.right.span)
        return self.binary(e.op, left, right, e)

    def binary(self, op, left, right, e):
        if isinstance(left, Values) or isinstance(right, Values):
            return self._elementwise(lambda a, b: self.binary(op, a, b, e), left, right, e.span)
        if op == "+" and isinstance(left, str) and isinstance(right, str):
            return left + right
        if not isinstance(left, Quantity) or not isinstance(right, Quantity):
            bad = left if not isinstance(left, Quantity) else right
            fail("E303", f"`{op}` needs quantities, not a {type_name(bad)}", e.span)
        try:
            if op == "+":
                return left.add(right)
            if op == "-":
                return left.sub(right)
            if op == "*":
                return left.mul(right)
            if op == "/":
                return left.div(right)
            return left.pow(right)
        except UnitError as exc:
            fail(exc.code, exc.message, e.span, exc.hint)

    @staticmethod
    def _elementwise(fn, left, right, span=None):
        if isinstance(left, Values) and isinstance(right, Values):
            if len(left.runs) == 1 and len(right.runs) == 1 and left.count == right.count:
                return Values(((left.count, fn(left.runs[0][1], right.runs[0][1])),))
            raise DiagnosticError(Diagnostic(
                "E303", Severity.ERROR, "cannot combine two groups element by element", span))
        if isinstance(left, Values):
            return Values(tuple((c, fn(v, right)) for c, v in left.runs))
        return Values(tuple((c, fn(left, v)) for c, v in right.runs))

    def _e_Neg(self, e: ast.Neg, env):
        v = self.numeric(self.eval(e.operand, env), e.span)
        if not isinstance(v, Quantity):
            fail("E303", f"cannot negate a {type_name(v)}", e.span)
        try:
            return v.neg()
        except UnitError as exc:
            fail(exc.code, exc.message, e.span, exc.hint)

    def _e_Convert(self, e: ast.Convert, env):
        v = self.numeric(self.eval(e.operand, env), e.span)
        unit = self.unit(e.unit, e.unit_span)
        if not isinstance(v, Quantity):
            fail("E303", f"cannot convert a {type_name(v)} to `{e.unit}`", e.span)
        try:
            return v.to(unit)
        except UnitError as exc:
            fail(exc.code, exc.message, e.span, exc.hint)

    # -- logic ------------------------------------------------------------------------------------------
    def _e_Compare(self, e: ast.Compare, env):
        # `recompute == selective`: beside an enumeration value a bare name is a symbol too
        left = self.numeric(self.eval(e.left, env.as_symbols() if isinstance(e.left, ast.Name)
                                      and self._is_symbolic(e.right, env) else env), e.left.span)
        right_env = env.as_symbols() if isinstance(left, Symbol) else env
        right = self.numeric(self.eval(e.right, right_env), e.right.span)
        return self.compare(e.op, left, right, e)

    def _is_symbolic(self, expr, env) -> bool:
        if isinstance(expr, ast.Name):
            return False
        try:
            return isinstance(self.eval(expr, env), Symbol)
        except (DiagnosticError, Poisoned):
            return False

    def compare(self, op, left, right, e):
        if isinstance(left, Values) or isinstance(right, Values):
            return self._elementwise(lambda a, b: self.compare(op, a, b, e), left, right,
                                    e.span)
        if isinstance(left, Quantity) and isinstance(right, Quantity):
            try:
                d = left.compare(right)
            except UnitError as exc:
                fail(exc.code, exc.message, e.span, exc.hint)
            tol = 1e-9 * max(abs(left.si), abs(right.si), 1e-300)
            eq = abs(d) <= tol
            return {"==": eq, "!=": not eq, "<": d < 0 and not eq, "<=": d < 0 or eq,
                    ">": d > 0 and not eq, ">=": d > 0 or eq}[op]
        if op in ("==", "!=") and isinstance(left, (Symbol, str)) and \
                isinstance(right, (Symbol, str)) and (isinstance(left, Symbol) or
                                                      isinstance(right, Symbol)):
            same = str(left) == str(right)
            return same if op == "==" else not same
        if op in ("==", "!=") and type(left) is type(right) and not isinstance(left, Quantity):
            same = left == right if not isinstance(left, Frame) else left is right
            return same if op == "==" else not same
        fail("E303", f"cannot compare a {type_name(left)} with a {type_name(right)} using `{op}`",
             e.span)

    def truth(self, value, span: Span, what: str = "a condition"):
        if isinstance(value, bool):
            return value
        fail("E303", f"{what} must be `true` or `false`, not a {type_name(value)}", span)

    def _e_Logic(self, e: ast.Logic, env):
        left = self.truth(self.eval(e.left, env), e.left.span, f"the left side of `{e.op}`")
        if e.op == "and" and not left:
            return False
        if e.op == "or" and left:
            return True
        return self.truth(self.eval(e.right, env), e.right.span, f"the right side of `{e.op}`")

    def _e_Not(self, e: ast.Not, env):
        v = self.eval(e.operand, env)
        if isinstance(v, Values):
            return Values(tuple((c, not self.truth(x, e.span)) for c, x in v.runs))
        return not self.truth(v, e.operand.span, "the operand of `not`")

    def _e_If(self, e: ast.If, env):
        cond = self.truth(self.eval(e.cond, env), e.cond.span, "the condition of `if`")
        return self.eval(e.then if cond else e.other, env)

    # -- replication and collections --------------------------------------------------------------------
    def whole(self, value, span: Span, what: str) -> int:
        value = self.numeric(value, span)
        if not isinstance(value, Quantity) or not value.dimensionless:
            fail("E303", f"{what} must be a whole number, not a {type_name(value)}", span)
        if not float(value.si).is_integer():
            fail("E308", f"{what} must be a whole number, not {value}", span)
        return int(value.si)

    def _e_Replicate(self, e: ast.Replicate, env):
        count_value = self.numeric(self.eval(e.count, env), e.count.span)
        if isinstance(count_value, Quantity) and count_value.dimensionless and \
                not float(count_value.si).is_integer():
            fail("E400", f"a replication count must be a positive whole number, not "
                         f"{count_value}", e.count.span)
        n = self.whole(count_value, e.count.span, "a replication count")
        if n <= 0:
            fail("E400", f"a replication count must be at least 1, not {n}", e.count.span)
        if n > MAX_COUNT:
            fail("E401", f"a replication count of {n:,} is beyond the limit of {MAX_COUNT:,}",
                 e.count.span)
        item = self.eval(e.item, env)
        if isinstance(item, Frame):
            return Group((Run(n, item),))
        if isinstance(item, Group):
            return item.repeat(n)
        if isinstance(item, Quantity):
            return Bundle(n, item)
        fail("E303", f"cannot replicate a {type_name(item)}", e.item.span,
             "replicate a template (`4 x Node`) or a quantity (`64 x 400 Gb/s`)")

    def _e_Range(self, e: ast.Range, env):
        start = self.whole(self.eval(e.start, env), e.start.span, "the start of a range")
        stop = self.whole(self.eval(e.stop, env), e.stop.span, "the end of a range")
        if stop < start:
            fail("E309", f"a range ends before it starts ({start}..{stop})", e.span)
        return RangeValue(start, stop)

    def _e_ListExpr(self, e: ast.ListExpr, env):
        return self.collection([self.eval(i, env) for i in e.items])

    @staticmethod
    def collection(items):
        if items and all(isinstance(i, (Frame, Group)) for i in items):
            return concat(items)
        return ListValue(tuple(items))

    def _e_Comprehension(self, e: ast.Comprehension, env):
        source = self.eval(e.iterable, env)
        if isinstance(source, RangeValue):
            items = [Quantity(float(i)) for i in range(source.start, source.stop)] \
                if len(source) <= MAX_ITERATIONS else None
        elif isinstance(source, ListValue):
            items = list(source.items)
        elif isinstance(source, Group):
            items = source.items(MAX_ITERATIONS)
        else:
            fail("E303", f"`for` needs a range, list or group, not a {type_name(source)}",
                 e.iterable.span)
        if items is None:
            fail("E401", f"a `for` over more than {MAX_ITERATIONS:,} items", e.iterable.span,
                 "replicate with `N x Template` to keep the design symbolic")
        return self.collection([self.eval(e.element, env.child(**{e.var.name: v}))
                                for v in items])


def _regroup(group: Group, results) -> Group:
    """Replace each leaf of `group` by its result (an instance or a group), keeping order."""
    runs = []
    for run in group.runs:
        if isinstance(run.item, Group):
            runs.append(Run(run.count, _regroup(run.item, results)))
            continue
        value = results[id(run.item)]
        if isinstance(value, Group):
            runs.extend(value.repeat(run.count).runs)
        else:
            runs.append(Run(run.count, value))
    return Group(tuple(runs))
