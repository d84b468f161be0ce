"""Machine-readable output: one envelope for every command with `--format json`:
{"version", "valid", "diagnostics": [...], ...the command's own fields}. Positions are 1-based
lines and columns in Unicode code points, end exclusive (like `terraform validate -json`)."""
from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable

from astral_dsl import __version__
from astral_dsl.diagnostics import Diagnostic, has_errors

FORMAT_VERSION = 1


def diagnostic_json(d: Diagnostic) -> Dict[str, Any]:
    out: Dict[str, Any] = {"code": d.code, "severity": d.severity.value, "message": d.message,
                           "file": d.filename}
    out["range"] = _range(d.span) if d.span is not None else None
    out["hint"] = d.hint
    if d.notes:
        out["notes"] = list(d.notes)
    if d.related:
        # secondary places (the stdlib's line of a template the user's line brings in), as
        # the LSP's relatedInformation: each its file, range and what it is there
        out["related"] = [{"message": r.message, "file": r.span.file, "range": _range(r.span)}
                          for r in d.related]
    return out


def _range(span) -> Dict[str, Any]:
    return {"start": {"line": span.start.line, "column": span.start.column},
            "end": {"line": span.end.line, "column": span.end.column}}


def envelope(diagnostics: Iterable[Diagnostic], **fields: Any) -> Dict[str, Any]:
    diagnostics = list(diagnostics)
    doc: Dict[str, Any] = {"version": __version__, "format": FORMAT_VERSION,
                           "valid": not has_errors(diagnostics),
                           "diagnostics": [diagnostic_json(d) for d in diagnostics]}
    doc.update(fields)
    return doc


def dumps(doc: Dict[str, Any]) -> str:
    """Deterministic: sorted keys are not used (field order is meaningful); no NaN. Control
    characters that JSON allows raw (DEL, C1, line separators, bidirectional overrides) are
    written as \\u escapes too, so the document is safe to show on a terminal; so is a lone
    surrogate, which JSON can escape and UTF-8 cannot hold."""
    text = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return _RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


_RAW_CONTROL = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                          "\u2066-\u2069\ufff9-\ufffb\ud800-\udfff]")


def scenario_json(name: str, applied) -> Dict[str, Any]:
    """What a scenario did, for every command's JSON (analyses.scenarios.Applied): each part it
    failed and each field it changed, named as the scenario wrote them, with their kind and how
    many replicas they stand for (`Astral.pods[*].rows[0].hvdc`: 8 feeders)."""
    failed, changed = [], []
    for verb, target, kind, replicas, field, value in applied.named:
        if verb == "fail":
            failed.append({"target": target, "kind": kind, "replicas": replicas})
        else:
            changed.append({"target": target, "field": field, "value": value, "kind": kind,
                            "replicas": replicas})
    return {"name": name, "failed": failed, "changed": changed, "notes": list(applied.notes)}


def accepted_json(accepted) -> list:
    """The warnings accepted by an `allow` or a baseline (model/allows.py Accepted): each as a
    diagnostic, with why and by what it is accepted."""
    out = []
    for a in accepted:
        doc = diagnostic_json(a.diagnostic)
        doc["reason"] = a.reason
        doc["allowed_at"] = None if a.by is None else {
            "file": a.by.file, "line": a.by.start.line, "column": a.by.start.column}
        doc["baseline"] = a.baseline
        out.append(doc)
    return out


BASELINE_FORMAT = 1


def baseline_json(entries) -> Dict[str, Any]:
    """A baseline file (`astral check --write-baseline`): the warnings it accepts by code, file
    and message, sorted."""
    return {"astral_baseline": BASELINE_FORMAT,
            "accepted": [{"code": e.code, "file": e.file, "message": e.message}
                         for e in entries]}


def baseline_entries_of(doc, path: str):
    """The entries of a baseline document; ValueError saying what is wrong with it."""
    from astral_dsl.model.baseline import BaselineEntry

    if not isinstance(doc, dict) or doc.get("astral_baseline") != BASELINE_FORMAT or \
            not isinstance(doc.get("accepted"), list):
        raise ValueError(f"`{path}` is not an astral baseline (write one with "
                         f"`astral check --write-baseline {path}`)")
    entries = []
    for i, item in enumerate(doc["accepted"]):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str)
                                                 for k in ("code", "file", "message")):
            raise ValueError(f"`{path}`: entry {i} needs the strings code, file and message")
        entries.append(BaselineEntry(item["code"], item["file"], item["message"]))
    return tuple(entries)


def csv_cell(v):
    """A value in a CSV cell as JSON writes it: empty for null, `true`/`false` for booleans
    (never Python's `True`); `astral sweep -o` and `astral search -o` write their CSV so."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v
