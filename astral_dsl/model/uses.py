"""Where a template uses a value the user's files set: a diagnostic at the user's argument of a
stdlib template (`RearDoor(rated = 40 kW)`, where `Instance.span_of` places a field that reads
it: semantics/origins.py) notes the template's line that reads it (`max_rack_heat = rated` at
stdlib/cooling.astral:81:19), which the span alone no longer shows. One at a value the stdlib
states itself (`RearDoor()`'s 50 kW: the span is the stdlib's line) notes the user's line that
brings the template in, as W212 does (semantics/defaults.py); so does one at the template's
declaration (`inst.span`: "air unit declares no `dew_point`"). That note is left out where
instances brought in at different places share the span (RearDoor(rated = 40 kW) and
RearDoor(rated = 60 kW) share its declaration and its `supply = 27 degC`): it could name the
wrong one."""
from __future__ import annotations

from typing import Dict, Iterable, List, Set, Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic, Span


def noted(diagnostics: Iterable[Diagnostic], instances) -> Tuple[Diagnostic, ...]:
    """`diagnostics`, each at a value that `instances` read through a template with a note
    naming the template, its fields that read the value and where."""
    reads: Dict[Span, Set[Tuple[str, str, Span]]] = {}
    brought: Dict[Span, Set[Tuple[str, str, Span]]] = {}
    for inst in instances:
        if inst.uses or inst.used_at is not None:
            spans = dict(inst.field_spans)
            for name, use in inst.uses:
                reads.setdefault(spans[name], set()).add((inst.template, name, use))
            if inst.used_at is not None:
                for span in [spans[name] for name in inst.stated] + [inst.span]:
                    brought.setdefault(span, set()).add((inst.kind, inst.template,
                                                         inst.used_at))
    if not reads and not brought:
        return tuple(diagnostics)
    out: List[Diagnostic] = []
    for d in diagnostics:
        notes = []
        if d.span in reads:
            notes.append(_read(reads[d.span]))
        elif d.span in brought:
            notes.extend(_brought(d.span, brought[d.span]))
        notes = [n for n in notes if n not in d.notes]
        out.append(attrs.evolve(d, notes=d.notes + tuple(notes)) if notes else d)
    return tuple(out)


def _brought(span: Span, found: Set[Tuple[str, str, Span]]) -> List[str]:
    """"rectifier `PowerShelf` comes into the design at d.astral:8:17" when one place of the
    user's files brings in what `span` (in the stdlib) belongs to."""
    if len(found) != 1:
        return []
    ((kind, template, at),) = found
    if at.file == span.file:
        return []
    return [f"{kind} `{template}` comes into the design at {at.file}:{at.start.line}:"
            f"{at.start.column}"]


def _read(found: Set[Tuple[str, str, Span]]) -> str:
    """"`RearDoor` reads it as `max_rack_heat` at stdlib/cooling.astral:81:19", in the order
    of the templates' lines."""
    by_template: Dict[str, List[str]] = {}
    for template, name, use in sorted(found, key=lambda f: (f[2].file, f[2].start, f[1], f[0])):
        said = f"`{name}` at {use.file}:{use.start.line}:{use.start.column}"
        if said not in by_template.setdefault(template, []):
            by_template[template].append(said)
    return "; ".join(f"`{t}` reads it as " + ", ".join(fields)
                     for t, fields in by_template.items())
