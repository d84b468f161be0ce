"""Values produced by evaluation (besides Quantity, bool and str).

Replication stays symbolic: a Group is a tuple of runs (count, item) and never one object per
replica, so 524,288 GPUs are one run of (524288, H800)."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import attrs

from astral_dsl import records

from astral_dsl.units import Quantity, format_number


@records.frozen
class Symbol:
    """An enumeration value written as a bare name (`selective`, `hvdc`)."""
    name: str

    def __str__(self) -> str:
        return self.name


@records.frozen
class ListValue:
    items: Tuple[Any, ...]

    def __str__(self) -> str:
        return "[" + ", ".join(show(i) for i in self.items) + "]"


@records.frozen
class RangeValue:
    """Whole numbers from `start` up to `stop` (exclusive), written `start..stop-1` (`a..b`
    holds b) or `start..<stop`."""
    start: int
    stop: int   # exclusive
    inclusive: bool = attrs.field(default=True, eq=False)   # as written: `a..b` or `a..<b`

    def __len__(self) -> int:
        return max(0, self.stop - self.start)

    @property
    def last(self) -> int:
        return self.stop - 1

    def __str__(self) -> str:
        if self.inclusive and self.stop > self.start:
            return f"{self.start}..{self.stop - 1}"
        return f"{self.start}..<{self.stop}"


@records.frozen
class Bundle:
    """`128 x 200 Gb/s`: a count of equal quantities (ports, links, modules)."""
    count: int
    item: Quantity

    @property
    def total(self) -> Quantity:
        return Quantity(self.item.si * self.count, self.item.dims, self.item.unit, False)

    def __str__(self) -> str:
        return f"{self.count} x {self.item}"


@records.frozen(eq=False)
class Run:
    count: int
    item: Any          # an instance (Frame while evaluating, Instance in the model) or a pattern
    #                    (a Group repeated `count` times in order: 4 x [A, B] is A B A B ...)


def _size(item) -> int:
    return item.count if isinstance(item, Group) else 1


@records.frozen(eq=False)
class Group:
    """An ordered multiset of instances as runs. Index i is the i-th replica in order."""
    runs: Tuple[Run, ...]

    @property
    def count(self) -> int:
        return sum(r.count * _size(r.item) for r in self.runs)

    def repeat(self, n: int) -> "Group":
        if len(self.runs) == 1:
            run = self.runs[0]
            return Group((Run(run.count * n, run.item),))
        return Group((Run(n, self),)) if n != 1 else self

    def at(self, index: int):
        for run in self.runs:
            size = _size(run.item)
            if index < run.count * size:
                return run.item.at(index % size) if isinstance(run.item, Group) else run.item
            index -= run.count * size
        raise IndexError(index)

    def slice(self, start: int, stop: int) -> "Group":
        runs = []
        pos = 0
        for run in self.runs:
            size = _size(run.item)
            span = run.count * size
            lo, hi = max(start, pos), min(stop, pos + span)
            if lo < hi:
                if size == 1:
                    runs.append(Run(hi - lo, run.item))
                else:
                    a, b = lo - pos, hi - pos          # offsets inside this run
                    first, last = a // size, (b - 1) // size
                    if first == last:
                        runs.extend(run.item.slice(a % size, (b - 1) % size + 1).runs)
                    else:
                        if a % size:
                            runs.extend(run.item.slice(a % size, size).runs)
                            first += 1
                        full_end = last if b % size else last + 1
                        if full_end > first:
                            runs.append(Run(full_end - first, run.item))
                        if b % size:
                            runs.extend(run.item.slice(0, b % size).runs)
            pos += span
        return Group(merge_runs(runs))

    def flat(self) -> Tuple[Tuple[int, Any], ...]:
        """(count, instance) per distinct instance, in order of first appearance; for counting
        and aggregates, where order does not matter."""
        order: dict = {}
        for run in self.runs:
            if isinstance(run.item, Group):
                for c, item in run.item.flat():
                    slot = order.setdefault(id(item), [0, item])
                    slot[0] += c * run.count
            else:
                slot = order.setdefault(id(run.item), [0, run.item])
                slot[0] += run.count
        return tuple((c, item) for c, item in order.values())

    def positions(self):
        """(first index, total count, instance) per distinct instance."""
        first: dict = {}
        _first_positions(self, 0, first)
        return tuple((first[id(item)], c, item) for c, item in self.flat())

    def items(self, limit: int):
        """Every replica in order (None when there are more than `limit`)."""
        if self.count > limit:
            return None
        out = []
        for run in self.runs:
            if isinstance(run.item, Group):
                out.extend(run.item.items(limit) * run.count)
            else:
                out.extend([run.item] * run.count)
        return out

    def map(self, fn) -> "Group":
        """Apply fn to every distinct leaf, keeping the structure (fn returns an instance)."""
        return Group(tuple(Run(r.count, r.item.map(fn) if isinstance(r.item, Group) else fn(r.item))
                           for r in self.runs))

    def __str__(self) -> str:
        return " + ".join(f"{r.count} x {getattr(r.item, 'display', r.item)}" for r in self.runs)


def merge_runs(runs) -> Tuple[Run, ...]:
    """Join adjacent runs of the same item."""
    out: list = []
    for run in runs:
        if run.count <= 0:
            continue
        if out and out[-1].item is run.item:
            out[-1] = Run(out[-1].count + run.count, run.item)
        else:
            out.append(run)
    return tuple(out)


def concat(parts) -> "Group":
    """Concatenate instances and groups in order."""
    runs = []
    for p in parts:
        runs.extend(p.runs if isinstance(p, Group) else (Run(1, p),))
    return Group(merge_runs(runs))


def _first_positions(group: Group, base: int, first: dict) -> None:
    """The first index of each distinct instance under `group` from `base`, into `first` (by
    id). A function of the module, not a closure that calls itself (which is a reference
    cycle, left to the collector at every call)."""
    offset = base
    for run in group.runs:
        if isinstance(run.item, Group):
            _first_positions(run.item, offset, first)
            offset += run.count * run.item.count
        else:
            first.setdefault(id(run.item), offset)
            offset += run.count


@records.frozen(eq=False)
class Values:
    """The values of one attribute over a group: runs of (count, value)."""
    runs: Tuple[Tuple[int, Any], ...]

    @property
    def count(self) -> int:
        return sum(c for c, _ in self.runs)

    def __str__(self) -> str:
        return "{" + ", ".join(f"{c} x {show(v)}" for c, v in self.runs) + "}"


@records.frozen(eq=False)
class UnknownValue:
    """`?`: a value the sizing step chooses (an equipment count left in the model)."""
    domain: Any
    span: Any
    key: str = ""

    def __str__(self) -> str:
        return "?" if self.domain is None else f"? in {show(self.domain)}"


@records.frozen
class Choice:
    """A sizing assignment for a structural unknown: the index of the chosen option."""
    index: int


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
    if type(value).__name__ == "Namespace":
        return "module"
    kind = getattr(value, "kind", None)
    if kind:
        return f"{kind} `{getattr(value, 'display', '')}`"
    return type(value).__name__


def fabric_path(fabric: str, scope: Optional[Tuple[str, int]] = None, rail: Optional[int] = None,
                plane: Optional[int] = None, tier: Optional[str] = None,
                switch: Optional[int] = None) -> str:
    """The path of a part of a fabric as the language writes it (`F.pod[2].rail[3].plane[A]
    .agg[17]`): the one naming rule of selections, tier groups and switches."""
    out = fabric
    if scope is not None:
        out += f".{scope[0]}[{scope[1]}]"
    if rail is not None:
        out += f".rail[{rail}]"
    if plane is not None:
        out += f".plane[{plane_label(plane)}]"
    if tier is not None:
        out += f".{tier}"
    if switch is not None:
        out += f"[{switch}]"
    return out


@records.frozen(eq=False)
class FabricSelection:
    """Part of a fabric named by path: `fabric.rail[2].plane[B].tor` (rail 2, plane B's ToRs),
    `fabric.pod[2].rail[3].plane[A].agg[17]` (one switch: the tier's scope instance, rail and
    plane pick its group, the index the switch in it). `fabric` is the fabric instance (or a Ref
    to it in the model); `tier` a tier's name; `scope` (kind, index) of the tier's scope instance
    when the tier is replicated below the fabric's owner; `switch` one switch of the group."""
    fabric: Any
    rail: Optional[int] = None
    plane: Optional[int] = None
    tier: Optional[str] = None
    scope: Optional[Tuple[str, int]] = None
    switch: Optional[int] = None

    @property
    def display(self) -> str:
        base = getattr(self.fabric, "path", None) or getattr(self.fabric, "display", "fabric")
        return fabric_path(base, self.scope, self.rail, self.plane, self.tier, self.switch)

    def __str__(self) -> str:
        return self.display


@records.frozen(eq=False)
class FabricAxis:
    """`fabric.rail`, `fabric.plane` or `fabric.pod` (a tier's scope) waiting for its
    `[index]`."""
    selection: FabricSelection
    axis: str


@records.frozen(eq=False)
class NicPort:
    """One port of a NIC, `...hosts[0].nics[4].port[a]` (ports a, b, ...: port j of a NIC is on
    plane j mod planes). `nic` is the NIC (a Frame while evaluating, a Ref in the model)."""
    nic: Any
    port: int

    @property
    def display(self) -> str:
        base = getattr(self.nic, "path", None) or getattr(self.nic, "display", "nic")
        return f"{base}.port[{port_label(self.port)}]"

    def __str__(self) -> str:
        return self.display


@records.frozen(eq=False)
class PortAxis:
    """`nic.port` waiting for its `[a]`."""
    nic: Any


@records.frozen(eq=False)
class FabricLink:
    """`A -- B`: the link(s) between two ends, a NIC port and its first-tier switch, or a switch
    and a switch (or a tier group) of the tier above it."""
    ends: Tuple[Any, Any]

    @property
    def display(self) -> str:
        return " -- ".join(getattr(e, "display", str(e)) for e in self.ends)

    def __str__(self) -> str:
        return self.display


def plane_label(index: int) -> str:
    return chr(ord("A") + index) if 0 <= index < 26 else str(index)


def port_label(index: int) -> str:
    return chr(ord("a") + index) if 0 <= index < 26 else str(index)
