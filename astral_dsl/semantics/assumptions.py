"""`assumed "why"`: a value stated as an assumption, not a sourced figure (docs/language.md,
18.2), and the warning (W216) that a design using it gets.

`power = 0.8 kW assumed "no data sheet gives it"` in a template's body, `capacity: power = 1.2 MW
assumed "..."` as a parameter's default, `param racks = 8 assumed "..."` at the top of a file:
the value is used as written, and each place in the user's files that brings it into the design
is told which value was assumed, the value and why, with the value's line as its related span
("assumed here"). The places of an instance are noted as the instantiator makes and finds it
(semantics/brought_in.py: each call in the user's files, or of the instance whose stdlib body
asks for it, NVL72's for its switch trays; a user's template based on the stdlib's is its own
place, `host Node = HGX8(...)`).
The warnings are said once the frames are complete (`report`, before they are frozen): for
each evaluated field and each default an instance reads (`reading_defaults`), once per
assumption and place, however far the design replicates the part (an instance is made once per
distinct set of arguments: semantics/instantiate.py). An assumption in the user's own files is
reported at the value itself. A value of the user's own replaces the assumed one and silences
it: a derived template's body or an argument that sets the field, an argument for the parameter
(or a body that sets every field reading it), `--set` for a `param`. `allow W216 "why"` accepts
it as any warning. `assumed` with no reason is E223, used or not."""
from __future__ import annotations

from typing import Callable, Iterable, List

from astral_dsl.diagnostics import Diagnostic, Related, Severity, Span, own_part
from astral_dsl.model.values import POISON, Group, show
from astral_dsl.semantics.brought_in import gather, places
from astral_dsl.semantics.frames import Env, FieldDef, Frame, frame_of
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, format_number

CODE = "W216"


def reading_defaults(it, make: Callable[[], Frame]) -> Frame:
    """`make()`, an instance, keeping each assumed default bound while it is made (`it.defaulted`:
    (template, parameter, the caller's environment, the call's span, the value), noted by
    semantics/arguments.bind) that the instance reads: a default whose field the instance sets
    otherwise (a derived template's body, `host Node = HGX8(...) { liquid_share = 0 % }`) is
    not used."""
    mark = len(it.defaulted)
    try:
        frame = make()
        for entry in it.defaulted[mark:]:
            if _reads(frame, entry[0], entry[1].name.name):
                it.assumed_defaults.append(entry)
    finally:
        del it.defaulted[mark:]
    return frame


def _reads(frame: Frame, template, name: str) -> bool:
    """Does a statement `template`'s body laid on `frame` (and not overridden since), a check
    of it or its base's arguments name parameter `name`?"""
    decl = template.decl
    stmts = [d.stmt for d in frame.defs.values() if _template(d.env) is template]
    stmts += [c for c, env in frame.checks if _template(env) is template]
    stmts += [decl.base] if decl.base is not None else []
    return any(isinstance(n, ast.Name) and n.name == name
               for stmt in stmts if isinstance(stmt, ast.Node) for n in ast.walk(stmt))


def report(it, allows=()) -> None:
    """W216 for every assumed value that the frames of `it` hold (an evaluated field) or read
    (a parameter's default), at the places of the user's files that bring it in: once, at the
    first, the others its related spans (brought_in.gather, apart where different `allows`
    accept them)."""
    found: List[Diagnostic] = []
    for frame in it.frames:
        for name, d in frame.defs.items():
            stmt = d.stmt
            if isinstance(stmt, ast.Field) and stmt.assumed is not None and \
                    frame.values.get(name, POISON) is not POISON:
                user = not d.env.module.is_stdlib
                message = f"`{name}` of {frame.kind} `{frame.name}` is assumed: " \
                          f"{_shown(frame.values[name])}"
                hint = _field_hint(frame, name, d, user)
                for at in ([stmt.value.span] if user else places(it, frame)):
                    _warn(it, stmt.assumed, stmt.value.span, at, message, hint, found)
    for template, p, caller, span, value in it.assumed_defaults:
        pname = p.name.name
        message = f"parameter `{pname}` of {template.kind} `{template.name}` takes its " \
                  f"assumed default: {_shown(value)}"
        hint = f"pass the value from the data sheet: `{template.name}({pname} = ...)`"
        for at in _default_sites(it, template, p, caller, span):
            _warn(it, p.assumed, p.default.span, at, message, hint, found)
    it.diagnostics.extend(gather(found, allows))


