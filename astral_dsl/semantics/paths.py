"""Canonical paths and multiplicities over the (symbolic) instance DAG.

The canonical path of an instance is the first place it appears, breadth first from the roots in
declaration order: `Astral.pods[0].racks[0].hosts[0]`. The multiplicity of an instance is how many
replicas of it the roots hold."""
from __future__ import annotations

from collections import deque
from typing import Dict, Iterator, List, Tuple

from astral_dsl.model.values import Group
from astral_dsl.semantics.frames import Frame


def owned_children(frame: Frame) -> Iterator[Tuple[str, int, int, Frame]]:
    """(member name, first index, count, child) for every owned member, in declaration order."""
    for name, d in frame.defs.items():
        if d.is_let or not frame.owned.get(name):
            continue
        value = frame.values.get(name)
        if isinstance(value, Frame):
            yield name, -1, 1, value
        elif isinstance(value, Group):
            for start, count, item in value.positions():
                yield name, start, count, item


def canonical_paths(roots: List[Frame], frames: List[Frame]) -> Dict[int, str]:
    paths: Dict[int, str] = {}
    queue = deque()
    for root in roots:
        if id(root) not in paths:
            paths[id(root)] = root.name
            queue.append(root)
    while queue:
        frame = queue.popleft()
        base = paths[id(frame)]
        for name, start, _, child in owned_children(frame):
            if id(child) in paths:
                continue
            paths[id(child)] = f"{base}.{name}" if start < 0 else f"{base}.{name}[{start}]"
            queue.append(child)
    used: Dict[str, int] = {}
    for p in paths.values():
        used[p] = 1
    for frame in frames:
        if id(frame) in paths:
            continue
        name = frame.name
        n = used.get(name, 0)
        paths[id(frame)] = name if n == 0 else f"{name}#{n + 1}"
        used[name] = n + 1
    return paths


def multiplicities(roots: List[Frame]) -> Dict[int, int]:
    """How many replicas of each frame the roots hold (a topological pass over the DAG)."""
    order: List[Frame] = []
    seen = set()
    # iterative post-order DFS, then reverse: parents before children
    for root in roots:
        if id(root) in seen:
            continue
        stack = [(root, iter(list(owned_children(root))))]
        seen.add(id(root))
        while stack:
            frame, it = stack[-1]
            advanced = False
            for _, _, _, child in it:
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(list(owned_children(child)))))
                    advanced = True
                    break
            if not advanced:
                order.append(frame)
                stack.pop()
    order.reverse()
    mult: Dict[int, int] = {id(f): 0 for f in order}
    for root in roots:
        mult[id(root)] = mult.get(id(root), 0) + 1
    for frame in order:
        m = mult[id(frame)]
        if not m:
            continue
        for _, _, count, child in owned_children(frame):
            mult[id(child)] = mult.get(id(child), 0) + m * count
    return mult
