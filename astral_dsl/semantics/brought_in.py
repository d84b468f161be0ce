"""Where the user's files bring an instance in: the places W212 (semantics/defaults.py) and
W216 (semantics/assumptions.py) stand at, about a value of the stdlib's that the user cannot
edit there. The places of an instance are noted as the instantiator makes and finds it
(`asked`: a call in the user's files, or the instance whose stdlib body asks for it, NVL72's
for its switch trays); a user's template based on the stdlib's is its own place (`host Node =
HGX8(...)`). `places` reads them once the frames are complete: every place, in the order the
user's files asked for the instance. A template's instance's first place (`Frame.used_at`, where
a diagnostic of a stdlib body stands: semantics/errors.py, checks.py, and the analyses' through
the frozen Instance) is read from its first ask, when it is made. The warnings said at every
place (W212, W215 and W216) are `gather`ed: one per finding, at its first place, the next
places its related spans (diagnostics/places.py)."""
from __future__ import annotations

from typing import List, Optional, Sequence

from astral_dsl.diagnostics import Diagnostic, Span, gathered
from astral_dsl.semantics.frames import Env, Frame, frame_of


def asked(it, frame: Frame, env: Env, span: Span) -> None:
    """Note that `env` asks for `frame` at `span`: a place in the user's files, or (a stdlib
    template's body) the instance whose body it is, which the user's files bring in. The first
    ask of a template's instance (its making) gives its first place, `used_at`."""
    asker = span if not env.module.is_stdlib else frame_of(env)
    noted = it.asked.get(id(frame))
    if noted is None:                  # its making
        noted = it.asked[id(frame)] = {}
        if frame.template is not None:
            frame.used_at = _first_place(asker)
    if asker is None:
        return
    # by the span, or the asking instance's id: in order, each once (a generated design may
    # ask for one instance from 100,000 places)
    noted.setdefault(asker if isinstance(asker, Span) else id(asker), asker)


def _first_place(asker) -> Optional[Span]:
    """The place of the user's files an ask stands for: its span, else the asking instance's
    own declaration when it is the user's template (`rack Nvl = NVL72()`), or the asking
    instance's first place (none for a declaration inside a stdlib body)."""
    if asker is None or isinstance(asker, Span):
        return asker
    if asker.template is not None and not asker.template.module.is_stdlib:
        return asker.span
    return asker.used_at


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


def gather(found: List[Diagnostic], allows: Sequence = ()) -> List[Diagnostic]:
    """`found`, a warning at each place that brings its instance in, as one per finding at its
    first place (diagnostics/places.py), apart where different `allows` (model/allows.py Allow)
    accept its places: each `allow` still accepts the places it covers, and no other."""
    return gathered(found, lambda d: next((i for i, a in enumerate(allows) if a.accepts(d)),
                                          None))
