"""`--set NAME=VALUE`: override a top-level parameter of the entry file from outside.

The value is a literal (`8`, `50 kW`, `true`, `"x"`); a bare number takes the unit of the
parameter's default, so `--set rack_limit=50` means 50 kW when the default is `45 kW`. A bare
number of at most 1 for a parameter in a ratio's unit (`97 %`, `5 ppm`) is refused (E310):
`--set ups_eff=0.97` would be 0.97 %, a fraction read as a percent; the unit written says
which is meant (`97 %`, `1 %`)."""
from __future__ import annotations

import math
import re
import shlex
from typing import Any, Callable, Dict, List, Mapping, Optional

from astral_dsl.diagnostics import Diagnostic, DiagnosticError, Severity, did_you_mean, excerpt
from astral_dsl.model.values import show
from astral_dsl.semantics.scope import ModuleScope, ParamSymbol
from astral_dsl.syntax import ast
from astral_dsl.syntax.parser import parse_expression
from astral_dsl.syntax.source import Source
from astral_dsl.units import Quantity, format_number, parse_unit
from astral_dsl.units.table import UnitSpecError

_LITERALS = (ast.Number, ast.QuantityLit, ast.String, ast.Bool)


def command_line(name: str, value: Optional[str] = None, flag: str = "--set",
                 shell: bool = False) -> str:
    """The override of the parameter `name` in the command's words, `--set NAME`, or given
    with `value`, `--set NAME=VALUE` (with `shell`, `NAME=VALUE` quoted for a POSIX shell, to
    paste): how the messages and hints of an override name it (each `option` below; the API
    passes `from_python`, as explore.search.run's `option`; `astral diff` one of `sided`).
    With another `flag`, a name given to that option: `--job NAME` (seer.unknown_job),
    `--scenario NAME` (pipeline_scenarios.unknown_scenarios)."""
    if value is None:
        return f"{flag} {name}"
    return f"{flag} {shlex.quote(f'{name}={value}') if shell else f'{name}={value}'}"


def sided(names, side_flag: str) -> "Option":
    """`command_line`, but an override among `names` is named by `side_flag`: `astral diff`'s
    `--set-a NAME` for a value given to A only (`--set` gives one to both sides)."""
    own = set(names) | {excerpt(n, NAME_WIDTH) for n in names}      # E213 names a long one cut

    def option(name: str, value: Optional[str] = None, shell: bool = False,
               flag: str = "--set") -> str:
        return command_line(name, value, side_flag if flag == "--set" and name in own else flag,
                            shell)
    return option


def from_python(name: str, value: Optional[str] = None, shell: bool = False,
                flag: str = "--set") -> str:
    """`command_line` in the API's words: `overrides['NAME']` (the mapping that `load`,
    `compile` and the commands' functions take, which `Workspace.with_params` adds to), or
    given with `value`, `with_params(NAME='VALUE')` (a str is read as `--set` reads its text;
    a plain number is given as one, `with_params(NAME=4)`, and the placeholder `...` as
    itself; quoted as Python's, whatever `shell`). A name the command gives another `flag`
    is the argument of that name: `job='NAME'` for `--job NAME`, `scenario='NAME'`."""
    if flag != "--set":
        return f"{flag.lstrip('-')}={name!r}"
    if value is None:
        return f"overrides[{name!r}]"
    return f"with_params({name}={value if _PLAIN.fullmatch(value) else repr(value)})"


def listed(listing: str, argument: str, option: "Option" = from_python) -> "Option":
    """`option`, but a name given to the command's option `listing` (`--job`) is named as an
    item of the API's list argument `argument`: `jobs=['NAME']`, as `report(jobs=[...])` and
    `check(scenarios=[...])` take them, not `job='NAME'`, an argument those calls do not
    have. Every other name (an override, a scenario of `report`) is `option`'s."""
    def named(name: str, value: Optional[str] = None, shell: bool = False,
              flag: str = "--set") -> str:
        return f"{argument}=[{name!r}]" if flag == listing else option(name, value, shell, flag)
    return named


# a number as Python writes it too, or `...`, a hint's placeholder (`with_params(NAME=...)`)
_PLAIN = re.compile(r"-?[0-9]+(\.[0-9]+)?|\.\.\.")


