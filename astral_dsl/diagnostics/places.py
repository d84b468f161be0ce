"""One finding at many places, said once: a warning about a value of the stdlib's that the user's
files bring in at many places (W212, W215, W216: semantics/brought_in.py) stands at the first
place, the next MAX_PLACES as its related spans and a note for the rest, as rustc and Elm give
one diagnostic with secondary spans. Before, each place had a warning of its own: a stdlib part
brought in from 1,000 lines gave some 8,000 warnings, a stdlib rack's 3,000 W212 and 5,000 W216.
The count of the rest is a note, not in the message: a baseline lists a warning by its code,
file and message (model/baseline.py), which one more place would change."""
from __future__ import annotations

from typing import Callable, Dict, Hashable, Iterable, List, Optional

import attrs

from astral_dsl.diagnostics.diagnostic import Diagnostic, Related

# the further places a gathered finding lists as related spans (each a snippet in the text)
MAX_PLACES = 8
ALSO = "also brought in here"


def gathered(diagnostics: Iterable[Diagnostic],
             apart: Optional[Callable[[Diagnostic], Hashable]] = None) -> List[Diagnostic]:
    """`diagnostics`, the copies of one finding at different places (all else alike, and alike
    in `apart(d)`: the `allow` that accepts it, so that each still accepts what it did) as one
    at the first place: the next MAX_PLACES as related spans (ALSO), "and N more places" a note.
    In the order of their first places; each place once."""
    groups: Dict[tuple, List[Diagnostic]] = {}
    for d in diagnostics:
        key = (d.code, d.severity, d.message, d.hint, d.file, d.notes, d.related,
               apart(d) if apart is not None else None)
        groups.setdefault(key, []).append(d)
    return [_one(same) for same in groups.values()]


def _one(same: List[Diagnostic]) -> Diagnostic:
    first = same[0]
    further = list(dict.fromkeys(d.span for d in same[1:]
                                 if d.span is not None and d.span != first.span))
    if not further:
        return first
    rest = len(further) - MAX_PLACES
    notes = first.notes + ((f"and {rest:,} more place{'s' * (rest > 1)} "
                            f"bring{'s' * (rest == 1)} it in",) if rest > 0 else ())
    return attrs.evolve(first, notes=notes, related=first.related + tuple(
        Related(span, ALSO) for span in further[:MAX_PLACES]))
