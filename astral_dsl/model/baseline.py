"""A baseline file of accepted warnings (`astral check --baseline accepted.json`, written by
`--write-baseline`): the warnings it lists by code, file and message (not line), which
model/allows.py `accept` keeps apart as it does those an `allow` covers.

Apart from allows.py, so that a check without `--baseline` does not build these records (for
start-up)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional, Tuple

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.resources import is_stdlib_name, stdlib_name


@records.frozen
class BaselineEntry:
    """One warning of a baseline file: its code, file and message (not its line)."""
    code: str
    file: str
    message: str

    @classmethod
    def of(cls, d: Diagnostic) -> "BaselineEntry":
        return cls(d.code, d.filename or "", d.message)


@records.frozen
class Baseline:
    """A baseline file as read: its entries' files are absolute (a diagnostic names its file
    as it was given, relative to the working directory), so it holds wherever it is run."""
    path: str                          # the file, as given
    entries: Tuple[BaselineEntry, ...]

    def key(self, d: Diagnostic) -> BaselineEntry:
        return BaselineEntry(d.code, absolute(d.filename), d.message)


def absolute(file: Optional[str]) -> str:
    """A file name as an absolute, normalised path ("" for none); a stdlib file's name as it is
    (the same wherever the package is installed: resources.stdlib_name)."""
    if file and is_stdlib_name(file):
        return file
    return os.path.normpath(os.path.abspath(file)) if file else ""


def stored(file: str, folder: str) -> str:
    """How a baseline file in `folder` names the file `file` (absolute): relative to the
    folder, `./` before a name that would read as a stdlib file's; a stdlib file's as it is."""
    if is_stdlib_name(file):
        return file
    rel = os.path.relpath(file, folder).replace(os.sep, "/")
    return "./" + rel if is_stdlib_name(rel) else rel


def restored(file: str, folder: str) -> str:
    """The file a baseline file in `folder` names `file` (`stored`'s inverse), absolute; a
    file of the shipped stdlib named by its path (as baselines written before stdlib files had
    one name did: `../venv/.../astral_dsl/stdlib/power.astral`) by that name, which its warnings
    carry (else they were no longer accepted)."""
    if is_stdlib_name(file):
        return file
    path = absolute(os.path.join(folder, file))
    try:
        return stdlib_name(Path(path).resolve()) or path
    except (OSError, RuntimeError):             # a symbolic link in a loop
        return path


def baseline_entries(diagnostics: Iterable[Diagnostic]) -> Tuple[BaselineEntry, ...]:
    """The warnings a baseline file would accept, sorted, each once."""
    return tuple(sorted({BaselineEntry.of(d) for d in diagnostics
                         if d.severity is Severity.WARNING and d.code != "W220"},
                        key=lambda e: (e.file, e.code, e.message)))
