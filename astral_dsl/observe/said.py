"""How the diagnostics of many observed files are said: one alike for several files once, rank
sets as ranges (observe.load's diagnostics and the diagnosis's checks)."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic, Severity

# E786's hint when two files hold one rank (observe.load and the diagnosis's checks)
TWICE_HINT = ("two copies of one rank's file, or two runs' files in one directory: pass the "
              "files of one run")


FILES_NAMED = 4             # files a diagnostic said once for many names


def said_once(diags: Sequence[Diagnostic]) -> List[Diagnostic]:
    """The diagnostics with each one repeated alike (code, message and hint) for several files
    said once, at the first, with the count and the first FILES_NAMED files: one per rank of
    a job profiled alike, or of another job's 1,024 traces, would bury the rest."""
    alike: Dict[Tuple, List[int]] = {}
    for i, d in enumerate(diags):
        if d.file is not None and d.span is None:
            alike.setdefault((d.code, d.severity, d.message, d.hint), []).append(i)
    merged: Dict[int, Diagnostic] = {}
    dropped = set()
    for at in alike.values():
        files = list(dict.fromkeys(diags[i].file for i in at))
        if len(files) < 2:
            continue
        first = diags[at[0]]
        shown = ", ".join(files[:FILES_NAMED]) + (f" and {len(files) - FILES_NAMED:,} more"
                                                  if len(files) > FILES_NAMED else "")
        merged[at[0]] = attrs.evolve(first, message=f"{first.message} (said once for "
                                                    f"{len(files):,} files alike)",
                                     notes=first.notes + (f"the files: {shown}",))
        dropped.update(at[1:])
    return [merged.get(i, d) for i, d in enumerate(diags) if i not in dropped]


def read_twice(twice: Dict[Tuple[str, str], List[int]]) -> List[Diagnostic]:
    """E786 once for each (file, the file its ranks were read from first) -> those ranks
    (observe.load's and the diagnosis's checks'), not once a rank."""
    out = []
    for (file, first), ranks in twice.items():
        which = f"rank {ranks[0]} appears" if len(ranks) == 1 else \
            f"{len(ranks):,} ranks ({ranges(sorted(ranks))}) appear"
        out.append(Diagnostic("E786", Severity.ERROR, f"{which} twice: already read from "
                              f"{first}; {'this one is' if len(ranks) == 1 else 'these are'} "
                              f"left out", None, TWICE_HINT, file=file))
    return out


def ranges(ranks: Sequence[int]) -> str:
    """Sorted ranks as ranges: `0-63, 65, 70-71`, at most 12 ranges said."""
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ", ".join(out[:12]) + (f" and {len(out) - 12} more ranges" if len(out) > 12 else "")
