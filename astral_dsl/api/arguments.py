"""The API's arguments checked as they come in (docs/api.md, "Errors"): a value of the wrong kind
raises TypeError naming the argument and what it takes, not an AttributeError or a TypeError of
some function far below (`'int' object has no attribute 'lower'`); and a str given where names
or paths are listed is one name or one path, not its characters (`observed="run7.csv"` read
the paths r, u, n, 7, "." (the whole current folder), c, s, v)."""
from __future__ import annotations

import os
from typing import List, Mapping, Optional, Tuple, TypeVar

T = TypeVar("T")


def _kind(value: object) -> str:
    return type(value).__name__


def name(value: Optional[str], what: str) -> Optional[str]:
    """A name (a job's, a scenario's, ...) or None."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{what} is a name (a str), not {_kind(value)}")
    return value


def names(value: object, what: str) -> Optional[Tuple[str, ...]]:
    """Names: a list or tuple of str, or one str (one name); None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} is a list of names (or one name, a str), not {_kind(value)}")
    for item in value:
        name(item, f"each of {what}")
    return tuple(value)


def flag(value: object, what: str) -> bool:
    """A bool: "no" or 0 is not read as true (`all_scenarios="no"` ran every scenario)."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} is a bool (True or False), not {_kind(value)}")
    return value


def path(value: object, what: str) -> str:
    """A path: a str or an os.PathLike, as text."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what} is a path (a str or a pathlib.Path), not {_kind(value)}")
    return os.fspath(value)


def optional_path(value: object, what: str) -> Optional[str]:
    return None if value is None else path(value, what)


def paths(value: object, what: str) -> List[str]:
    """Paths: a list or tuple of paths, or one path."""
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} is a list of paths (or one path), not {_kind(value)}")
    return [path(p, f"each of {what}") for p in value]


def mapping(value: Optional[Mapping[str, T]], what: str) -> Optional[Mapping[str, T]]:
    """A mapping by name, or None."""
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(f"{what} is a mapping of names to values, e.g. "
                        f"{{\"hosts_per_rack\": 8}}, not {_kind(value)}")
    return value


def instance_of(value: Optional[T], kind: type, what: str, hint: str = "",
                optional: bool = True) -> Optional[T]:
    """`value` when it is a `kind` (or None, when `optional`)."""
    if not (value is None and optional) and not isinstance(value, kind):
        raise TypeError(f"{what} is a {kind.__name__}{hint}, not {_kind(value)}")
    return value


def own_design(workspace, design):
    """`design` when it is one the workspace compiled (its file and project root), or None:
    a design of another file was checked against this workspace's source (its scenarios
    compiled from the other file: a StopIteration, or results of neither)."""
    if design is not None and (design.file, design.root) != (workspace.entry.key,
                                                             str(workspace.root)):
        raise ValueError(f"design is a design of `{design.file}`, not of the workspace's "
                         f"`{workspace.entry.key}`: give it with its own workspace")
    return design


__all__ = ["flag", "instance_of", "mapping", "name", "names", "optional_path", "own_design", "path",
           "paths"]
