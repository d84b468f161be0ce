"""Hints for a scenario's `fail` target that looks for a part where the design does not keep it
(complete.py `_fail_target`):

- a fabric's switch tier asked of a part of the hierarchy, `fail S.pods[0].sus[0].leaf` (E209
  "block `SU` has no member `leaf`"): a tier's switches are named under the fabric, by its
  scope instance, rail and plane (`S.fabric.block[0].rail[0].leaf`, the path form of the rank
  map and of E219's hint: model/tier_groups.py example_group);
- a loop's CDU by index, `fail S.pods[0].secondary.cdus[0]` (E303 "cannot index a number"):
  `cdus` is the loop's count of CDUs, and failing the loop fails one of them
  (analyses/scenarios.py: each `fail` of a loop adds one failed CDU, which loops.py takes off
  the declared count; docs/language.md, section 14)."""
from __future__ import annotations

from typing import List, Optional

import attrs

from astral_dsl.diagnostics import Diagnostic, DiagnosticError
from astral_dsl.model.tier_groups import example_group
from astral_dsl.model.values import Group, ListValue, Symbol, fabric_path
from astral_dsl.semantics.frames import Frame
from astral_dsl.semantics.isolate import route_of
from astral_dsl.syntax import ast


def fail_hint(it, expr, env, d: Diagnostic) -> Optional[Diagnostic]:
    """`d` (raised evaluating the `fail` target `expr`) with a better hint (in place of a
    spelling guess: the name is a tier's, spelt right), or None (also when looking for one
    raises: `d` stands)."""
    try:
        hint = _tier_hint(it, expr, env, d) if d.code == "E209" else \
            _cdu_hint(it, expr, env, d) if d.code == "E303" else None
    except DiagnosticError:
        return None
    return attrs.evolve(d, hint=hint) if hint else None


def _chain(expr) -> List:
    """The member and index nodes of a path, root first."""
    out = []
    while isinstance(expr, (ast.Attr, ast.Index)):
        out.append(expr)
        expr = expr.obj
    out.append(expr)
    return out[::-1]


def _one(value) -> Optional[Frame]:
    """An instance, or the first of a group (its replicas share their template)."""
    if isinstance(value, Group):
        value = next((item for _, item in value.flat()), None)
    return value if isinstance(value, Frame) else None


def _route(it, node, env) -> Optional[str]:
    route = route_of(it, node, env)
    return route.display if route is not None else None


def _tier_hint(it, expr, env, d: Diagnostic) -> Optional[str]:
    chain = _chain(expr)
    at = next((i for i, n in enumerate(chain) if isinstance(n, ast.Attr)
               and n.name.span == d.span), None)
    if at is None:
        return None
    name = chain[at].name.name
    for node in reversed(chain[:at]):        # the fabrics of the parts on the way, nearest first
        owner = it.eval(node, env)
        if not isinstance(owner, Frame):     # a group (`S.pods`) is no one fabric's owner
            continue
        for member, value in list(owner.values.items()):
            fabric = _one(value)
            if fabric is None or fabric.kind != "fabric" or name not in fabric.defs:
                continue
            tier = it.field(fabric, name)
            if not isinstance(tier, Frame) or tier.kind != "tier":
                continue
            path = _route(it, node, env)
            if path is None:
                return None
            scope = _declared(it, tier, "scope")
            per = _declared(it, tier, "per")
            per = tuple(p.name for p in per.items if isinstance(p, Symbol)) \
                if isinstance(per, ListValue) else ()
            scope = scope.name if isinstance(scope, Symbol) else owner.kind
            group = example_group(scope, owner.kind, per)
            counted = (f"; {group[0][0]}s are counted across `{path}`"
                       if group[0] is not None else "")
            return (f"`{name}` is a switch tier of the fabric `{path}.{member}`: its switches "
                    f"are named under the fabric, by the tier's group, e.g. "
                    f"`{fabric_path(f'{path}.{member}', *group, name)}`"
                    f"{counted} (`astral forecast FILE --ranks ranks.json` writes the stable "
                    f"names)")
    return None


def _declared(it, frame: Frame, name: str):
    return it.field(frame, name) if name in frame.defs else None


def _cdu_hint(it, expr, env, d: Diagnostic) -> Optional[str]:
    if not (isinstance(expr, ast.Index) and d.span == expr.span
            and isinstance(expr.obj, ast.Attr) and expr.obj.name.name == "cdus"):
        return None
    loop = _one(it.eval(expr.obj.obj, env))
    if loop is None or loop.kind != "loop":
        return None
    path = _route(it, expr.obj.obj, env) or loop.display
    return (f"`cdus` is the loop's count of CDUs, not its parts: `fail {path}` fails one of "
            f"its CDUs (each `fail` of the loop one more), and the others must hold its heat "
            f"(E640)")
