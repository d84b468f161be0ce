"""Two designs' facts (facts.Side) compared section by section: what was added, removed or
changed, in the order of the first side's keys, then the second's new ones. Pure."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple


from astral_dsl import records
from astral_dsl.outputs.diff.checks import pairs
from astral_dsl.outputs.diff.facts import COMPILED_ONLY, SECTIONS, Side


@records.frozen
class Change:
    section: str
    key: str
    kind: str                  # added | removed | changed
    before: Any = None
    after: Any = None

    @property
    def delta(self) -> Optional[float]:
        a, b = self.before, self.after
        if _number(a) and _number(b):
            return b - a
        return None

    @property
    def relative(self) -> Optional[float]:
        d = self.delta
        return d / abs(self.before) if d is not None and self.before else None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _keys(a, b) -> List[str]:
    return list(a) + [k for k in b if k not in a]


def _same(a: Side, b: Side, section: str, key: str) -> bool:
    """The value of `key` is the same on both sides, spelt differently (`700 W`, `0.7 kW`)."""
    sa, sb = a.same.get(section, {}), b.same.get(section, {})
    return key in sa and key in sb and sa[key] == sb[key]


def _checks(a: Side, b: Side) -> List[Change]:
    """The checks paired (checks.py `pairs`): one whose text changed is a change of it."""
    fa, fb = a.facts.get("checks", {}), b.facts.get("checks", {})
    sa, sb = a.same.get("checks", {}), b.same.get("checks", {})
    out: List[Change] = []
    for ka, kb in pairs(list(fa), list(fb), a.anchors, b.anchors):
        if kb is None:
            out.append(Change("checks", ka, "removed", fa[ka], None))
        elif ka is None:
            out.append(Change("checks", kb, "added", None, fb[kb]))
        elif fa[ka] != fb[kb] and sa.get(ka, fa[ka]) != sb.get(kb, fb[kb]):
            out.append(Change("checks", ka, "changed", fa[ka], fb[kb]))
    return out


def _diagnostics(a: Side, b: Side) -> List[Change]:
    """The diagnostics paired (diagnostics.py): one whose figures changed is a change of it.
    With a side that does not compile, the other's diagnostics of the steps that need a
    compiled design are not compared: those steps never ran on it."""
    fa, fb = a.facts.get("diagnostics", {}), b.facts.get("diagnostics", {})
    both = a.compiled and b.compiled
    keys_a = [k for k in fa if both or k not in a.beyond_front_end]
    keys_b = [k for k in fb if both or k not in b.beyond_front_end]
    out: List[Change] = []
    for ka, kb in pairs(keys_a, keys_b, a.diagnostic_anchors, b.diagnostic_anchors):
        if kb is None:
            out.append(Change("diagnostics", ka, "removed", fa[ka], None))
        elif ka is None:
            out.append(Change("diagnostics", kb, "added", None, fb[kb]))
        elif ka != kb:
            out.append(Change("diagnostics", ka, "changed", fa[ka], fb[kb]))
    return out


def compare(a: Side, b: Side) -> Tuple[Change, ...]:
    out: List[Change] = []
    for section in SECTIONS:
        if section in COMPILED_ONLY and not (a.compiled and b.compiled):
            continue            # unknown on one side: neither added nor removed
        fa, fb = a.facts.get(section, {}), b.facts.get(section, {})
        if section in ("checks", "diagnostics"):
            out.extend(_checks(a, b) if section == "checks" else _diagnostics(a, b))
            continue
        for key in _keys(fa, fb):
            if key not in fb:
                out.append(Change(section, key, "removed", fa[key], None))
            elif key not in fa:
                out.append(Change(section, key, "added", None, fb[key]))
            elif section == "jobs":
                for field in _keys(fa[key], fb[key]):
                    x, y = fa[key].get(field), fb[key].get(field)
                    if x != y:
                        out.append(Change(section, f"{key}.{field}",
                                          "changed" if x is not None and y is not None else
                                          "added" if x is None else "removed", x, y))
            elif fa[key] != fb[key] and not _same(a, b, section, key):
                out.append(Change(section, key, "changed", fa[key], fb[key]))
    return tuple(out)
