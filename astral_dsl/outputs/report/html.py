"""HTML building blocks of the review page. Everything a design wrote (names, messages, strings,
source lines, file names) is untrusted: it reaches the page only through `esc`, which escapes
HTML's special characters and shows control characters as visible escapes (`\\x1b`, `\\u202e`),
as the terminal output does (outputs/terminal.py)."""
from __future__ import annotations

import html
from typing import Iterable, Mapping, Optional

from astral_dsl.outputs.terminal import printable


def esc(text: object) -> str:
    """`text` safe inside an HTML element or a quoted attribute value."""
    return html.escape(printable(text), quote=True)


def attrs_text(attributes: Optional[Mapping[str, object]]) -> str:
    """` name="value"` pairs in the given order; None values are left out, True is a bare
    attribute."""
    if not attributes:
        return ""
    out = []
    for name, value in attributes.items():
        if value is None or value is False:
            continue
        out.append(f" {name}" if value is True else f' {name}="{esc(value)}"')
    return "".join(out)


def tag(name: str, body: str = "", attributes: Optional[Mapping[str, object]] = None,
        **kw: object) -> str:
    """`<name attrs>body</name>`; `body` is HTML already (escape text with `esc`). Keyword
    arguments are attributes too (`cls` stands for `class`, `_` in names for `-`)."""
    merged = dict(attributes or {})
    for key, value in kw.items():
        merged["class" if key == "cls" else key.replace("_", "-")] = value
    return f"<{name}{attrs_text(merged)}>{body}</{name}>"


def join(parts: Iterable[str]) -> str:
    return "".join(parts)


def number(x: float, digits: int = 1) -> str:
    """A figure for people: thousands separators, `digits` decimals, no `-0.0`."""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return f"{x:,}"
    text = f"{x:,.{digits}f}"
    return text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0 else text

