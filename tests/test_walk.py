"""analyses/walk.py: `path_within` names a part in the replica a result is about. With a memo it
walks an owner once for all its parts; its answers must be those of a search per part (the
breadth-first search below, the function as it was written first)."""
from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.analyses.walk import owned, path_within
from astral_dsl.model.design import Instance
from astral_dsl.model.values import Group

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def searched(owner, target) -> str:
    """The first replica of `target` inside `owner`: a search for it alone, level by level
    (each level's parts in the order of their parents, then of their members)."""
    if target is owner:
        return owner.path
    level, seen = [(owner, owner.path)], {id(owner)}
    while level:
        below = []
        for inst, path in level:
            for child_path, child in named_children(inst, path):
                if child is target:
                    return child_path
                if id(child) not in seen:
                    seen.add(id(child))
                    below.append((child, child_path))
        level = below
    return target.path


def named_children(inst, path):
    for m in inst.members:
        if isinstance(m.value, Group):
            yield from ((f"{path}.{m.name}[{start}]", item)
                        for start, _, item in m.value.positions())
        elif isinstance(m.value, Instance):
            yield f"{path}.{m.name}", m.value


def parts(inst, limit=400):
    """`inst` and its distinct parts, breadth first (at most `limit`)."""
    out, seen, queue = [], {id(inst)}, deque([inst])
    while queue and len(out) < limit:
        node = queue.popleft()
        out.append(node)
        for _, child in owned(node):
            if id(child) not in seen:
                seen.add(id(child))
                queue.append(child)
    return out


@pytest.fixture(scope="module", params=["astral.astral", "single_pod.astral", "dgx_superpod.astral"])
def design(request):
    return astral_dsl.load(EXAMPLES / request.param)


def test_memo_answers_as_one_search_per_part(design):
    owners = parts(design.roots[0], limit=40)
    assert len(owners) > 5
    checked = 0
    for owner in owners:
        memo = {}
        for target in parts(owner, limit=150) + [design.roots[0]]:
            expected = searched(owner, target)
            assert path_within(owner, target, memo) == expected
            assert path_within(owner, target) == expected
            checked += 1
    assert checked > 50


def test_a_part_outside_the_owner_keeps_its_own_path():
    design = astral_dsl.load(EXAMPLES / "single_pod.astral")
    site = design.roots[0]
    inner = parts(site)[3]
    assert path_within(inner, site, {}) == site.path
    assert path_within(inner, site) == site.path


def test_the_benchmarks_generated_designs_are_valid():
    """benchmarks/bench_scale.py times `astral check` of benchmarks/gen_design.py's designs: they
    must compile without an error (a new check that rejects them would stop the benchmark, or
    time a different road). 100 kB, the benchmark's smallest: 62 pods, whose fabrics' 3.5 MW a
    feeder count grown with the hosts (8 of 450 kW) did not carry (E621) where 30 kB's did."""
    from benchmarks.gen_design import design

    checked = astral_dsl.check(astral_dsl.compiles(design(100), name="generated.astral"))
    assert checked.valid, [d.message for d in checked.diagnostics if d.is_error][:3]


def test_network_units_walk_the_design_once_for_every_fabric(monkeypatch):
    """The feeders and air units with `network = true` count the fabrics attached below their
    owner: one walk of the design for all of them, not one per fabric. The generated design of
    about 60 kB has 37 pods, each with its own fabric, under the site's network feeders; a walk
    per fabric visited the parts 6,113 times in `astral check` (1,610 at 30 kB: quadratic),
    10 s of CPU at 1 MB. One walk for all visits each part once; with the other analyses' own
    walks, 3 visits per instance bound it (749 for 314 instances)."""
    from benchmarks.gen_design import design

    ws = astral_dsl.compiles(design(60), name="generated.astral")
    instances = len(ws.design.instances)
    calls = [0]
    walk = Instance.containment

    def counted(self):
        calls[0] += 1
        return walk(self)
    monkeypatch.setattr(Instance, "containment", counted)
    checked = astral_dsl.check(ws)
    assert checked.valid
    assert len(checked.engineering.fabrics) == 37
    assert calls[0] <= 3 * instances, (calls[0], instances)
