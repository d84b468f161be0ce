"""Where a template uses a value the user's files set: a diagnostic at the user's argument of a
stdlib template (`RearDoor(rated = 40 kW)`, where `Instance.span_of` places a field that reads
it: semantics/origins.py) has the template's line that reads it (`max_rack_heat = rated` at
stdlib/cooling.astral:81:19) as its related span, which the span alone no longer shows. One at
a value the stdlib states itself (`RearDoor()`'s 50 kW) or at the template's declaration
(`inst.span`: "air unit declares no `dew_point`") stands on the user's line that brings the
template in (Instance.used_at, the first such line; W212, W215 and W216 stand there and name
the others as related spans: semantics/brought_in.py), the stdlib's line its related span: the
user acts on their own line, not the stdlib's. It stays in the stdlib where instances brought
in at different places share the span (RearDoor(rated = 40 kW) and RearDoor(rated = 60 kW)
share its declaration and its `supply = 27 degC`): it could name the wrong one."""
from __future__ import annotations

from typing import Dict, Iterable, List, Set, Tuple

from astral_dsl.diagnostics import Diagnostic, Related, Span, moved_to, with_related


def noted(diagnostics: Iterable[Diagnostic], instances) -> Tuple[Diagnostic, ...]:
    """`diagnostics`, each at a value that `instances` read through a template with the
    template's lines that read it as related spans; each at a value or declaration of a
    stdlib template moved to the user's line that brings it in."""
    reads: Dict[Span, Set[Tuple[str, str, Span]]] = {}
    brought: Dict[Span, Set[Tuple[Span, str]]] = {}
    for inst in instances:
        if inst.uses or inst.used_at is not None or inst.stated:
            spans = dict(inst.field_spans)
            for name, use in inst.uses:
                reads.setdefault(spans[name], set()).add((inst.template, name, use))
            if inst.used_at is not None:
                for name in inst.stated:
                    brought.setdefault(spans[name], set()).add(
                        (inst.used_at, f"`{inst.template}` states `{name}` here"))
                brought.setdefault(inst.span, set()).add(
                    (inst.used_at, f"{inst.kind} `{inst.template}` is declared here"))
            elif inst.span is not None:
                # the user's own part made from a stdlib template (`transformer mv =
                # Transformer(rating = 500 kVA)`): what the stdlib states stands on its line
                for name in inst.stated:
                    if spans[name].file != inst.span.file:
                        brought.setdefault(spans[name], set()).add(
                            (inst.span, f"the stdlib states `{name}` of `{inst.template}` "
                                        f"here"))
    if not reads and not brought:
        return tuple(diagnostics)
    out: List[Diagnostic] = []
    for d in diagnostics:
        if d.span in reads:
            for related in _read(reads[d.span]):
                d = with_related(d, related.span, related.message)
        elif d.span in brought and len({at for at, _ in brought[d.span]}) == 1:
            ((at, what), *_) = sorted(brought[d.span], key=lambda b: b[1])
            d = moved_to(d, at, what)
        out.append(d)
    return tuple(out)


def _read(found: Set[Tuple[str, str, Span]]) -> List[Related]:
    """"`RearDoor` reads it as `max_rack_heat`" at stdlib/cooling.astral:81:19, in the order of
    the templates' lines."""
    out: List[Related] = []
    for template, name, use in sorted(found, key=lambda f: (f[2].file, f[2].start, f[1], f[0])):
        related = Related(use, f"`{template}` reads it as `{name}`")
        if related not in out:
            out.append(related)
    return out
