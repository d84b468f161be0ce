"""Roll-ups over the containment DAG, shared by evaluation (on frames) and analyses (on the
model). Nodes expose `kind` and `level`; a *view* gives a node's owned members in order
(instances or groups) and its declared fields: the model's instances answer for themselves
(`MODEL`), frames under construction through the instantiator that evaluates them
(semantics/fields.py `FrameView`).

Memoised per object identity, so a symbolic design costs one visit per distinct instance."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from astral_dsl.model.values import Group, Run, concat, merge_runs
from astral_dsl.units import Quantity

# plural attribute -> kind(s) it collects
PLURALS: Dict[str, Tuple[str, ...]] = {
    "gpus": ("gpu",), "nics": ("nic",), "cpus": ("cpu",), "hosts": ("host",), "racks": ("rack",),
    "rows": ("row", "block"), "blocks": ("block",), "pods": ("pod",), "halls": ("hall",),
}

_WATT_DIMS = Quantity.of(1, "W").dims


class ModelView:
    """How roll-ups see the frozen model: instances know their members and fields."""

    @staticmethod
    def members(node):
        return node.member_values()

    @staticmethod
    def declared(node, name: str):
        return node.declared(name)


MODEL = ModelView()


def group_of(node: Any, kinds: Tuple[str, ...], cache: Dict, view=MODEL) -> Group:
    """Every instance of `kinds` inside `node` (or node itself), as runs."""
    key = (id(node), kinds)
    hit = cache.get(key)
    if hit is not None:
        return hit[1]
    if node.kind in kinds:
        result = Group((Run(1, node),))
    else:
        parts = []
        for value in view.members(node):
            sub = _expand(value, kinds, cache, view) if isinstance(value, Group) else \
                group_of(value, kinds, cache, view)
            if sub.runs:
                parts.append(sub)
        result = concat(parts)
    cache[key] = (node, result)   # keep node alive so its id stays unique
    return result


def _expand(group: Group, kinds, cache, view) -> Group:
    """The `kinds` inside each member of `group`, in order."""
    runs = []
    for run in group.runs:
        if isinstance(run.item, Group):
            inner = _expand(run.item, kinds, cache, view)
            if inner.runs:
                runs.append(Run(run.count, inner))
        elif run.item.level is not None:
            runs.extend(group_of(run.item, kinds, cache, view).repeat(run.count).runs)
    return Group(merge_runs(runs))


def containment(node: Any, view=MODEL):
    """(count, child) for every physical child, merged per child (order does not matter)."""
    order: Dict[int, list] = {}
    for value in view.members(node):
        pairs = value.flat() if isinstance(value, Group) else ((1, value),)
        for c, child in pairs:
            if child.level is None:
                continue
            slot = order.setdefault(id(child), [0, child])
            slot[0] += c
    return tuple((c, child) for c, child in order.values())


def count_of(node: Any, kinds: Tuple[str, ...], cache: Dict, view=MODEL) -> int:
    """`group_of(node, kinds, cache, view).count`, without building the groups when they are
    not in `cache` (the counts of a site's GPUs, hosts and racks built each part's group of
    them: 0.1 s of a check of a 1 MB design, for three numbers)."""
    hit = cache.get((id(node), kinds))
    if hit is not None:
        return hit[1].count
    key = (id(node), kinds, "count")
    hit = cache.get(key)
    if hit is not None:
        return hit[1]
    if node.kind in kinds:
        n = 1
    else:
        n = 0
        for value in view.members(node):
            n += _count_in(value, kinds, cache, view) if isinstance(value, Group) else \
                count_of(value, kinds, cache, view)
    cache[key] = (node, n)        # keep node alive so its id stays unique
    return n


def _count_in(group: Group, kinds, cache, view) -> int:
    """`_expand(group, kinds, cache, view).count`, as count_of."""
    n = 0
    for run in group.runs:
        if isinstance(run.item, Group):
            n += run.count * _count_in(run.item, kinds, cache, view)
        elif run.item.level is not None:
            n += run.count * count_of(run.item, kinds, cache, view)
    return n


def power_of(node: Any, cache: Dict, view=MODEL) -> Quantity:
    """Peak electrical draw: the declared `power`, else the sum over contained parts."""
    key = (id(node), "power")
    hit = cache.get(key)
    if hit is not None:
        return hit[1]
    declared = view.declared(node, "power")
    if isinstance(declared, Quantity) and declared.dims == _WATT_DIMS:
        result = declared
    else:
        total = 0.0
        for count, child in containment(node, view):
            total += count * power_of(child, cache, view).si
        result = Quantity(total, _WATT_DIMS, "kW" if total >= 1000 else "W")
    cache[key] = (node, result)
    return result
