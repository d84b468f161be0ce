"""The diagnostics in `astral diff`: each under a key of its severity, code, message and file,
with an anchor that pairs one whose figures changed, and whether it comes from the front end
(E1xx to E5xx and their warnings, docs/diagnostics.md) or from a step that needs a compiled
design (sizing, the engineering checks, scenarios, jobs: E600 on).

A diagnostic's key holds its message, so one whose figures change (`(2 kW)` -> `(4 kW)`) has
another key on each side. Among those left unpaired by key on both sides, checks.py `pairs`
pairs them by severity, code, file and message with its figures masked (`(# kW)`: the same
problem of the same object, which the message names), first at the same place (line and
column), then anywhere (the object moved to another line), each only where it names one
diagnostic on each side: one diagnostic changed, not one removed and another added. Another
message at the same place (a check replaced by another) is another problem. Pure."""
from __future__ import annotations

import re
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from astral_dsl.outputs.diff.checks import Anchor

# a figure in a message: 2, 4.5, 1,024, 1e-3, -0.2
_FIGURE = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def where(d, entry: str, relative) -> Tuple[str, Optional[int], Optional[int]]:
    """(file, line, column) of a diagnostic: the entry file as `""`, another file relative to
    its project root (`relative`), so that the same problem on both sides compares equal."""
    file = d.span.file if d.span is not None else d.filename
    if file is None:
        return "", None, None
    if d.span is None:
        return ("" if file == entry else relative(file)), None, None
    return ("" if file == entry else relative(file)), d.span.start.line, d.span.start.column


def compiled_only(code: str) -> bool:
    """A code of a step that runs on a compiled design only (docs/diagnostics.md: E600 on; the
    front end's are E100 to E5xx, E000 a bug)."""
    return code[1:].isdigit() and int(code[1:]) >= 600


def diagnostics(diags, entry: str, relative, accepted=()
                ) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Anchor], FrozenSet[str]]:
    """(key -> fact, key -> anchor, the keys of those not from the front end) of a side's
    diagnostics. The key is the severity, code, message and file (not the line: a line added
    above it does not make it another problem); repeats are numbered. A warning an `allow` or
    the baseline accepts (`accepted`: model.allows.Accepted) is `accepted warning[W626] ...`
    with its reason: accepting one is not fixing it."""
    out: Dict[str, Dict[str, Any]] = {}
    anchors: Dict[str, Anchor] = {}
    later = set()
    for d, reason in [(d, None) for d in diags] + [(a.diagnostic, a.reason) for a in accepted]:
        file, line, column = where(d, entry, relative)
        label = ("accepted " if reason is not None else "") + f"{d.severity.value}[{d.code}]"
        key = f"{label} {d.message}" + (f" ({file})" if file else "")
        n, k = 1, key
        while k in out:
            n += 1
            k = f"{key} #{n}"
        out[k] = {"severity": d.severity.value, "code": d.code, "message": d.message,
                  "file": file, "line": line}
        if reason is not None:
            out[k]["accepted"] = reason
        masked = _FIGURE.sub("#", d.message)
        anchors[k] = (label, file, f"{line}:{column} {masked}", masked)
        if compiled_only(d.code):
            later.add(k)
    return out, anchors, frozenset(later)


def place(v: Dict[str, Any]) -> str:
    """Where a diagnostic's fact is: `lib.astral:3`, `line 3`, `lib.astral` or ``."""
    line = v.get("line")
    return (f"{v['file']}:{line}" if v["file"] and line else v["file"] or
            (f"line {line}" if line else ""))


def changed_lines(before: Dict[str, Any], after: Dict[str, Any]) -> List[str]:
    """A diagnostic whose message changed: `~ warning[W626] (line 2)` (`line 2 -> 5` when it
    moved), then its message before (`-`) and after (`+`), indented."""
    a, b = place(before), place(after)
    at = a if a == b else f"{a or 'no place'} -> {b or 'no place'}"
    head = ("accepted " if "accepted" in before else "") + \
        f"{before['severity']}[{before['code']}]" + (f" ({at})" if at else "")
    return [f"~ {head}", f"    - {before['message']}", f"    + {after['message']}"]


__all__ = ["changed_lines", "compiled_only", "diagnostics", "place", "where"]
