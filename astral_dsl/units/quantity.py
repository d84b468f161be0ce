"""Quantities: a float value in SI base units, a dimension vector, and the unit to show it in."""
from __future__ import annotations

import math
import numbers
from fractions import Fraction
from functools import lru_cache

from astral_dsl import records

from astral_dsl.units.dimension import DIMENSIONLESS, Dim, dimension_name, div, mul, power
from astral_dsl.units.spelling import combined_unit, preferred_unit, unit_power
from astral_dsl.units.table import MAX_DIMENSION_EXPONENT, MAX_UNIT_EXPONENT, Unit, parse_unit


class UnitError(ValueError):
    """An invalid operation on quantities; the evaluator turns it into a diagnostic with a span."""

    def __init__(self, code: str, message: str, hint: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint


def _pow_error(base: "Quantity", exponent: "Quantity", exc: Exception) -> UnitError:
    """E309 for `base ^ exponent` that Python could not compute, in words (not Python's
    `(34, 'Numerical result out of range')`); a negative base in brackets, as written."""
    base = f"({base})" if base.si < 0 else base
    if isinstance(exc, ZeroDivisionError):
        return UnitError("E309", f"{base} ^ {exponent} divides by zero",
                         "zero has no negative power")
    if isinstance(exc, TypeError):
        return UnitError("E309", f"{base} ^ {exponent} is not a real number",
                         "a negative number has no fractional power")
    return UnitError("E309", f"{base} ^ {exponent} is too large to compute",
                     "the largest number is about 1.8e308")


# a check's `==` holds within a part in 10^9 of the larger side (the rounding of a chain of
# conversions and sums): relative only, so that an amount is never equal to zero unless it is
# zero (an absolute floor of 1e-309 made `1e-160 W * 1e-160 > 0 W`, 1e-320 W, false)
CHECK_TOLERANCE = 1e-9


def same_amount(a: float, b: float) -> bool:
    """Are two amounts in SI units equal as a check compares them?"""
    return abs(a - b) <= CHECK_TOLERANCE * max(abs(a), abs(b))


def format_number(x: float) -> str:
    """Deterministic, readable: up to 10 significant digits, no trailing zeros, no exponent for
    everyday magnitudes."""
    if x != x or math.isinf(x):
        return str(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    text = f"{x:.10g}"
    if "e" in text:
        mantissa, exp = text.split("e")
        return f"{mantissa}e{int(exp)}"
    return text


@lru_cache(maxsize=8192)         # a large design's values repeat (benchmarks/bench_scale.py)
def _shortest(exact: float, unit: str, si: float) -> float:
    """The decimal with the fewest digits after the point that `unit` converts back to the SI
    value `si`, as a literal in that unit would be (Quantity.from_unit); `exact` itself when no
    shorter one does."""
    u = parse_unit(unit)
    for digits in range(16):
        candidate = round(exact, digits) + 0.0      # + 0.0: no -0
        if not math.isfinite(candidate):
            break
        back = float(Fraction(candidate) * u.scale + u.offset) if u.point else \
            candidate * float(u.scale)
        if back == si:
            return candidate
    return exact


@records.frozen(eq=False)
class Quantity:
    si: float                  # value in SI base units (points: absolute kelvin)
    dims: Dim = DIMENSIONLESS
    unit: str = ""             # display unit ("" for plain numbers)
    point: bool = False        # a temperature point

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def of(cls, value: float, unit: str = "") -> "Quantity":
        """`value` in `unit` (a unit name, "" for a plain number): `Quantity.of(40, "kW")`. A
        value that is not a real number (a str, None, a bool) and a unit that is not a str
        raise TypeError; a unit the table does not know, UnitSpecError; NaN, an infinity, an int
        beyond a float (10**400: an OverflowError from float()) and a value beyond one in SI
        units (`1e308 kW`), ValueError: an amount is a finite number, as a literal is (E106)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"the value of a Quantity is a number (an int or a float), not "
                            f"{type(value).__name__}")
        try:
            number = float(value)
        except OverflowError:
            raise ValueError(f"the value of a Quantity is too large to represent (beyond "
                             f"about 1.8e308): an int of {int(value).bit_length()} bits") from None
        if not math.isfinite(number):
            raise ValueError(f"the value of a Quantity is a finite number, not {number}")
        if not isinstance(unit, str):
            raise TypeError(f"a unit is a unit name (a str such as \"kW\"), not "
                            f"{type(unit).__name__}")
        if not unit:
            return cls(number)
        q = cls.from_unit(value, parse_unit(unit))
        if not math.isfinite(q.si):
            raise ValueError(f"{format_number(number)} {unit} is too large to represent in SI "
                             f"units (beyond about 1.8e308)")
        return q

    @classmethod
    def from_unit(cls, value: float, u: Unit) -> "Quantity":
        si = float(Fraction(value) * u.scale + u.offset) if u.point else float(value) * float(u.scale)
        return cls(si, u.dims, u.name, u.point)

    # -- reading -----------------------------------------------------------------------------------
    @property
    def dimensionless(self) -> bool:
        return self.dims == DIMENSIONLESS and not self.point

    def value_in(self, unit: str | Unit) -> float:
        u = parse_unit(unit) if isinstance(unit, str) else unit
        if u.dims != self.dims or u.point != self.point:
            raise UnitError("E301", f"cannot express {self.describe()} in `{u.name}`")
        if u.point:
            return float((Fraction(self.si) - u.offset) / u.scale)
        return self.si / float(u.scale)

    @property
    def magnitude(self) -> float:
        """The value in its display unit (what `astral export` writes and messages show). It is
        held in SI units, as the float nearest its exact value: `40 degC` is the float nearest
        313.15 K, whose exact difference from 273.15 K is 39.99999999999998, and `48 U` reads
        48.00000000000001 back. The magnitude is the shortest decimal that converts back to the
        same SI float (40, 48): what the source wrote, where the conversion alone made the
        difference; a computed value keeps all its digits."""
        if not self.unit:
            return self.si
        return _shortest(self.value_in(self.unit), self.unit, self.si)

    def dimension(self) -> str:
        return dimension_name(self.dims, self.point)

    def describe(self) -> str:
        return f"{self.dimension()} ({self.unit})" if self.unit else self.dimension()

    def __str__(self) -> str:
        if not self.unit:
            return format_number(self.si)
        return f"{format_number(self.magnitude)} {self.unit}"

    def __repr__(self) -> str:
        return f"Quantity({self})"

    def __format__(self, spec: str) -> str:
        """`f"{q:.3f}"`: the magnitude formatted with `spec` as a float is, then the unit as
        str() shows it (`40.812 kW`); an empty spec is str(q). A spec a float does not take
        is the float's ValueError."""
        if not spec:
            return str(self)
        number = format(self.magnitude, spec)
        return f"{number} {self.unit}" if self.unit else number

    def key(self):
        """What equality and hashing compare: the SI value to 12 significant digits (a float's
        last digits are rounding), its dimension and whether it is a point. Relative, not a
        number of decimals: 1e-13 W and 4e-13 W differ (rounded to 12 decimals both were 0,
        and two instantiations of a template with them shared one instance)."""
        return (float(f"{self.si:.12g}") + 0.0, self.dims, self.point)

    def __eq__(self, other) -> bool:
        return isinstance(other, Quantity) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    # ordering, as `<` in the language: quantities of one dimension (UnitError E301 for two
    # dimensions, E302 for a point and a difference); equal ones (==) are not less
    def _below(self, other: object) -> bool:
        return self.compare(other) < 0 and self != other      # type: ignore[arg-type]

    def __lt__(self, other: object) -> bool:
        return self._below(other) if isinstance(other, Quantity) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return other._below(self) if isinstance(other, Quantity) else NotImplemented

    def __le__(self, other: object) -> bool:
        return not other._below(self) if isinstance(other, Quantity) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return not self._below(other) if isinstance(other, Quantity) else NotImplemented

    def is_whole(self) -> bool:
        return self.dimensionless and float(self.si).is_integer()

    # -- arithmetic --------------------------------------------------------------------------------
    def _same_dims(self, other: "Quantity", verb: str) -> None:
        if self.dims != other.dims:
            raise UnitError(
                "E301", f"cannot {verb} {self.describe()} and {other.describe()}",
                "both sides need the same dimension")

    def add(self, other: "Quantity") -> "Quantity":
        self._same_dims(other, "add")
        if self.point and other.point:
            raise UnitError("E302", f"cannot add two temperature points ({self} + {other})",
                            "add a temperature difference in K, e.g. `40 degC + 10 K`")
        unit = self.unit if (self.point or not other.point) else other.unit
        point = self.point or other.point
        if not point and not self.unit:
            unit = other.unit
        return Quantity(_finite(self.si + other.si, "sum"), self.dims, unit, point)

    def sub(self, other: "Quantity") -> "Quantity":
        self._same_dims(other, "subtract")
        if other.point and not self.point:
            raise UnitError("E302", f"cannot subtract a temperature point from a difference "
                                    f"({self} - {other})")
        if self.point and other.point:
            return Quantity(self.si - other.si, self.dims, "K", False)
        unit = self.unit or other.unit
        return Quantity(_finite(self.si - other.si, "difference"), self.dims, unit, self.point)

    def _no_points(self, other: "Quantity", verb: str) -> None:
        for q in (self, other):
            if q.point:
                raise UnitError("E302", f"cannot {verb} a temperature point ({q})",
                                "subtract two points to get a difference in K first")

    def mul(self, other: "Quantity") -> "Quantity":
        self._no_points(other, "multiply")
        dims = _within(self.dims, other.dims, self, other, "*")
        return Quantity(_finite(self.si * other.si, "product", self.si and other.si),
                        dims, _combine(self, other, "*", dims), False)

    def div(self, other: "Quantity") -> "Quantity":
        self._no_points(other, "divide")
        if other.si == 0:
            raise UnitError("E305", "division by zero",
                            "the divisor is 0: check it, or choose with `if d > 0 then a / d "
                            "else ...`")
        dims = _within(self.dims, other.dims, self, other, "/")
        return Quantity(_finite(self.si / other.si, "quotient", self.si),
                        dims, _combine(self, other, "/", dims), False)

    def pow(self, exponent: "Quantity") -> "Quantity":
        if not exponent.dimensionless:
            raise UnitError("E301", f"an exponent must be a plain number, not {exponent.describe()}")
        if self.point:
            raise UnitError("E302", f"cannot raise a temperature point to a power ({self})")
        n = exponent.si
        if not self.dimensionless:
            if not float(n).is_integer():
                raise UnitError("E308", "a quantity with units can only be raised to a whole power",
                                "raise a plain number: divide by the unit first, as in "
                                "`(a / 1 m^2) ^ 0.5 * 1 m`")
            try:
                value = _finite(float(self.si ** n), "power", self.si)
            except (OverflowError, ZeroDivisionError) as exc:
                raise _pow_error(self, exponent, exc) from None
            if abs(n) > MAX_UNIT_EXPONENT or any(abs(e * n) > MAX_DIMENSION_EXPONENT
                                                 for e in self.dims):
                raise UnitError("E313", f"{self.describe()} raised to {format_number(n)} is "
                                        f"beyond the exponents of any physical unit",
                                f"units take exponents up to ±{MAX_UNIT_EXPONENT}")
            dims = power(self.dims, int(n))
            return Quantity(value, dims, unit_power(self.unit, int(n), dims), False)
        try:
            return Quantity(_finite(float(self.si ** n), "power", self.si))
        except (OverflowError, ZeroDivisionError, TypeError) as exc:
            raise _pow_error(self, exponent, exc) from None

    def neg(self) -> "Quantity":
        if self.point:
            raise UnitError("E302", f"cannot negate a temperature point ({self})")
        return Quantity(-self.si, self.dims, self.unit, False)

    def compare(self, other: "Quantity") -> float:
        self._same_dims(other, "compare")
        if self.point != other.point:
            raise UnitError("E302", f"cannot compare a temperature point with a difference "
                                    f"({self} and {other})")
        return self.si - other.si

    def to(self, unit: "Unit | str") -> "Quantity":
        """The same amount shown in `unit` (a Unit, or its name: `q.to("kW")`); a unit of
        another dimension raises UnitError (E301)."""
        if isinstance(unit, str):
            unit = parse_unit(unit)
        elif not isinstance(unit, Unit):
            raise TypeError(f"a unit is a unit name (a str such as \"kW\"), not "
                            f"{type(unit).__name__}")
        if unit.dims != self.dims or unit.point != self.point:
            target = dimension_name(unit.dims, unit.point)
            shown = self.unit if self.point else preferred_unit(self.dims)
            hint = (f"a plain number takes a unit by a product: `n * 1 {unit.name}`"
                    if self.dimensionless else f"`to` converts within one dimension: "
                    f"{dimension_name(self.dims, self.point)} is shown in units such as `{shown}`")
            if unit.dims == self.dims:       # a temperature point to `K`, a difference to degC
                hint = ("a temperature point converts to `degC` or `degF`; the difference from "
                        "absolute zero is `t - -273.15 degC`" if self.point else
                        "a temperature difference converts to `K`, `delta_degC` or `delta_degF`")
            raise UnitError("E301", f"cannot convert {self.describe()} to `{unit.name}` ({target})",
                            hint)
        return Quantity(self.si, self.dims, unit.name, self.point)


def _finite(value: float, what: str, nonzero: float = 0.0) -> float:
    """`value`, or E309 when it is beyond the floats: infinite or not real, or 0 although
    `nonzero` (the operands that decide it: both factors of a product, a quotient's numerator,
    a power's base) is not: `1e-300 W / 1e300` underflows, as the literal `1e-400` is E106."""
    if isinstance(value, complex) or not math.isfinite(value):
        raise UnitError("E309", f"the {what} is too large (or not a real number) to compute",
                        "the largest number is about 1.8e308 in SI units: check the exponents "
                        "and the units of the operands")
    if value == 0 and nonzero:
        raise UnitError("E309", f"the {what} is too small to represent: it would be read as 0",
                        "the smallest number above zero is about 5e-324 in SI units: check the "
                        "exponents and the units of the operands, or write 0")
    return value


def _within(left: Dim, right: Dim, a: Quantity, b: Quantity, op: str) -> Dim:
    """The dimension of `a op b` (of dimensions `left` and `right`), when a unit can spell it
    (E313 otherwise, as for a power: `1 m^12 * 1 m^12 * 1 m^12` is no physical quantity)."""
    dims, beyond = _dims_of(left, right, op)
    if beyond:
        raise UnitError("E313", f"{a.describe()} {op} {b.describe()} is beyond the exponents of "
                                f"any physical unit",
                        f"units take a base dimension to at most ±{MAX_DIMENSION_EXPONENT}: "
                        f"check the units of the operands")
    return dims


@lru_cache(maxsize=4096)       # a few pairs of dimensions, at every product and quotient
def _dims_of(left: Dim, right: Dim, op: str):
    """The dimension of a product (`op` `*`) or quotient, and whether it is beyond the
    exponents of any physical unit."""
    dims = mul(left, right) if op == "*" else div(left, right)
    return dims, any(abs(e) > MAX_DIMENSION_EXPONENT for e in dims)


def _combine(a: Quantity, b: Quantity, op: str, dims: Dim) -> str:
    """A display unit for a product or quotient of dimension `dims` (spelling.combined_unit):
    a plain number or a ratio adds no unit; a dimensionless result is a plain number."""
    if dims == DIMENSIONLESS:
        return ""
    return _spelled("" if a.dimensionless else a.unit, "" if b.dimensionless else b.unit,
                    op, dims)


# a design's products and quotients repeat a few pairs of units (`k * j W`: a count times
# watts, at every step of a `let`): their spelling, a pure function of the two units, the
# operator and the dimension, is worked out once per pair (a quarter of a compile's time
# at the evaluation budget: benchmarks/bench_limits.py)
_spelled = lru_cache(maxsize=4096)(combined_unit)
