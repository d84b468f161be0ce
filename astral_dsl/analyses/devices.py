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
# check of the reference never uses it (for start-up)
_PATH = r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.[A-Za-z_][A-Za-z0-9_]*)|(?:\[[0-9A-Za-z]+\]))+"


def annotate(text: str, devices: Devices, ports: Optional[Dict[str, str]] = None) -> str:
    """`text` with each device path in it followed by... rather preceded by its name:
    `gpu-p0-012-3 (Cluster.sus[1].racks[1].hosts[1])`, and a NIC port after it by its
    interface name when `ports` (path -> name) has it."""
    if not devices:
        return text

    def one(m) -> str:
        token = m.group(0)
        prefix = longest(token, devices.by_path)
        if prefix is None:
            return token
        name = devices.by_path[prefix].name
        rest = token[len(prefix):]
        if ports is not None and rest:
            port = ports.get(token)
            if port is not None:
                rest = f" {port}"
        if name == prefix:
            return token
        return f"{name} ({prefix}){rest}"
    return re.sub(_PATH, one, text)


def longest(token: str, known: Dict[str, Device]) -> Optional[str]:
    if token in known:
        return token
    cut = len(token)
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
