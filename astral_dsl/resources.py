"""Where the grammar and the stdlib live: beside the package in a source checkout, inside it
when installed from a wheel."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

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


@lru_cache(maxsize=1)
def schema_dir() -> Path:
    return _find("schema")


def schema_text(name: str) -> str:
    """The JSON Schema of a command's document (`astral NAME --schema`): schema/NAME.schema.json."""
    return (schema_dir() / f"{name}.schema.json").read_text(encoding="utf-8")
