"""Frozen model classes.

An Instance is one distinct instantiation of a template (shared wherever the same template is
replicated with the same arguments): a 524,288-GPU site holds one Pod, one Rack, one Host and one
GPU instance, linked by runs of counts."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic, Span, has_errors
from astral_dsl.model.values import Group


@attrs.frozen
class Ref:
    """A reference to an instance that lives elsewhere in the model, by its canonical path."""
    path: str

    @property
    def display(self) -> str:
        return self.path


@attrs.frozen
class Member:
    """A structural member: a group (or single instance) owned by its parent."""
    name: str
    value: Any            # Group or Instance
    span: Optional[Span] = None


@attrs.frozen
class Action:
    """A scenario's `fail TARGET` / `set TARGET.field = value`, or a site's objective."""
    verb: str                # fail, set, minimize, maximize
    target: Any              # Ref, Group of Refs, FabricSelection, or the objective's value
    field: Optional[str]
    value: Any
    span: Optional[Span] = None
    frames: Tuple[Any, ...] = ()     # set: (frame number, signature) of each target (recompiling)


@attrs.frozen(eq=False)
class Instance:
    kind: str
    template: str                 # the template it instantiates (or the member's name)
    path: str                     # canonical path: the first place it appears
    fields: Tuple[Tuple[str, Any], ...]
    members: Tuple[Member, ...]
    span: Optional[Span] = None
    chosen: Tuple[str, ...] = ()  # fields whose values the sizing step chose
    actions: Tuple[Action, ...] = ()
    field_spans: Tuple[Tuple[str, Span], ...] = ()   # where each field's value is written

    def span_of(self, name: str) -> Optional[Span]:
        """The source of field `name` (its value), else of the declaration."""
        for k, s in self.field_spans:
            if k == name:
                return s
        return self.span

    @property
    def display(self) -> str:
        return self.path

    def field(self, name: str, default=None):
        for k, v in self.fields:
            if k == name:
                return v
        return default

    def member(self, name: str):
        for m in self.members:
            if m.name == name:
                return m.value
        return None

    def member_values(self):
        """Owned members holding instances, in declaration order."""
        return tuple(m.value for m in self.members if isinstance(m.value, (Group, Instance)))

    def containment(self) -> Tuple[Tuple[int, "Instance"], ...]:
        from astral_dsl.model.rollup import containment

        return containment(self)

    @property
    def level(self):
        from astral_dsl.model.kinds import KINDS

        spec = KINDS.get(self.kind)
        return spec.level if spec else None

    def declared(self, name: str):
        return self.field(name)


@attrs.frozen
class CheckResult:
    span: Span
    severity: str
    message: str
    passed: bool
    instances: int               # how many replicas this result stands for
    example: str                 # one instance path


@attrs.frozen
class UnknownSite:
    """A `?` in the source. `structural` unknowns (replication counts, catalog choices, any `?`
    used in an expression) are enumerated over their options; `count` unknowns (an equipment
    count field: feeder `count`, loop `cdus`, rectifier `modules`, battery `strings`) stay in the
    model and become integer variables of the sizing problem."""
    key: str                      # "file:line:column" of the `?`
    span: Span
    role: str                     # structural | count
    options: Tuple[Any, ...] = () # structural: the values to try, in order
    low: int = 0                  # count: bounds
    high: int = 10**6
    owner: str = ""               # count: path of the instance, and the field
    field: str = ""


@attrs.frozen(eq=False)
class Design:
    """What the front end produces for one entry file."""
    file: str
    roots: Tuple[Instance, ...]               # sites
    jobs: Tuple[Instance, ...]
    scenarios: Tuple[Instance, ...]
    params: Tuple[Tuple[str, Any], ...]
    instances: Tuple[Instance, ...]           # every distinct instance, in canonical order
    checks: Tuple[CheckResult, ...]
    diagnostics: Tuple[Diagnostic, ...]
    unknowns: Tuple[UnknownSite, ...] = ()
    chosen: Tuple[Tuple[str, Any], ...] = ()   # unknown key -> value chosen by sizing
    sets_mismatch: bool = False     # a scenario's `set`s could not be applied by recompiling
    assignments: Tuple[Tuple[str, Any], ...] = ()   # what sizing compiled it with (to recompile)

    @property
    def valid(self) -> bool:
        return not has_errors(self.diagnostics)

    def instance(self, path: str) -> Optional[Instance]:
        for inst in self.instances:
            if inst.path == path:
                return inst
        return None
