"""Device names: the naming pattern a design declares (`name = "gpu-{pod}-{rack:03}-{host}"` on a
host, a rack, a row...; on a tier for its switches; on a NIC for its ports' interface names).

A placeholder is `{KEY}`, `{KEY+N}` (counted from N instead of 0) or either with a format after
`:` (`{rack:03}`, Python's format mini-language for whole numbers). The keys are the kinds of
the parts on the way to the named one (`site`, `hall`, `pod`, `row`, `block`, `rack`, `host`:
the index of that part among its siblings, as in its path `...racks[12]...`; `site` is the
site's name) and `index` (the named part's own); a tier's switches also have `rail`, `plane`
(a letter, as in paths), the kind of the tier's scope and the kinds on the path of the
fabric's owner (`pod` of a pod's fabric); a NIC's ports `nic` (the NIC's index
in its host) and `port` (the port's index on the NIC). A part without a pattern is named by its
path."""
from __future__ import annotations

import re
from typing import Dict, Optional, Tuple, Union

KEYS = ("site", "hall", "pod", "row", "block", "rack", "host", "index", "rail", "plane", "nic",
        "port")
# compiled by `re` on first use, not at import: a design without name patterns never uses it
# (for start-up)
PLACEHOLDER = r"\{([A-Za-z_]+)([+-]\d{1,6})?(?::([^{}]{0,16}))?\}"
NAMED_KINDS = ("host", "rack", "row", "block", "pod", "hall", "site", "tier", "nic")


def names_anything(design) -> bool:
    """Whether the design declares a name or a naming pattern on any part (here, not in
    analyses/inventory.py, which binds the names: a check of a design that names nothing
    does not import it, for start-up)."""
    return any(isinstance(i.field("name"), str) for i in design.instances
               if i.kind in NAMED_KINDS)


def check_pattern(text: str) -> Optional[Tuple[str, str, str]]:
    """None, or (code, message, hint) for a pattern that cannot name anything (E303)."""
    rest = re.sub(PLACEHOLDER, "", text)
    if "{" in rest or "}" in rest:
        return ("E303", f"the name pattern `{text}` has a `{{` or `}}` that opens or closes no "
                        "placeholder", "placeholders are `{KIND}`, `{KIND+1}` or `{KIND:03}`, "
                        "e.g. `\"gpu-{pod}-{rack:03}-{host}\"`")
    for m in re.finditer(PLACEHOLDER, text):
        if m.group(1) not in KEYS:
            from astral_dsl.diagnostics import did_you_mean

            return ("E303", f"the name pattern `{text}` has the placeholder `{m.group(0)}`, "
                            "which names nothing",
                    did_you_mean(m.group(1), KEYS) or "placeholders: " + ", ".join(KEYS))
        spec = m.group(3)
        if spec is not None:
            try:
                format(0, spec)
            except ValueError:
                return ("E303", f"the name pattern `{text}`: `{spec}` is not a format for a "
                                f"whole number", "e.g. `{rack:03}` for 007")
    return None


Value = Union[int, str]


def render(pattern: str, values: Dict[str, Value]) -> Tuple[str, Tuple[str, ...]]:
    """The name `pattern` gives with `values`, and the placeholders it names that the part does
    not have (left as written)."""
    missing = []

    def one(m) -> str:
        key, offset, spec = m.group(1), m.group(2), m.group(3)
        if key not in values:
            missing.append(key)
            return m.group(0)
        v = values[key]
        if isinstance(v, int):
            v = v + int(offset or 0)
            return format(v, spec) if spec else str(v)
        return str(v)
    return re.sub(PLACEHOLDER, one, pattern), tuple(missing)

