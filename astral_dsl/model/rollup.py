"""Roll-ups over the containment DAG, shared by evaluation (on frames) and analyses (on the
model): both expose `kind`, `containment()` -> ((count, child), ...) and `declared(field)`.

Memoised per object identity, so a symbolic design costs one visit per distinct instance."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from astral_dsl.model.values import Group, Run, merge_runs
from astral_dsl.units import Quantity

# plural attribute -> kind(s) it collects
PLURALS: Dict[str, Tuple[str, ...]] = {
    "gpus": ("gpu",), "nics": ("nic",), "cpus": ("cpu",), "hosts": ("host",), "racks": ("rack",),
    "rows": ("row", "block"), "blocks": ("block",), "pods": ("pod",), "halls": ("hall",),
}

_WATT_DIMS = Quantity.of(1, "W").dims


def group_of(node: Any, kinds: Tuple[str, ...], cache: Dict) -> Group:
    """Every instance of `kinds` inside `node` (or node itself), as runs."""
    key = (id(node), kinds)
    hit = cache.get(key)
    if hit is not None:
        return hit[1]
    if node.kind in kinds:
        result = Group((Run(1, node),))
    else:
        runs = []
        for count, child in node.containment():
            for run in group_of(child, kinds, cache).runs:
                runs.append(Run(run.count * count, run.item))
        result = Group(merge_runs(_merge_equal(runs)))
    cache[key] = (node, result)   # keep node alive so its id stays unique
    return result


def _merge_equal(runs):
    """Merge runs of the same item that are not adjacent (order by first appearance)."""
    order: Dict[int, list] = {}
    for run in runs:
        slot = order.get(id(run.item))
        if slot is None:
            order[id(run.item)] = [run.count, run.item]
        else:
            slot[0] += run.count
    return [Run(c, item) for c, item in order.values()]


def count_of(node: Any, kinds: Tuple[str, ...], cache: Dict) -> int:
    return group_of(node, kinds, cache).count


def power_of(node: Any, cache: Dict) -> Quantity:
    """Peak electrical draw: the declared `power`, else the sum over contained parts."""
    key = (id(node), "power")
    hit = cache.get(key)
    if hit is not None:
        return hit[1]
    declared = node.declared("power")
    if isinstance(declared, Quantity) and declared.dims == _WATT_DIMS:
        result = declared
    else:
        total = 0.0
        for count, child in node.containment():
            total += count * power_of(child, cache).si
        result = Quantity(total, _WATT_DIMS, "kW" if total >= 1000 else "W")
    cache[key] = (node, result)
    return result
