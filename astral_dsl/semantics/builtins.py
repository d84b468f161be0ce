"""Built-in functions: aggregates over groups and lists, and rounding."""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List

from astral_dsl.model.values import Bundle, Group, ListValue, RangeValue, Values, type_name
from astral_dsl.units import Quantity, UnitError


class BuiltinError(ValueError):
    def __init__(self, code: str, message: str, hint: str | None = None):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def _runs(args: List[Any], fname: str):
    """(count, value) pairs from one collection argument or from several plain arguments."""
    if len(args) == 1:
        x = args[0]
        if isinstance(x, Values):
            return list(x.runs)
        if isinstance(x, ListValue):
            return [(1, v) for v in x.items]
        if isinstance(x, Group):
            return list(x.flat())
        if isinstance(x, RangeValue):
            if len(x) > 100_000:
                raise BuiltinError("E401", f"`{fname}` over a range of {len(x):,} numbers",
                                   "use a formula, e.g. n * (n - 1) / 2")
            return [(1, Quantity(float(i))) for i in range(x.start, x.stop)]
    if not args:
        raise BuiltinError("E307", f"`{fname}` needs at least one argument")
    return [(1, v) for v in args]


def _quantities(runs, fname):
    # runs of plain quantities (nearly all: a sum over a group's instances) are the result as
    # they are: one type test each, not three isinstance calls and a copy (0.16 -> 0.02 s a
    # million); _runs made the list, and no caller changes it
    for _, v in runs:
        if type(v) is not Quantity:
            break
    else:
        return runs
    out = []
    for c, v in runs:
        if isinstance(v, Bundle):
            v = v.total
        if isinstance(v, Group):
            v = Quantity(float(v.count))
        if not isinstance(v, Quantity):
            raise BuiltinError("E303", f"`{fname}` works on quantities, not on a {type_name(v)}",
                               f"pass a field that holds one, e.g. `{fname}(racks.power)`")
        out.append((c, v))
    return out


_NO_SUM = "average them with `mean`, or sum temperature differences (`K`)"


def _sum(args):
    """Left to right, as `total.add(part)` for each (count, value) run would: the SI values
    added in that order as floats (the same sums, bit for bit), one Quantity made at the end
    (a sum over a large group made millions); a run that would raise (a temperature point,
    another dimension, a sum past the finite) goes the long way from there, for its error."""
    runs = _quantities(_runs(args, "sum"), "sum")
    if not runs:
        return Quantity(0.0)
    c, v = runs[0]
    if v.point:
        raise BuiltinError("E302", "cannot sum temperature points", _NO_SUM)
    if len(runs) == 1:
        return Quantity(v.si * c, v.dims, v.unit, v.point) if c != 1 else v
    si, dims, unit = v.si * c if c != 1 else v.si, v.dims, v.unit
    isfinite = math.isfinite
    for i in range(1, len(runs)):
        c, v = runs[i]
        if v.point or v.dims != dims:
            return _sum_from(Quantity(si, dims, unit), runs, i)
        total = si + (v.si * c if c != 1 else v.si)
        if isinstance(total, complex) or not isfinite(total):
            return _sum_from(Quantity(si, dims, unit), runs, i)
        si = total
        unit = unit or v.unit
    return Quantity(si, dims, unit)


def _sum_from(total: Quantity, runs, start: int) -> Quantity:
    """The long way of _sum from run `start` on: Quantity.add's checks and errors."""
    for c, v in runs[start:]:
        part = Quantity(v.si * c, v.dims, v.unit, v.point) if c != 1 else v
        if v.point:
            raise BuiltinError("E302", "cannot sum temperature points", _NO_SUM)
        total = total.add(part)
    return total


def _extreme(args, fname, pick):
    runs = _quantities(_runs(args, fname), fname)
    if not runs:
        raise BuiltinError("E307", f"`{fname}` of an empty collection")
    best = runs[0][1]
    for _, v in runs[1:]:
        if pick(v.compare(best)):
            best = v
    return best


