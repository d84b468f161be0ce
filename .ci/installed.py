"""Exit 0 when `pip install -e '.[EXTRA]'` would change nothing, 1 otherwise (the Makefile's
`install` then runs pip). pip itself takes ~7 s of CPU to find that out (it builds the editable
wheel's metadata in a fresh environment with hatchling every time), which `make test` paid on
every run.

Current means: astral-dsl is installed editable from this very checkout, with the version,
requirements and console scripts pyproject.toml declares now, and every requirement of the
package and of the extra, and of theirs in turn, is installed at a version its specifier
allows. Anything unreadable (no `packaging` yet) counts as not current. Usage: python .ci/installed.py [EXTRA]"""
from __future__ import annotations

import json
import sys
import tomllib
from importlib import metadata
from pathlib import Path

try:                 # pytest's dependency: on a fresh machine it comes with the install
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:
    sys.exit(1)

REPO = Path(__file__).resolve().parents[1]


def _key(req: Requirement) -> tuple:
    return (canonicalize_name(req.name), str(req.specifier), tuple(sorted(req.extras)),
            str(req.marker) if req.marker else "")


def _declared(project: dict) -> set:
    reqs = [Requirement(r) for r in project.get("dependencies", [])]
    for extra, listed in project.get("optional-dependencies", {}).items():
        for text in listed:
            r = Requirement(text)
            r.marker = None
            reqs.append(Requirement(f"{r}; extra == '{extra}'"))
    return {_key(r) for r in reqs}


def _satisfied(reqs: list, extras: set, seen: set) -> bool:
    """Each requirement that applies (its marker true with any of `extras`) is installed at an
    allowed version, and so are its own, recursively."""
    for req in reqs:
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in extras or {""}):
            continue
        name = canonicalize_name(req.name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return False
        if not req.specifier.contains(dist.version, prereleases=True):
            return False
        key = (name, tuple(sorted(req.extras)))
        if key not in seen:
            seen.add(key)
            if not _satisfied([Requirement(r) for r in dist.requires or []], set(req.extras),
                              seen):
                return False
    return True


def current(extra: str) -> bool:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dist = metadata.distribution(project["name"])
    url = json.loads(dist.read_text("direct_url.json") or "{}")
    if not (url.get("dir_info", {}).get("editable")
            and url.get("url") == REPO.as_uri() and dist.version == project["version"]):
        return False
    installed = [Requirement(r) for r in dist.requires or []]
    if {_key(r) for r in installed} != _declared(project):
        return False
    scripts = {e.name: e.value for e in dist.entry_points if e.group == "console_scripts"}
    if scripts != project.get("scripts", {}):
        return False
    return _satisfied(installed, {extra}, set())


if __name__ == "__main__":
    try:
        ok = current(sys.argv[1] if len(sys.argv) > 1 else "")
    except Exception:              # anything unreadable: let pip decide
        ok = False
    sys.exit(0 if ok else 1)
