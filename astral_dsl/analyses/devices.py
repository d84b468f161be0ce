"""The devices a design names (analyses/fleet.py binds them: the design's `name` patterns, then
its inventories' rows), and their names beside their paths wherever a path is shown (`label`,
`annotate`): `gpu-p0-012-3 (Cluster.sus[1].racks[1].hosts[1])`.

A check makes a `Devices` even for a design that names nothing (it is `Checked.devices`), so this
module is apart from fleet.py, whose inventory reading and binding such a design never needs
(for start-up)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, Iterable, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic

if TYPE_CHECKING:
    from astral_dsl.analyses.fleet import Device


@records.frozen
class Devices:
    """Every named part (path -> Device): by the design's patterns, then by its inventories."""
    by_path: Dict[str, Device] = attrs.field(factory=dict)
    longest_path: int = attrs.field(init=False, eq=False, repr=False, default=attrs.Factory(
        lambda self: max(map(len, self.by_path), default=0), takes_self=True))

    def __bool__(self) -> bool:
        return bool(self.by_path)

    def label(self, path: str) -> str:
        """`gpu-p0-012-3 (Cluster.sus[1].racks[1].hosts[1])`, or the path when it has no name
        of its own."""
        return annotate(path, self)

    def name_of(self, path: str) -> Optional[str]:
        d = self.by_path.get(path)
        return d.name if d is not None and d.name != path else None


# the pattern's text, compiled by `re` (and kept in its cache) on first use, not at import: a
# check of the reference never uses it (for start-up). A path starts at the first letter or `_`
# of a run of word characters (`lead` holds the digits before it): tried from every position of
# the run, a run with no `.` or `[` after it was scanned to its end from each (quadratic: a check
# message of 60,000 letters took 35 s of CPU), and a run's later starts fail as its first does.
_PATH = (r"(?<![A-Za-z0-9_])(?P<lead>[0-9]*+)(?P<path>[A-Za-z_][A-Za-z0-9_]*+"
         r"(?:(?:\.[A-Za-z_][A-Za-z0-9_]*+)|(?:\[[0-9A-Za-z]++\]))+)")


def annotate(text: str, devices: Devices, ports: Optional[Dict[str, str]] = None) -> str:
    """`text` with each device path in it followed by... rather preceded by its name:
    `gpu-p0-012-3 (Cluster.sus[1].racks[1].hosts[1])`, and a NIC port after it by its
    interface name when `ports` (path -> name) has it."""
    if not devices:
        return text

    def one(m) -> str:
        lead, token = m.group("lead"), m.group("path")
        prefix = longest(token, devices.by_path, devices.longest_path)
        if prefix is None:
            return lead + token
        name = devices.by_path[prefix].name
        rest = token[len(prefix):]
        if ports is not None and rest:
            port = ports.get(token)
            if port is not None:
                rest = f" {port}"
        if name == prefix:
            return lead + token
        return f"{lead}{name} ({prefix}){rest}"
    return re.sub(_PATH, one, text)


def longest(token: str, known: Dict[str, Device], most: Optional[int] = None) -> Optional[str]:
    """The longest prefix of `token` (the whole, or cut before a `.` or `[`) that `known` has;
    `most`, the length of its longest key, when known: only prefixes that short are looked up
    (each lookup slices and hashes its prefix: every prefix of a 1 MB `a.a.a...` was hours)."""
    if token in known:
        return token
    cut = len(token) if most is None else min(len(token), most + 1)
    while True:
        cut = max(token.rfind(".", 0, cut), token.rfind("[", 0, cut))
        if cut <= 0:
            return None
        if token[:cut] in known:
            return token[:cut]


def annotated(diagnostics: Iterable[Diagnostic], devices: Devices) -> Tuple[Diagnostic, ...]:
    """The diagnostics with the devices' names beside their paths, in messages and notes."""
    if not devices:
        return tuple(diagnostics)
    return tuple(attrs.evolve(d, message=annotate(d.message, devices),
                              notes=tuple(annotate(n, devices) for n in d.notes))
                 for d in diagnostics)
