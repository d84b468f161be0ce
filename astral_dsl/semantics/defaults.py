"""`default(part.field, fallback, "why")`: a field a part does not state, taken as a standard value
with a warning (W212) that says what was assumed and why.

The stdlib's templates use it where a data sheet's value is standard, so that a design built on
them works before every data sheet is at hand, and says what it assumed: `HGX8` takes its GPU's
`nvlink_bandwidth`, or NVLink 4's 450 GB/s each way when the GPU does not state one. Only a
field the part's kind has and the part leaves out falls back: a misspelt field is still E209.
The warning stands where the user's own files give the value (the template's declaration, else
where a stdlib template is instantiated); a stdlib template's instance's, once the frames are
complete (`report`), at the places of the user's files that bring the instance in
(semantics/brought_in.py, as W216: one warning at the first, the others its related spans), the
stdlib's line its related span where it stood in a stdlib template's body (NVL72's trays).

`interpolate(x, [x1, ..., xn], [y1, ..., yn], "table")`: a value read from a table of listed
points (x1 < ... < xn), linear between the two listed points around x (the point's own value at a
listed x); outside x1..xn the nearest end's value, with a warning (W215) that says so and names
the table, at the places of the user's files as W212. The stdlib's `Transformer` reads its
efficiency from the US DOE's table by its kVA rating this way."""
from __future__ import annotations

import attrs

from astral_dsl.diagnostics import Diagnostic, Severity, moved_to, own_part
from astral_dsl.model.values import ListValue, type_name
from astral_dsl.semantics.brought_in import gather, places
from astral_dsl.semantics.errors import fail
from astral_dsl.semantics.frames import Env, Frame, frame_of
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, UnitError

USAGE = 'write `default(part.field, fallback, "why")`, e.g. ' \
        '`default(gpu.nvlink_bandwidth, 450 GB/s, "NVLink 4")`'


def eval_default(x, e: ast.Call, env: Env):
    """The value of `part.field`, or `fallback` with W212 when the part leaves the field out."""
    if any(a.name is not None for a in e.args) or len(e.args) != 3:
        fail("E307", "`default` takes three arguments: a field, its fallback and why", e.span,
             USAGE)
    target, fallback, why = (a.value for a in e.args)
    if not isinstance(target, ast.Attr):
        fail("E307", "the first argument of `default` is a field of a part", target.span, USAGE)
    part = x.eval(target.obj, env)
    name = target.name.name
    if not _left_out(part, name):
        return x.eval(target, env)
    reason = x.eval(why, env)
    if not isinstance(reason, str):
        fail("E303", f"why `default` assumes its value is a string, not a {type_name(reason)}",
             why.span, USAGE)
    value = x.eval(fallback, env)
    owner = env.frame
    span = _where(owner) if owner is not None else e.span
    kind = getattr(part, "kind", "part")
    d = Diagnostic("W212", Severity.WARNING,
                   f"{kind} `{part.name}` states no `{name}`: assumed {value}"
                   + (f" for {owner.kind} `{owner.name}`" if owner is not None else ""),
                   span or e.span, _hint(part, kind, name, target.obj, env),
                   notes=(f"assumed: {reason}",))
    _said(x, owner, d)
    return value


def report(it, allows=()) -> None:
    """W212 and W215 of a stdlib template's instance, noted as its fields were evaluated, at
    the places of the user's files that bring the instance in (semantics/brought_in.py), where
    it stood when none is known: once, at the first, the others its related spans (`gather`,
    apart where different `allows` accept them)."""
    pending, it.brought = it.brought, []
    found = []
    for frame, d in pending:
        what = f"{frame.kind} `{frame.name}` is made here"
        for at in places(it, frame) or [None]:
            if at is not None and d.span.file == at.file:     # the user's own call, or another
                found.append(d if at == d.span else attrs.evolve(d, span=at))
            else:
                found.append(moved_to(d, at, what))
    it.diagnostics.extend(gather(found, allows))


def _hint(part, kind: str, name: str, obj, env: Env) -> str:
    """State the field on the part, whose data sheet gives it; but a stdlib part that a template
    takes as a parameter (NVL72's `rest`, NVL72_Rest, which no data sheet describes) is not the
    user's to edit: pass a part of their own to the parameter, of the template the user asks
    for (a GB200_Tray's `nic` is NVL72's `nic` when NVL72's body gives it down)."""
    advice = f"state `{name}` on {kind} `{part.name}` (its data sheet value)"
    if part.template is None or not part.template.module.is_stdlib or \
            not isinstance(obj, ast.Name):
        return advice
    template, param = _given_to(obj.name, part, env)
    if template is None:
        return advice
    mine = f"My{param[:1].upper()}{param[1:]}"
    return (f"`{part.name}` is the stdlib's, not yours to edit: give `{template.name}`'s "
            f"parameter `{param}` a {kind} of your own that states it, `{template.name}({param} "
            f"= {mine})` with `{own_part(kind, part.name, name, mine)}`")


