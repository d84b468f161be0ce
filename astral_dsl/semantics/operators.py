"""The operators of expressions: arithmetic (`+ - * / ^`, negation, `to` a unit) with unit
checking, element by element over groups, and comparison and logic (`== < ...`, `and`, `or`,
`not`, `if`).

Plain functions over the expression evaluator `x` (semantics/evaluate.py), which dispatches the
syntax nodes here: `eval_binary(x, node, env)` and so on."""
from __future__ import annotations

import math

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.model.values import Bundle, Group, ListValue, Symbol, Values, type_name
from astral_dsl.semantics.errors import Poisoned, fail
from astral_dsl.semantics.frames import Frame
from astral_dsl.semantics.words import compared_word
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, UnitError, same_amount


# ---- arithmetic ----------------------------------------------------------------------------------
def numeric(value, span: Span):
    """Groups count as their size, bundles as their total, in arithmetic."""
    if isinstance(value, Group):
        return Quantity(float(value.count))
    if isinstance(value, Bundle):
        return value.total
    return value


def eval_binary(x, e: ast.Binary, env):
    if e.op == "--":
        fail("E303", "`A -- B` names the link between two parts of a fabric, as a `fail` "
                     "target", e.span, "to subtract a negative number write `a - -b`")
    left = numeric(eval_or_probe(x, e.left, env, e.right), e.left.span)
    right = numeric(x.eval(e.right, env), e.right.span)
    return binary(x, e.op, left, right, e)


def eval_or_probe(x, expr, env, other):
    """Evaluate `expr`; when it is already in error, still evaluate `other` (the next
    operand) so that its own, independent mistakes are reported too."""
    try:
        return x.eval(expr, env)
    except Poisoned:
        x.eval(other, env)
        raise


def binary(x, op, left, right, e):
    if isinstance(left, Values) or isinstance(right, Values):
        return elementwise(lambda a, b: binary(x, op, a, b, e), left, right, e.span)
    if op == "+" and isinstance(left, str) and isinstance(right, str):
        return left + right
    if not isinstance(left, Quantity) or not isinstance(right, Quantity):
        bad = left if not isinstance(left, Quantity) else right
        fail("E303", f"`{op}` needs quantities, not a {type_name(bad)}", e.span,
             _replicate_hint(op, left, right, e) or
             "arithmetic works on numbers and quantities: use a field that holds one "
             "(e.g. `host.power`), not a string or an instance")
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


def _replicate_hint(op, left, right, e) -> str | None:
    """`8 * G` with a template `G`: replication is written `8 x G` (section 8.1)."""
    if op != "*" or not isinstance(left, Quantity) or isinstance(right, Quantity) or \
            not getattr(right, "kind", None) or not isinstance(e.right, ast.Name):
        return None
    if not left.dimensionless or left.unit:
        return None
    n = left.magnitude
    count = e.left.name if isinstance(e.left, ast.Name) else \
        str(int(n)) if math.isfinite(n) and n == int(n) and n >= 0 else "N"
    return f"replication is written with `x`, not `*`: `{count} x {e.right.name}`"


def elementwise(fn, left, right, span=None):
    if isinstance(left, Values) and isinstance(right, Values):
        if len(left.runs) == 1 and len(right.runs) == 1 and left.count == right.count:
            return Values(((left.count, fn(left.runs[0][1], right.runs[0][1])),))
        raise DiagnosticError(Diagnostic(
            "E303", Severity.ERROR, "cannot combine two groups element by element", span,
            "combine a group with one value (`racks.power * 1.2`), or total each group "
            "first (`sum(a.power) + sum(b.power)`)"))
    if isinstance(left, Values):
        return Values(tuple((c, fn(v, right)) for c, v in left.runs))
    return Values(tuple((c, fn(left, v)) for c, v in right.runs))


def eval_neg(x, e: ast.Neg, env):
    v = numeric(x.eval(e.operand, env), e.span)
    lit = e.operand
    if isinstance(lit, ast.QuantityLit) and isinstance(v, Quantity) and v.point:
        # a negative literal: `-99 degC` is the temperature point -99 degC (a point cannot be
        # negated, but a literal can be negative)
        return Quantity.from_unit(-lit.value, x.unit(lit.unit, lit.unit_span))
    if not isinstance(v, Quantity):
        fail("E303", f"cannot negate a {type_name(v)}", e.span,
             "only numbers and quantities have a sign, e.g. `-5 K`")
    try:
        return v.neg()
    except UnitError as exc:
        fail(exc.code, exc.message, e.span, exc.hint)


