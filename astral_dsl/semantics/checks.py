"""User constraints: `check COND [else error|warning "message"]`.

A check in a template is evaluated once per distinct instance and reported once, with the number
of replicas it stands for and the path of one of them."""
from __future__ import annotations

from typing import Callable, Dict, List

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, moved_to
from astral_dsl.model.design import CheckResult
from astral_dsl.model.values import POISON, Symbol, Values, show
from astral_dsl.semantics import operators
from astral_dsl.semantics.errors import Poisoned
from astral_dsl.semantics.frames import Env
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, UnitError, parse_unit


def run_checks(ev, frames, mult: Dict[int, int], paths: Dict[int, str],
               module_checks, written: "Written", scenario: str | None = None
               ) -> List[CheckResult]:
    """A scenario's own checks hold under that scenario: they run only when it is `scenario`
    (the design compiled with its `set`s in place)."""
    results: List[CheckResult] = []
    for frame in frames:
        count = mult.get(id(frame), 0)
        if not count or not frame.checks:
            continue
        if frame.kind == "scenario" and frame.name != scenario:
            continue
        for check, env in frame.checks:
            before = len(ev.diagnostics)
            r = _one(ev, check, env, count, paths.get(id(frame), frame.name), written)
            if r is not None:
                results.append(r)
            if env.module.is_stdlib and len(ev.diagnostics) > before:
                ev.diagnostics[before:] = [_brought(frame, d) for d in ev.diagnostics[before:]]
    for check, env in module_checks:
        r = _one(ev, check, env, 1, env.module.key, written)
        if r is not None:
            results.append(r)
    return results


@records.frozen(slots=False)
class Written:
    """How the checks are written: `text(span)`, a span's source text (its lines joined);
    `owners`, id(check) -> the declaration it is written in (`owners` below)."""
    text: Callable[[Span], str]
    owners: Dict[int, str]


def owners(trees) -> Dict[int, str]:
    """id(check) -> the declaration whose body holds it, by name from the top of its module
    (`R`, `S.spare`, `J.parallel`; "" for a check at the top of a module): where a reader finds
    it, whatever instances it is evaluated in."""
    out: Dict[int, str] = {}

    def walk(items, owner: str) -> None:
        for item in items or ():
            if isinstance(item, ast.Check):
                out[id(item)] = owner
            elif isinstance(item, (ast.Decl, ast.Field, ast.Record)) and item.body:
                walk(item.body, f"{owner}.{item.name.name}" if owner else item.name.name)

    for tree in trees:
        walk(tree.items, "")
    return out


def span_text(line: Callable[[int], str], span: Span) -> str:
    """The source text of `span` (`line(n)`: line n of its file), its lines joined by a space
    without their `//` comments: a condition written over two lines reads as one."""
    if span.start.line == span.end.line:
        return line(span.start.line)[span.start.column - 1:span.end.column - 1]
    parts = []
    for n in range(span.start.line, span.end.line + 1):
        text = line(n)
        if n == span.end.line:
            text = text[:span.end.column - 1]
        if n == span.start.line:
            text = text[span.start.column - 1:]
        parts.append(_uncommented(text).strip())
    return " ".join(p for p in parts if p)


def _uncommented(text: str) -> str:
    """`text` up to a `//` that is not inside a string."""
    quoted = escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif quoted:
            escaped = ch == "\\"
            quoted = ch != '"'
        elif ch == '"':
            quoted = True
        elif text.startswith("//", i):
            return text[:i]
    return text


