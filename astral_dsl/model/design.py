"""Frozen model classes.

An Instance is one distinct instantiation of a template (shared wherever the same template is
replicated with the same arguments): a 524,288-GPU site holds one Pod, one Rack, one Host and one
GPU instance, linked by runs of counts."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Span, has_errors
from astral_dsl.model.rollup import PLURALS, containment, count_of, power_of
from astral_dsl.model.values import Group

if TYPE_CHECKING:
    from astral_dsl.units import Quantity


@records.frozen
class Ref:
    """A reference to an instance that lives elsewhere in the model, by its canonical path."""
    path: str

    @property
    def display(self) -> str:
        return self.path


@records.frozen
class Member:
    """A structural member: a group (or single instance) owned by its parent."""
    name: str
    value: Any            # Group or Instance
    span: Optional[Span] = None


Index = Any   # None (the member itself), an int, a (start, stop) range (stop excluded), or "*"
#               (every replica)


@records.frozen
class Step:
    """One step of a route: a member by name, then optionally which replicas of it."""
    name: str
    index: Index = None

    @property
    def display(self) -> str:
        if self.index is None:
            return f".{self.name}"
        if self.index == "*":
            return f".{self.name}[*]"
        if isinstance(self.index, tuple):
            return f".{self.name}[{self.index[0]}..{self.index[1] - 1}]"     # `a..b` holds b
        return f".{self.name}[{self.index}]"


@records.frozen
class Route:
    """A path as the user wrote it (`Astral.pods[0].rows[0].hvdc`), from a root site or from a
    template (`Node`: every place the template is used bare). A scenario's `fail` and `set`
    change exactly the replicas their route names: the compiler isolates them (see
    semantics/isolate.py)."""
    root: str
    steps: Tuple[Step, ...] = ()
    from_template: bool = False     # rooted at a template: the instance shared on purpose
    module: str = ""                # the template's module (from_template)

    @property
    def display(self) -> str:
        return self.root + "".join(s.display for s in self.steps)

    def __str__(self) -> str:
        return self.display


@records.frozen
class Action:
    """A scenario's `fail TARGET` / `set TARGET.field = value`, or a site's objective."""
    verb: str                # fail, set, minimize, maximize
    target: Any              # Ref, Group of Refs, FabricSelection, or the objective's value
    field: Optional[str]     # set: the field; an objective: its name as written (`gpus`)
    value: Any
    span: Optional[Span] = None
    route: Optional[Route] = None    # fail/set: the part as written (None: not a path)


_KINDS: dict = {}


def _kinds() -> dict:
    """model.kinds.KINDS (imported on first use, then read from here: `level` is asked ~70,000
    times in a check of a 1 MB design, and an import statement each time was 5 % of it)."""
    global _KINDS
    from astral_dsl.model.kinds import KINDS

    _KINDS = KINDS
    return KINDS


@records.frozen(eq=False)
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
    # fields that name replicas, as written (a job's `placement = Astral.pods[3]`, whose Ref is
    # the canonical path of the instance the eight pods share): field -> Route
    routes: Tuple[Tuple[str, Any], ...] = ()
    # a field's value is set where the user's files set it (`field_spans`): the argument of a
    # stdlib template that its field reads (`RearDoor(rated = 40 kW)`: `max_rack_heat = rated`
    # in stdlib/cooling.astral), not the template's line; `uses` has that line (field ->
    # the template's expression), `stated` the fields whose value the stdlib itself states
    # (their span is the stdlib's): semantics/origins.py
    uses: Tuple[Tuple[str, Span], ...] = ()
    stated: Tuple[str, ...] = ()
    # a stdlib template's instance: the first place in the user's files that brings it in
    # (its call, or the user's template whose body asks for it: semantics/brought_in.py);
    # None for the others
    used_at: Optional[Span] = None

    def route(self, name: str):
        for k, r in self.routes:
            if k == name:
                return r
        return None

    def span_of(self, name: str, *others: str) -> Optional[Span]:
        """Where the user's files set field `name` (its value: the field, or the argument of a
        stdlib template that the field reads), else the declaration's span. With `others`: the
        first of the fields whose value the user's files set, else `name`'s (the stdlib's)."""
        spans = dict(self.field_spans)
        for k in (name,) + others if others else ():
            if k in spans and k not in self.stated:
                return spans[k]
        return spans.get(name, self.span)

    def acted_span(self, name: str) -> Optional[Span]:
        """Where the user acts on field `name`: span_of's, but for a value the stdlib states
        itself (`stated`) the user's line that brings the template in (`used_at`), else the
        user's own part made from it (its declaration), as model/uses.py moves a diagnostic."""
        if name in self.stated and (self.used_at or self.span) is not None:
            return self.used_at or self.span
        return self.span_of(name)

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
        return containment(self)

    @property
    def level(self):
        spec = (_KINDS or _kinds()).get(self.kind)
        return spec.level if spec else None

    def declared(self, name: str):
        return self.field(name)

    # -- roll-ups, as the language's `rack.power` and `rack.gpus` read them (model/rollup.py) --
    @property
    def power(self) -> "Quantity":
        """Peak electrical draw: the declared `power`, else the sum over its parts (a rack's
        hosts, a host's GPUs, NICs and CPUs, ...), as a Quantity: `rack.power.to("kW")`."""
        return power_of(self, {})

    def count(self, what: str) -> int:
        """How many `what` it holds, itself included: "gpus", "nics", "cpus", "hosts",
        "racks", "rows", "blocks", "pods" or "halls" (model/rollup.py PLURALS)."""
        kinds = PLURALS.get(what)
        if kinds is None:
            raise ValueError(f"cannot count `{what}`: one of " + ", ".join(PLURALS))
        return count_of(self, kinds, {})


@records.frozen(slots=False)
class CheckResult:
    span: Span
    severity: str
    message: str
    passed: bool
    instances: int               # how many replicas this result stands for
    example: str                 # one instance path
    condition: str = ""          # the condition as written, its lines joined (`power <= 45 kW`)
    owner: str = ""              # the declaration it is written in (`R`, `S.spare`; "": the
    #                              top of its module)
    # a comparison's operator, its left side as written, and both sides as evaluated (the left
    # in the right's unit), when both are single values (not a group's)
    op: str = ""
    subject: str = ""
    left: Any = None
    right: Any = None


@records.frozen
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
    inclusive_end: bool = False   # the options are a range `a..b` (its end included)


@records.frozen(eq=False, slots=False)
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
    # what it was compiled with, so that a workspace (workspace.py) can compile the same source
    # again the same way (sizing, scenarios): the `--set` overrides as given, the values of
    # the unknowns, and the scenario (its parts isolated)
    assignments: Tuple[Tuple[str, Any], ...] = ()
    scenario: Optional[str] = None
    overrides: Tuple[Tuple[str, Any], ...] = ()
    root: str = ""               # the project folder its imports (and data files) resolve in
    allows: Tuple[Any, ...] = ()       # the `allow` statements (model/allows.py Allow)
    lets: Tuple[Tuple[str, Any], ...] = ()     # the entry's top-level `let`s, as `params`
    # the reader its modules were read with (the loader's `read`): a data file the analyses read
    # (a site's `climate`) is read with it too, so a revision's comes from the revision
    # (cli/revision.py) and an editor's from its buffer; None: the disk
    read: Optional[Callable[[Any], bytes]] = attrs.field(default=None, repr=False)

    @property
    def valid(self) -> bool:
        return not has_errors(self.diagnostics)

    def __repr__(self) -> str:
        # what a REPL shows: a summary, not every instance (209 kB for the reference design);
        # the parts are `roots`, `jobs`, `scenarios`, `instances`
        errors = sum(d.is_error for d in self.diagnostics)
        return (f"<Design {self.file!r}: {'valid' if self.valid else 'invalid'}, "
                f"{len(self.roots)} root(s), {len(self.jobs)} job(s), "
                f"{len(self.scenarios)} scenario(s), {len(self.instances)} distinct instance(s), "
                f"{errors} error(s), {len(self.diagnostics) - errors} other diagnostic(s)>")

    @property
    def needs_sizing(self) -> bool:
        """It leaves values to sizing (`?`) and they are not chosen yet: compiled with the
        first option of each, provisionally. A sized design keeps its `unknowns` (their
        options) beside `chosen`."""
        return bool(self.unknowns) and not self.chosen

    def instance(self, path: str) -> Optional[Instance]:
        """The instance at `path`: its canonical path (`.path`, the first place it appears) or
        the path of any replica of it (`S.racks[3]`, shared with `S.racks[0]`: replication is
        symbolic); None when the path names no instance (or a group, `racks[*]`). A `path`
        that is not a str is the caller's TypeError (docs/api.md, "Errors")."""
        if not isinstance(path, str):
            raise TypeError(f"path is an instance's path (a str such as \"S.racks[3]\"), not "
                            f"{type(path).__name__}")
        for inst in self.instances:
            if inst.path == path:
                return inst
        return self._walk(path)

    def _walk(self, path: str) -> Optional[Instance]:
        steps = re.findall(r"([A-Za-z_]\w*)(?:\[(\d+)\])?(?:\.|$)", path)
        if not steps or ".".join(n + (f"[{i}]" if i else "") for n, i in steps) != path:
            return None
        (head, index), rest = steps[0], steps[1:]
        node: Any = next((r for r in self.roots + self.jobs + self.scenarios
                          if r.path == head), None)
        if index or node is None:
            return None
        for name, index in rest:
            found = next((m.value for m in node.members if m.name == name), None)
            node = found if found is not None else node.field(name)
            if isinstance(node, Group):
                if not index or int(index) >= node.count:
                    return None
                node = node.at(int(index))
            elif index:
                return None
            if not isinstance(node, Instance):
                return None
        return node
