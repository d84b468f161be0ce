"""An inventory bound to the design: each row of the file an `inventory` declares (a CSV with a
header row, or the JSON list NetBox's `/api/dcim/devices/` returns) is the part whose model path
its `path` column holds, or, without that column, the part whose name the design's pattern gives
(inventory.py), and gives that part its real name, serial and asset tag.

    inventory Fleet {
      file = "fleet.csv"
      columns { name = "name", serial = "serial", asset_tag = "asset_tag" }
      required = [host]
    }

A row that names no part is W231 at its line; two rows for one part E233; a part of a `required`
kind without a row E232; a file that cannot be read or lacks a declared column E230, E234. The
devices' names then stand beside their paths wherever a path is shown (analyses/devices.py).

A check imports this module only for a design that names a part (pipeline.devices)."""
from __future__ import annotations

import csv
import io
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl import jsonin, records
from astral_dsl.diagnostics import Diagnostic, Severity, Span

DEFAULT_COLUMNS = {"name": "name", "serial": "serial", "asset_tag": "asset_tag", "path": None}
MAX_ROWS = 1_000_000
# the longest dotted column name a JSON inventory's objects are flattened to: NetBox's longest
# are `custom_fields.` and a custom field's name (at most 50 characters); a longer name, and
# what is nested under it, is not a column. Without a bound, every leaf's name carried its whole
# chain of keys: an 8 MB file of 500 levels, each with a leaf and an 8,000-character key, made
# column names of about 1 GB (3 GB of memory, 21 s)
MAX_COLUMN = 256
COLUMNS_SHOWN = 20               # columns an E234 hint lists
# rows a W231 or E233 stands at one by one; the rest of each are one diagnostic at the first
# of them, which counts them (an 8 MB inventory of 1,000,000 rows of another fleet printed as
# many warnings: 45 s and 979 MB)
ROWS_SAID = 20


@records.frozen
class Device:
    path: str
    kind: str
    name: str                        # the real name (the row's), else the pattern's
    serial: Optional[str] = None
    asset_tag: Optional[str] = None
    file: Optional[str] = None       # the inventory row it comes from
    line: Optional[int] = None       # its line in a CSV (None: an item of a JSON list)
    item: Optional[int] = None       # its place (from 1) in a JSON list (None: a CSV line)


@records.frozen
class Row:
    number: int                      # its line in a CSV, its place (from 1) in a JSON list
    values: Dict[str, str]
    width: int = 1                   # a CSV line's length (the diagnostic's span)