def _field_hint(frame: Frame, name: str, d: FieldDef, user: bool) -> str:
    template = _template(d.env)
    if user or template is None:
        return "replace it with the value from its source"
    if template.kind != frame.kind:        # a record or a part declared in its body
        return f"state the value from its source in a {template.kind} of your own based on " \
               f"`{template.name}`"
    owner = template.name
    hint = f"state the value from the data sheet: in a part of your own based on `{owner}` " \
           f"(`{own_part(frame.kind, owner, name)}`)"
    outer = _template(frame.asked_in) if frame.asked_in is not None else None
    if outer is not None and outer.module.is_stdlib and frame.template is template:
        return hint + f", used in place of the stdlib's `{outer.name}` that asks for `{owner}`"
    return hint + f", or as an argument (`{owner}({name} = ...)`)"


def _default_sites(it, template, p: ast.ParamDef, caller: Env, span: Span) -> List[Span]:
    """Where the user's files bring in a default of `template` bound for a call at `span` in
    `caller`: the default itself when the user's files state it."""
    if not template.module.is_stdlib:
        return [p.default.span]
    if not caller.module.is_stdlib:
        return [span]
    parent = frame_of(caller)
    return (places(it, parent) if parent is not None else []) or [p.default.span]


def param_assumed(it, node: ast.Param, value) -> None:
    """W216 for a module's `param` left to its default, when that is an assumption; its hint
    sets it as the caller would (the instantiator's `option`: `--set NAME=...`, from the API
    `with_params(NAME=...)`)."""
    if node.assumed is None:
        return
    name = node.name.name
    _warn(it, node.assumed, node.default.span, node.default.span,
          f"parameter `{name}` is assumed: {_shown(value)}",
          f"state it from a source (or set it: `{it.option(name, '...')}`)", it.diagnostics)


def unsaid(nodes: Iterable[ast.Node], diagnostics: List[Diagnostic]) -> None:
    """E223 for each `assumed` among `nodes` (a tree's, ast.walk) that says no reason."""
    for node in nodes:
        if isinstance(node, ast.Assumption) and (
                node.reason is None or not node.reason.value.strip()):
            diagnostics.append(Diagnostic(
                "E223", Severity.ERROR, "`assumed` says no reason", node.span,
                'say why the value is assumed, e.g. `assumed "no data sheet gives it"`'))


def _warn(it, assumption: ast.Assumption, where: Span, at: Span, message: str,
          hint: str, out: List[Diagnostic]) -> None:
    """The warning at `at` about the value stated at `where`, once per assumption and place
    (`where` itself when no place of the user's files is known), added to `out`."""
    at = at or where
    if assumption.reason is None or not assumption.reason.value.strip():
        return                         # E223 says so
    key = (assumption.span, at)
    said = it.assumptions_said
    if key in said:
        return
    said.add(key)
    related = () if at.file == where.file and at.start.line == where.start.line else (
        Related(where, "assumed here"),)
    out.append(Diagnostic(CODE, Severity.WARNING,
                          f"{message} ({assumption.reason.value})", at,
                          hint + f", or accept it: `allow {CODE} \"why\"`", related=related))


def _template(env: Env):
    """The template whose body `env` (or an environment it is inside) evaluates."""
    while env is not None and env.template is None:
        env = env.outer
    return env.template if env is not None else None


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
