"""What a scenario names, and only that: routes and isolation.

A design keeps replication symbolic: `pods = 8 x Pod` is one Pod instance shared by eight
replicas. A scenario that fails `Astral.pods[0].rows[0].hvdc` must fail one feeder, not the
1,024 that share the instance. So each `fail` and `set` keeps its *route*, the path as written
(`route_of`, during the ordinary compile), and the design is compiled again under the scenario
with those routes *isolated*: wherever a route passes, the group it indexes is split into the
replicas before, the named ones (a private copy of their instance, which carries the rest of the
route) and the replicas after. `pods = 8 x Pod` becomes `1 x Pod' + 7 x Pod`, and in Pod'
`rows = 128 x Row` becomes `1 x Row' + 127 x Row`: O(route length) new instances, nothing
expanded. The isolated parts' canonical paths are the routes themselves, so the analyses fail
and change exactly them, and everything computed from a changed value (user checks included)
follows it.

A route that names a whole group (`pods[*]`, `pods[0..4]`, `pod.racks`) isolates the whole
group, with one copy shared by its replicas; a route rooted at a template (`set Node.power = ...`)
means the instance shared on purpose, wherever the template is used bare."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.model.design import Route, Step
from astral_dsl.model.rollup import PLURALS, count_of
from astral_dsl.model.values import (FabricAxis, FabricSelection, Group, NicPort, PortAxis,
                                     RangeValue, merge_runs)
from astral_dsl.semantics.collections import whole
from astral_dsl.semantics.errors import fail
from astral_dsl.semantics.frames import Frame
from astral_dsl.semantics.scope import LetSymbol, Template
from astral_dsl.syntax import ast


# ---- the plan: a trie of routes --------------------------------------------------------------
@records.define(eq=False)
class Node:
    """What a scenario does at and below one instance on its routes."""
    below: Dict[str, Dict[object, "Node"]] = attrs.field(factory=dict)  # member -> index -> node
    sets: Dict[str, object] = attrs.field(factory=dict)                 # field -> value here
    set_at: Dict[str, object] = attrs.field(factory=dict)  # field -> the `set`'s span

    def child(self, step: Step) -> "Node":
        return self.below.setdefault(step.name, {}).setdefault(step.index, Node())


def merge(nodes: List[Node]) -> Node:
    if len(nodes) == 1:
        return nodes[0]
    out = Node()
    for node in nodes:
        out.sets.update(node.sets)
        out.set_at.update(node.set_at)
        for name, by_index in node.below.items():
            slot = out.below.setdefault(name, {})
            for index, sub in by_index.items():
                slot[index] = merge([slot[index], sub]) if index in slot else sub
    return out


@records.frozen
class Plan:
    """Routes of one scenario: by root site or job name, and by template (module key, name)."""
    roots: Dict[str, Node]
    templates: Dict[Tuple[str, str], Node]

    @property
    def empty(self) -> bool:
        return not self.roots and not self.templates


def plan(actions) -> Plan:
    """The plan of a scenario's actions (model Actions with their routes)."""
    roots: Dict[str, Node] = {}
    templates: Dict[Tuple[str, str], Node] = {}
    for action in actions:
        route = action.route
        if route is None or action.verb not in ("fail", "set"):
            continue
        if route.from_template:
            node = templates.setdefault((route.module, route.root), Node())
        else:
            node = roots.setdefault(route.root, Node())
        for step in route.steps:
            node = node.child(step)
        if action.verb == "set":
            node.sets[action.field] = action.value
            node.set_at[action.field] = action.span
    return Plan(roots, templates)


# ---- routes: the path a scenario wrote, checked in the ordinary compile -----------------------
def route_of(ev, expr, env) -> Optional[Route]:
    try:
        return _route_of(ev, expr, env)
    except _NotARoute:
        return None


def _route_of(ev, expr, env) -> Optional[Route]:
    """The route of a `fail` target or of the part a `set` changes: a root (a site, a job, or a
    template) and member steps. None when the expression is not a path (a `let` holding a
    computed group, say): it then means the instances it evaluates to, shared as they are.
    Steps that cannot be isolated (a part reached through a reference to one declared
    elsewhere) are an error here, with the way to name the part instead."""
    chain: List = []
    e = expr
    while isinstance(e, (ast.Attr, ast.Index)):
        chain.append(e)
        e = e.obj
    if not isinstance(e, ast.Name):
        return None
    route = _root(ev, e, env)
    if route is None:
        return None
    value = ev.eval(e, env)
    if chain and isinstance(chain[-1], ast.Index) and _pooled(ev, e, env):
        fail("E217", f"`{e.name}` puts the parts of several replicas together in one group: a "
                     "scenario cannot say which replica an index of it picks",
             chain[-1].selector.span, "write the path itself, with an index at each step "
                                      "(`S.pods[1].sus[1]` the second block of pod 1, "
                                      "`S.pods[*].sus[1]` that of every pod)")
    for node in reversed(chain):
        after = ev.eval(node, env)
        if isinstance(after, (FabricAxis, FabricSelection)):
            return route          # a fabric selection: its fabric is the part isolated
        if isinstance(after, (PortAxis, NicPort)):
            return route          # a NIC's port: the NIC is the part isolated
        if isinstance(node, ast.Attr):
            steps = _member_steps(ev, value, node.name.name, node.name.span)
        else:
            steps = (Step("", _index(ev, node, env)),)
        route = _extend(route, steps)
        value = after
    return route