def rows_of(data: bytes, file: str) -> Tuple[List[Row], Optional[str], bool]:
    """The rows of an inventory file, what is wrong with it (or None), and whether its rows are
    lines (CSV) or items (JSON)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return [], "it is not UTF-8 text", True
    if file.lower().endswith(".json") or text.lstrip().startswith(("[", "{")):
        try:
            doc = jsonin.loads(text)
        except ValueError as exc:
            return [], f"it is not JSON ({exc})", False
        items = doc.get("results") if isinstance(doc, dict) else doc
        if not isinstance(items, list):
            return [], "it is neither a list of devices nor NetBox's `{\"results\": [...]}`", False
        return [Row(i, _flat(item)) for i, item in enumerate(items[:MAX_ROWS], 1)
                if isinstance(item, dict)], None, False
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        return [], "it is empty: a CSV inventory starts with a header row", True
    except csv.Error as exc:
        return [], f"it is not CSV ({exc})", True
    out = []
    lines = text.split("\n")
    try:
        for values in reader:
            if len(out) >= MAX_ROWS:
                break
            if any(v.strip() for v in values):
                n = reader.line_num
                out.append(Row(n, dict(zip((h.strip() for h in header),
                                           (v.strip() for v in values))),
                               len(lines[n - 1].rstrip("\r")) if n <= len(lines) else 1))
    except csv.Error as exc:
        return out, f"line {reader.line_num} is not CSV ({exc})", True
    if not out:
        return [], None, True
    return out, None, True


def _flat(item: Dict, prefix: str = "") -> Dict[str, str]:
    """A NetBox device object as columns: `name`, `serial`, `asset_tag`, `custom_fields.X`,
    `site.name`, ..."""
    out: Dict[str, str] = {}
    for key, value in item.items():
        name = f"{prefix}{key}"
        if len(name) > MAX_COLUMN:
            continue
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}."))
        elif value is not None and not isinstance(value, list):
            out[name] = str(value)
    return out


def _listed(columns: Sequence[str]) -> str:
    shown = ", ".join(f"`{c}`" for c in columns[:COLUMNS_SHOWN])
    more = len(columns) - COLUMNS_SHOWN
    return shown + (f" and {more:,} more" if more > 0 else "")


@records.frozen
class Binding:
    devices: Tuple[Device, ...]
    diagnostics: Tuple[Diagnostic, ...]


def bind(rows: Sequence[Row], file: str, lines: bool, columns: Dict[str, Optional[str]],
         named: Dict[str, Tuple[str, str]], by_name: Dict[str, str], required: Sequence[str],
         where: Optional[Span]) -> Binding:
    """`named`: every part's path -> (kind, pattern name); `by_name`: pattern name -> path."""
    diags: List[Diagnostic] = []
    header = set(rows[0].values) if rows else set()
    key = columns.get("path") or columns["name"]
    wanted = [c for c in (columns.get("path"), columns["name"]) if c]
    absent = [c for c in wanted if rows and c not in header]
    if absent:
        return Binding((), (Diagnostic(
            "E234", Severity.ERROR, f"the inventory `{file}` has no column "
                                    + ", ".join(f"`{c}`" for c in absent), where,
            "its columns: " + _listed(sorted(header))
            + "; say which to read in `columns { ... }`"),))
    bound: Dict[str, Device] = {}
    first_row: Dict[str, int] = {}
    said = {"W231": 0, "E233": 0}
    unsaid: Dict[str, List[Row]] = {"W231": [], "E233": []}     # past ROWS_SAID
    w231_hint = "the design's parts are named by their paths" \
        + (" or the patterns it declares (`name = ...`)" if not columns.get("path") else "") \
        + "; a row for a device outside the design may be accepted with `allow W231 \"...\"`"
    e233_hint = "each part of the design is one device: remove one of the rows"
    for row in rows:
        value = row.values.get(key, "")
        path = value if columns.get("path") else by_name.get(value)
        if path is None or path not in named or path in bound:
            code = "E233" if path in bound else "W231"
            said[code] += 1
            if said[code] > ROWS_SAID:
                unsaid[code].append(row)
            elif code == "W231":
                diags.append(_row_diagnostic(
                    "W231", Severity.WARNING, file, row, lines,
                    f"inventory row names no part of the design: {key} `{value}`", w231_hint))
            else:
                diags.append(_row_diagnostic(
                    "E233", Severity.ERROR, file, row, lines,
                    f"a second inventory row for {path} (the first is "
                    f"{'line' if lines else 'item'} {first_row[path]})", e233_hint))
            continue
        kind = named[path][0]
        real = row.values.get(columns["name"]) or named[path][1]
        bound[path] = Device(path, kind, real, row.values.get(columns["serial"]) or None,
                             row.values.get(columns["asset_tag"]) or None, file,
                             row.number if lines else None,    # (a JSON item is no line)
                             None if lines else row.number)
        first_row[path] = row.number
    for code, left in unsaid.items():
        if left:
            where = f"{'line' if lines else 'item'} {left[0].number}"
            diags.append(_row_diagnostic(
                code, Severity.WARNING if code == "W231" else Severity.ERROR, file, left[0],
                lines, f"{len(left):,} more inventory row{'s' * (len(left) > 1)}, from "
                f"{where}, " + (("name" if len(left) > 1 else "names") + " no part of the design"
                                if code == "W231" else "for parts that have a row already")
                + f" (the first {ROWS_SAID} are said one by one)",
                w231_hint if code == "W231" else e233_hint))
    for kind in required:
        missing = [p for p, (k, _) in named.items() if k == kind and p not in bound]
        if missing:
            shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
            diags.append(Diagnostic(
                "E232", Severity.ERROR, f"{len(missing):,} {kind}(s) of the design have no row "
                                        f"in the inventory `{file}`: {shown}", where,
                f"add their rows, or take `{kind}` out of the inventory's `required`"))
    return Binding(tuple(bound.values()), tuple(diags))


def _row_diagnostic(code, severity, file, row: Row, lines: bool, message, hint) -> Diagnostic:
    if lines:
        return Diagnostic(code, severity, message,
                          Span.at(file, row.number, 1, row.number, max(2, row.width + 1)), hint)
    return Diagnostic(code, severity, message, None, hint, file=file,
                      notes=(f"item {row.number} of the list",))
