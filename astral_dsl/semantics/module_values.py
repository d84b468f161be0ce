"""The values of a module's top-level params and lets, each evaluated once on first use (the
instantiator's `module_value`): a cycle between them is E404, a parameter is converted to its
declared type and its assumption told (semantics/assumptions.py), and the entry module's
parameters take the command line's `--set` values (E310 for one unlike the default), or the
API's `overrides` (named in the caller's words: the instantiator's `option`)."""
from __future__ import annotations

from astral_dsl.diagnostics import DiagnosticError, Span, excerpt
from astral_dsl.semantics.assumptions import param_assumed
from astral_dsl.semantics.errors import fail
from astral_dsl.semantics.fields import _poison_check
from astral_dsl.semantics.frames import Env
from astral_dsl.semantics.scope import LetSymbol, ParamSymbol
from astral_dsl.units import Quantity


def module_value(inst, symbol, span: Span):
    """The value of the module-level param or let `symbol` (named at `span`), for the
    instantiator `inst` (semantics/instantiate.py), which keeps it in its module's scope."""
    scope = symbol.module
    name = symbol.node.name.name
    if name in scope.values:
        return scope.values[name]
    key = (id(scope), name)
    if key in inst.module_busy:
        fail("E404", f"`{name}` is defined in terms of itself", span,
             "break the cycle: one of the values must not refer back")
    inst.module_busy.add(key)
    try:
        value = inst.guarded(lambda: _module_value(inst, symbol))
    finally:
        inst.module_busy.discard(key)
    scope.values[name] = value
    return _poison_check(value)


def _module_value(inst, symbol):
    node = symbol.node
    env = Env(symbol.module)
    if isinstance(symbol, ParamSymbol) and symbol.module is inst.entry \
            and node.name.name in inst.overrides:
        value = inst.overrides[node.name.name]
        span = node.default.span
        name, option = node.name.name, inst.option
        if node.type is None:
            default = inst.eval(node.default, env)
            if isinstance(default, Quantity) and not (
                    isinstance(value, Quantity) and value.dims == default.dims
                    and value.point == default.point):
                fail("E310", f"{option(name)}: expected a {default.describe()} like "
                             f"the default `{default}`, got {_shown(value)}", span,
                     _set_hint(name, value, default, option))
            if isinstance(default, (bool, str)) and type(value) is not type(default):
                from astral_dsl.model.values import show, type_name

                fail("E310", f"{option(name)}: expected a {type_name(default)} like "
                             f"the default {show(default)}, got {excerpt(show(value), 60)}", span,
                     ("give `true` or `false`" if isinstance(default, bool) else
                      "give a string in double quotes") +
                     f", e.g. `{option(name, show(default), shell=True)}`")
    else:
        value = inst.eval(node.value if isinstance(symbol, LetSymbol) else node.default, env)
        span = (node.value if isinstance(symbol, LetSymbol) else node.default).span
    if isinstance(symbol, ParamSymbol):
        overridden = symbol.module is inst.entry and node.name.name in inst.overrides
        try:
            value = inst.annotated(node.type, value, span, f"parameter `{node.name.name}`")
        except DiagnosticError as exc:
            if not overridden:
                raise
            d = exc.diagnostic
            fail("E310", f"{inst.option(node.name.name)}: {d.message}", span, d.hint)
        if not overridden:
            param_assumed(inst, node, value)
    if inst.trace is not None:
        inst.trace.module_value(symbol, value)
    return value


def _set_hint(name: str, value, default: Quantity, option) -> str:
    """The hint for `--set name=value` of another dimension than the default's: a temperature
    difference (`300K`) for a temperature says that `K` is one, and how to write the point
    (written as `option` gives a value, to paste: `--set 't=26.85 degC'` quoted for a shell,
    semantics/overrides.py)."""
    from astral_dsl.semantics.coerce import temperature_hint

    if isinstance(value, Quantity) and value.dims == default.dims:
        return temperature_hint(value, default.point,
                                lambda v: f"`{option(name, v, shell=True)}`")
    return ("write it without the double quotes" if isinstance(value, str) else
            "give it in a unit of the default's dimension") + \
        f", e.g. `{option(name, str(default), shell=True)}`"


def _shown(value) -> str:
    """A value given with --set as a message shows it: a string in its quotes, else in backticks."""
    from astral_dsl.model.values import show

    said = excerpt(show(value), 60)         # a 120 KB value is not echoed back whole
    return said if isinstance(value, str) else f"`{said}`"
