"""Where the grammar and the stdlib live: beside the package in a source checkout, inside it
when installed from a wheel; and the one name a stdlib file goes by wherever that is."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

_HERE = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_HERE / name, _HERE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"astral_dsl installation is incomplete: no `{name}` directory")


@lru_cache(maxsize=1)
def grammar_text() -> str:
    return (_find("grammar") / "astral.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def stdlib_dir() -> Path:
    return _find("stdlib")


# A file of the shipped stdlib is named `stdlib/power.astral` (`stdlib/climate/X.CSV`) in every
# output, wherever the package is installed (a checkout, site-packages): the same design gives
# the same bytes on every machine. `source_file` is the one way back to the file.
STDLIB_PREFIX = "stdlib/"


def _stdlib_resolved() -> Path:
    return _resolved(stdlib_dir())


@lru_cache(maxsize=4)
def _resolved(folder: Path) -> Path:
    return folder.resolve()


def stdlib_name(path: Path) -> Optional[str]:
    """The canonical name of the file at `path` (resolved) when it lies in the shipped stdlib:
    `stdlib/` and its path there; None for any other file."""
    try:
        rel = path.relative_to(_stdlib_resolved())
    except ValueError:
        return None
    return STDLIB_PREFIX + rel.as_posix() if rel.parts else None


def is_stdlib_name(name: str) -> bool:
    """Whether a file name as outputs show it is a stdlib file's canonical name."""
    return name.startswith(STDLIB_PREFIX)


def source_file(name: str) -> Path:
    """The file that a file name as outputs show it names: a stdlib file's canonical name
    (`stdlib_name`), the file in the installed stdlib; any other name, the path it is
    (relative to the working directory or absolute). For what reads the file again: the
    terminal's snippets, the language server's URIs."""
    if is_stdlib_name(name):
        return _stdlib_resolved().joinpath(*name[len(STDLIB_PREFIX):].split("/"))
    return Path(name)


@lru_cache(maxsize=1)
def schema_dir() -> Path:
    return _find("schema")


def schema_text(name: str) -> str:
    """The JSON Schema of a command's document (`astral NAME --schema`): schema/NAME.schema.json."""
    return (schema_dir() / f"{name}.schema.json").read_text(encoding="utf-8")
