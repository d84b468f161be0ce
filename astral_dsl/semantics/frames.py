"""Instances under construction (frames) and the environments expressions are evaluated in.

Fields are evaluated lazily, on first use, so a field may refer to one declared below it; a field
that needs itself is a cycle diagnostic. A derived template's body overrides its base's fields,
and the base's expressions see the override (late binding)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import attrs

from astral_dsl import records

from astral_dsl.diagnostics import Span
from astral_dsl.model.kinds import KindSpec
from astral_dsl.semantics.scope import ModuleScope, Template
from astral_dsl.syntax import ast


@records.define(eq=False)
class Env:
    module: ModuleScope
    frame: Optional["Frame"] = None
    params: Dict[str, Any] = attrs.field(factory=dict)
    locals: Dict[str, Any] = attrs.field(factory=dict)
    outer: Optional["Env"] = None
    symbols: bool = False   # bare unknown names are enumeration symbols (enum-typed fields)
    # parameter -> where the user's files set its value (semantics/origins.py); a parameter
    # not in it takes a value its template's module states (a stdlib default)
    origins: Dict[str, Span] = attrs.field(factory=dict)
    template: Optional[Template] = None   # the template whose body this is, with `params`

    def child(self, **locals_) -> "Env":
        return Env(self.module, None, {}, dict(locals_), self, self.symbols)

    def as_symbols(self) -> "Env":
        # attrs.evolve's copy, made directly (evolve reads the class's fields at every call: a
        # compile asks this of every enum-typed field)
        return Env(self.module, self.frame, self.params, self.locals, self.outer, True,
                   self.origins, self.template)


@records.define(eq=False)
class FieldDef:
    stmt: Any            # ast.Field | ast.Let | ast.Decl | ast.Record, or an override
    env: Env
    name_span: Span
    value_expr: Any      # the expression (None for nested declarations and records)
    is_let: bool = False
    origin: Optional[Span] = None   # an argument's value: where the user's files set it


@records.define(eq=False)
class Frame:
    kind: str
    spec: KindSpec
    name: str                      # template or member name
    span: Span
    template: Optional[Template]
    depth: int
    args: Dict[str, Any] = attrs.field(factory=dict)
    defs: Dict[str, FieldDef] = attrs.field(factory=dict)
    checks: List[Tuple[ast.Check, Env]] = attrs.field(factory=list)
    actions: List[Tuple[Any, Env]] = attrs.field(factory=list)
    values: Dict[str, Any] = attrs.field(factory=dict)
    busy: Dict[str, bool] = attrs.field(factory=dict)
    owned: Dict[str, bool] = attrs.field(factory=dict)   # field -> value constructed here
    done_actions: List[Tuple[str, Any, Any, Any, Span, Any]] = attrs.field(factory=list)
    completed: bool = False
    # how a template's instance was made (template, params, overrides): to copy it
    recipe: Optional[Tuple[Any, Dict[str, Any], Dict[str, Any], Dict[str, Span]]] = None
    pending: Any = None            # a scenario's routes below this frame (semantics/isolate.py)
    routes: Dict[str, Any] = attrs.field(factory=dict)   # field -> the path as written (a job's
    #                                                      placement: which replicas it names)
    called_at: Optional[Span] = None   # where a template's instance was first asked for
    # ... and the first place in the user's files it comes from: `called_at`, or where the
    # stdlib template whose body asked for it was itself asked for (semantics/brought_in.py)
    used_at: Optional[Span] = None
    # where this instance was first asked for, so that a hint can follow a stdlib part given
    # down from template to template (semantics/defaults.py)
    asked_in: Optional[Env] = None

    @property
    def display(self) -> str:
        return self.name

    @property
    def level(self):
        return self.spec.level


def frame_of(env: Optional[Env]) -> Optional[Frame]:
    """The instance whose body `env` evaluates in (a local value's scope has none of its own)."""
    while env is not None and env.frame is None:
        env = env.outer
    return env.frame if env is not None else None
