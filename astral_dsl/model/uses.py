"""Where a template uses a value the user's files set: a diagnostic at the user's argument of a
stdlib template (`RearDoor(rated = 40 kW)`, where `Instance.span_of` places a field that reads
it: semantics/origins.py) notes the template's line that reads it (`max_rack_heat = rated` at
stdlib/cooling.astral:81:19), which the span alone no longer shows."""
from __future__ import annotations

from typing import Dict, Iterable, List, Set, Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic, Span


def noted(diagnostics: Iterable[Diagnostic], instances) -> Tuple[Diagnostic, ...]:
    """`diagnostics`, each at a value that `instances` read through a template with a note
    naming the template, its fields that read the value and where."""
    reads: Dict[Span, Set[Tuple[str, str, Span]]] = {}
    for inst in instances:
        if inst.uses:
            spans = dict(inst.field_spans)
            for name, use in inst.uses:
                reads.setdefault(spans[name], set()).add((inst.template, name, use))
    if not reads:
        return tuple(diagnostics)
    out: List[Diagnostic] = []
    for d in diagnostics:
        found = reads.get(d.span) if d.span is not None else None
        if found:
            note = _note(found)
            if note not in d.notes:
                d = attrs.evolve(d, notes=d.notes + (note,))
        out.append(d)
    return tuple(out)


def _note(found: Set[Tuple[str, str, Span]]) -> str:
    """"`RearDoor` reads it as `max_rack_heat` at stdlib/cooling.astral:81:19", in the order
    of the templates' lines."""
    by_template: Dict[str, List[str]] = {}
    for template, name, use in sorted(found, key=lambda f: (f[2].file, f[2].start, f[1], f[0])):
        said = f"`{name}` at {use.file}:{use.start.line}:{use.start.column}"
        if said not in by_template.setdefault(template, []):
            by_template[template].append(said)
    return "; ".join(f"`{t}` reads it as " + ", ".join(fields)
                     for t, fields in by_template.items())