def _pooled(ev, name: ast.Name, env) -> bool:
    """Whether `name` is a `let` of `g.b` with g a group of several members: its index picks
    from the members' parts put together (`let s = S.pods.sus`, `s[5]`: pod 1's second block),
    which a route, whose steps index each member (`S.pods.sus[5]`), cannot say."""
    scope, expr = env, None
    while scope is not None and expr is None:
        if name.name in scope.locals or name.name in scope.params:
            return False
        frame = scope.frame
        if frame is not None and name.name in frame.defs:
            d = frame.defs[name.name]
            expr, env = (d.value_expr, d.env) if d.is_let else (None, None)
            break
        scope = scope.outer
    symbol = env.module.lookup(name.name) if expr is None and env is not None else None
    if isinstance(symbol, LetSymbol):
        from astral_dsl.semantics.frames import Env

        expr, env = symbol.node.value, Env(symbol.module)
    if isinstance(expr, ast.Name):
        return _pooled(ev, expr, env)
    if not isinstance(expr, ast.Attr):
        return False
    owner = ev.eval(expr.obj, env)
    return isinstance(owner, Group) and owner.count > 1


def _root(ev, name: ast.Name, env) -> Optional[Route]:
    scope = env
    while scope is not None:
        if name.name in scope.locals or name.name in scope.params:
            return None
        frame = scope.frame
        if frame is not None and name.name in frame.defs:
            d = frame.defs[name.name]
            return _route_of(ev, d.value_expr, d.env) if d.is_let and d.value_expr is not None \
                else None
        scope = scope.outer
    symbol = env.module.lookup(name.name)
    if isinstance(symbol, LetSymbol):
        from astral_dsl.semantics.frames import Env

        return _route_of(ev, symbol.node.value, Env(symbol.module))
    if isinstance(symbol, Template):
        from astral_dsl.model.kinds import KINDS

        if KINDS[symbol.kind].root:
            return Route(symbol.name)
        return Route(symbol.name, (), True, symbol.module.key)
    return None


def _extend(route: Route, steps) -> Route:
    out = list(route.steps)
    for step in steps:
        if step.name == "" and out and out[-1].index is None:     # `.pods` then `[0]`
            out[-1] = Step(out[-1].name, step.index)
        elif step.name == "":
            # indexing a group already indexed (`pods[0..4][1]`): not a route of members
            raise _NotARoute()
        else:
            out.append(step)
    return attrs.evolve(route, steps=tuple(out))


class _NotARoute(Exception):
    pass


def _index(ev, node: ast.Index, env):
    if isinstance(node.selector, ast.Wildcard):
        return "*"
    sel = ev.eval(node.selector, env)
    if isinstance(sel, RangeValue):
        return (sel.start, sel.stop)
    return whole(ev.expr, sel, node.selector.span, "an index")


def _member_steps(ev, value, name: str, span) -> Tuple[Step, ...]:
    """The steps of `.name` on `value` (an instance, or a group: the member of each)."""
    frames = [i for _, i in value.flat()] if isinstance(value, Group) else [value]
    frames = [f for f in frames if isinstance(f, Frame)]
    if not frames:
        return (Step(name),)
    frame = frames[0]
    if name in frame.defs and not frame.defs[name].is_let:
        for f in frames:
            _isolable(ev, f, name, span)
        return (Step(name),)
    if name in PLURALS and frame.spec.physical:
        return _derived_steps(ev, frame, PLURALS[name], name, span)
    return (Step(name),)


def _isolable(ev, frame: Frame, name: str, span) -> None:
    value = ev.field(frame, name)
    if frame.owned.get(name):
        return
    if isinstance(value, Frame) and value.recipe is not None:
        return                     # a reference to a template's instance: copied on write
    if isinstance(value, (Frame, Group)):
        fail("E217", f"`{name}` of {frame.kind} `{frame.display}` refers to a part declared "
                     "elsewhere, so a scenario cannot change it for this replica alone",
             span, "name the part by the path of the instance that holds it (its canonical "
                   "path, as `astral export` shows)")


