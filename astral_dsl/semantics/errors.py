"""Raising diagnostics from inside evaluation, and the marker for values already in error."""
from __future__ import annotations

import re
from functools import lru_cache

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, Span, did_you_mean
from astral_dsl.model.values import POISON
from astral_dsl.semantics.keywords import read_as_name


def unknown_key(span: Span) -> str:
    return f"{span.file}:{span.start.line}:{span.start.column}"


def unknown_name(name: str, span: Span, visible, namespaces=None):
    """E200 for a name nothing declares (the hint: unknown_name_hint); E222 for `if` or `not`,
    which nothing can declare, read as a name (keywords.read_as_name)."""
    keyword = read_as_name(name)
    if keyword is not None:
        fail("E222", keyword[0], span, keyword[1])
    fail("E200", f"unknown name `{name}`", span, unknown_name_hint(name, visible, namespaces))


def unknown_name_hint(name: str, visible, namespaces=None) -> str:
    """The hint of E200: the closest visible name, else how a name comes to be known (a stdlib
    template: its import, or its qualified name when its module is imported whole:
    `namespaces`, alias -> module key), and for a unit's name, how a unit is written (`1 W/ s`
    is `1 W` divided by a name `s`)."""
    from astral_dsl.units import UNITS

    near = did_you_mean(name, set(visible) | {"true", "false"})
    if near:
        return near
    module = stdlib_module_of(name)
    alias = next((a for a, key in sorted((namespaces or {}).items()) if key == module), None)
    if module is not None and alias is not None:
        return (f"`{name}` is in `{module}`, imported here as `{alias}`: write `{alias}.{name}`, "
                f"or import it by name (`import {module} {{ {name} }}`)")
    if module is not None:
        return f"`{name}` is in the stdlib: import it (`import {module} {{ {name} }}`)"
    written = next((n for n in _stdlib_names() if n.lower() == name.lower()), None)
    if written is not None:         # `b200`, `llama3_70b`: names are case-sensitive
        return (f"did you mean `{written}`? It is in the stdlib: import it (`import "
                f"{stdlib_module_of(written)} {{ {written} }}`)")
    unit = (f"; if `{name}` is meant as a unit, it follows its number (`1 {name}`), and a "
            f"compound unit has no spaces (`1 m^3/h`, not `1 m^3/ h`)") if name in UNITS else ""
    return (f"nothing named `{name}` is declared here or imported: declare it (`let {name} = "
            f"...`, a `param` or a template) or import it (`import MODULE {{ {name} }}`); names "
            f"are case-sensitive{unit}")


@lru_cache(maxsize=1)
def _stdlib_names() -> dict:
    """The templates each stdlib module declares, by name (a declaration starts its line with
    its kind: `gpu H100_SXM {`)."""
    from astral_dsl import resources
    from astral_dsl.model.kinds import KINDS

    out = {}
    for path in sorted(resources.stdlib_dir().glob("*.astral")):
        for m in _DECLARATION.finditer(path.read_text(encoding="utf-8")):
            if m.group(1) in KINDS:
                out.setdefault(m.group(2), f"stdlib.{path.stem}")
    return out


_DECLARATION = re.compile(r"^([a-z_]+)[ \t]+([A-Za-z_]\w*)\b", re.M)


def stdlib_module_of(name: str) -> str | None:
    """The stdlib module that declares the template `name` (`stdlib.hardware` for `H100`)."""
    return _stdlib_names().get(name)


class Poisoned(Exception):
    """An operand is POISON: abandon the expression without a new diagnostic."""


def fail(code: str, message: str, span: Span, hint: str | None = None):
    raise DiagnosticError(Diagnostic(code, Severity.ERROR, message, span, hint))


def check(value):
    if value is POISON:
        raise Poisoned()
    return value




def in_instance(frame, fn):
    """fn(), a field of `frame` being evaluated; a diagnostic it raises from the body of a
    template that takes parameters has the instance's call as its related span: `H(p = 1)`
    and `H(p = 2)` fail at the same place of `host H(p) { power = p }`, and the related span
    tells them apart and leads to the argument, perhaps in another file. In a stdlib
    template's body, which the user does not edit, the diagnostic stands on the user's line
    that brings the instance in, the body's line its related span."""
    try:
        return fn()
    except DiagnosticError as exc:
        raise DiagnosticError(_noted(frame, exc.diagnostic)) from None


def _noted(frame, d: Diagnostic) -> Diagnostic:
    template, at = frame.template, frame.called_at
    if template is None or at is None or not frame.args or d.span is None:
        return d
    body = template.decl.span
    if d.span.file != body.file or not body.start <= d.span.start < body.end:
        return d
    from astral_dsl.diagnostics import excerpt, moved_to, with_related
    from astral_dsl.model.values import show

    args = ", ".join(f"{k} = {excerpt(show(v), 24)}" for k, v in frame.args.items())
    if template.module.is_stdlib and frame.used_at is not None:
        return moved_to(d, frame.used_at, f"in `{template.name}({args})`")
    return with_related(d, at, f"in `{template.name}({args})`, made here")
