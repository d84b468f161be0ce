"""`--grid NAME=SPEC`: the values a sweep gives one top-level parameter.

SPEC is a range as the language reads it: `2..6` holds both ends, `2..<6` stops before 6; a
stepped range `2..10:2` (`40kW..50kW:2.5kW`, `10..2:-2`, `0..<10:2`; a step in another unit of
the same kind is converted, and a temperature range steps by a difference, `80degC..90degC:5K`),
or a comma list of
literals `40kW,45kW,50kW` (`true,false`, `"a","b"`). Range arithmetic is exact
(decimal fractions), so `0.1..0.3:0.1` gives 0.1, 0.2 and 0.3, never 0.30000000000000004. The
points of several grids are their Cartesian product, the first `--grid` varying slowest."""
from __future__ import annotations

import itertools
import math
import re
import sys
from fractions import Fraction
from typing import Dict, Iterator, List, Optional, Sequence, Tuple


from astral_dsl import records

MAX_POINTS = 100_000

_NUMBER = re.compile(r"\s*(?P<num>[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?)\s*"
                     r"(?P<unit>.*?)\s*$")       # 0-9: `\d` takes any script's digits


_FLOAT_MAX = Fraction(sys.float_info.max)
_FLOAT_TINY = Fraction(sys.float_info.min)


class GridError(ValueError):
    """A malformed grid (E802: exit 2, as a usage error); `name`: the parameter whose declared
    kind its values do not fit (check_names), else None."""

    def __init__(self, message: str, name: Optional[str] = None):
        super().__init__(message)
        self.name = name


@records.frozen
class Grid:
    name: str
    values: Tuple[str, ...]        # literals as `--set` takes them, in order
    note: Optional[str] = None     # e.g. a stepped range that stops short of its end


def _fraction(text: str, what: str) -> Tuple[Fraction, str]:
    m = _NUMBER.fullmatch(text)
    if not m:
        raise GridError(f"{what} `{text.strip()}` is not a number (with an optional unit)")
    try:
        value = Fraction(m.group("num"))
    except (ValueError, ZeroDivisionError):
        raise GridError(f"{what} `{text.strip()}` is not a number") from None
    if abs(value) > _FLOAT_MAX or (value and abs(value) < _FLOAT_TINY):
        raise GridError(f"{what} `{text.strip()}` is beyond the range of a number "
                        "(1e-308 to 1.8e308 in magnitude)")
    unit = m.group("unit")
    if unit:
        from astral_dsl.units import parse_unit
        from astral_dsl.units.table import UnitSpecError

        try:
            parse_unit(unit)
        except UnitSpecError as exc:
            raise GridError(f"{what} `{text.strip()}`: {exc}") from None
    return value, unit


def number_and_unit(text: str) -> Optional[Tuple[float, str]]:
    """A grid value read as a number and its unit ("" for none), or None when it is no number
    (a string, `true`)."""
    m = _NUMBER.fullmatch(text)
    return (float(m.group("num")), m.group("unit")) if m is not None else None


def quantity_si(text: str, like: str, what: str) -> float:
    """A quantity written on the command line (`4 yr`), in SI, of the dimension of unit
    `like`."""
    from astral_dsl.units import parse_unit

    value, unit = _fraction(text, f"{what}")
    want = parse_unit(like)
    if not unit or parse_unit(unit).dims != want.dims:
        raise GridError(f"{what} {text.strip()}: write a quantity in {like} or another unit of "
                        "its kind (e.g. `4 yr`)")
    si = value * parse_unit(unit).scale
    if abs(si) > _FLOAT_MAX:                   # 1e308 yr: a number, but not in seconds
        raise GridError(f"{what} {text.strip()}: beyond the range of a number in {like} "
                        "(1.8e308)")
    return float(si)


def _many(n: int) -> str:
    """A count of values for a message: 1,000,001, or past 10^15 its order (`1..2:1e-300`
    printed all 301 digits of 10^300 + 1)."""
    return f"{n:,}" if n < 10 ** 15 else f"about 10^{len(str(n)) - 1}"