# command_line, from_python or one of sided: option(NAME, VALUE=None, shell=False, flag="--set")
Option = Callable[..., str]

# the longest parameter name a message repeats (a longer one is cut to its start and end)
NAME_WIDTH = 60


def parse_overrides(given: Mapping[str, Any], scope: ModuleScope,
                    diagnostics: List[Diagnostic],
                    option: Option = command_line) -> Dict[str, Any]:
    """The values of `given` (name -> the text of a literal, or from Python a value), each
    checked against its parameter (E213, E310, named by `option`)."""
    out: Dict[str, Any] = {}
    for name, text in given.items():
        if not isinstance(name, str):
            diagnostics.append(Diagnostic("E213", Severity.ERROR,
                                          f"an override is named by {type(name).__name__} "
                                          f"{name!r}, not by a parameter name", None,
                                          file=scope.file))
            continue
        where = option(name)
        symbol = scope.own.get(name)
        if not isinstance(symbol, ParamSymbol):
            params = [n for n, s in scope.own.items() if isinstance(s, ParamSymbol)]
            diagnostics.append(unknown_parameter(option, name, params, scope.file))
            continue
        try:
            out[name] = _value(text, symbol, option)
        except DiagnosticError as exc:
            d = exc.diagnostic
            hint = d.hint
            if isinstance(symbol.node.default, ast.String) and isinstance(text, str) and \
                    not text.strip().startswith('"'):
                hint = quote_hint(option, name, text.strip())
            # the parameter's declaration: the value given replaces its default
            # the message as the reason gave it, bounded: a reason that echoes a part of the
            # value (`unknown unit `kkk...``) is not repeated whole for a 100 KB value
            diagnostics.append(Diagnostic("E310", Severity.ERROR,
                                          f"{where}: {excerpt(d.message, 200)}",
                                          d.span or symbol.node.default.span, hint,
                                          file=scope.file))
    return out


# the longest text value a hint repeats in the forms that give it (a longer one is cut)
QUOTED_WIDTH = 60


def quote_hint(option: Option, name: str, value: str) -> str:
    """E310's hint for the text `value` given to the text parameter `name` unquoted: the
    override that gives it, to paste, in the caller's words (`option`: the `--set` option
    quoted for a POSIX shell, or the `with_params` call). A value too long to repeat (the
    message shows it cut to its start and end) or one with a control character a string
    literal does not escape gets the form with VALUE in its place, and its length: a cut value
    quoted read as the whole value to give."""
    literal = show(value).replace("\n", "\\n").replace("\t", "\\t")    # `"` and `\\` by show
    if len(value) <= QUOTED_WIDTH and literal.isprintable():
        return f"`{name}` is text: quote its value, {option(name, literal, shell=True)}"
    shown = " (the message shows them cut to their start and end)" \
        if len(value) > QUOTED_WIDTH else ""
    placeholder = option(name, '"VALUE"', shell=True)
    return (f"`{name}` is text: quote its value, {placeholder} with VALUE the {len(value):,} "
            f"characters given{shown}")


def unknown_parameter(option: Option, name: str, params, file=None) -> Diagnostic:
    """E213: the parameter `name` that `option` names (`--set NAME`, `--grid NAME`,
    `overrides['NAME']`) is no top-level `param` of the entry file; the hint is a
    did-you-mean, else the parameters there are."""
    params, said = list(params), excerpt(name, NAME_WIDTH)  # a 100 KB name is not echoed whole
    return Diagnostic("E213", Severity.ERROR,
                      f"{option(said)}: the design has no parameter `{said}`", None,
                      did_you_mean(name, params) or (
                          "parameters: " + ", ".join(params) if params
                          else "it declares no `param`"), file=file)


