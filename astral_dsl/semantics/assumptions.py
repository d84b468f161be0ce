"""`assumed "why"`: a value stated as an assumption, not a sourced figure (docs/language.md,
"Assumed values"), and the warning (W216) that a design using it gets.

`power = 0.8 kW assumed "no data sheet gives it"` in a template's body, `capacity: power = 1.2 MW
assumed "..."` as a parameter's default, `param racks = 8 assumed "..."` at the top of a file:
the value is used as written, and each place in the user's files that brings it into the design
is told which value was assumed, the value and why. The warning stands there (the user's
`rack R = DGX_H100_Rack`, `loop = CDU()`, `site S { h = 2 x Node }`), with a note naming where
the assumption is stated when that is elsewhere (a stdlib line); where the user's own file
states it, at the value itself. It is said once per assumption and place, however often the
design replicates the part (a template's instance is made once per distinct set of arguments:
semantics/instantiate.py) or asks for it again from that place. A value of the user's own
replaces the assumed one and silences it: a derived template's body or an argument that sets
the field, an argument given for the parameter, `--set` for a `param`. `allow W216 "why"`
accepts it as any warning. `assumed` with no reason is E223, used or not."""
from __future__ import annotations

from typing import List, Optional

from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.model.values import Group, show
from astral_dsl.semantics.frames import Env, FieldDef, Frame, used_at
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, format_number

CODE = "W216"


def field_assumed(it, frame: Frame, name: str, d: FieldDef, value) -> None:
    """W216 for field `name` of `frame`, just evaluated to `value`, when its statement is an
    assumption."""
    stmt = d.stmt
    if not isinstance(stmt, ast.Field) or stmt.assumed is None or it.lenient:
        return
    user = not d.env.module.is_stdlib
    at = stmt.value.span if user else _brought_in(frame)
    template = _template(d.env)
    if user or template is None:
        hint = "replace it with the value from its source"
    elif template.kind != frame.kind:        # a record or a part declared in its body
        hint = f"state the value from its source in a {template.kind} of your own based on " \
               f"`{template.name}`"
    else:
        owner = template.name
        hint = f"state the value from the data sheet: in a part of your own based on " \
               f"`{owner}` (`{frame.kind} My{owner} = {owner} {{ {name} = ... }}`)"
        outer = _template(frame.asked_in) if frame.asked_in is not None else None
        if outer is not None and outer.module.is_stdlib and frame.template is template:
            hint += f", used in place of the stdlib's `{outer.name}` that asks for `{owner}`"
        else:
            hint += f", or as an argument (`{owner}({name} = ...)`)"
    _warn(it, stmt.assumed, at or stmt.value.span,
          f"`{name}` of {frame.kind} `{frame.name}` is assumed: {_shown(value)}", hint)


def defaults_read(it, defaulted, frame: Frame) -> None:
    """W216 for each assumed default of `defaulted` ((template, parameter, the caller's
    environment, the call's span, the value), noted by semantics/arguments.bind) that `frame`,
    the instance made with it, reads: a default whose field the instance sets otherwise (a
    derived template's body, `host Node = HGX8(...) { liquid_share = 0 % }`) is not used."""
    for template, p, caller, span, value in defaulted:
        if _reads(frame, template, p.name.name):
            default_assumed(it, template, p, caller, span, value)


def _reads(frame: Frame, template, name: str) -> bool:
    """Does a statement `template`'s body laid on `frame` (and not overridden since), a check
    of it or its base's arguments name parameter `name`?"""
    decl = template.decl
    stmts = [d.stmt for d in frame.defs.values() if _laid_by(d.env, template)]
    stmts += [c for c, env in frame.checks if _laid_by(env, template)]
    stmts += [decl.base] if decl.base is not None else []
    return any(isinstance(n, ast.Name) and n.name == name
               for stmt in stmts if isinstance(stmt, ast.Node) for n in ast.walk(stmt))


def _laid_by(env: Env, template) -> bool:
    return _template(env) is template


def default_assumed(it, template, p: ast.ParamDef, caller: Env, span: Span, value) -> None:
    """W216 for parameter `p` of `template`, which a call at `span` in `caller` left to its
    default, when that default is an assumption."""
    if p.assumed is None or it.lenient:
        return
    user = not template.module.is_stdlib
    at = p.default.span if user else used_at(caller, span)
    pname = p.name.name
    _warn(it, p.assumed, at or p.default.span,
          f"parameter `{pname}` of {template.kind} `{template.name}` takes its assumed default: "
          f"{_shown(value)}", f"pass the value from the data sheet: `{template.name}({pname} = "
                              f"...)`")


def param_assumed(it, node: ast.Param, value) -> None:
    """W216 for a module's `param` left to its default, when that is an assumption."""
    if node.assumed is None or it.lenient:
        return
    name = node.name.name
    _warn(it, node.assumed, node.default.span,
          f"parameter `{name}` is assumed: {_shown(value)}",
          f"state it from a source (or set it: `--set {name}=...`)")


def unsaid(tree: ast.Module, diagnostics: List[Diagnostic]) -> None:
    """E223 for each `assumed` of `tree` that says no reason."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assumption) and (
                node.reason is None or not node.reason.value.strip()):
            diagnostics.append(Diagnostic(
                "E223", Severity.ERROR, "`assumed` says no reason", node.span,
                'say why the value is assumed, e.g. `assumed "no data sheet gives it"`'))


def _warn(it, assumption: ast.Assumption, at: Span, message: str, hint: str) -> None:
    """The warning at `at`, once per assumption and place."""
    if assumption.reason is None or not assumption.reason.value.strip():
        return                         # E223 says so
    key = (assumption.span, at)
    said = it.assumptions_said
    if key in said:
        return
    said.add(key)
    where = assumption.span
    notes = () if at.file == where.file and at.start.line == where.start.line else (
        f"assumed at {where.file}:{where.start.line}:{where.start.column}",)
    it.diagnostics.append(Diagnostic(CODE, Severity.WARNING,
                                     f"{message} ({assumption.reason.value})", at,
                                     hint + f", or accept it: `allow {CODE} \"why\"`",
                                     notes=notes))


def _template(env: Env):
    """The template whose body `env` (or an environment it is inside) evaluates."""
    while env is not None and env.template is None:
        env = env.outer
    return env.template if env is not None else None


def _brought_in(frame: Frame) -> Optional[Span]:
    """The first place in the user's files that brings `frame` in: the user's declaration of
    its template (`rack R = DGX_H100_Rack`), else where the user's files ask for the stdlib's
    template (or for the stdlib template whose body asks for it); None: nowhere (the stdlib
    asked for it for itself)."""
    template = frame.template
    if template is not None and not template.module.is_stdlib:
        return frame.span
    return frame.used_at


def _shown(value) -> str:
    """The value as a message shows it: `0.8 kW`, `85 %`, `4 x DGX_H100`."""
    if isinstance(value, Group):
        return " + ".join(f"{r.count} x {_shown(r.item)}" for r in value.runs)
    if isinstance(value, Frame):
        return value.name
    if isinstance(value, Quantity) and value.unit and value.magnitude == value.magnitude:
        short = format_number(float(f"{value.magnitude:.4g}"))      # 11.81 kW, not 11.80548578
        said = f"{short} {value.unit}"
        return said if float(short) == value.magnitude else f"about {said}"
    return show(value)
