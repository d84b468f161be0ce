"""Template arguments: binding a call's arguments to the template's parameters (positional,
by name, or under a parameter's old name with W211), keyword overrides of fields, equipment
counts left to sizing (deferred), and the key a template's instance is memoised under."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from astral_dsl.diagnostics import Diagnostic, Severity, Span, did_you_mean
from astral_dsl.model.kinds import KINDS
from astral_dsl.model.values import POISON, Bundle, Group, ListValue, RangeValue, Symbol
from astral_dsl.semantics.coerce import coerce, type_from_annotation
from astral_dsl.semantics.collections import each_option
from astral_dsl.semantics.errors import fail
from astral_dsl.semantics.fields import SIZABLE, _Given, _wants_symbols
from astral_dsl.semantics.words import as_words
from astral_dsl.semantics.frames import Env, FieldDef
from astral_dsl.semantics.origins import of_expr
from astral_dsl.semantics.scope import Template
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity

MAX_DEFAULTS = 64   # parameter defaults evaluated one inside another (as instantiate.MAX_DEPTH)


def bind(it, template: Template, args: List[ast.Arg], caller: Env, span: Span,
         used_in: Optional[Env] = None):
    """The parameters (name -> value), the field overrides (name -> (value, span, origin))
    and where the user's files set each parameter (name -> span: semantics/origins.py) of
    `template(args)` called from `caller` (named in `used_in`: a template named bare); each
    assumed default taken is noted in `it.defaulted` (semantics/assumptions.py)."""
    decl = template.decl
    defs = list(decl.params or ())
    names = [p.name.name for p in defs]
    given: Dict[str, Any] = {}
    overrides: Dict[str, Any] = {}
    spans: Dict[str, Span] = {}
    origins: Dict[str, Optional[Span]] = {}
    positional = 0
    fields = KINDS[template.kind].fields
    old_names = {r.old.name: r for r in decl.renamed}
    for arg in args:
        if arg.name is not None and arg.name.name in old_names:
            arg = renamed(it, template, old_names[arg.name.name], arg, names)
        fspec = fields.get(arg.name.name) if arg.name is not None else None
        env = caller.as_symbols() if fspec is not None and _wants_symbols(fspec.type) \
            else caller
        if arg.name is not None and isinstance(arg.value, ast.Unknown) and \
                (template.kind, arg.name.name) in SIZABLE:
            # an equipment count left to sizing: evaluated as the instance's own field
            overrides[arg.name.name] = (Deferred(arg, caller), arg.value.span, None)
            continue
        expr = arg.value if fspec is None else \
            as_words(arg.value, fspec.type, caller, f"`{arg.name.name}`", it.diagnostics)
        value = it.eval(expr, env)
        if arg.name is None:
            if positional >= len(names):
                fail("E307", f"`{template.name}` takes {len(names)} positional argument(s)",
                     arg.span, _params_hint(template, names) if names else
                     f"name the field it sets: `{template.name}(FIELD = ...)`")
            pname = names[positional]
            positional += 1
        else:
            pname = arg.name.name
        if pname in given or pname in overrides:
            fail("E307", f"argument `{pname}` is given twice", arg.span,
                 "keep one of the two (a positional argument counts as its parameter's)")
        if pname in names:
            given[pname] = value
            spans[pname] = arg.value.span
            origins[pname] = of_expr(arg.value, caller)
            _options_fit(it, expr, env, defs[names.index(pname)].type,
                         f"argument `{pname}` of `{template.name}`")
        elif pname in KINDS[template.kind].fields:
            overrides[pname] = (value, arg.value.span, of_expr(arg.value, caller))
            _options_fit(it, expr, env, KINDS[template.kind].fields[pname].type, f"`{pname}`")
        else:
            fail("E211", f"`{template.name}` has no parameter or field `{pname}`",
                 arg.name.span if arg.name else arg.span,
                 did_you_mean(pname, names + list(KINDS[template.kind].fields))
                 or _params_hint(template, names))
    params: Dict[str, Any] = {}
    env = Env(template.module, None, params)
    for p in defs:
        pname = p.name.name
        if pname in given:
            value, vspan = given[pname], spans[pname]
        elif p.default is not None:
            value, vspan = _default(it, template, pname, given, p.default, env), p.default.span
            origins[pname] = of_expr(p.default, env)
        elif it.lenient:
            params[pname] = POISON      # linting an unused template: nothing to check against
            continue
        else:
            fail("E212", f"`{template.name}` needs the argument `{pname}`", span,
                 f"write `{template.name}({pname} = ...)`")
        params[pname] = it.annotated(p.type, value, vspan,
                                        f"argument `{pname}` of `{template.name}`")
        if pname not in given and p.assumed is not None:
            it.defaulted.append((template, p, used_in or caller, span, params[pname]))
        if origins.get(pname) is not None:
            env.origins[pname] = origins[pname]
    return params, overrides, env.origins


def _options_fit(it, expr, env: Env, type_, what: str) -> None:
    """Every option of an argument `? in ...` fits its parameter's or field's type, as the
    first one does (`Rectifier(module = ? in [25 kW, -5 kW])`, a NIC among a host's GPUs)."""
    if isinstance(type_, ast.Ident):             # a parameter's annotation
        type_ = type_from_annotation(type_.name)
    if type_ is not None:
        each_option(it.expr, expr, env, lambda option, span: coerce(option, type_, span,
                                                                     f"an option of {what}"))


def _default(it, template: Template, pname: str, given, expr, env: Env):
    """The default of parameter `pname`, evaluated for the arguments `given`: E404 when it needs
    the template's instance with those same arguments (`gpu G(p: power = G.power)`), which
    would be bound again without end."""
    key = (id(template), pname, memo_key(given))
    if key in it.defaulting:
        fail("E404", f"the default of `{pname}` of `{template.name}` depends on itself", expr.span,
             f"the default instantiates `{template.name}` again with the same arguments: give "
             f"`{pname}` a value that does not refer back to `{template.name}`")
    if len(it.defaulting) >= MAX_DEFAULTS:
        fail("E402", f"parameter defaults nest more than {MAX_DEFAULTS} deep (at `{pname}` of "
                     f"`{template.name}`)", expr.span,
             "a default that instantiates its template with changing arguments never ends")
    _no_later_parameter(template, pname, expr)
    it.defaulting.add(key)
    try:
        return it.eval(expr, env)
    finally:
        it.defaulting.discard(key)


def _no_later_parameter(template: Template, pname: str, expr) -> None:
    """E200 with its reason for a default that reads a parameter declared after its own (the
    parameters are bound in order: `rack R(n = m, m = 1)`), unless the name is the module's or
    a loop variable's of the default."""
    names = [p.name.name for p in template.decl.params or ()]
    later = set(names[names.index(pname) + 1:])
    nodes = list(ast.walk(expr))
    bound = {n.var.name for n in nodes if isinstance(n, ast.Comprehension)}
    for node in nodes:
        if isinstance(node, ast.Name) and node.name in later - bound and \
                template.module.lookup(node.name) is None:
            fail("E200", f"unknown name `{node.name}`", node.span,
                 f"`{node.name}` is a parameter of `{template.name}` declared after `{pname}`: "
                 f"a default may use only the parameters before it; declare `{node.name}` "
                 f"first")


def renamed(it, template: Template, r: ast.Renamed, arg: ast.Arg, names) -> ast.Arg:
    """A keyword argument under a parameter's old name (`rating -> module`): W211, and the
    argument as if written under the new name."""
    new = r.new.name
    if new not in names and new not in KINDS[template.kind].fields:
        fail("E211", f"`{r.old.name} -> {new}`: `{template.name}` has no parameter or field "
                     f"`{new}`", r.new.span, did_you_mean(new, names)
             or _params_hint(template, names))
    it.diagnostics.append(Diagnostic(
        "W211", Severity.WARNING,
        f"`{r.old.name}` is the old name of `{template.name}`'s parameter `{new}`",
        arg.name.span, f"write `{new} = ...` (the parameter is named as the field it sets)",
        notes=(f"`{r.old.name}` is still accepted and means `{new}`",)))
    return ast.Arg(ast.Ident(new, arg.name.span), arg.value, arg.span)


class Deferred:
    """A keyword argument evaluated later, as a field of the new instance (`modules = ?`)."""

    def __init__(self, arg: ast.Arg, env: Env):
        self.arg, self.env = arg, env


def override(value, env: Env, span: Span, origin: Optional[Span] = None) -> FieldDef:
    if isinstance(value, Deferred):
        arg = value.arg
        stmt = ast.Field(arg.name, arg.value, arg.span)
        return FieldDef(stmt, value.env, arg.name.span, arg.value)
    return FieldDef(_Given(value), env, span, None, origin=origin)


def memo_key(values: Dict[str, Any]):
    return tuple(sorted((k, _value_key(v)) for k, v in values.items()))


def _value_key(v):
    if isinstance(v, Quantity):
        return ("q", v.key())
    if isinstance(v, (bool, str, int, float)):
        return ("v", v)
    if isinstance(v, Symbol):
        return ("s", v.name)
    if isinstance(v, ListValue):
        return ("l", tuple(_value_key(i) for i in v.items))
    if isinstance(v, Group):
        return ("g", tuple((r.count, _value_key(r.item) if isinstance(r.item, Group) else id(r.item))
                           for r in v.runs))
    if isinstance(v, Bundle):
        return ("b", v.count, v.item.key())
    if isinstance(v, RangeValue):
        return ("r", v.start, v.stop)
    return ("o", id(v))


def _params_hint(template: Template, names) -> str:
    """What a template takes, for an argument it does not: its parameters and its kind's fields."""
    own = f"its parameters are {', '.join(f'`{n}`' for n in names)}" if names else \
        "it declares no parameters"
    return f"`{template.name}` takes its {template.kind}'s fields by name; {own}"
