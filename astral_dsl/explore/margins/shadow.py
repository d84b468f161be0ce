"""Evaluating the design with sympy symbols beside the numbers.

`Shadows` is a Trace (semantics/trace.py) of the compiler's own evaluation (the numbers, the
diagnostics and the model are exactly the compiler's): told every value the evaluator makes, it
keeps beside every quantity a sympy expression of that quantity in SI units in terms of the entry file's top-level `param`s (its *shadow*). Shadows
follow the exact rules of the operations the design writes: sums, differences, products,
quotients and powers of quantities, unit conversions (which do not change the SI value),
negation, replication counts (`n x Node` has n Nodes) and the roll-ups a physical part answers
(`power` is the declared power or the sum over its parts; `gpus`, `racks`, ... count them).

Whatever these rules do not cover makes the shadow OPAQUE rather than a guess: an `if` or a
comparison on something that depends on a parameter, a built-in function (`ceil`, `min`, ...),
a value whose origin the evaluator does not see. An OPAQUE value that depends on a parameter is
never called symbolic; the margins fall back to a numeric bracket for it. A value with no
dependence on any parameter is a constant (its exact decimal value).

As a guard, every shadow is evaluated at the current parameter values and must give the
compiler's number (to 1e-9 relative); one that does not becomes OPAQUE. A check's comparisons
(conditions.py) are recorded with their sides' numbers and shadows."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import sympy

from astral_dsl.explore.margins.conditions import CheckRecord, comparisons, conjuncts
from astral_dsl.model.values import Bundle, Group
from astral_dsl.semantics.scope import ParamSymbol
from astral_dsl.semantics.trace import Trace
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity


class _Opaque:
    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE = _Opaque()
_W = Quantity.of(1, "W").dims


def exact(x: float) -> sympy.Expr:
    """A float as the exact decimal it prints as (0.1 -> 1/10)."""
    return sympy.Rational(repr(float(x)))


def param_symbol(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, real=True)


class Shadows(Trace):
    """The shadows of one compile (`Workspace.compile(trace=Shadows())`); after it, the
    evaluation's frames and memoised roll-ups are the instantiator's (`evaluator`)."""

    def __init__(self) -> None:
        super().__init__()
        self.shadows: Dict[int, Tuple[Any, Any]] = {}       # id(value) -> (value, shadow)
        self.params: Dict[str, Tuple[sympy.Symbol, Quantity]] = {}
        self._by_expr: Dict[Tuple[int, int], Any] = {}
        self._last: Dict[int, Any] = {}                     # id(expr) -> shadow of its number
        self._last_value: Dict[int, Any] = {}
        self.counts: set = set()                            # params used as counts

    symbolic = True          # False: record the operands of checks only (numeric probes)

    @property
    def frames(self):
        return self.evaluator.frames

    @property
    def rollups(self):
        return self.evaluator.rollups

    @property
    def entry(self):
        return self.evaluator.entry

    # -- bookkeeping ----------------------------------------------------------------------------
    def shadow(self, value) -> Any:
        """The shadow of a number the evaluator produced (OPAQUE when unknown); a group counts
        as its size and a bundle as its total, as in arithmetic."""
        hit = self.shadows.get(id(value))
        if hit is None or hit[0] is not value:
            return OPAQUE
        sym = hit[1]
        if isinstance(value, Group) and isinstance(sym, tuple):
            if OPAQUE in sym:
                return OPAQUE
            return sum(sym, sympy.Integer(0)) if len(sym) != 1 else sym[0]
        return sym

    def _keep(self, value, sym) -> None:
        if sym is None:
            return
        if isinstance(value, Quantity) and sym is not OPAQUE and not self._consistent(value, sym):
            sym = OPAQUE
        self.shadows[id(value)] = (value, sym)

    def current(self) -> Dict[sympy.Symbol, sympy.Expr]:
        return {s: exact(q.si) for s, q in self.params.values()}

    def _consistent(self, value: Quantity, sym) -> bool:
        try:
            got = float(sym.subs(self.current())) if getattr(sym, "free_symbols", None) \
                else float(sym)
        except (TypeError, ValueError):
            return False
        return abs(got - value.si) <= 1e-9 * max(abs(value.si), abs(got), 1e-300)

    # -- parameters -----------------------------------------------------------------------------
    def module_value(self, symbol, value) -> None:
        if not self.symbolic:
            return
        if isinstance(symbol, ParamSymbol) and symbol.module is self.entry and \
                isinstance(value, Quantity):
            if value.point:
                # a temperature point: its SI value is offset, not proportional; kept numeric
                self.shadows[id(value)] = (value, OPAQUE)
            else:
                s = param_symbol(symbol.node.name.name)
                self.params[symbol.node.name.name] = (s, value)
                self.shadows[id(value)] = (value, s)

    def converted(self, value, out) -> None:
        if out is not value and isinstance(out, Quantity) and isinstance(value, Quantity):
            self._keep(out, self.shadow(value))

    def field(self, frame, name, value) -> None:
        if self.symbolic and isinstance(value, Quantity):
            d = frame.defs.get(name)
            expr = getattr(d, "value_expr", None) if d is not None else None
            sym = self._by_expr.get((id(expr), id(frame))) if expr is not None else None
            if id(value) not in self.shadows:
                self._keep(value, sym if sym is not None else OPAQUE)
            elif sym is OPAQUE:
                # the value of a branch (`if ... then 80 % else 90 %`): the same number, but
                # which one depends on the condition
                self.shadows[id(value)] = (value, OPAQUE)
        if self.symbolic and isinstance(value, Quantity):
            spec = frame.spec.fields.get(name) if frame.spec is not None else None
            if spec is not None and getattr(spec.type, "whole", False):
                self._count(self.shadow(value))

    def _count(self, sym) -> None:
        """A parameter used as it is where a whole number is needed (a count field, a
        replication): only whole values of it compile."""
        if isinstance(sym, sympy.Symbol) and sym.name in self.params:
            self.counts.add(sym.name)

    def derived(self, frame, name, value) -> None:
        if not self.symbolic or value is None or id(value) in self.shadows:
            return
        from astral_dsl.model.rollup import PLURALS

        if name == "power":
            self._keep(value, self.power_shadow(frame))
        elif name in PLURALS:
            # the total only: which runs make it up is not tracked
            self.shadows[id(value)] = (value, self.count_shadow(frame, PLURALS[name]))

    # -- roll-ups -------------------------------------------------------------------------------
    def power_shadow(self, node, seen=None) -> Any:
        """power_of(node) as an expression (model/rollup.py's rule)."""
        seen = {} if seen is None else seen
        if id(node) in seen:
            return seen[id(node)]
        declared = self.evaluator.view.declared(node, "power")
        if isinstance(declared, Quantity) and declared.dims == _W:
            out = self.shadow(declared)
        else:
            out = sympy.Integer(0)
            for count, child in self.containment(node):
                sub = OPAQUE if count is OPAQUE else self.power_shadow(child, seen)
                if sub is OPAQUE:
                    out = OPAQUE
                    break
                out = out + count * sub
        seen[id(node)] = out
        return out

    def count_shadow(self, node, kinds, seen=None) -> Any:
        seen = {} if seen is None else seen
        key = (id(node), kinds)
        if key in seen:
            return seen[key]
        if node.kind in kinds:
            out = sympy.Integer(1)
        else:
            out = sympy.Integer(0)
            for count, child in self.containment(node):
                sub = OPAQUE if count is OPAQUE else self.count_shadow(child, kinds, seen)
                if sub is OPAQUE:
                    out = OPAQUE
                    break
                out = out + count * sub
        seen[key] = out
        return out

    def containment(self, node):
        """(count shadow, child) for every physical child (rollup.containment's rule)."""
        out = []
        for value in self.evaluator.view.members(node):
            if isinstance(value, Group):
                out.extend(self.group_runs(value))
            else:
                out.append((sympy.Integer(1), value))
        return [(c, child) for c, child in out if getattr(child, "level", None) is not None]

    def group_runs(self, group: Group):
        """(count shadow, item) for the flat runs of a group; OPAQUE counts when the group was
        not made by a replication the shadows saw."""
        hit = self.shadows.get(id(group))
        counts = hit[1] if hit is not None and hit[0] is group and isinstance(hit[1], tuple) \
            and len(hit[1]) == len(group.runs) else None
        out = []
        for i, run in enumerate(group.runs):
            c = counts[i] if counts is not None else OPAQUE
            if isinstance(run.item, Group):
                for inner, item in self.group_runs(run.item):
                    out.append((OPAQUE if OPAQUE in (c, inner) else c * inner, item))
            else:
                out.append((c, run.item))
        return out

    # -- expressions ----------------------------------------------------------------------------
    def evaluated(self, expr, env, value) -> None:
        sym = self._expr_shadow(expr, value)
        if sym is not None and id(value) not in self.shadows and \
                isinstance(value, (Quantity, Group, Bundle)):
            self._keep(value, sym)
        # an expression whose own rule is OPAQUE (an `if`, a call) is, whatever its value's
        # shadow from elsewhere says
        number = OPAQUE if sym is OPAQUE else self.shadow(value)
        self._last[id(expr)] = number
        self._last_value[id(expr)] = value
        if env.frame is not None and isinstance(value, Quantity):
            self._by_expr[(id(expr), id(env.frame))] = number

    def _expr_shadow(self, expr, value):
        if not self.symbolic:
            return None
        t = type(expr)
        if t is ast.Number:
            return exact(expr.value)
        if t is ast.QuantityLit:
            if not isinstance(value, Quantity) or value.point:
                return OPAQUE
            from astral_dsl.units import parse_unit

            scale = parse_unit(expr.unit).scale        # exact: the decimal as written
            return exact(expr.value) * sympy.Rational(scale.numerator, scale.denominator)
        if t is ast.Binary:
            a, b = self._last.get(id(expr.left), OPAQUE), self._last.get(id(expr.right), OPAQUE)
            if OPAQUE in (a, b) or not isinstance(value, Quantity):
                return OPAQUE
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                    "/": lambda: a / b}.get(expr.op, lambda: a ** b)()
        if t is ast.Neg:
            a = self._last.get(id(expr.operand), OPAQUE)
            return OPAQUE if a is OPAQUE else -a
        if t is ast.Convert:
            return self._last.get(id(expr.operand), OPAQUE)
        if t is ast.Replicate:
            c = self._last.get(id(expr.count), OPAQUE)
            self._count(c)
            if isinstance(value, Group):
                item = self._last_value.get(id(expr.item))
                if isinstance(item, Group):          # n x [A, B]: each run n times
                    inner = self.shadows.get(id(item))
                    runs = inner[1] if inner is not None and isinstance(inner[1], tuple) \
                        else tuple(OPAQUE for _ in item.runs)
                    return tuple(OPAQUE if OPAQUE in (c, r) else c * r for r in runs) \
                        if len(value.runs) == len(item.runs) else \
                        tuple(OPAQUE for _ in value.runs)
                return (c,) if len(value.runs) == 1 else tuple(OPAQUE for _ in value.runs)
            if isinstance(value, Bundle):
                item = self._last.get(id(expr.item), OPAQUE)
                return OPAQUE if OPAQUE in (c, item) else c * item
            return OPAQUE
        if t in (ast.Name, ast.Attr, ast.Index):
            return None if id(value) in self.shadows else OPAQUE
        return OPAQUE

    # -- checks ---------------------------------------------------------------------------------
    def layout(self):
        """(root frames, id(frame) -> canonical path, id(frame) -> replicas)."""
        from astral_dsl.semantics.paths import canonical_paths, multiplicities

        roots = [f for f in self.frames if f.depth == 0 and f.kind in ("site", "job",
                                                                        "scenario")
                 and f.template is not None and f.template.module is self.entry]
        return roots, canonical_paths(roots, self.frames), multiplicities(roots)

    def check_records(self, scopes, scenario: Optional[str] = None) -> List[CheckRecord]:
        """Every user check of the design's instances (and of the entry module), with the two
        sides of its comparison as numbers and shadows. Evaluating a condition again is free:
        every value it reads is memoised."""
        from astral_dsl.diagnostics import DiagnosticError
        from astral_dsl.semantics.errors import Poisoned
        from astral_dsl.semantics.frames import Env

        roots, paths, mult = self.layout()
        todo = []
        for frame in self.frames:
            count = mult.get(id(frame), 0)
            if not count or (frame.kind == "scenario" and frame.name != scenario):
                continue
            todo.extend((check, env, paths.get(id(frame), frame.name), count)
                        for check, env in frame.checks)
        for scope in scopes.values():
            if scope is self.entry:
                todo.extend((c, Env(scope), scope.key, 1) for c in scope.checks)
        ev = self.evaluator
        saved, ev.diagnostics = ev.diagnostics, []
        out: List[CheckRecord] = []
        try:
            for check, env, path, count in todo:
                try:
                    value = ev.eval(check.cond, env)
                except (DiagnosticError, Poisoned):
                    continue
                if isinstance(value, bool):
                    out.extend(self._records(check, env, path, count, value))
        finally:
            ev.diagnostics = saved
        return out

    def _sides(self, cmp, env):
        """(left, right, left shadow, right shadow) of a comparison; None when a side cannot
        be evaluated (a short-circuited operand in error)."""
        from astral_dsl.diagnostics import DiagnosticError
        from astral_dsl.semantics.errors import Poisoned
        from astral_dsl.semantics.operators import numeric

        try:
            ev = self.evaluator
            left = numeric(ev.eval(cmp.left, env), cmp.left.span)
            right = numeric(ev.eval(cmp.right, env), cmp.right.span)
        except (DiagnosticError, Poisoned):
            return None
        return (left, right, self._last.get(id(cmp.left), OPAQUE),
                self._last.get(id(cmp.right), OPAQUE))

    def _records(self, check, env, path, count, passed) -> List[CheckRecord]:
        parts = conjuncts(check.cond)
        if parts:
            sides = [self._sides(cmp, env) for cmp, _ in parts]
            if all(s is not None and isinstance(s[0], Quantity) and isinstance(s[1], Quantity)
                   for s in sides):
                return [CheckRecord(check, path, count, op, *side, passed, k, len(parts), cmp)
                        for k, ((cmp, op), side) in enumerate(zip(parts, sides))]
        operands = []
        for cmp in comparisons(check.cond):
            side = self._sides(cmp, env)
            if side is not None:
                operands.extend(x for x in side[:2] if isinstance(x, Quantity))
        return [CheckRecord(check, path, count, "", None, None, OPAQUE, OPAQUE, passed,
                            operands=tuple(operands))]


class NumericRecorder(Shadows):
    """The operands of checks without any sympy: for evaluating the design at probe points."""
    symbolic = False
    # Shadows' `field` and `derived` keep nothing without symbols, and `evaluated` below
    # nothing at all: the evaluator need not wrap its methods to tell them (a third of a
    # probe's compile of the reference went to the wrappers)
    per_value = False

    # Without symbols every shadow is OPAQUE (module_value, field and derived keep none, and
    # _expr_shadow gives none), which is what `shadow` and `_sides` answer for a value or an
    # expression they have no record of: nothing is recorded per value or expression (about
    # 650 of them per compile of the reference, at each of its ~300 probes)
    def evaluated(self, expr, env, value) -> None:
        return None

    def converted(self, value, out) -> None:
        return None