def _given_to(param: str, part, env: Env):
    """(the template, its parameter) that `part` was given to as `param`, followed up through
    the stdlib bodies that gave it down (`GB200_Tray(nic = nic)` in NVL72's) to the template
    asked for outside them; (None, None) when `param` is no template's parameter."""
    env = _binding(env, lambda params: params.get(param) is part)
    while env is not None and env.template is not None:
        frame = frame_of(env)
        asked = frame.asked_in if frame is not None else None
        if asked is None or not asked.module.is_stdlib:
            return env.template, param
        outer = _binding(asked, lambda params: any(v is part for v in params.values()))
        if outer is None or outer.template is None:
            return env.template, param
        env, param = outer, next(n for n, v in outer.params.items() if v is part)
    return None, None


def _binding(env: Env, holds):
    """The innermost environment of `env`'s chain whose parameters `holds`, or None."""
    while env is not None and not holds(env.params):
        env = env.outer
    return env


def _left_out(part, name: str) -> bool:
    """`part` is an instance whose kind has field `name`, which it does not state."""
    return isinstance(part, Frame) and name in part.spec.fields and name not in part.defs


def _where(frame: Frame):
    """The first span in the user's files: the frame's template when the user declared it (or
    the frame's own declaration, `transformer mv = Transformer(...)`, which has no template of
    its own), else where the stdlib's template was instantiated."""
    template = frame.template
    if template is None or not template.module.is_stdlib:
        return frame.span
    return frame.called_at


def _stdlib(frame) -> bool:
    """`frame` is an instance of a stdlib template."""
    return frame is not None and frame.template is not None and frame.template.module.is_stdlib


def _said(x, frame, d: Diagnostic) -> None:
    """`d` (W212, W215) about `frame`: said now, or, of a stdlib template's instance, once the
    frames are complete at the places of the user's files that bring it in (`report`): the user
    cannot edit the stdlib."""
    if _stdlib(frame):
        x.host.brought.append((frame, d))
    else:
        x.host.diagnostics.append(d)


TABLE_USAGE = 'write `interpolate(x, [x1, x2, ...], [y1, y2, ...], "table")` with x1 < x2 < ' \
              '..., e.g. `interpolate(rating, [15 kVA, 30 kVA], [98.65 %, 98.83 %], "DOE")`'


def eval_interpolate(x, e: ast.Call, env: Env):
    """`y` at `x` in a table of listed points: linear between the two around it; outside the
    listed range, the nearest end's `y` with W215."""
    if any(a.name is not None for a in e.args) or len(e.args) != 4:
        fail("E307", "`interpolate` takes four arguments: a value, the listed values, what "
                     "they give and the table's name", e.span, TABLE_USAGE)
    at, xs, ys, what = (x.eval(a.value, env) for a in e.args)
    if not isinstance(what, str):
        fail("E303", f"the table's name is a string, not a {type_name(what)}", e.args[3].span,
             TABLE_USAGE)
    xs, ys = _points(xs, e.args[1].span), _points(ys, e.args[2].span)
    if not isinstance(at, Quantity) or len(xs) != len(ys) or not xs:
        fail("E307", f"`interpolate` needs a quantity and two lists of as many quantities "
                     f"({len(xs)} and {len(ys)} here)", e.span, TABLE_USAGE)
    try:
        steps = [b.compare(a) for a, b in zip(xs, xs[1:])]
        below, above = at.compare(xs[0]) < 0, at.compare(xs[-1]) > 0
        for y in ys[1:]:
            y.compare(ys[0])
    except UnitError as exc:
        fail(exc.code, exc.message, e.span, TABLE_USAGE)
    if any(step <= 0 for step in steps):
        fail("E307", "the listed values of `interpolate` must increase", e.args[1].span,
             TABLE_USAGE)
    if below or above:
        end = ys[0] if below else ys[-1]
        frame = frame_of(env)
        span = _where(frame) if frame is not None else None
        _said(x, frame, Diagnostic(
            "W215", Severity.WARNING,
            f"{at} is {'below' if below else 'above'} the range of {what}, {xs[0]} to "
            f"{xs[-1]}: its value at {xs[0] if below else xs[-1]}, {end}, is assumed",
            span or e.span, "state the value from the equipment's data sheet, or keep to "
                            f"the table's range ({xs[0]} to {xs[-1]})"))
        return end
    i = next(i for i, a in enumerate(xs) if at.compare(a) <= 0)
    if i == 0 or at.compare(xs[i]) == 0:
        return ys[i]
    t = at.compare(xs[i - 1]) / xs[i].compare(xs[i - 1])
    y0, y1 = ys[i - 1], ys[i]
    return Quantity(y0.si + (y1.si - y0.si) * t, y0.dims, y0.unit or y1.unit)


def _points(value, span):
    if not isinstance(value, ListValue) or not all(
            isinstance(v, Quantity) and not v.point for v in value.items):
        fail("E303", f"`interpolate` takes its listed points as a list of quantities, not a "
                     f"{type_name(value)}", span, TABLE_USAGE)
    return list(value.items)


FORMS = {"default": eval_default, "interpolate": eval_interpolate}
