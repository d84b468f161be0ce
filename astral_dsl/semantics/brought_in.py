"""Where the user's files bring an instance in: the places W212 (semantics/defaults.py) and
W216 (semantics/assumptions.py) stand at, about a value of the stdlib's that the user cannot
edit there. The places of an instance are noted as the instantiator makes and finds it
(`asked`: a call in the user's files, or the instance whose stdlib body asks for it, NVL72's
for its switch trays); a user's template based on the stdlib's is its own place (`host Node =
HGX8(...)`). `places` reads them once the frames are complete: every place, in the order the
user's files asked for the instance."""
from __future__ import annotations

from typing import List

from astral_dsl.diagnostics import Span
from astral_dsl.semantics.frames import Env, Frame, frame_of


def asked(it, frame: Frame, env: Env, span: Span) -> None:
    """Note that `env` asks for `frame` at `span`: a place in the user's files, or (a stdlib
    template's body) the instance whose body it is, which the user's files bring in."""
    if not env.module.is_stdlib:
        asker = span
    else:
        asker = frame_of(env)
        if asker is None:
            return
    # by the span, or the asking instance's id: in order, each once (a generated design may
    # ask for one instance from 100,000 places)
    it.asked.setdefault(id(frame), {}).setdefault(
        asker if isinstance(asker, Span) else id(asker), asker)


def places(it, frame: Frame) -> List[Span]:
    """The places of the user's files that bring `frame` in, in the order they asked for it:
    the user's declaration of its template (`rack R = DGX_H100_Rack`: the user's line that
    takes the stdlib's values), else each place the user's files ask for it, and those of the
    instances whose stdlib bodies ask for it (NVL72's for its switch trays); its first place
    when none was noted (a copy isolated for a scenario)."""
    return _places(it, frame, set())


def _places(it, frame: Frame, seen: set) -> List[Span]:
    if id(frame) in seen:
        return []
    seen.add(id(frame))
    template = frame.template
    if template is not None and not template.module.is_stdlib:
        return [frame.span]
    out: dict = {}                   # the spans, in order, each once
    for asker in it.asked.get(id(frame), {}).values():
        for at in ([asker] if isinstance(asker, Span) else _places(it, asker, seen)):
            out.setdefault(at, at)
    return list(out) or ([frame.used_at] if frame.used_at is not None else [])
