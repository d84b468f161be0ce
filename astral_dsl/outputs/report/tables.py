"""Tables of the page, sortable by a click on a header (assets.JS). Numbers carry their value in
`data-v` so that they sort as numbers whatever their formatting.

`summary_tables` renders a size summary (outputs.size_report.size_summary) from its structure
alone: the scalars as one table of headline figures, each mapping as a table of its keys, each
list of records as a table with one column per key; a key added to the summary appears without
a change here."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from astral_dsl.outputs.report.html import esc, number, tag

# words of summary keys as people write them; the last words name the unit
_WORDS = {"it": "IT", "pue": "PUE", "cdus": "CDUs", "cdu": "CDU", "gpus": "GPUs", "bom": "BOM",
          "avg": "average", "nic": "NIC", "ac": "AC", "dc": "DC", "tor": "ToR"}
_UNITS = [("_l_per_min", "L/min"), ("_m3_per_h", "m³/h"), ("_kw", "kW"), ("_mw", "MW"),
          ("_w", "W"), ("_ah", "Ah"), ("_a", "A"), ("_v", "V"), ("_m", "m"), ("_s", "s"),
          ("_gb", "GB"), ("_pct", "%"), ("_usd", "USD"), ("_k", "K"), ("_c", "degC")]


def label(key: str) -> str:
    """`it_power_avg_kw` -> `IT power average (kW)`."""
    unit = ""
    for suffix, name in _UNITS:
        if key.endswith(suffix) and len(key) > len(suffix):
            key, unit = key[: -len(suffix)], name
            break
    words = [_WORDS.get(w, w) for w in key.split("_") if w]
    text = " ".join(words)
    text = text[:1].upper() + text[1:] if text and not text[0].isupper() else text
    return f"{text} ({unit})" if unit else text


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cell(v: Any, head: bool = False) -> str:
    """One table cell for a value: numbers right-aligned with their value in `data-v`."""
    name = "th" if head else "td"
    if v is None:
        return tag(name, "-", cls="n")
    if _is_number(v):
        shown = figure(v)
        return tag(name, shown, {"class": "n", "data-v": repr(v)})
    if isinstance(v, bool):
        return tag(name, "yes" if v else "no")
    if isinstance(v, (Mapping, list, tuple)):
        return tag(name, esc(_plain(v)))
    return tag(name, esc(v))


def figure(v: float) -> str:
    """A number as the tables show it: whole numbers with separators, large ones to 0.1, small
    ones to six significant digits."""
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v) >= 1000:
        return number(v, 1)
    return f"{v:,.6g}"


def _plain(v: Any) -> str:
    """A value as text: numbers as the tables show them, a mapping as `key: value` pairs, a
    list comma-separated (never Python's repr of a dict or a list)."""
    if _is_number(v):
        return figure(v)
    if isinstance(v, Mapping):
        return "; ".join(f"{label(str(k))}: {_plain(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(_plain(x) for x in v)
    if v is None:
        return "-"
    return str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "",
          sortable: bool = True, cls: str = "", numeric: Optional[Sequence[bool]] = None,
          raw: bool = False, tid: Optional[str] = None) -> str:
    """A table of values (or of ready cells with `raw`: each item is a `<td>...</td>`)."""
    if numeric is None:
        numeric = [bool(rows) and all(_is_number(r[i]) or r[i] is None for r in rows)
                   and any(_is_number(r[i]) for r in rows) if not raw else False
                   for i in range(len(headers))]
    head = "".join(tag("th", esc(h), cls="n" if n else None) for h, n in zip(headers, numeric))
    body = []
    for r in rows:
        body.append("<tr>" + ("".join(r) if raw else "".join(cell(v) for v in r)) + "</tr>")
    classes = " ".join(c for c in (("sortable" if sortable else ""), cls) if c) or None
    return '<div class="tw">' + tag("table", (tag("caption", esc(caption)) if caption else "")
               + tag("thead", "<tr>" + head + "</tr>") + tag("tbody", "".join(body)),
               {"class": classes, "id": tid}) + "</div>"


def records(items: Sequence[Mapping[str, Any]], caption: str, tid: Optional[str] = None) -> str:
    """A list of records as a table: one column per key, in the order keys first appear."""
    keys: List[str] = []
    for item in items:
        for k in item:
            if k not in keys:
                keys.append(k)
    rows = [[item.get(k) for k in keys] for item in items]
    return table([label(k) for k in keys], rows, caption, tid=tid)


def key_values(items: Mapping[str, Any], caption: str, tid: Optional[str] = None,
               pretty: bool = True) -> str:
    """Two columns: what (a summary key made readable, or as it is with `pretty=False`: the
    names of a design's tiers are its own) and its value."""
    return table(["what", "value"], [[label(k) if pretty else k, v] for k, v in items.items()],
                 caption, cls="kv", tid=tid)


def _nested(v: Any) -> bool:
    """A value that is a table of its own (records, or a mapping holding them), not a cell."""
    if isinstance(v, Mapping):
        return any(isinstance(x, (Mapping, list, tuple)) for x in v.values())
    return isinstance(v, (list, tuple)) and any(isinstance(x, Mapping) for x in v)


def summary_tables(summary: Dict[str, Any], skip: Sequence[str] = (), prefix: str = "size"
                   ) -> str:
    """Every part of a size summary as a table (see the module's docstring)."""
    scalars = {k: v for k, v in summary.items()
               if k not in skip and not isinstance(v, (Mapping, list, tuple))}
    out = [key_values(scalars, "Headline figures", tid=f"{prefix}-headline")] if scalars else []
    out += _collections({k: v for k, v in summary.items() if k not in skip and k not in scalars},
                        prefix, "")
    return "".join(out)


def _collections(items: Mapping[str, Any], prefix: str, within: str) -> List[str]:
    """The tables of the collections of a summary (or of a part of it: `within` names the
    part in the captions); a mapping that holds collections (the facility, with its
    circuits) is its scalars' table, then a table per collection, never a dict in a cell."""
    out: List[str] = []
    for k, v in items.items():
        tid = f"{prefix}-{k.replace('_', '-')}"
        caption = f"{within}: {label(k)}" if within else label(k)
        if isinstance(v, Mapping):
            if v and all(isinstance(x, Mapping) for x in v.values()):
                out.append(records([{"name": name, **x} for name, x in v.items()], caption,
                                   tid))
            elif v:
                plain = {a: b for a, b in v.items() if not _nested(b)}
                if plain:
                    out.append(key_values(plain, caption, tid, pretty=False))
                out += _collections({a: b for a, b in v.items() if _nested(b)}, tid, caption)
        elif isinstance(v, (list, tuple)) and v:
            if all(isinstance(x, Mapping) for x in v):
                out.append(records(v, caption, tid))
            else:
                out.append(table([label(k)], [[x] for x in v], tid=tid))
    return out