def _value(given: Any, symbol: ParamSymbol, option: Option):
    """A value given from outside: the text of a literal (`--set`, or a string from Python), or
    from Python a number, a bool or a Quantity (named by `option`)."""
    if isinstance(given, str):
        return _literal(given, symbol, option)
    if isinstance(given, bool):
        return given
    if isinstance(given, int) and abs(given) >= 2 ** 1024 - 2 ** 970:   # past the largest float
        # said by its size: its repr() raised ValueError past 4,300 digits, and an int is finite
        raise DiagnosticError(Diagnostic("E310", Severity.ERROR,
                                         f"an int of {given.bit_length()} bits is too large to "
                                         f"represent (beyond about 1.8e308)", None))
    if isinstance(given, (int, float)):
        number = float(given)           # an int of at most 1e308 fits a float (above: said)
        if not math.isfinite(number):
            raise DiagnosticError(Diagnostic("E310", Severity.ERROR,
                                             f"{excerpt(repr(given))} is not a finite number",
                                             None))
        return _bare(number, symbol, option)
    if isinstance(given, Quantity):
        if not math.isfinite(given.si):
            raise DiagnosticError(Diagnostic("E310", Severity.ERROR,
                                             f"{excerpt(str(given), 60)} is not a finite "
                                             f"quantity", None))
        return given
    raise DiagnosticError(Diagnostic(
        "E310", Severity.ERROR, f"a {type(given).__name__} is not a value", None,
        "give a number, a Quantity, a bool or the text of a literal such as \"50 kW\""))


def _literal(text: str, symbol: ParamSymbol, option: Option):
    try:
        expr = parse_expression(Source(option(symbol.node.name.name), text))
    except DiagnosticError as exc:
        if exc.diagnostic.code == "E106":       # a number out of range, a `_` out of place:
            raise                               # the reason a file's literal gets (E310)
        raise DiagnosticError(Diagnostic("E310", Severity.ERROR,
                                         f"`{excerpt(text, 60)}` is not a value", None,
                                         "write a number, a quantity such as `50 kW`, "
                                         "true/false or a \"string\""))
    negative = False
    if isinstance(expr, ast.Neg) and isinstance(expr.operand, (ast.Number, ast.QuantityLit)):
        negative, expr = True, expr.operand
    if not isinstance(expr, _LITERALS):
        raise DiagnosticError(Diagnostic("E310", Severity.ERROR,
                                         f"`{excerpt(text, 60)}` is not a literal value",
                                         None,
                                         "only literals can be set from outside"))
    if isinstance(expr, ast.String):
        return expr.value
    if isinstance(expr, ast.Bool):
        return expr.value
    sign = -1.0 if negative else 1.0
    if isinstance(expr, ast.Number):
        return _bare(sign * expr.value, symbol, option)
    return _quantity(sign * expr.value, expr.unit)


def _bare(number: float, symbol: ParamSymbol, option: Option) -> Quantity:
    """A number given without a unit: in the unit of the parameter's default. In a ratio's unit
    (`%`, `ppm`), one of at most 1 (but 0) is a fraction as often as a percent: refused, with
    the overrides that say which, in the caller's words (`option`)."""
    default = symbol.node.default
    if not isinstance(default, ast.QuantityLit):
        return Quantity(number)
    value = _quantity(number, default.unit)
    unit = parse_unit(default.unit)
    if value.dimensionless and unit.scale < 1 and 0 < abs(number) <= 1:
        name, said, u = symbol.node.name.name, format_number(number), default.unit
        whole = format_number(round(number / float(unit.scale), 9))     # the fraction in `u`
        raise DiagnosticError(Diagnostic(
            "E310", Severity.ERROR,
            f"the bare number {said} is ambiguous: in the unit of the default "
            f"({show(_quantity(default.value, u))}) it is {said} {u}, as a fraction {whole} {u}",
            None,
            f"write the unit: {option(name, f'{whole} {u}', shell=True)} (or "
            f"{option(name, whole, shell=True)}) for the fraction {said}, "
            f"{option(name, f'{said} {u}', shell=True)} for {said} {u}"))
    return value


def _quantity(value: float, unit: str) -> Quantity:
    """`value` in `unit`; E310 for a unit the table does not know, or an amount that is finite
    in its unit but beyond a float in SI units (`1.5e308 kW`, 1.5e311 W), as a literal's E309."""
    try:
        q = Quantity.from_unit(value, parse_unit(unit))
    except UnitSpecError as exc:
        raise DiagnosticError(Diagnostic("E310", Severity.ERROR, str(exc), None, exc.hint))
    if not math.isfinite(q.si):
        raise DiagnosticError(Diagnostic(
            "E310", Severity.ERROR, f"{format_number(value)} {unit} is too large to represent "
                                    f"(beyond about 1.8e308 in SI units)", None,
            "write it in a larger unit or check the number"))
    return q