def eval_convert(x, e: ast.Convert, env):
    v = numeric(x.eval(e.operand, env), e.span)
    unit = x.unit(e.unit, e.unit_span)
    if not isinstance(v, Quantity):
        fail("E303", f"cannot convert a {type_name(v)} to `{e.unit}`", e.span,
             f"convert a quantity, e.g. `host.power to {e.unit}`")
    try:
        return v.to(unit)
    except UnitError as exc:
        fail(exc.code, exc.message, e.span, exc.hint)


# ---- logic ---------------------------------------------------------------------------------------
def eval_compare(x, e: ast.Compare, env):
    return compare(e.op, *sides(x, e, env), e)


def sides(x, e: ast.Compare, env):
    """The two sides of a comparison, evaluated as it compares them (a check keeps them:
    semantics/checks.py)."""
    # `recompute == selective`: beside an enumeration value a bare name is a symbol too
    # and one of that enumeration's words is the word, whatever else has its name
    # (semantics/words.py): `recompute != full` beside a `let full`
    peer = _is_symbolic(x, e.right, env) if isinstance(e.left, ast.Name) else None
    word = compared_word(peer.name, e.left, env, x.host.diagnostics) if peer is not None else None
    left = Symbol(word) if word is not None else \
        numeric(x.eval(e.left, env.as_symbols() if peer is not None else env), e.left.span)
    word = compared_word(left.name, e.right, env, x.host.diagnostics) if isinstance(left, Symbol) else None
    if word is not None:
        return left, Symbol(word)
    right_env = env.as_symbols() if isinstance(left, Symbol) else env
    right = numeric(x.eval(e.right, right_env), e.right.span)
    return left, right


def _is_symbolic(x, expr, env):
    """The enumeration value `expr` gives, else None."""
    if isinstance(expr, ast.Name):
        return None
    try:
        value = x.eval(expr, env)
    except (DiagnosticError, Poisoned):
        return None
    return value if isinstance(value, Symbol) else None


def compare(op, left, right, e):
    if isinstance(left, Values) or isinstance(right, Values):
        return elementwise(lambda a, b: compare(op, a, b, e), left, right, e.span)
    if isinstance(left, Quantity) and isinstance(right, Quantity):
        try:
            d = left.compare(right)
        except UnitError as exc:
            fail(exc.code, exc.message, e.span, exc.hint)
        eq = same_amount(left.si, right.si)
        return {"==": eq, "!=": not eq, "<": d < 0 and not eq, "<=": d < 0 or eq,
                ">": d > 0 and not eq, ">=": d > 0 or eq}[op]
    if op in ("==", "!=") and isinstance(left, (Symbol, str)) and \
            isinstance(right, (Symbol, str)) and (isinstance(left, Symbol) or
                                                  isinstance(right, Symbol)):
        same = str(left) == str(right)
        return same if op == "==" else not same
    if op in ("==", "!=") and isinstance(left, ListValue) and isinstance(right, ListValue):
        # item by item, as two values compare: `[1 W] == [1 GB]` is E301 as `1 W == 1 GB` is
        same = len(left.items) == len(right.items) and \
            all(compare("==", a, b, e) for a, b in zip(left.items, right.items))
        return same if op == "==" else not same
    if op in ("==", "!=") and type(left) is type(right) and not isinstance(left, Quantity):
        same = left == right if not isinstance(left, Frame) else left is right
        return same if op == "==" else not same
    fail("E303", f"cannot compare a {type_name(left)} with a {type_name(right)} using `{op}`",
         e.span, "compare two quantities (`<`, `>`, `==`, ...), or two values of one kind "
                 "with `==` or `!=`")


def truth(value, span: Span, what: str = "a condition"):
    if isinstance(value, bool):
        return value
    fail("E303", f"{what} must be `true` or `false`, not a {type_name(value)}", span,
         "write a comparison, e.g. `x > 10 kW`, or `true` / `false`")


def eval_logic(x, e: ast.Logic, env):
    left = truth(x.eval(e.left, env), e.left.span, f"the left side of `{e.op}`")
    if e.op == "and" and not left:
        return False
    if e.op == "or" and left:
        return True
    return truth(x.eval(e.right, env), e.right.span, f"the right side of `{e.op}`")


def eval_not(x, e: ast.Not, env):
    v = x.eval(e.operand, env)
    if isinstance(v, Values):
        return Values(tuple((c, not truth(b, e.span)) for c, b in v.runs))
    return not truth(v, e.operand.span, "the operand of `not`")


def eval_if(x, e: ast.If, env):
    cond = truth(x.eval(e.cond, env), e.cond.span, "the condition of `if`")
    return x.eval(e.then if cond else e.other, env)
