"""The design's `check`s in `astral diff`: each as written, where, and how it came out.

A check has no name in the language, so it is known by where it is written (the declaration
whose body holds it: `R`, `S.spare`, `top level`; a file other than the entry after it) and its
condition as written: `R: power <= 45 kW`. The results of one check statement (a template's
check is evaluated once per distinct instance) are one fact:

- `check` (the condition as written), `in`, `severity`, `message` (when it gives one);
- `outcome`: `holds` or `fails`, and when it fails, in how many of how many instances;
- for a comparison of two single values, its sides as evaluated (`left` in the right's unit,
  `right`) and, for `<`, `<=`, `>`, `>=`, its `margin` (how far the left side may still move
  before the check flips; below zero it fails) -- of the tightest instance, named `at` when
  the check has several distinct ones.

Two sides pair a check by its key; a check whose text changed (`<= 45 kW` -> `<= 44 kW`) pairs
with the one check of the same declaration that has the same message, or else the same left
side, among those left unpaired on both sides. Pure."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from astral_dsl.model.values import show
from astral_dsl.units import Quantity, UnitError, same_amount

# what pairs a check whose text changed: (file, declaration, message, left side as written)
Anchor = Tuple[str, str, str, str]
FIELDS = ("check", "in", "severity", "message", "outcome", "failing", "instances", "left",
          "right", "margin", "at")
_SIDES = ("left", "right", "margin")


def margin(r) -> Optional[Quantity]:
    """How far the left side of an ordered comparison may move before it flips (right - left
    for `<` and `<=`, left - right for `>` and `>=`), in the right side's unit; 0 within the
    comparison's own tolerance (semantics/evaluate.py compare); None for anything else."""
    left, right = r.left, r.right
    if r.op not in ("<", "<=", ">", ">=") or not (isinstance(left, Quantity) and
                                                  isinstance(right, Quantity)):
        return None
    try:
        m = right.sub(left) if r.op in ("<", "<=") else left.sub(right)
    except UnitError:
        return None
    if same_amount(left.si, right.si):
        return Quantity(0.0, m.dims, m.unit)
    return m


def _tightest(results: Sequence):
    """The result a check's sides are shown from: the smallest margin, else the first that
    fails, else the first."""
    margins = [(margin(r), i) for i, r in enumerate(results)]
    ranked = sorted((m.si, i) for m, i in margins if m is not None)
    if ranked:
        return results[ranked[0][1]]
    return next((r for r in results if not r.passed), results[0])


def _fact(group: Sequence, where: str, of) -> Dict[str, Any]:
    first = group[0]
    out: Dict[str, Any] = {"check": first.condition, "in": where, "severity": first.severity}
    if first.message != f"`{first.condition}`":
        out["message"] = first.message
    failing = sum(r.instances for r in group if not r.passed)
    out["outcome"] = "fails" if failing else "holds"
    if failing:
        out["failing"] = failing
        out["instances"] = sum(r.instances for r in group)
    worst = _tightest(group)
    if worst.left is not None:
        out["left"], out["right"] = of(worst.left), of(worst.right)
        m = margin(worst)
        if m is not None:
            out["margin"] = of(m)
        if len(group) > 1:
            out["at"] = worst.example
    return out


def check_facts(results: Sequence, entry: str, relative, of=show
                ) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Anchor]]:
    """(key -> fact, key -> anchor) of a design's check results (model CheckResult), in
    source order, the entry's first; `relative` names another file relative to its project;
    `of` shows a side (facts.identity: what it is, for comparing)."""
    groups: Dict[Tuple[str, int, int], List] = {}
    for r in results:
        groups.setdefault((r.span.file, r.span.start.line, r.span.start.column), []).append(r)
    facts: Dict[str, Dict[str, Any]] = {}
    anchors: Dict[str, Anchor] = {}
    for (file, line, column) in sorted(groups, key=lambda k: (k[0] != entry, k)):
        group = groups[(file, line, column)]
        first = group[0]
        other = "" if file == entry else relative(file)
        where = (first.owner or "top level") + (f" ({other})" if other else "")
        key = n_key = f"{where}: {first.condition}"
        n = 1
        while n_key in facts:
            n += 1
            n_key = f"{key} #{n}"
        facts[n_key] = _fact(group, where, of)
        message = first.message if first.message != f"`{first.condition}`" else ""
        anchors[n_key] = (other, first.owner, message, first.subject)
    return facts, anchors


def pairs(a: Sequence[str], b: Sequence[str], anchor_a: Dict[str, Anchor],
          anchor_b: Dict[str, Anchor]) -> List[Tuple[Optional[str], Optional[str]]]:
    """The checks of two sides paired: by key, then (among those left) by declaration and
    message, then by declaration and left side, each only where it names one check on each
    side; in the first side's order, then the second's unpaired."""
    matched: Dict[str, str] = {k: k for k in a if k in b}
    for part in (2, 3):
        def of(keys, anchors):
            out: Dict[Tuple, List[str]] = {}
            for k in keys:
                if anchors[k][part]:
                    out.setdefault(anchors[k][:2] + (anchors[k][part],), []).append(k)
            return out
        taken = set(matched.values())
        left = of([k for k in a if k not in matched], anchor_a)
        right = of([k for k in b if k not in taken], anchor_b)
        for anchor, ks in left.items():
            if len(ks) == 1 and len(right.get(anchor, ())) == 1:
                matched[ks[0]] = right[anchor][0]
    taken = set(matched.values())
    return [(k, matched.get(k)) for k in a] + [(None, k) for k in b if k not in taken]


def summary(v: Dict[str, Any]) -> str:
    """A check's fact on one line: `holds; left 40.8 kW, right 45 kW, margin 4.2 kW`."""
    label = f" [{v['severity']}" + (f": {v['message']}" if "message" in v else "") + "]" \
        if v["severity"] != "error" or "message" in v else ""
    text = f"{label}: {outcome(v)}"
    sides = [f"{k} {v[k]}" for k in _SIDES if k in v]
    if sides:
        text += "; " + ", ".join(sides) + (f" (at {v['at']})" if "at" in v else "")
    return text


def outcome(v: Dict[str, Any]) -> str:
    """`holds`, `fails`, `fails in 2 of 5 instances` or `fails in all 5 instances` (of a
    template's check)."""
    if "failing" in v and v["instances"] > 1:
        of = "all" if v["failing"] == v["instances"] else f"{v['failing']:,} of"
        return f"{v['outcome']} in {of} {v['instances']:,} instances"
    return v["outcome"]


def changed_lines(before: Dict[str, Any], after: Dict[str, Any]) -> List[str]:
    """`field: before -> after` for each field of a changed check whose text differs (the
    outcome with the instances it fails in)."""
    out = []
    for k in FIELDS:
        if k in ("failing", "instances"):
            continue
        x, y = ((outcome(before), outcome(after)) if k == "outcome" else
                (before.get(k), after.get(k)))
        if x != y:
            out.append(f"{k}: {_field(x)} -> {_field(y)}")
    return out


def _field(v: Any) -> str:
    return "(none)" if v is None else str(v)


__all__ = ["check_facts", "changed_lines", "margin", "outcome", "pairs", "summary"]