def _show(value: Fraction, unit: str) -> str:
    text = _decimal(value)
    return f"{text} {unit}" if unit else text


PLAIN_DIGITS = 15        # beyond this many digits before or after the point: 1.5e300


def _decimal(value: Fraction) -> str:
    """A terminating decimal exactly (1/8 -> 0.125, 10^300 -> 1e300); otherwise 12 significant
    digits. Never through float, whose range a literal may exceed."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    num, den = abs(value.numerator), value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        from decimal import Context

        d = Context(prec=12).divide(num, value.denominator)
        return sign + _compact(*_digits(d))
    k = max(twos, fives)
    scaled = num * 10 ** k // value.denominator       # exact: value = scaled / 10^k
    return sign + _compact(str(scaled), -k)


def _digits(d) -> Tuple[str, int]:
    t = d.as_tuple()
    return "".join(map(str, t.digits)), t.exponent


def _compact(digits: str, exponent: int) -> str:
    """digits x 10^exponent as a plain decimal, or in scientific notation when long."""
    stripped = digits.rstrip("0") or "0"
    exponent += len(digits) - len(stripped)
    digits = stripped
    lead = len(digits) + exponent                    # digits before the point
    if -PLAIN_DIGITS < lead <= PLAIN_DIGITS + 1 and exponent > -PLAIN_DIGITS - 6:
        if exponent >= 0:
            return digits + "0" * exponent
        if lead > 0:
            return digits[:lead] + "." + digits[lead:]
        return "0." + "0" * -lead + digits
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{lead - 1}"


def _same_unit(a: str, b: str, spec: str) -> str:
    """The unit of a range: both ends' (a bare end takes the other's)."""
    if a and b and a != b:
        from astral_dsl.units import parse_unit

        ua, ub = parse_unit(a), parse_unit(b)
        if ua.dims != ub.dims or ua.point != ub.point:
            raise GridError(f"`{spec}`: the ends are in `{a}` and `{b}`, which measure "
                            "different things")
        raise GridError(f"`{spec}`: write both ends in the same unit (`{a}` and `{b}`)")
    return a or b


def _step_in(step: Fraction, step_unit: str, unit: str, spec: str) -> Fraction:
    """A step written in another unit than the ends, in the ends' unit, exactly
    (`600W..1kW`-like ends stay an error, but `40kW..50kW:500W` steps 0.5 kW). The step of a
    range of temperature points is a difference (`80degC..90degC:5K`, `delta_degF`), as the
    language adds a difference to a point, never a point (`5degC`)."""
    from astral_dsl.units import parse_unit

    su, eu = parse_unit(step_unit), parse_unit(unit)
    if su.point and eu.point:
        raise GridError(f"`{spec}`: the step of a range of temperatures is a difference: write "
                        f"`{_decimal(step)} K` (or `delta_degC`, `delta_degF`), not "
                        f"`{step_unit}`")
    if su.dims != eu.dims or su.point:
        raise GridError(f"`{spec}`: the step is in `{step_unit}` and the ends in `{unit}`, "
                        "which measure different things")
    return step * Fraction(su.scale) / Fraction(eu.scale)


def parse_spec(name: str, spec: str) -> Grid:
    try:
        return _parse_spec(name, spec)
    except GridError as exc:
        message = str(exc)
        if message.startswith("--grid"):
            raise
        raise GridError(f"--grid {name}={spec.strip()}: {message.lstrip('`').split('`: ', 1)[-1] if message.startswith('`') else message}") from None


def _parse_spec(name: str, spec: str) -> Grid:
    text = spec.strip()
    if not text:
        raise GridError(f"--grid {name}= has no values; write a range such as `2..6`, "
                        "`2..10:2` or a list such as `40kW,45kW`")
    if ".." in text and not text.startswith('"'):
        return _range(name, text)
    items = [t.strip() for t in split_list(text)]
    if any(not t for t in items):
        raise GridError(f"--grid {name}={spec}: an empty value in the list")
    values: List[str] = []
    first: Dict[object, str] = {}          # each value's key: the value it repeats
    again: Dict[str, List[str]] = {}       # a value kept: the repeats of it dropped
    for item in items:
        if _NUMBER.fullmatch(item):
            num, unit = _fraction(item, "value")
            value, key = _show(num, unit), _same(num, unit)
        else:
            value = key = item
        if key in first:
            again.setdefault(first[key], []).append(item)
            continue
        first[key] = value
        values.append(value)
    return Grid(name, tuple(values), _repeats(name, text, values, again))


def _same(num: Fraction, unit: str) -> object:
    """What two listed numbers share when they are the same value: `40kW` and `40000 W`,
    `1` and `1.0` (a temperature point by its unit as written: `20degC` is not `293.15K`)."""
    if not unit:
        return num
    from astral_dsl.units import parse_unit

    u = parse_unit(unit)
    if u.point:
        return (num, unit)
    return (num * Fraction(u.scale), u.dims)


def _repeats(name: str, text: str, values: List[str],
             again: Dict[str, List[str]]) -> Optional[str]:
    """The note of a list that gives a value more than once: each point is evaluated once (a
    repeat would be a second row of the same point, the same work again)."""
    if not again:
        return None
    said = "; ".join(f"`{v}` again as " + ", ".join(f"`{r}`" for r in again[v])
                     for v in values if v in again)
    return f"--grid {name}={text} lists a value more than once ({said}): each is evaluated once"


def split_list(text: str) -> List[str]:
    """Split on commas outside double quotes."""
    out, cur, quoted = [], [], False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if quoted:
        raise GridError(f"`{text}`: an unterminated string")
    out.append("".join(cur))
    return out


def _range(name: str, text: str) -> Grid:
    body, _, step_text = text.partition(":")
    if body.count("..") != 1:
        raise GridError(f"--grid {name}={text}: a range is START..END or START..END:STEP "
                        "(START..<END stops before END)")
    start_text, end_text = body.split("..")
    open_end = end_text.startswith("<")          # `2..<6`: 6 is not a value
    if open_end:
        end_text = end_text[1:]
    if not start_text.strip() or not end_text.strip():
        raise GridError(f"--grid {name}={text}: a range needs both ends, e.g. `2..6`")
    start, su = _fraction(start_text, "the start")
    end, eu = _fraction(end_text, "the end")
    unit = _same_unit(su, eu, text)
    if step_text.strip():
        step, tu = _fraction(step_text, "the step")
        if tu and unit:
            step = _step_in(step, tu, unit, text)
        unit = unit or tu
    elif ":" in text:
        raise GridError(f"--grid {name}={text}: the step after `:` is missing")
    else:
        step = Fraction(1)
        if open_end and end == start:
            raise GridError(f"--grid {name}={text}: the range is empty (`..<` stops before its "
                            f"end, which is its start); write `{start_text.strip()}.."
                            f"{end_text.strip()}` for the one value")
        if end < start:
            op = "..<" if open_end else ".."
            raise GridError(f"--grid {name}={text}: the range is empty (the end is below the "
                            f"start); write `{start_text.strip()}{op}{end_text.strip()}:-1` to "
                            "count down")
    if step == 0:
        raise GridError(f"--grid {name}={text}: the step is zero")
    if (end - start) * step < 0 or (open_end and end == start):
        raise GridError(f"--grid {name}={text}: the step {step_text.strip()} goes away from the "
                        "end, so the range is empty")
    span = (end - start) / step
    # inclusive: every step up to the end; `..<`: every step before it
    count = (math.ceil(span) if open_end else int(span) + 1)
    if count > MAX_POINTS:
        raise GridError(f"--grid {name}={text}: {_many(count)} values, more than a sweep takes "
                        f"({MAX_POINTS:,})")
    values = tuple(_show(start + i * step, unit) for i in range(count))
    last = start + (count - 1) * step
    note = None
    if last != end and not open_end:
        note = f"--grid {name}={text} stops at {_show(last, unit)}, short of {_show(end, unit)}"
    return Grid(name, values, note)


def parse_grids(specs: Sequence[str], sets: Dict[str, str]) -> List[Grid]:
    """`--grid` options in order; a parameter may appear once, and not in `--set` too."""
    grids: List[Grid] = []
    seen = set()
    for item in specs:
        if "=" not in item:
            raise GridError(f"--grid expects NAME=VALUES, got `{item}` (e.g. "
                            "`--grid hosts_per_rack=2..6`)")
        name, spec = item.split("=", 1)
        name = name.strip()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise GridError(f"--grid {item}: `{name}` is not a parameter name")
        if name in seen:
            raise GridError(f"--grid {name} is given twice; list every value in one --grid")
        if name in sets:
            raise GridError(f"{name} is given both by --grid and by --set; a swept parameter "
                            "takes its values from --grid alone")
        seen.add(name)
        grids.append(parse_spec(name, spec))
    too_many = too_many_points(math.prod(len(g.values) for g in grids))
    if too_many is not None:
        raise GridError(too_many)
    return grids


def too_many_points(total: int) -> Optional[str]:
    """Why grids of `total` points are more than a sweep takes, or None."""
    if total <= MAX_POINTS:
        return None
    return (f"the grids make {_many(total)} points, more than a sweep takes ({MAX_POINTS:,}); "
            f"narrow a range or take a larger step")


def points(grids: Sequence[Grid]) -> Iterator[Dict[str, str]]:
    """Every point of the grid, the first grid varying slowest, each made as it is taken (a
    sweep takes a round of them at a time: explore/sweep.py evaluate)."""
    names = [g.name for g in grids]
    return (dict(zip(names, combo)) for combo in itertools.product(*[g.values for g in grids]))


def check_names(grids: Sequence[Grid], params: Dict[str, object]) -> None:
    """Every swept name is a top-level `param` of the design, with values of its dimension."""
    from astral_dsl.diagnostics import did_you_mean
    from astral_dsl.units import Quantity

    for g in grids:
        if g.name not in params:
            hint = did_you_mean(g.name, params) or (
                "parameters: " + ", ".join(params) if params else "it declares no `param`")
            raise GridError(f"--grid {g.name}: the design has no parameter `{g.name}` ({hint})")
        current = params[g.name]
        if isinstance(current, bool) or isinstance(current, str):
            _check_literals(g, current)
            continue
        if not isinstance(current, Quantity):
            continue
        for value in g.values:
            m = _NUMBER.fullmatch(value)
            if not m:
                raise GridError(f"--grid {g.name}: `{value}` is not a number, and `{g.name}` is "
                                f"a quantity ({current})", g.name)
            unit = m.group("unit")
            if unit:
                from astral_dsl.units import parse_unit

                u = parse_unit(unit)
                if u.dims != current.dims or u.point != current.point:
                    # a range of bare ends takes its step's unit: a difference (`80..90:5K`
                    # is 80 K to 90 K) where the parameter holds temperatures
                    hint = (f": a temperature takes `degC` or `degF`; a range of them is "
                            f"written with its ends' unit and a difference as its step, "
                            f"`80degC..90degC:5K`" if current.point and u.dims == current.dims
                            else "")
                    raise GridError(f"--grid {g.name}: `{value}` is not a {current.dimension()} "
                                    f"like `{g.name}` ({current}){hint}", g.name)


def _check_literals(g: Grid, current) -> None:
    """A yes/no parameter takes `true` or `false`, a text parameter quoted strings (as
    `--set` does): anything else is a usage error, not an error on every row."""
    for value in g.values:
        if isinstance(current, bool) and value not in ("true", "false"):
            raise GridError(f"--grid {g.name}: `{value}` is not `true` or `false`, and "
                            f"`{g.name}` is a yes/no value ({str(current).lower()})", g.name)
        if isinstance(current, str) and not (len(value) >= 2 and value[0] == value[-1] == '"'):
            raise GridError(f"--grid {g.name}: `{value}` is not a quoted string, and "
                            f"`{g.name}` is text (\"{current}\"); write --grid "
                            f"'{g.name}=\"{value}\"'", g.name)
