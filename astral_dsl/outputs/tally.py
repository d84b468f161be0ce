"""Findings grouped for one diagnostic a group: the first of each group (what the message
quotes) and how many the group holds, in the order the groups first came (the NetBox export's
E705, E706, E708 and E709: one diagnostic per declaration or pattern, not per replica)."""
from __future__ import annotations

from typing import Dict, Hashable, Iterator, Tuple


class Tally:
    """key -> (the first item added under it, how many were)."""

    __slots__ = ("_groups",)

    def __init__(self):
        self._groups: Dict[Hashable, list] = {}

    def add(self, key: Hashable, first) -> None:
        """Count one more under `key`; `first` is kept only for a new key."""
        entry = self._groups.get(key)
        if entry is None:
            self._groups[key] = [first, 1]
        else:
            entry[1] += 1

    def __iter__(self) -> Iterator[Tuple[Hashable, object, int]]:
        for key, (first, count) in self._groups.items():
            yield key, first, count

    def __len__(self) -> int:
        return len(self._groups)


def more_like_it(count: int, form: str = "; {} more like it") -> str:
    """What a group of `count` says beyond its first (`form` around the number: `; 3 more like
    it` for 4), nothing for a group of one."""
    return form.format(f"{count - 1:,}") if count > 1 else ""


__all__ = ["Tally", "more_like_it"]
