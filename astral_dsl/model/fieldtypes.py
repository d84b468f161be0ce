"""The field types of the kinds (model/kinds.py) and the helpers that declare fields: a quantity
in a dimension with its domain (`q`), an enumeration, a reference to another kind, lists and
bundles."""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Tuple

import attrs

from astral_dsl import records

from astral_dsl.model.domains import Domain, domain
from astral_dsl.model.names import check_pattern
from astral_dsl.units import DIMENSION_TYPES


# ---- field types -----------------------------------------------------------------------------------
@records.frozen
class QType:
    dim: str                      # a key of DIMENSION_TYPES
    whole: bool = False           # counts
    low: Optional[float] = None   # declared inclusive bounds in SI units (E309)
    high: Optional[float] = None
    domain: Optional[Domain] = None   # sign and plausible bounds (E314-E316; model/domains.py)

    def describe(self) -> str:
        return {"count": "a whole number", "ratio": "a ratio such as `75 %`",
                "number": "a number"}.get(self.dim, f"a {self.dim.replace('_', ' ')} quantity")


@records.frozen
class BoolType:
    def describe(self) -> str:
        return "`true` or `false`"


@records.frozen
class StrType:
    # the domain of the string: a function returning None or (code, message, hint)
    check: Optional[Callable[[str], Optional[Tuple[str, str, str]]]] = None

    def describe(self) -> str:
        return "a string"


@records.frozen
class EnumType:
    values: Tuple[str, ...]

    def describe(self) -> str:
        return "one of " + ", ".join(f"`{v}`" for v in self.values)


@records.frozen
class RefType:
    kinds: Tuple[str, ...]

    def describe(self) -> str:
        return " or ".join(f"a {k}" for k in self.kinds)


@records.frozen
class ListType:
    item: object

    def describe(self) -> str:
        return f"a list of {self.item.describe()}"


@records.frozen
class BundleType:
    dim: str

    @property
    def item(self) -> "QType":
        """Each item of the bundle (a link speed): in the dimension's default domain."""
        return QType(self.dim, domain=domain(self.dim))

    def describe(self) -> str:
        return f"a bundle such as `64 x 400 Gb/s` ({self.dim})"


@records.frozen
class AnyType:
    def describe(self) -> str:
        return "any value"


@records.frozen
class FieldSpec:
    type: object
    required: bool = False
    doc: str = ""


def q(dim: str, doc: str = "", required: bool = False, low=None, high=None, sign=None,
      limit=None, why=None, least=None, least_why=None) -> FieldSpec:
    """A quantity field: `low`/`high` are its declared range (E309), `sign`, `limit` and `least`
    narrow the domain of its dimension (model/domains.py)."""
    assert dim in DIMENSION_TYPES, dim
    whole = dim == "count"
    if dim == "ratio" and low is None:
        low = 0
    return FieldSpec(QType(dim, whole, low, high, domain(dim, sign, limit, why, least, least_why)),
                     required, doc)


def enum(*values: str, doc: str = "", required: bool = False) -> FieldSpec:
    return FieldSpec(EnumType(tuple(values)), required, doc)


def ref(*kinds: str, doc: str = "", required: bool = False) -> FieldSpec:
    return FieldSpec(RefType(tuple(kinds)), required, doc)


STR = FieldSpec(StrType())
BOOL = FieldSpec(BoolType())
ANY = FieldSpec(AnyType())


@records.frozen
class KindSpec:
    name: str
    doc: str
    fields: Mapping[str, FieldSpec]
    level: Optional[int] = None                 # physical hierarchy level
    records: Mapping[str, str] = attrs.field(factory=dict)   # record field -> record kind
    nested: Tuple[str, ...] = ()                # kinds that may be declared inside
    open_members: bool = False                  # accepts instance members under any name
    statements: Tuple[str, ...] = ("check", "let")  # statement forms allowed in the body
    root: bool = False                          # top-level declarations are instantiated

    @property
    def physical(self) -> bool:
        return self.level is not None


_COMMON = {"source": STR, "vendor": STR, "note": STR, "price": q("money", "purchase price")}


def make_kind(name, doc, fields, **kw) -> KindSpec:
    """A kind with the common fields (`source`, `vendor`, `note`, `price`) and its own."""
    merged = dict(_COMMON)
    merged.update(fields)
    return KindSpec(name, doc, merged, **kw)


PHYS = {"power": q("power", "peak electrical draw"),
        "liquid_share": q("ratio", "share of heat removed by cold plates", high=1)}
# a device's name, or the pattern that names each replica: `"gpu-{pod}-{rack:03}-{host}"`
# (model/names.py)
NAME = FieldSpec(StrType(check_pattern), doc="its name, or a pattern naming each replica, e.g. "
                                             "`\"gpu-{pod}-{rack:03}-{host}\"`")
GROUPING_FIELDS = dict(PHYS, power_limit=q("power", "maximum allowed draw"),
                       utilization=q("ratio", "average over peak load", high=1),
                       units=q("length", "height in rack units, e.g. `48 U`"), name=NAME)
