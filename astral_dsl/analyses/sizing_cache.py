"""Sizing's results kept per user, so that a design with a `?` is sized once: the next `astral`
command (or the language server's next analysis of the same text) compiles it once with the
values chosen, as a design without `?` is compiled, instead of compiling and checking every
combination again.

An entry holds what sizing decided, never a compiled design: the values to compile with
(`Choice` indices and equipment counts), the objective's value, how many combinations were
tried and held, and the diagnostics sizing gave (W317, W800; E660 and the like when nothing
holds). The chosen values are taken again from the design's own options. The key covers all
that decides the result: the text of every module read (the stdlib's too), the `--set`
overrides, the contents of the climate files its sites name (their SHA-256), the grammar, the code of astral_dsl (the sizes and times of its files) and the
versions of the libraries sizing uses; any change sizes afresh. Entries are usercache entries
(plain JSON, verified, per user: see usercache.py); `ASTRAL_CACHE_DIR=off` turns them off."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, Optional

from astral_dsl import usercache
from astral_dsl.diagnostics import Diagnostic, Position, Severity, Span
from astral_dsl.model.values import Choice
from astral_dsl.units import Quantity

FORMAT = "sizing 1"
KEEP = 64          # the newest entries kept


def key(sources, overrides, data=()) -> str:
    """The key of a design's sizing: its modules' text (name, text), its overrides, the data
    files it reads (`data`: analyses/climate.py digests, each site's climate file by its
    content), the code."""
    parts = [FORMAT, _code()]
    for name, text in sources:
        parts += [name, text]
    parts.append(repr(sorted((str(k), repr(v)) for k, v in dict(overrides).items())))
    parts += ["data", *data]
    return usercache.key_digest(*parts)


@lru_cache(maxsize=1)
def _code() -> str:
    """What the result depends on besides the design: astral_dsl's files (their paths, sizes
    and modification times), the grammar, and the versions of cvxpy, HiGHS and CoolProp."""
    import os
    from importlib import metadata

    from astral_dsl import resources

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stamps = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "_vendor"))
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                stamps.append(f"{os.path.relpath(os.path.join(folder, name), root)}:"
                              f"{st.st_size}:{st.st_mtime_ns}")
    versions = []
    for dist in ("cvxpy", "highspy", "CoolProp"):
        try:
            versions.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{dist} none")
    return usercache.key_digest(resources.grammar_text(), "\n".join(stamps), *versions)


def entry_name(digest: str) -> str:
    return f"sizing-{digest[:24]}"


def read(digest: str) -> Optional[Dict[str, Any]]:
    return usercache.read(entry_name(digest), digest)


def write(digest: str, sizing) -> None:
    """Keep what `sizing` (analyses.sizing.Sizing) decided under `digest`."""
    doc = {"assigned": [[k, _value(v)] for k, v in sizing.assigned],
           "objective": sizing.objective, "sense": sizing.sense, "value": sizing.value,
           "combinations": sizing.combinations, "feasible": sizing.feasible,
           "diagnostics": [diagnostic_doc(d) for d in sizing.diagnostics],
           "warnings": [diagnostic_doc(d) for d in sizing.warnings]}
    if any(v is None for _, v in doc["assigned"]):
        return                                   # a value it cannot write down: not kept
    if usercache.write(entry_name(digest), digest, doc):
        usercache.prune("sizing-", KEEP)


def _value(v):
    if isinstance(v, Choice):
        return {"choice": v.index}
    if isinstance(v, Quantity) and v.dimensionless and not v.unit:
        return {"count": v.si}
    return None


def assigned_of(doc) -> Dict[str, Any]:
    """The values to compile the chosen design with (ValueError for a damaged entry)."""
    out: Dict[str, Any] = {}
    for k, v in doc["assigned"]:
        if "choice" in v:
            out[str(k)] = Choice(int(v["choice"]))
        elif "count" in v:
            out[str(k)] = Quantity(float(v["count"]))
        else:
            raise ValueError("unknown value")
    return out


def diagnostic_doc(d: Diagnostic) -> Dict[str, Any]:
    span = None if d.span is None else [d.span.file, d.span.start.line, d.span.start.column,
                                        d.span.end.line, d.span.end.column]
    return {"code": d.code, "severity": d.severity.value, "message": d.message, "span": span,
            "hint": d.hint, "file": d.file, "notes": list(d.notes)}


def diagnostic_of(doc) -> Diagnostic:
    span = doc["span"]
    return Diagnostic(doc["code"], Severity(doc["severity"]), doc["message"],
                      None if span is None else Span(str(span[0]), Position(*span[1:3]),
                                                     Position(*span[3:5])),
                      doc["hint"], doc["file"], tuple(doc["notes"]))
