"""Walking the model: every distinct instance with how many replicas the sites hold, and
resolving references."""
from __future__ import annotations

from collections import deque
from typing import Dict, Iterator, List, Optional, Tuple

from astral_dsl.model.design import Design, Instance, Ref
from astral_dsl.model.values import Group
from astral_dsl.semantics.errors import unknown_key


def owned(inst: Instance) -> Iterator[Tuple[int, Instance]]:
    """(count, child) for every owned member (physical or not), merged per child."""
    for m in inst.members:
        v = m.value
        if isinstance(v, Group):
            yield from v.flat()
        elif isinstance(v, Instance):
            yield 1, v


def multiplicities(design: Design) -> Dict[int, Tuple[int, Instance]]:
    """id(instance) -> (replicas in all sites, instance), parents before children."""
    order: List[Instance] = []
    seen = set()
    for root in design.roots:
        stack = [(root, iter(list(owned(root))))]
        if id(root) in seen:
            continue
        seen.add(id(root))
        while stack:
            inst, it = stack[-1]
            for _, child in it:
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(list(owned(child)))))
                    break
            else:
                order.append(inst)
                stack.pop()
    order.reverse()
    mult: Dict[int, int] = {id(i): 0 for i in order}
    for root in design.roots:
        mult[id(root)] += 1
    for inst in order:
        m = mult[id(inst)]
        for count, child in owned(inst):
            mult[id(child)] = mult.get(id(child), 0) + m * count
    return {id(i): (mult[id(i)], i) for i in order}


class Resolver:
    def __init__(self, design: Design):
        self.by_path = {i.path: i for i in design.instances}
        self.assigned = frozenset(k for k, _ in design.assignments)

    def __call__(self, ref):
        if isinstance(ref, Ref):
            return self.by_path.get(ref.path)
        return ref if isinstance(ref, Instance) else None

    def sized(self, inst: Instance, name: str) -> bool:
        """Whether field `name` of `inst` was left to sizing (`?`) and the design compiled with
        a value for it: the sized design and its scenarios' twins alike (the `chosen` marks
        are on the sized design's instances alone, not on the members a walk reaches)."""
        span = dict(inst.field_spans).get(name)
        return span is not None and unknown_key(span) in self.assigned

    def group(self, value) -> List[Tuple[int, Instance]]:
        """(count, instance) for a Group/list of refs or a single ref."""
        if isinstance(value, Group):
            return [(c, self(r)) for c, r in value.flat() if self(r) is not None]
        items = getattr(value, "items", None)
        if items is not None:
            out = []
            for r in items:
                out.extend(self.group(r))
            return out
        inst = self(value)
        return [(1, inst)] if inst is not None else []


def path_within(owner: Instance, target: Instance, memo: Optional[Dict] = None) -> str:
    """The path of the first replica of `target` inside `owner` (breadth first, members in
    declaration order), written from the owner's path: under `Astral.pods[3]`, the GPU whose
    canonical path (its first place in the whole design) is `Astral.pods[0]...gpus[0]` is
    `Astral.pods[3]...gpus[0]`. A part shared by several replicas is named in the replica a
    result is about, not in the first. `target.path` when `owner` does not hold it.

    With a `memo` (a dict kept by the caller), the owner's parts are walked once, every first
    place recorded, and each later question about the same owner is a look-up: a loop that
    names its many parts costs one walk, not one per part."""
    if target is owner:
        return owner.path
    if memo is None:
        return first_places(owner, target).get(id(target), (None, target.path))[1]
    places = memo.get(id(owner))
    if places is None or places[0] is not owner:
        places = memo[id(owner)] = (owner, first_places(owner))
    return places[1].get(id(target), (None, target.path))[1]


def first_places(owner: Instance, stop: Optional[Instance] = None) -> Dict[int, Tuple[Instance, str]]:
    """id(part) -> (part, the path of its first replica inside `owner`) for every part `owner`
    holds, breadth first with members in declaration order; the walk ends early at `stop`."""
    places: Dict[int, Tuple[Instance, str]] = {id(owner): (owner, owner.path)}
    queue = deque([(owner, owner.path)])
    while queue:
        inst, path = queue.popleft()
        for m in inst.members:
            value = m.value
            if isinstance(value, Group):
                children = [(f"{path}.{m.name}[{start}]", item)
                            for start, _, item in value.positions()]
            elif isinstance(value, Instance):
                children = [(f"{path}.{m.name}", value)]
            else:
                continue
            for child_path, child in children:
                if id(child) not in places:
                    places[id(child)] = (child, child_path)
                    if child is stop:
                        return places
                    queue.append((child, child_path))
    return places


def replicas(inst: Instance, path: str):
    """Each member of `inst`, replica by replica, in order: (its path, its index in its group,
    None for a single member, the instance). Expands the runs: one step per replica."""
    for m in inst.members:
        v = m.value
        if isinstance(v, Instance):
            yield f"{path}.{m.name}", None, v
        elif isinstance(v, Group):
            i = 0
            for run in v.runs:
                items = run.item.items(1 << 20) if isinstance(run.item, Group) else [run.item]
                for _ in range(run.count):
                    for child in items or []:
                        yield f"{path}.{m.name}[{i}]", i, child
                        i += 1
