"""Value provenance: what the evaluator computed, and from what, told as it happens.

A compile given a `Trace` (`Workspace.compile(trace=...)`) tells it each value the moment it is
made: every expression evaluated (`evaluated`, after its operands), every module-level param
or let (`module_value`), every value coerced to a declared type (`converted`), every field of a
frame (`field`) and every roll-up a physical part answers (`derived`). The base class keeps the
distinct values each expression took (the language server's hover reads them); the margins
(explore/margins/shadow.py) keep a symbolic shadow beside each number. A compile without a trace
pays nothing: the evaluator only wraps its methods when it has one, and one whose `per_value`
is False (it keeps nothing of `evaluated`, `field` and `derived`: the margins' numeric probes)
is told only `module_value` and `converted`.

After the compile, `evaluator` is the instantiator that ran (its frames, memoised roll-ups and
evaluator, to ask further questions of the same evaluation) and `scopes` the modules' scopes."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

MAX_VALUES = 6      # distinct values kept per expression (a template instantiated differently)


class Trace:
    per_value = True     # told `evaluated`, `field` and `derived` (False: a trace that ignores them)

    def __init__(self) -> None:
        self.evaluator: Optional[Any] = None       # semantics.instantiate.Instantiator
        self.scopes: Dict[int, Any] = {}           # id(module) -> ModuleScope
        self._values: Dict[int, Tuple[Any, List[Any]]] = {}

    def attach(self, evaluator, scopes) -> None:
        """Called by the compile before it evaluates anything."""
        self.evaluator, self.scopes = evaluator, scopes

    # -- what the evaluator tells ----------------------------------------------------------------
    def evaluated(self, expr, env, value) -> None:
        slot = self._values.get(id(expr))
        if slot is None:
            self._values[id(expr)] = (expr, [value])
        else:
            values = slot[1]
            if len(values) < MAX_VALUES and not any(same(value, v) for v in values):
                values.append(value)

    def module_value(self, symbol, value) -> None:
        """A module-level param or let took `value`."""

    def converted(self, before, after) -> None:
        """`before` was coerced to a declared type as `after` (e.g. `count`, `power`)."""

    def field(self, frame, name: str, value) -> None:
        """Field `name` of `frame` is `value`."""

    def derived(self, frame, name: str, value) -> None:
        """The roll-up `name` (power, gpus, ...) of `frame` is `value`."""

    # -- what it answers ---------------------------------------------------------------------------
    def values_of(self, node) -> List[Any]:
        """The distinct values (at most MAX_VALUES) expression `node` took."""
        slot = self._values.get(id(node))
        return list(slot[1]) if slot is not None and slot[0] is node else []


def same(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - values without a usable equality
        return False
