"""`default(part.field, fallback, "why")`: a field a part does not state, taken as a standard value
with a warning (W212) that says what was assumed and why.

The stdlib's templates use it where a data sheet's value is standard, so that a design built on
them works before every data sheet is at hand, and says what it assumed: `HGX8` takes its GPU's
`nvlink_bandwidth`, or NVLink 4's 450 GB/s each way when the GPU does not state one. Only a
field the part's kind has and the part leaves out falls back: a misspelt field is still E209.
The warning stands at the first place in the user's own files the value comes from (the
template's declaration, else where a stdlib template is instantiated)."""
from __future__ import annotations

from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.model.values import type_name
from astral_dsl.semantics.errors import fail
from astral_dsl.semantics.frames import Env, Frame
from astral_dsl.syntax import ast

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
    frame = env.frame
    owner = frame if frame is not None else None
    span = _where(owner) if owner is not None else e.span
    kind = getattr(part, "kind", "part")
    x.host.diagnostics.append(Diagnostic(
        "W212", Severity.WARNING,
        f"{kind} `{part.name}` states no `{name}`: assumed {value}"
        + (f" for {owner.kind} `{owner.name}`" if owner is not None else ""),
        span or e.span, f"state `{name}` on {kind} `{part.name}` (its data sheet value)",
        notes=(f"assumed: {reason}",)))
    return value


def _left_out(part, name: str) -> bool:
    """`part` is an instance whose kind has field `name`, which it does not state."""
    return isinstance(part, Frame) and name in part.spec.fields and name not in part.defs


def _where(frame: Frame):
    """The first span in the user's files: the frame's template when the user declared it,
    else where the stdlib's template was instantiated."""
    template = frame.template
    if template is not None and not template.module.is_stdlib:
        return frame.span
    return frame.called_at


FORMS = {"default": eval_default}