def _derived_steps(ev, frame: Frame, kinds, name: str, span) -> Tuple[Step, ...]:
    """`pod.racks` collects the racks of the pod's members: as steps through those members.
    Only a single member that holds all of them can be named this way."""
    holders = []
    for field, d in frame.defs.items():
        if d.is_let or not frame.owned.get(field):
            continue
        value = ev.field(frame, field)
        items = value.flat() if isinstance(value, Group) else ((1, value),)
        if any(count_of(item, kinds, ev.rollups, ev.view)
               for _, item in items if item.level is not None):
            holders.append((field, value))
    if len(holders) == 1:
        field, value = holders[0]
        if isinstance(value, Group) and value.count and \
                all(i.kind in kinds for _, i in value.flat()):
            return (Step(field),)
        if isinstance(value, Frame) and value.kind in kinds:
            return (Step(field),)
        inner = value if isinstance(value, Frame) else value.at(0)
        if isinstance(value, Group) and value.count == 1:
            return (Step(field, 0),) + _derived_steps(ev, inner, kinds, name, span)
    fail("E217", f"`{name}` collects the {name} of {frame.kind} `{frame.display}` from its "
                 "members: a scenario names a part through the members that hold it",
         span, f"write the path through the members, e.g. `...{_example(ev, frame, kinds)}`")


def _example(ev, frame: Frame, kinds) -> str:
    for field, d in frame.defs.items():
        if d.is_let or not frame.owned.get(field):
            continue
        value = ev.field(frame, field)
        item = value.at(0) if isinstance(value, Group) else value
        if not isinstance(item, Frame) or item.level is None:
            continue
        here = f".{field}[0]" if isinstance(value, Group) else f".{field}"
        if item.kind in kinds:
            return here
        if count_of(item, kinds, ev.rollups, ev.view):
            return here + _example(ev, item, kinds)
    return ""


# ---- isolation: done by the evaluator under a scenario ---------------------------------------
# fields whose default is another field of the declaration, kept at the declaration's value when
# a scenario sets that one: a GPU's peaks are quoted at its data-sheet power (`flops_power`,
# default `power`), so `set X.power = 500 W` caps the clocks of a GPU that states no
# `flops_power` (docs/seer.md, "Compute costs") instead of moving the quote with it
PINNED = {("gpu", "power"): "flops_power"}


class Isolator:
    """Applies a Plan while the design is compiled under its scenario. The evaluator calls
    `attach` for the roots and bare template instances it makes, and `field` for every member
    value it computes of a frame on a route."""

    def __init__(self, ev, plan_: Plan):
        self.ev = ev
        self.plan = plan_
        self._copies: Dict = {}

    def made(self, frame: Frame, bare: bool) -> None:
        """A frame the evaluator just made: a root, or a template instantiated bare."""
        if frame.template is None:
            return
        node = None
        if frame.spec.root and frame.template.name in self.plan.roots:
            node = self.plan.roots[frame.template.name]
        elif bare:
            node = self.plan.templates.get((frame.template.module.key, frame.template.name))
        if node is not None:
            self.attach(frame, node)

    def attach(self, frame: Frame, node: Node) -> None:
        frame.pending = node if frame.pending is None else merge([frame.pending, node])
        for name, value in node.sets.items():
            pinned = PINNED.get((frame.kind, name))
            if pinned and pinned not in frame.defs and name in frame.defs:
                frame.defs[pinned] = frame.defs[name]      # the declaration's, not the set's
            self.ev.given(frame, name, value, node.set_at.get(name))

    def field(self, frame: Frame, name: str, value):
        by_index = frame.pending.below.get(name) if frame.pending is not None else None
        if not by_index:
            return value
        if isinstance(value, Frame):
            copy = value if value.recipe is None and frame.owned.get(name) else self.copy(value)
            self.attach(copy, merge(list(by_index.values())))
            return copy
        if isinstance(value, Group):
            return self.split(value, by_index)
        return value

    def copy(self, frame: Frame) -> Frame:
        return self.ev.copy(frame)

    def split(self, group: Group, by_index) -> Group:
        n = group.count
        ranges = []
        cuts = {0, n}
        for index, node in by_index.items():
            if index is None or index == "*":
                a, b = 0, n
            elif isinstance(index, tuple):
                a, b = index
            else:
                a, b = index, index + 1
            a, b = max(0, min(a, n)), max(0, min(b, n))
            ranges.append((a, b, node))
            cuts.update((a, b))
        cuts = sorted(cuts)
        runs = []
        for a, b in zip(cuts, cuts[1:]):
            if a >= b:
                continue
            part = group.slice(a, b)
            nodes = [node for x, y, node in ranges if x <= a and b <= y]
            if nodes:
                key = tuple(id(nd) for nd in nodes)
                node = merge(nodes)

                def isolated(item, key=key, node=node, nodes=tuple(nodes)):
                    slot = (id(item), key)
                    if slot not in self._copies:
                        copy = self.copy(item)
                        self.attach(copy, node)
                        # the entry holds what its key's ids are of: a node freed (a frame's
                        # plan replaced by a merge) would leave its id to another
                        self._copies[slot] = (item, nodes, copy)
                    return self._copies[slot][2]

                part = part.map(isolated)
            runs.extend(part.runs)
        return Group(merge_runs(runs))
