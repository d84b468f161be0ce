"""Values produced by evaluation (besides Quantity, bool and str).

Replication stays symbolic: a Group is a tuple of runs (count, item) and never one object per
replica, so 524,288 GPUs are one run of (524288, H800)."""
from __future__ import annotations

from typing import Any, Tuple

import attrs

from astral_dsl.units import Quantity, format_number


@attrs.frozen
class Symbol:
    """An enumeration value written as a bare name (`selective`, `hvdc`)."""
    name: str

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class ListValue:
    items: Tuple[Any, ...]

    def __str__(self) -> str:
        return "[" + ", ".join(show(i) for i in self.items) + "]"


@attrs.frozen
class RangeValue:
    start: int
    stop: int   # exclusive

    def __len__(self) -> int:
        return max(0, self.stop - self.start)

    def __str__(self) -> str:
        return f"{self.start}..{self.stop}"


@attrs.frozen
class Bundle:
    """`128 x 200 Gb/s`: a count of equal quantities (ports, links, modules)."""
    count: int
    item: Quantity

    @property
    def total(self) -> Quantity:
        return Quantity(self.item.si * self.count, self.item.dims, self.item.unit, False)

    def __str__(self) -> str:
        return f"{self.count} x {self.item}"


@attrs.frozen(eq=False)
class Run:
    count: int
    item: Any          # a Frame while evaluating, an Instance in the model


@attrs.frozen(eq=False)
class Group:
    """An ordered multiset of instances as runs. Index i is the i-th replica in order."""
    runs: Tuple[Run, ...]

    @property
    def count(self) -> int:
        return sum(r.count for r in self.runs)

    def at(self, index: int):
        for run in self.runs:
            if index < run.count:
                return run.item
            index -= run.count
        raise IndexError(index)

    def slice(self, start: int, stop: int) -> "Group":
        runs = []
        pos = 0
        for run in self.runs:
            lo, hi = max(start, pos), min(stop, pos + run.count)
            if lo < hi:
                runs.append(Run(hi - lo, run.item))
            pos += run.count
        return Group(merge_runs(runs))

    def __str__(self) -> str:
        return " + ".join(f"{r.count} x {getattr(r.item, 'display', r.item)}" for r in self.runs)


def merge_runs(runs) -> Tuple[Run, ...]:
    out: list[Run] = []
    for run in runs:
        if run.count <= 0:
            continue
        if out and out[-1].item is run.item:
            out[-1] = Run(out[-1].count + run.count, run.item)
        else:
            out.append(run)
    return tuple(out)


@attrs.frozen(eq=False)
class Values:
    """The values of one attribute over a group: runs of (count, value)."""
    runs: Tuple[Tuple[int, Any], ...]

    @property
    def count(self) -> int:
        return sum(c for c, _ in self.runs)

    def __str__(self) -> str:
        return "{" + ", ".join(f"{c} x {show(v)}" for c, v in self.runs) + "}"


@attrs.frozen(eq=False)
class UnknownValue:
    """`?`: a value the sizing step chooses."""
    domain: Any
    span: Any

    def __str__(self) -> str:
        return "?" if self.domain is None else f"? in {show(self.domain)}"


class _Poison:
    """The value of an expression that already produced an error: it silences follow-on errors."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<error>"


POISON = _Poison()


def show(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return format_number(value)
    display = getattr(value, "display", None)
    if display is not None:
        return display
    return str(value)


def type_name(value) -> str:
    if isinstance(value, bool):
        return "yes/no value"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Quantity):
        return "number" if value.dimensionless and not value.unit else value.describe()
    if isinstance(value, Symbol):
        return f"name `{value.name}`"
    if isinstance(value, ListValue):
        return "list"
    if isinstance(value, RangeValue):
        return "range"
    if isinstance(value, Bundle):
        return f"bundle of {value.item.describe()}"
    if isinstance(value, Group):
        return "group of instances"
    if isinstance(value, Values):
        return "values over a group"
    if isinstance(value, UnknownValue):
        return "unknown value `?`"
    kind = getattr(value, "kind", None)
    if kind:
        return f"{kind} `{getattr(value, 'display', '')}`"
    return type(value).__name__
