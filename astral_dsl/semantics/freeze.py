"""Frames -> the immutable design model."""
from __future__ import annotations

from typing import Dict, List

from astral_dsl.model.design import Action, Instance, Member, Ref
from astral_dsl.model.values import (POISON, FabricLink, FabricSelection, Group, ListValue,
                                     NicPort, Values)
from astral_dsl.semantics.frames import Frame
from astral_dsl.semantics.origins import of_field


class Freezer:
    def __init__(self, paths: Dict[int, str]):
        self.paths = paths
        self.done: Dict[int, Instance] = {}
        self.order: List[Instance] = []
        self.busy: set = set()

    def instance(self, frame: Frame) -> Instance:
        hit = self.done.get(id(frame))
        if hit is not None:
            return hit
        self.busy.add(id(frame))
        fields = []
        members = []
        spans = []
        uses = []
        stated = []
        for name, d in frame.defs.items():
            if d.is_let:
                continue
            value = frame.values.get(name, POISON)
            if value is POISON:
                continue
            own = d.value_expr.span if d.value_expr is not None else d.name_span
            if frame.owned.get(name) and isinstance(value, (Frame, Group)):
                spans.append((name, own))
                members.append(Member(name, self.value(value, owned=True), d.name_span))
                continue
            # where the user's files set it (a stdlib template's parameter, an argument, a
            # scenario's `set`): semantics/origins.py; the template's own expression, when the
            # stdlib states it
            at = of_field(frame, name) if d.env.module.is_stdlib else \
                d.origin if d.value_expr is None and d.origin is not None else own
            if at is None:
                stated.append(name)
            elif at != own:
                uses.append((name, own))
            spans.append((name, at or own))
            fields.append((name, self.value(value, owned=False)))
        actions = tuple(Action(verb, self.value(target, False), fname, self.value(value, False),
                               span, route)
                        for verb, target, fname, value, span, route in frame.done_actions)
        inst = Instance(frame.kind, frame.name, self.paths[id(frame)], tuple(fields),
                        tuple(members), frame.span, (), actions, tuple(spans),
                        tuple(frame.routes.items()), tuple(uses), tuple(stated),
                        frame.used_at if frame.template is not None and
                        frame.template.module.is_stdlib else None)
        self.done[id(frame)] = inst
        self.busy.discard(id(frame))
        self.order.append(inst)
        return inst

    def value(self, v, owned: bool):
        if isinstance(v, Frame):
            if owned and id(v) not in self.busy:
                return self.instance(v)
            return Ref(self.paths[id(v)])
        if isinstance(v, Group):
            if owned and not any(id(i) in self.busy for _, i in v.flat()):
                return v.map(self.instance)
            return v.map(lambda f: Ref(self.paths[id(f)]))
        if isinstance(v, FabricSelection):
            return FabricSelection(Ref(self.paths[id(v.fabric)]), v.rail, v.plane, v.tier,
                                   v.scope, v.switch)
        if isinstance(v, NicPort):
            return NicPort(Ref(self.paths[id(v.nic)]), v.port)
        if isinstance(v, FabricLink):
            return FabricLink(tuple(self.value(e, False) for e in v.ends))
        if isinstance(v, ListValue):
            return ListValue(tuple(self.value(i, False) for i in v.items))
        if isinstance(v, Values):
            return Values(tuple((c, self.value(x, False)) for c, x in v.runs))
        return v