def _mean(args):
    runs = _quantities(_runs(args, "mean"), "mean")
    n = sum(c for c, _ in runs)
    if n == 0:
        raise BuiltinError("E307", "`mean` of an empty collection")
    if any(v.point for _, v in runs):
        return _mean_point(runs, n)
    total = _sum(args)
    return Quantity(total.si / n, total.dims, total.unit, total.point)


def _mean_point(runs, n) -> Quantity:
    """The mean of temperature points (supplies of several loops): a point, its kelvin the mean
    of theirs, shown in the first one's unit. Points cannot be summed; averaged they can."""
    first = runs[0][1]
    if not all(v.point for _, v in runs):
        raise BuiltinError("E302", "cannot average temperature points with other quantities",
                           "average the points alone (a difference in `K` is no point)")
    return Quantity(sum(v.si * c for c, v in runs) / n, first.dims, first.unit, True)


def _count(args):
    if len(args) != 1:
        raise BuiltinError("E307", "`count` takes one group or list")
    x = args[0]
    if isinstance(x, (Group, Values)):
        return Quantity(float(x.count))
    if isinstance(x, ListValue):
        return Quantity(float(len(x.items)))
    if isinstance(x, RangeValue):
        return Quantity(float(len(x)))
    if isinstance(x, Bundle):
        return Quantity(float(x.count))
    raise BuiltinError("E303", f"`count` needs a group or a list, not a {type_name(x)}",
                       "e.g. `count(racks)` or `count([A, B])`")


def _truth(args, fname, combine):
    runs = _runs(args, fname)
    for _, v in runs:
        if not isinstance(v, bool):
            raise BuiltinError("E303", f"`{fname}` needs yes/no values, not a {type_name(v)}",
                               f"pass conditions, e.g. `{fname}(racks.power < 40 kW)`")
    return combine(v for _, v in runs)


def _rounding(fn, fname):
    def run(args):
        if len(args) != 1 or not isinstance(args[0], Quantity):
            raise BuiltinError("E307", f"`{fname}` takes one quantity")
        q = args[0]
        if q.point:
            raise BuiltinError("E302", f"cannot apply `{fname}` to a temperature point")
        value = fn(q.magnitude)
        return Quantity.of(value, q.unit) if q.unit else Quantity(float(value))
    return run


def _sqrt(args):
    if len(args) != 1 or not isinstance(args[0], Quantity) or not args[0].dimensionless:
        raise BuiltinError("E307", "`sqrt` takes one plain number")
    if args[0].si < 0:
        raise BuiltinError("E309", "`sqrt` of a negative number",
                           "a negative number has no real square root: check the sign")
    return Quantity(math.sqrt(args[0].si))


def _abs(args):
    if len(args) != 1 or not isinstance(args[0], Quantity):
        raise BuiltinError("E307", "`abs` takes one quantity")
    q = args[0]
    if q.point:      # was the point itself: `abs(-10 degC)` read -10 degC
        raise BuiltinError("E302", "cannot apply `abs` to a temperature point",
                           "a point has no sign of its own: take `abs` of a difference, e.g. "
                           "`abs(supply - 40 degC)`")
    return Quantity(abs(q.si), q.dims, q.unit)


BUILTINS: Dict[str, Callable[[List[Any]], Any]] = {
    "sum": _sum,
    "max": lambda a: _extreme(a, "max", lambda d: d > 0),
    "min": lambda a: _extreme(a, "min", lambda d: d < 0),
    "mean": _mean,
    "count": _count,
    "all": lambda a: _truth(a, "all", all),
    "any": lambda a: _truth(a, "any", any),
    "ceil": _rounding(math.ceil, "ceil"),
    "floor": _rounding(math.floor, "floor"),
    "round": _rounding(lambda x: math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1), "round"),
    "sqrt": _sqrt,
    "abs": _abs,
}


def call_builtin(name: str, args: List[Any]):
    try:
        return BUILTINS[name](args)
    except UnitError as exc:
        raise BuiltinError(exc.code, exc.message, exc.hint) from None
