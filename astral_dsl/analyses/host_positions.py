"""Where hosts sit inside the instance a fabric is attached to, without expanding replicas.

Hosts are numbered in the order the design lists them (the rank map's order: members in
declaration order, the replicas of a group in order), from 0 inside one replica of the fabric's
owner. A part of the design is then a set of intervals of those numbers: `pods[2]` is one
interval, `pods[*].rows[0]` one per pod, a ToR the hosts of its scope instance that land on it.
Everything is computed on the symbolic design (runs of counts): a path or a scope instance
costs O(path length x members), a route with ranges or wildcards O(the replicas it names),
bounded by LIMIT intervals."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl.model.design import Instance, Step
from astral_dsl.model.rollup import count_of
from astral_dsl.model.values import Group

Interval = Tuple[int, int]
LIMIT = 1 << 16

# compiled by `re` on first use, not at import: a check of the reference never uses it (for
# start-up)
_STEP = r"\.([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?"


class TooMany(Exception):
    """A route names more separate runs of hosts than LIMIT."""


def path_steps(path: str, base: str) -> Optional[Tuple[Step, ...]]:
    """The steps of canonical `path` below `base` (None when it is not below it)."""
    if path == base:
        return ()
    if not path.startswith(base + "."):
        return None
    rest = path[len(base):]
    steps, pos = [], 0
    for m in re.finditer(_STEP, rest):
        if m.start() != pos:
            return None
        steps.append(Step(m.group(1), int(m.group(2)) if m.group(2) is not None else None))
        pos = m.end()
    return tuple(steps) if pos == len(rest) else None


def route_below(steps: Sequence[Step], base: Sequence[Step]) -> Optional[Tuple[Step, ...]]:
    """The route steps below an owner at canonical steps `base` (the route's first steps must
    name the owner's replica: the same index, a range holding it, or `*`); None otherwise."""
    if len(steps) < len(base):
        return None
    for s, b in zip(steps, base):
        if s.name != b.name:
            return None
        if b.index is None or s.index in (None, "*"):
            continue
        if isinstance(s.index, tuple):
            if not s.index[0] <= b.index < s.index[1]:
                return None
        elif s.index != b.index:
            return None
    return tuple(steps[len(base):])


def merge(intervals) -> List[Interval]:
    out: List[List[int]] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def intersect(xs: Sequence[Interval], ys: Sequence[Interval]) -> List[Interval]:
    out, i, j = [], 0, 0
    xs, ys = merge(xs), merge(ys)
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if a < b:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def length(intervals: Sequence[Interval]) -> int:
    return sum(b - a for a, b in merge(intervals))


def first(intervals: Sequence[Interval], n: int) -> List[Interval]:
    """The first `n` positions of `intervals` taken in the order given."""
    out = []
    for a, b in intervals:
        if n <= 0:
            break
        take = min(b - a, n)
        out.append((a, a + take))
        n -= take
    return out


class Positions:
    """Host numbers inside `owner` (one replica of it)."""

    def __init__(self, owner: Instance, cache: Optional[Dict] = None):
        self.owner = owner
        self.cache = {} if cache is None else cache

    def hosts(self, node) -> int:
        if not isinstance(node, Instance) or node.level is None:
            return 0
        return count_of(node, ("host",), self.cache)

    def _value_hosts(self, value) -> int:
        if isinstance(value, Group):
            return sum(c * self.hosts(i) for c, i in value.flat())
        return self.hosts(value)

    @property
    def total(self) -> int:
        return self.hosts(self.owner)

    # ---- a route (indices, ranges, `*`) -> intervals ----------------------------------------
    def named(self, steps: Sequence[Step], node: Optional[Instance] = None) -> List[Interval]:
        """The hosts inside what `steps` name below `node` (default: the owner). Raises KeyError
        for a member that does not exist, TooMany past LIMIT intervals."""
        out: List[Interval] = []
        self._named(node if node is not None else self.owner, tuple(steps), 0, out)
        return merge(out)

    def _named(self, node: Instance, steps, base: int, out: List[Interval]) -> None:
        if not steps:
            out.append((base, base + self.hosts(node)))
            if len(out) > LIMIT:
                raise TooMany()
            return
        step, rest = steps[0], steps[1:]
        offset = base
        for m in node.members:
            if m.name != step.name:
                offset += self._value_hosts(m.value)
                continue
            if isinstance(m.value, Group):
                self._in_group(m.value, _window(step.index, m.value.count), rest, offset, 0, out)
            elif isinstance(m.value, Instance) and step.index in (None, "*", 0, (0, 1)):
                self._named(m.value, rest, offset, out)
            return
        raise KeyError(step.name)

    def _in_group(self, group: Group, window: Interval, rest, offset: int, index: int,
                  out: List[Interval]) -> Tuple[int, int]:
        """Walk `group`'s replicas from replica number `index` at host `offset`; the replicas in
        `window` are entered. Returns (index, offset) after the group."""
        lo, hi = window
        for run in group.runs:
            if isinstance(run.item, Group):
                size, hosts = run.item.count, self._value_hosts(run.item)
                skip = min(run.count, max(0, (lo - index) // size)) if size else run.count
                index, offset, done = index + skip * size, offset + skip * hosts, skip
                while done < run.count:
                    if index >= hi:
                        return index, offset          # past the window: nothing more to enter
                    index, offset = self._in_group(run.item, window, rest, offset, index, out)
                    done += 1
                continue
            h = self.hosts(run.item)
            a, b = max(lo, index), min(hi, index + run.count)
            if a < b:
                if not rest:
                    out.append((offset + (a - index) * h, offset + (b - index) * h))
                    if len(out) > LIMIT:
                        raise TooMany()
                else:
                    if (b - a) > LIMIT:
                        raise TooMany()
                    for r in range(a, b):
                        self._named(run.item, rest, offset + (r - index) * h, out)
            index, offset = index + run.count, offset + run.count * h
        return index, offset

    # ---- scope instances ----------------------------------------------------------------
    def count(self, kinds: Tuple[str, ...]) -> int:
        """Instances of `kinds` in the owner (the owner itself counts when it is one)."""
        return count_of(self.owner, kinds, self.cache)

    def scope(self, kinds: Tuple[str, ...], index: int) -> Optional[Interval]:
        """The hosts of the `index`-th instance of `kinds` in walk order (None: no such)."""
        if not 0 <= index < self.count(kinds):
            return None
        return self._scope(self.owner, kinds, index, 0)

    def _scope(self, node: Instance, kinds, index: int, base: int) -> Optional[Interval]:
        if node.kind in kinds:
            return (base, base + self.hosts(node))
        offset = base
        for m in node.members:
            pairs = _replicas(m.value)
            for count, item in pairs:
                if not isinstance(item, Instance) or item.level is None:
                    continue
                n, h = count_of(item, kinds, self.cache), self.hosts(item)
                if index < count * n:
                    return self._scope(item, kinds, index % n, offset + (index // n) * h)
                index -= count * n
                offset += count * h
        return None

    def scope_at(self, kinds: Tuple[str, ...], position: int) -> Optional[Tuple[int, Interval]]:
        """(index, hosts) of the instance of `kinds` that holds host `position`."""
        found = self._scope_at(self.owner, kinds, position, 0, 0)
        return found[:2] if found is not None else None

    def instance_at(self, kinds: Tuple[str, ...],
                    position: int) -> Optional[Tuple[Instance, Interval]]:
        """(the instance of `kinds` that holds host `position`, its hosts)."""
        found = self._scope_at(self.owner, kinds, position, 0, 0)
        return (found[2], found[1]) if found is not None else None

    def _scope_at(self, node, kinds, position, base, index):
        if node.kind in kinds:
            return index, (base, base + self.hosts(node)), node
        offset = base
        for m in node.members:
            for count, item in _replicas(m.value):
                if not isinstance(item, Instance) or item.level is None:
                    continue
                n, h = count_of(item, kinds, self.cache), self.hosts(item)
                if position < offset + count * h:
                    r = (position - offset) // h if h else 0
                    return self._scope_at(item, kinds, position, offset + r * h, index + r * n)
                offset += count * h
                index += count * n
        return None

    # ---- a host number -> its path ------------------------------------------------------
    def path_at(self, position: int) -> Optional[str]:
        """The replica path of host `position` (`Lab.pods[0].rows[3].racks[1].hosts[2]`)."""
        node, path, offset = self.owner, self.owner.path, 0
        while node.kind != "host":
            for m in node.members:
                found = self._member_at(m, position - offset)
                if found is None:
                    offset += self._value_hosts(m.value)
                    continue
                item, index, before = found
                path += f".{m.name}" + (f"[{index}]" if index is not None else "")
                node, offset = item, offset + before
                break
            else:
                return None
        return path

    def _member_at(self, m, position: int):
        """(replica, its index or None, hosts before it) of member `m` holding host `position`
        (a position relative to the member's first host), else None."""
        if isinstance(m.value, Instance):
            return (m.value, None, 0) if 0 <= position < self.hosts(m.value) else None
        if not isinstance(m.value, Group):
            return None
        index = offset = 0
        for item in _each(m.value):
            count, inst = item
            h = self.hosts(inst)
            if position < offset + count * h:
                r = (position - offset) // h if h else 0
                return inst, index + r, offset + r * h
            index, offset = index + count, offset + count * h
        return None


def _window(index, count: int) -> Interval:
    if index is None or index == "*":
        return (0, count)
    if isinstance(index, tuple):
        return (max(0, index[0]), min(count, index[1]))
    return (index, index + 1) if 0 <= index < count else (0, 0)


def _replicas(value):
    """(count, item) runs of a member in order, patterns repeated (4 x [A, B] is A B A B ...)."""
    if isinstance(value, Instance):
        return [(1, value)]
    if isinstance(value, Group):
        return list(_each(value))
    return []


def _each(group: Group):
    for run in group.runs:
        if isinstance(run.item, Group):
            inner = list(_each(run.item))
            if len(inner) == 1:
                yield run.count * inner[0][0], inner[0][1]
            else:
                for _ in range(min(run.count, LIMIT)):
                    yield from inner
        else:
            yield run.count, run.item


__all__ = ["Interval", "LIMIT", "Positions", "TooMany", "first", "intersect", "length", "merge",
           "path_steps", "route_below"]
