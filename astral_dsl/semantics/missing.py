"""The hint of E205, a module not found: a near miss of its name or of a folder on its path,
the module a declaration's path names (`import lib.parts.Node`), the modules of a folder
imported as one (`import lib`), else the modules there are and where the file was looked
for."""
from __future__ import annotations

from pathlib import Path
from typing import List, Sequence

from astral_dsl.diagnostics import did_you_mean

SHOWN = 12          # modules a hint lists at most


def missing_module_hint(base: Path, parts: Sequence[str], stdlib: bool) -> str:
    """`parts`: the import's dotted path (`stdlib` first for the standard library's, whose
    files are below `base`); the project's are below `base`, the project root."""
    head = list(parts[:1]) if stdlib else []
    rel = list(parts[1:]) if stdlib else list(parts)
    folder = base
    for i, name in enumerate(rel[:-1]):            # the folders on the path, in order
        if (folder / name).is_dir():
            folder = folder / name
            continue
        if (folder / f"{name}.astral").is_file():
            module = ".".join(head + rel[:i + 1])
            return (f"`{module}` is a module: import `{rel[i + 1]}` from it with "
                    f"`import {module} {{ {rel[i + 1]} }}`")
        near = _closest(name, _folders(folder))
        if near:
            return f"did you mean `{'.'.join(head + rel[:i] + [near] + rel[i + 1:])}`?"
        near = _closest(name, _modules(folder))
        if near and i == len(rel) - 2:             # `lib.comon.Node`: the module lib.common's
            module = ".".join(head + rel[:i] + [near])
            return f"did you mean `import {module} {{ {rel[-1]} }}`?"
        return _looked_for(base, rel, stdlib)
    last = rel[-1]
    dotted = ".".join(head + rel)
    if (folder / last).is_dir():
        inside = _modules(folder / last)
        return (f"`{dotted}` is a folder: import a module in it" +
                (f", e.g. `import {dotted}.{inside[0]}`" if inside else " (it holds none)"))
    near = _closest(last, _modules(folder))
    if near:
        return f"did you mean `{'.'.join(head + rel[:-1] + [near])}`?"
    return _looked_for(base, rel, stdlib)


def _closest(name: str, candidates: List[str]):
    hint = did_you_mean(name, candidates)
    return hint.split("`")[1] if hint else None


def _looked_for(base: Path, rel: List[str], stdlib: bool) -> str:
    folder = base.joinpath(*rel[:-1])
    there = _modules(folder) if folder.is_dir() else []
    prefix = ".".join((["stdlib"] if stdlib else []) + rel[:-1])
    listed = ", ".join(f"`{prefix}.{m}`" if prefix else f"`{m}`" for m in there[:SHOWN])
    more = f" and {len(there) - SHOWN} more" if len(there) > SHOWN else ""
    if stdlib:
        return f"the stdlib's modules: {listed}{more}"
    where = "/".join(rel) + ".astral"
    found = f"; modules there: {listed}{more}" if listed else ""
    return (f"it would be the file {where} below the project root, the nearest folder above "
            f"the entry file with an astral.toml, else the entry file's folder{found}")


def _modules(folder: Path) -> List[str]:
    return sorted(p.stem for p in folder.glob("*.astral") if p.is_file())


def _folders(folder: Path) -> List[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
