"""Hover on a `param`: the values it may take while every check and engineering limit that holds
now keeps holding (the other params at their current values), from the symbolic margins
(astral_dsl/explore/margins). Limits that only a numeric bracket can follow are named, not
evaluated: `astral check --margins` brackets them. Computed once per document version, and only
for a design of at most MAX_CHARS characters of its own (the margins compile it several times:
about 0.7 s of a hover on 30 kB, 3 s on 60 kB, minutes on 1 MB, past the request's deadline)."""
from __future__ import annotations

from typing import Dict, List, Tuple

_CACHE: Dict[Tuple, object] = {}
_KEEP = 8
MAX_CHARS = 32_000


def _report(analysis):
    # the editor's texts of the imported files the analysis read (documents.py `_analyse`):
    # the margins read them too, not the files on disk
    editor = {k: t for k, (t, from_editor) in analysis.inputs.items()
              if from_editor and t is not None}
    key = (analysis.uri, analysis.version, len(analysis.text), hash(analysis.text),
           tuple(sorted((k, hash(t)) for k, t in editor.items())))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    from astral_dsl.explore import margins
    from astral_dsl.lsp.analysis import Reader

    path = analysis.entry.path
    if path is None:
        return None
    text = analysis.text
    reader = Reader(lambda p: text if p.resolve() == path.resolve() else
                    editor.get(str(p.resolve())))
    try:
        report = margins.analyse(str(path), numeric=False, read=reader)
    except Exception:  # noqa: BLE001 - a hover must never fail the editor
        return None
    if len(_CACHE) >= _KEEP:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = report
    return report


def param_lines(analysis, name: str) -> List[str]:
    """Markdown lines for the hover of top-level param `name`."""
    size = own_chars(analysis)
    if size > MAX_CHARS:
        return [f"**feasible range**: not computed on hover for a design of {size:,} characters "
                f"(over {MAX_CHARS:,}: the margins compile it several times): "
                "`astral check --margins`"]
    report = _report(analysis)
    if report is None or name not in report.params:
        return []
    from astral_dsl.explore.margins import feasible
    from astral_dsl.outputs.margins import interval

    f = feasible(report, name)
    binding, numeric_only = f.binding, f.numeric_only
    lines = []
    if f.low is None and f.high is None and not binding:
        if not numeric_only:
            return ["**feasible range**: no check or engineering limit depends on it"]
    else:
        span = interval(report, name, f.low, f.high, f.low_open, f.high_open, True)
        only = " only" if f.low is not None and f.low == f.high else ""
        lines.append(f"**feasible range** (symbolic, other params as they are): `{span}`{only}")
        lines.append("limited by: " + "; ".join(binding[:3]) +
                     (f" and {len(binding) - 3} more" if len(binding) > 3 else ""))
    if numeric_only:
        lines.append(f"also moves {len(numeric_only)} limit(s) that only a numeric bracket can "
                     "follow (" + "; ".join(numeric_only[:2]) +
                     ("; ..." if len(numeric_only) > 2 else "") +
                     "): `astral check --margins`")
    return lines


def own_chars(analysis) -> int:
    """The characters of the design's own files: the document and the project's modules it
    imports (not the stdlib's)."""
    return len(analysis.text) + sum(
        len(m.source.text) for m in analysis.modules.values()
        if not m.is_entry and not m.is_stdlib and m.source is not None)
