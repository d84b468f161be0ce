"""The warnings of a design whose sizing fails (E660): what holds whatever sizing would choose.

Each combination of the structural unknowns is compiled and checked (sizing.py), its equipment
counts at the least its load needs. When none holds there is no chosen design to report, but a
warning every one of them gives (the same code at the same place) holds whatever the choice:
it is reported beside E660, not lost. When its figures differ from one combination to the next,
those of the first are given, with a note that says so and which combination it is. An error
every combination gives alike (its code, message, place and notes) is a constraint the
unknowns do not enter: it is reported as itself, not as E660 (`whatever_chosen`)."""
from __future__ import annotations

from typing import Dict, List, Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic, Severity

# the front end's errors of a value that is not one a field or a parameter takes (its type, its
# dimension, its sign, its range, a division by it): a choice that gives one is not a design
INVALID = frozenset({"E301", "E303", "E304", "E305", "E308", "E309", "E311", "E314", "E315",
                     "E316"})


def common_warnings(candidates, structural) -> Tuple[Diagnostic, ...]:
    """The warnings (front end and engineering checks) every compiled combination among
    `candidates` (sizing.Candidate) gives; the combinations that are not a design (their
    front end in error: no engineering checks) are no choice and are left out."""
    built = [c for c in candidates if c.engineering is not None]
    if not built:
        return ()
    found = [_warnings(c) for c in built]
    out: List[Diagnostic] = []
    for key, d in found[0].items():
        if not all(key in other for other in found[1:]):
            continue
        if any(other[key] != d for other in found[1:]):
            d = attrs.evolve(d, notes=d.notes + (
                f"every combination of the unknowns gives this warning, with other figures "
                f"in some: these are those of {_choices(structural, built[0].index)}",))
        out.append(d)
    return tuple(out)


def invalid_choices(candidates, structural) -> Tuple[Diagnostic, ...]:
    """W663: the errors of the value a choice gives (INVALID: `Rectifier(module = ? in [25 kW,
    -5 kW])`'s -5 kW, which `module = module` in the stdlib's template refuses, E315) in the
    combinations that are not a design for it, each once with the combinations that give it:
    sizing leaves them out and chooses among the others; said, not dropped in silence."""
    found: Dict[tuple, Tuple[Diagnostic, List[str]]] = {}
    for c in candidates:
        if c.engineering is not None:
            continue
        for d in c.design.diagnostics:
            if d.is_error and d.code in INVALID:
                found.setdefault(same(d), (d, []))[1].append(_choices(structural, c.index))
    out = []
    for d, combos in found.values():
        shown = "; ".join(f"({c})" for c in combos[:3]) + (
            f" and {len(combos) - 3:,} more" if len(combos) > 3 else "")
        out.append(Diagnostic(
            "W663", Severity.WARNING,
            f"a choice of the unknowns gives a value that is not valid, left out of sizing: "
            f"[{d.code}] {d.message}", d.span,
            "correct or remove the option that gives it in its `? in ...`",
            notes=d.notes + (f"{len(combos):,} combination(s) give it: {shown}",)))
    return tuple(out)


def _warnings(candidate) -> Dict[tuple, Diagnostic]:
    """A candidate's warnings by what identifies one across combinations: its code and place
    (its message where it has no place), the first of each."""
    out: Dict[tuple, Diagnostic] = {}
    for d in candidate.design.diagnostics + candidate.engineering.diagnostics:
        if not d.is_error:
            out.setdefault((d.code, d.span) if d.span is not None else (d.code, d.message), d)
    return out


def _choices(structural, index) -> str:
    """`file:line:column = value` of each structural unknown of the combination `index`."""
    return "; ".join(f"{u.span.file}:{u.span.start.line}:{u.span.start.column} = "
                     f"{getattr(u.options[i], 'path', None) or u.options[i]}"
                     for u, i in zip(structural, index))


def whatever_chosen(combos) -> List[Diagnostic]:
    """The errors every combination (sizing.Combination) gives alike (code, message, place
    and notes, which hold a check's sides): a constraint the unknowns do not enter, such as a
    loop's stated `cdus = 2` on CDUs too small (E640, E641), which no choice mends. Each is
    reported as itself, as in a design without `?`: E660 said "no choice of the unknowns
    satisfies every constraint" of a count that is given."""
    if not combos:
        return []
    keys = [{same(d) for d in c.errors} for c in combos[1:]]
    return [d for d in combos[0].errors if all(same(d) in k for k in keys)]


def same(d: Diagnostic) -> tuple:
    """What makes two combinations' errors one: all that is said of it but its hint."""
    return d.code, d.message, d.span, d.notes


def without(c, fixed: List[Diagnostic]):
    """The combination's conflicts but those of `fixed` (its errors come first, in order)."""
    if not fixed:
        return c
    gone = {same(d) for d in fixed}
    keep = [i for i in range(len(c.conflicts)) if i >= len(c.errors) or
            same(c.errors[i]) not in gone]
    return attrs.evolve(c, conflicts=tuple(c.conflicts[i] for i in keep),
                        binding=tuple(c.binding[i] for i in keep),
                        causes=tuple(c.causes[i] for i in keep),
                        errors=tuple(e for e in c.errors if same(e) not in gone))
