"""User constraints: `check COND [else error|warning "message"]`.

A check in a template is evaluated once per distinct instance and reported once, with the number
of replicas it stands for and the path of one of them."""
from __future__ import annotations

from typing import Callable, Dict, List

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from astral_dsl.model.design import CheckResult
from astral_dsl.model.values import POISON, Values, show
from astral_dsl.semantics.errors import Poisoned
from astral_dsl.semantics.frames import Env
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, UnitError, parse_unit


def run_checks(ev, frames, mult: Dict[int, int], paths: Dict[int, str],
               module_checks, snippet: Callable[[Span], str],
               scenario: str | None = None) -> List[CheckResult]:
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
            r = _one(ev, check, env, count, paths.get(id(frame), frame.name), snippet)
            if r is not None:
                results.append(r)
    for check, env in module_checks:
        r = _one(ev, check, env, 1, env.module.key, snippet)
        if r is not None:
            results.append(r)
    return results


def _one(ev, check: ast.Check, env: Env, count: int, where: str, snippet):
    severity = Severity.ERROR
    if check.severity is not None:
        if check.severity.name not in ("error", "warning"):
            ev.diagnostics.append(Diagnostic(
                "E502", Severity.ERROR, f"`{check.severity.name}` is not a severity",
                check.severity.span, "write `else error \"...\"` or `else warning \"...\"`"))
            return None
        severity = Severity(check.severity.name)
    try:
        value = ev.eval(check.cond, env)
        if isinstance(value, Values):
            failing = sum(c for c, v in value.runs if v is False)
            if any(not isinstance(v, bool) for _, v in value.runs):
                raise _NotBool(value)
            passed = failing == 0
        elif isinstance(value, bool):
            passed = value
        else:
            raise _NotBool(value)
        detail = None if passed else _operands(ev, check.cond, env)
    except _NotBool as exc:
        from astral_dsl.model.values import type_name

        ev.diagnostics.append(Diagnostic(
            "E501", Severity.ERROR,
            f"a check needs a yes/no condition, not a {type_name(exc.value)}", check.cond.span,
            "compare something, e.g. `check power <= 45 kW`"))
        return None
    except DiagnosticError as exc:
        ev.diagnostics.append(exc.diagnostic)
        return None
    except Poisoned:
        return None
    text = check.message.value if check.message else f"`{snippet(check.cond.span)}`"
    result = CheckResult(check.span, severity.value, text, passed, count, where)
    if not passed:
        notes = []
        if detail:
            notes.append(detail)
        many = f"{count:,} instances, e.g. " if count > 1 else ""
        notes.append(f"in {many}{where}")
        code = "E500" if severity is Severity.ERROR else "W500"
        shown = text if check.message else f"check failed: {text}"
        ev.diagnostics.append(Diagnostic(code, severity, shown, check.cond.span,
                                         None, notes=tuple(notes)))
    return result


class _NotBool(Exception):
    def __init__(self, value):
        self.value = value


def _operands(ev, cond, env) -> str | None:
    if not isinstance(cond, ast.Compare):
        return None
    try:
        left = ev.expr.numeric(ev.eval(cond.left, env), cond.left.span)
        right = ev.expr.numeric(ev.eval(cond.right, env), cond.right.span)
    except (DiagnosticError, Poisoned):
        return None
    if left is POISON or right is POISON:
        return None
    if isinstance(left, Quantity) and isinstance(right, Quantity) and right.unit \
            and left.unit != right.unit:
        try:
            left = left.to(parse_unit(right.unit))
        except (UnitError, ValueError):
            pass
    return f"left side: {show(left)}; right side: {show(right)}"
