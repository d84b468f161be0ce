"""Accepted warnings: `allow W621 "reason"` in a design, and a baseline file of warnings
accepted as they stand (`astral check --baseline accepted.json`), in the manner of ruff's `noqa`
and mypy's baseline.

An `allow` covers the text it stands in: at the top of a file, that file (and, in the entry
file, the warnings that have no place in the project's files: none, or a stdlib file); in a
template's body, the template's declaration; in a nested declaration's or a value's body, that
instance's. A warning is accepted when an `allow` of its code covers the place it points at, or
when the baseline lists its code, file and message (its line may move). Accepted warnings are
kept apart, with the reason, never dropped; an `allow` or a baseline entry that accepts nothing
is stale, and says so (W220). Errors are never accepted. The baseline file itself is
model/baseline.py."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Tuple

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity, Span, sort_diagnostics

if TYPE_CHECKING:
    from astral_dsl.model.baseline import Baseline


@records.frozen
class Allow:
    code: str
    reason: str
    span: Span                        # the `allow` statement
    scope: str                        # file | template | instance
    covers: Optional[Span] = None     # template or instance: the text of its declaration
    files: Tuple[str, ...] = ()       # file scope: the files it covers whole ("" no place)
    scenario: Optional[str] = None    # inside scenario NAME: it can only be stale if it ran

    def accepts(self, d: Diagnostic) -> bool:
        if d.code != self.code or d.severity is not Severity.WARNING:
            return False
        if d.span is None:
            return (d.file or "") in self.files
        if self.covers is None:
            return d.span.file in self.files
        c = self.covers
        return d.span.file == c.file and c.start <= d.span.start and d.span.end <= c.end


@records.frozen
class Accepted:
    diagnostic: Diagnostic
    reason: str
    by: Optional[Span] = None          # the `allow`; None when the baseline accepted it
    baseline: Optional[str] = None     # the baseline file


@records.frozen(slots=False)
class Acceptance:
    reported: Tuple[Diagnostic, ...]   # what is left to report, stale allows (W220) included
    accepted: Tuple[Accepted, ...]


def accept(diagnostics: Iterable[Diagnostic], allows: Sequence[Allow],
           baseline: Optional[Baseline] = None, scenarios_run: Iterable[str] = (),
           complete: bool = True, unsaid: Iterable[str] = ()) -> Acceptance:
    """Split `diagnostics` into those reported and those an `allow` or the baseline accepts; an
    allow (outside a scenario that did not run) or a baseline entry that accepts nothing is a
    W220 of its own, when the check was `complete` (an error that stops it before the
    engineering checks leaves their warnings unsaid, not gone); `unsaid`: codes the check could
    not give (W680, a scenario's verdict, when some scenario did not run), whose allows it
    cannot call stale."""
    used: Dict[int, bool] = {}
    listed = {e: False for e in (baseline.entries if baseline is not None else ())}
    reported: List[Diagnostic] = []
    accepted: List[Accepted] = []
    for d in diagnostics:
        if d.severity is not Severity.WARNING:
            reported.append(d)
            continue
        allow = next((a for a in allows if a.accepts(d)), None)
        if allow is not None:
            used[id(allow)] = True
            accepted.append(Accepted(d, allow.reason, allow.span))
            continue
        entry = baseline.key(d) if baseline is not None else None
        if entry in listed:
            listed[entry] = True
            accepted.append(Accepted(d, "listed in the baseline", None, baseline.path))
            continue
        reported.append(d)
    ran, unsaid = set(scenarios_run), set(unsaid)
    for a in allows:
        if complete and not used.get(id(a)) and a.code not in unsaid and \
                (a.scenario is None or a.scenario in ran):
            reported.append(stale_allow(a))
    stale = [entry for entry, hit in listed.items() if complete and not hit]
    if stale:
        reported.extend(_stale_entries(stale, baseline.path))
    return Acceptance(sort_diagnostics(reported), tuple(accepted))


# stale baseline entries said one by one, the rest in one W220: a baseline of 600,000 entries
# none of which is reported any more printed 600,000 warnings (118 MB of text, 20 s)
STALE_SHOWN = 8


def _stale_entries(stale: Sequence, path: str) -> List[Diagnostic]:
    """W220 for each of the first STALE_SHOWN baseline entries that accept nothing, and one for
    the rest."""
    hint = f"write the baseline again (`--write-baseline {path}`)"
    out = [Diagnostic("W220", Severity.WARNING,
                      f"the baseline accepts {e.code} `{e.message}` in "
                      f"{_shown(e.file) or 'the design'}, which is no longer reported", None,
                      hint, file=path) for e in stale[:STALE_SHOWN]]
    if len(stale) > STALE_SHOWN:
        out.append(Diagnostic("W220", Severity.WARNING,
                              f"the baseline accepts more warnings that are no longer "
                              f"reported: {len(stale) - STALE_SHOWN:,} besides the "
                              f"{STALE_SHOWN} said one by one", None, hint, file=path))
    return out


def _shown(path: str) -> str:
    """An absolute path as diagnostics name files: relative to the working directory when
    below it."""
    import os

    if not path:
        return path
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def stale_allow(a: Allow) -> Diagnostic:
    where = {"file": "this file", "template": "this template",
             "instance": "this instance"}[a.scope]
    return Diagnostic("W220", Severity.WARNING,
                      f"`allow {a.code}` accepts nothing: no {a.code} is reported in {where}",
                      a.span, "remove it (the warning it accepted is gone), or move it to where "
                              "the warning is")


# the numbers of a message: copies of one finding differ in their instances' indices and in
# the amounts those instances carry (a scenario's split), never in their words; an amount is one
# number with its thousands' commas and its decimals (`950` and `1,140` alike)
_DIGITS = re.compile(r"\d(?:[\d,.]*\d)?")


def once(diagnostics: Iterable[Diagnostic]) -> Tuple[Diagnostic, ...]:
    """Each warning once: the copies a scenario's split makes of one finding (the same code at
    the same place, about `sus[0]` and `sus[1]` once they are separate instances) are one.
    Findings that differ in their words, not only in their digits (indices, amounts), stay
    apart though they share a code and a place (a model's W752s for the `vocab`, `seq` and
    `ffn` it leaves to a guess)."""
    seen = set()
    out = []
    for d in diagnostics:
        if d.severity is Severity.WARNING and d.span is not None:
            key = (d.code, d.span, _DIGITS.sub("#", d.message))
            if key in seen:
                continue
            seen.add(key)
        out.append(d)
    return tuple(out)


def apart(diagnostics: Iterable[Diagnostic], allows: Sequence[Allow]
          ) -> Tuple[List[Diagnostic], Tuple[Accepted, ...]]:
    """(the diagnostics to report, in their order, each warning once; the warnings `allows`
    accept): for a command that says a design's diagnostics beside its own result without the
    whole check (no stale `allow` is said: what it would have accepted may not have run)."""
    kept = once(diagnostics)
    accepted = accept(kept, allows, complete=False).accepted
    taken = {id(a.diagnostic) for a in accepted}
    return [d for d in kept if id(d) not in taken], accepted
