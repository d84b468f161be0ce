"""The groups of a fabric's switch tier as paths name them: the kinds of instance a tier's scope
names (SCOPE_KINDS, read through kinds_of and scope_kinds by the language's selections, the
analyses, Seer and the views), and the group a hint gives as an example (example_group): E219's
(analyses/fabric_layout.py) and E209's for a tier asked of a part of the hierarchy
(semantics/fail_hints.py), both written by model.values.fabric_path."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

# a tier's scope -> the kinds of the instances it names
SCOPE_KINDS = {"rack": ("rack",), "row": ("row", "block"), "block": ("row", "block"),
               "pod": ("pod",), "hall": ("hall",), "site": ("site",)}


def kinds_of(scope: str) -> Tuple[str, ...]:
    """The kinds of instance a tier's `scope` names (a `row` tier's groups are rows or blocks;
    a scope the table does not list, its own kind)."""
    return SCOPE_KINDS.get(scope, (scope,))


def scope_kinds(scope: str, owner_kind: str) -> Optional[Tuple[str, ...]]:
    """The kinds of instance a tier's groups are, for its `scope` in a fabric of an `owner_kind`
    (None: the tier's group is the owner)."""
    return None if scope == owner_kind else kinds_of(scope)


def example_group(scope: str, owner_kind: str, per: Sequence[str],
                  chosen: Optional[Tuple[str, int]] = None, rail: Optional[int] = None,
                  plane: Optional[int] = None
                  ) -> Tuple[Optional[Tuple[str, int]], Optional[int], Optional[int]]:
    """(scope instance, rail, plane) of the group of a tier (its `scope` and `per` as declared,
    in a fabric of an `owner_kind`) that a hint names: what a selection names kept (`chosen`
    scope instance, `rail`, `plane`), the rest the first of its kind; the scope as the tier
    declares it (a `block` tier's groups are `block[i]`, as the rank map names them; `row[i]`
    is accepted for them too)."""
    kinds = scope_kinds(scope, owner_kind)
    kind = (scope if scope in kinds else kinds[0]) if kinds else None
    chosen = chosen if chosen is not None else (kind, 0) if kind else None
    return (chosen, (rail or 0) if "rail" in per else None,
            (plane or 0) if "plane" in per else None)