def _one(ev, check: ast.Check, env: Env, count: int, where: str, written: Written):
    severity = Severity.ERROR
    if check.severity is not None:
        if check.severity.name not in ("error", "warning"):
            ev.diagnostics.append(Diagnostic(
                "E502", Severity.ERROR, f"`{check.severity.name}` is not a severity",
                check.severity.span, "write `else error \"...\"` or `else warning \"...\"`"))
            return None
        severity = Severity(check.severity.name)
    cond = check.cond
    sides = None
    try:
        if isinstance(cond, ast.Compare):
            sides = operators.sides(ev.expr, cond, env)
            value = operators.compare(cond.op, *sides, cond)
        else:
            value = ev.eval(cond, env)
        if isinstance(value, Values):
            failing = sum(c for c, v in value.runs if v is False)
            if any(not isinstance(v, bool) for _, v in value.runs):
                raise _NotBool(value)
            passed = failing == 0
        elif isinstance(value, bool):
            passed = value
        else:
            raise _NotBool(value)
    except _NotBool as exc:
        from astral_dsl.model.values import type_name

        ev.diagnostics.append(Diagnostic(
            "E501", Severity.ERROR,
            f"a check needs a yes/no condition, not a {type_name(exc.value)}", cond.span,
            "compare something, e.g. `check power <= 45 kW`"))
        return None
    except DiagnosticError as exc:
        ev.diagnostics.append(exc.diagnostic)
        return None
    except Poisoned:
        return None
    condition = written.text(cond.span)
    text = check.message.value if check.message else f"`{condition}`"
    shown_sides = _operands(sides)
    kept = _operands(_nearest(sides, cond.op)) if sides is not None else None
    left, right = kept if kept is not None and all(
        isinstance(v, _SCALARS) for v in kept) else (None, None)
    result = CheckResult(check.span, severity.value, text, passed, count, where, condition,
                         written.owners.get(id(check), ""),
                         cond.op if sides is not None else "",
                         written.text(cond.left.span) if sides is not None else "",
                         left, right)
    if not passed:
        notes = []
        if shown_sides is not None:
            notes.append(f"left side: {show(shown_sides[0])}; right side: "
                         f"{show(shown_sides[1])}")
        many = f"{count:,} instances, e.g. " if count > 1 else ""
        notes.append(f"in {many}{where}")
        code = "E500" if severity is Severity.ERROR else "W500"
        shown = text if check.message else f"check failed: {text}"
        ev.diagnostics.append(Diagnostic(code, severity, shown, cond.span,
                                         None, notes=tuple(notes)))
    return result


def _brought(frame, d: Diagnostic) -> Diagnostic:
    """A check of a stdlib template's body (GB300_NVL72's power shelves) that fails stands on
    the user's line that brings the instance in, which the user acts on; the check's line in
    the stdlib is its related span."""
    template = frame.template.name if frame.template is not None else frame.name
    return moved_to(d, frame.used_at, f"{frame.kind} `{template}` checks it here")


class _NotBool(Exception):
    def __init__(self, value):
        self.value = value


# the sides of a comparison a check keeps (a group's, an instance's are not kept)
_SCALARS = (Quantity, bool, str, Symbol)


def _nearest(sides, op: str):
    """The sides of a group's ordered comparison with one value (`racks.power <= 45 kW`): the
    group's value nearest to failing it (the largest on the left of `<=`, the smallest on its
    right...); the sides as they are otherwise."""
    left, right = sides
    if op not in ("<", "<=", ">", ">=") or isinstance(left, Values) == isinstance(right, Values):
        return sides

    def nearest(v, high: bool):
        if not isinstance(v, Values) or not v.runs or \
                not all(isinstance(x, Quantity) for _, x in v.runs):
            return v
        return (max if high else min)((x for _, x in v.runs), key=lambda q: q.si)

    below = op in ("<", "<=")
    return nearest(left, below), nearest(right, not below)


def _operands(sides):
    """A comparison's sides, the left in the right's unit; None when either is in error."""
    if sides is None:
        return None
    left, right = sides
    if left is POISON or right is POISON:
        return None
    if isinstance(left, Quantity) and isinstance(right, Quantity) and right.unit \
            and left.unit != right.unit:
        try:
            left = left.to(parse_unit(right.unit))
        except (UnitError, ValueError):
            pass
    return left, right
