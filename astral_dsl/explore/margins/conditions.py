"""A user `check` as the comparisons it needs to hold (shadow.py evaluates their sides): a
conjunction `a and b` (or `not (a or b)`, `not (x > y)`) is one comparison per conjunct, each
with its operator after the negations around it; anything else is its truth value, with the
operands of every comparison inside."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from astral_dsl import records
from astral_dsl.syntax import ast


@records.frozen
class CheckRecord:
    """One comparison of a user `check` of one distinct instance, with its two sides; a check
    `a and b` (or `not (a or b)`, `not (x > y)`) gives one record per comparison it needs to
    hold. A check that is not such a conjunction (`a or b`, a truth value) gives one record
    with `op` "" and the operands of every comparison inside."""
    check: Any                    # ast.Check
    path: str                     # the instance (or module) it belongs to
    count: int                    # replicas it stands for
    op: str                       # <= < >= > == (after negations), or "" (a truth value)
    left: Any                     # numbers (Quantity), or None when not a comparison
    right: Any
    left_shadow: Any
    right_shadow: Any
    passed: bool
    part: int = 0                 # this comparison's place among the check's (0-based)
    parts: int = 1
    expr: Any = None              # the comparison (ast.Compare) this record is
    operands: Tuple[Any, ...] = ()   # "" records: every comparison's operands, as numbers


_NEGATED = {"<=": ">", "<": ">=", ">=": "<", ">": "<=", "==": "!=", "!=": "=="}


def conjuncts(cond, negated: bool = False) -> Optional[List[Tuple[Any, str]]]:
    """The comparisons that must all hold for `cond` to hold, each with its operator after the
    negations around it; None when `cond` is not such a conjunction."""
    if isinstance(cond, ast.Compare):
        op = _NEGATED[cond.op] if negated else cond.op
        return None if op == "!=" else [(cond, op)]
    if isinstance(cond, ast.Not):
        return conjuncts(cond.operand, not negated)
    if isinstance(cond, ast.Logic) and (cond.op == "and") != negated:
        left, right = conjuncts(cond.left, negated), conjuncts(cond.right, negated)
        return None if left is None or right is None else left + right
    return None


def comparisons(cond) -> List[Any]:
    """Every comparison inside a condition, in order."""
    if isinstance(cond, ast.Compare):
        return [cond]
    if isinstance(cond, ast.Not):
        return comparisons(cond.operand)
    if isinstance(cond, ast.Logic):
        return comparisons(cond.left) + comparisons(cond.right)
    return []


__all__ = ["CheckRecord", "comparisons", "conjuncts"]
