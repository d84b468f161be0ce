"""A runs table: published (or measured) training runs, one per row, in the columns of NVIDIA's and
torchtitan's published performance tables as docs/runs.md defines them.

`read_table(path)` reads a CSV with exactly the columns of COLUMNS (in any order; an unknown or
missing column is E766 with the header's position) and returns a RunsTable of Run records. A
cell that cannot be read (a count that is not a whole number, a negative size, a rate that is
not finite) does not stop the table: its row carries the problem (`Run.problems`, the field and
why) and `astral runs` reports it as "rejected" with the field. Nothing is guessed here: a cell
left empty is None, "n/a" is NOT_USED in a count (a dimension the run does not use) and None in
a rate (a figure not published).
"""
from __future__ import annotations

import csv
import errno
import math
import re
from collections import Counter
from typing import Dict, List, Optional, Tuple

import attrs

from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity, Span, excerpt
from astral_dsl.line_ends import lines_of
from astral_dsl.runs.agree import DISAGREE, disagreements, rates_disagree
from astral_dsl.runs.csvtext import (Lines, RecordTooLong, at, cell_columns, err, too_long,
                                     unclosed)

COLUMNS: Tuple[str, ...] = (
    "id", "source_url", "source_version", "system", "gpu", "precision", "model", "params_b",
    "layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "moe_experts", "moe_topk",
    "seq_len", "gpus", "gbs", "mbs", "tp", "pp", "cp", "vp", "ep", "fsdp", "recompute",
    "tokens_per_s_per_gpu", "model_tflops_per_gpu", "step_time_s", "notes")
TEXT = ("id", "source_url", "source_version", "system", "gpu", "precision", "model", "recompute",
        "notes")
# whole numbers, with the largest plausible value (model/kinds.py's bounds)
COUNTS: Dict[str, float] = {
    "layers": 1e5, "hidden": 2 ** 24, "ffn_hidden": 2 ** 27, "heads": 65536, "kv_heads": 65536,
    "vocab": 2 ** 30, "moe_experts": 65536, "moe_topk": 65536, "seq_len": 2 ** 30, "gpus": 1e9,
    "gbs": 2 ** 30, "mbs": 2 ** 30, "tp": 65536, "pp": 1e5, "cp": 2 ** 30, "vp": 1e5,
    "ep": 65536, "fsdp": 1e9}
# positive reals: (the smallest, the largest plausible value). The smallest are far below any
# published run (torchtitan's 405B rows with 128K tokens: 31 tokens/s per GPU; a step of
# microseconds) but keep an error of forecast / published - 1 within floating point
RATES: Dict[str, Tuple[float, float]] = {
    "params_b": (1e-6, 1e6), "tokens_per_s_per_gpu": (1e-3, 1e12),
    "model_tflops_per_gpu": (1e-6, 1e9), "step_time_s": (1e-6, 1e9)}
NOT_USED = -1            # "n/a": the dimension is not used (VP, EP)
# a number's thousands separators: commas between groups of three digits ("4,912", "1,234,567.5"),
# as a spreadsheet writes them; any other comma ("3,87", a decimal comma) rejects the cell
THOUSANDS = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")
# the `recompute` cell: one of these words (case ignored), a remark in parentheses after it
# allowed ("selective (op)"); anything else rejects the row
RECOMPUTE = re.compile(r"(full|selective|none)\s*(\(.*\))?", re.I | re.S)
SEPARATORS = {";": "semicolons", "\t": "tabs"}     # what other exports put between cells
MAX_ROWS = 100_000       # a runs table is a few hundred rows; this bounds the work


@records.frozen
class Run:
    """One row. Counts are ints (NOT_USED for "n/a"), rates floats, absent cells None."""
    line: int
    id: str
    text: Tuple[Tuple[str, str], ...]
    values: Tuple[Tuple[str, Optional[float]], ...]
    problems: Tuple[Tuple[str, str], ...] = ()

    def __getattr__(self, name):
        if name in COUNTS or name in RATES:
            return dict(self.values).get(name)
        if name in TEXT:
            return dict(self.text).get(name, "")
        raise AttributeError(name)

    def count(self, name: str, default: Optional[int] = None) -> Optional[int]:
        v = dict(self.values).get(name)
        return default if v is None or v == NOT_USED else int(v)

    def used(self, name: str) -> bool:
        """The cell is not "n/a"."""
        return dict(self.values).get(name) != NOT_USED

    @property
    def key(self) -> Tuple:
        """One configuration across releases (a group of the leave-one-group-out check): every
        column but the id, the source, the published figures and the notes."""
        skip = {"id", "source_url", "source_version", "tokens_per_s_per_gpu",
                "model_tflops_per_gpu", "step_time_s", "notes"}
        text = tuple((k, _norm(v)) for k, v in self.text if k not in skip)
        return text + tuple((k, v) for k, v in self.values if k not in skip)


def _norm(text: str) -> str:
    """A model or system name for comparison: lower case, letters and digits only, tags such as
    "(tokendrop)" kept."""
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch == "(" or ch == ")")


@records.frozen
class RunsTable:
    file: str
    runs: Tuple[Run, ...]
    diagnostics: Tuple[Diagnostic, ...] = ()
    # E777 per cell of a rejected row, at the cell: the table is still read (valid), the row
    # listed as rejected
    rejected: Tuple[Diagnostic, ...] = ()
    # W778 per row whose tokens/s per GPU and step time disagree, over the two cells (agree.py)
    warnings: Tuple[Diagnostic, ...] = ()

    @property
    def valid(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def _cell(name: str, raw: str) -> Tuple[Optional[float], Optional[str]]:
    """(value, problem) of a numeric cell."""
    text = raw.strip()
    if "," in text:
        if not THOUSANDS.fullmatch(text):
            return None, (f"`{text[:40]}`: a comma is read only between groups of three digits "
                          "(4,912); write a decimal point as `.`")
        text = text.replace(",", "")
    if text == "" or text == "-":
        return None, None
    if text.lower() == "n/a":
        # a dimension not used; a rate not available is absent (it was read as -1, a
        # published step of -1 s: found by the runs fuzz target)
        return (None if name in RATES else float(NOT_USED)), None
    if not text.isascii() or "_" in text:     # float() reads `1.٤2` as 1.42 and `1_0` as 10
        return None, (f"`{raw.strip()[:40]}` is not a number: write it with the digits 0-9 "
                      f"(a point, an exponent, thousands separated by commas)")
    try:
        value = float(text)
    except ValueError:
        return None, f"`{raw.strip()[:40]}` is not a number"
    if not math.isfinite(value):
        if text.lstrip("+-").lower() not in ("inf", "infinity", "nan"):    # 1e400, 400 nines
            return None, (f"{excerpt(raw.strip(), 40)} is too large to represent (beyond "
                          f"about 1.8e308)")
        return None, f"{raw.strip()[:40]} is not a finite number"
    if name in COUNTS:
        if value != int(value):
            return None, f"{raw.strip()} is not a whole number"
        low = 0 if name == "fsdp" else 1
        if not low <= value <= COUNTS[name]:     # said as counts: 1.07374e+09 was 2^30
            shown = f"{int(value):,}" if abs(value) < 1e15 else f"{value:g}"
            return None, f"{shown} is outside {low} - {COUNTS[name]:,.0f}"
        return float(int(value)), None
    low, high = RATES[name]
    if not low <= value <= high:
        return None, f"{value:g} is outside {low:g} - {high:g}"
    return value, None


# unknown columns said one by one, the rest in one diagnostic: a header of 5,000,000 made as
# many diagnostics (over 120 s and growing memory for a 10 MB table, under the 64 MiB cap)
UNKNOWN_SHOWN = 8
_COLUMNS_HINT = "a runs table has the columns of docs/runs.md: " + ", ".join(COLUMNS)


def _no_header(file: str, width: int) -> Diagnostic:
    """E766 for a first line that names none of the columns: a design, or a table whose header
    was left out (its first row's cells were said as unknown columns, and every column as
    missing)."""
    hint = (f"a design is forecast by `astral forecast {file}`; `astral runs` reads a runs "
            f"table, CSV (docs/runs.md)" if file.endswith(".astral") else
            "the first line names the columns: " + ",".join(COLUMNS))
    return err("E766", "the first line names none of a runs table's columns: it is not a "
               "runs table's header", file, 1, 1, max(2, min(width, 120) + 1), hint)


def parse_table(text: str, file: str) -> RunsTable:
    """The runs of a table's text (read_table reads the file)."""
    lines = Lines(text)
    reader = csv.reader(lines)
    try:
        header = next(reader)
    except RecordTooLong:
        return RunsTable(file, (), (too_long(lines, file, 1, "header", len(COLUMNS)),))
    except StopIteration:
        return RunsTable(file, (), (err("E766", "the runs table is empty: it has no header",
                                         file, 1, hint="the first line names the columns: "
                                         + ",".join(COLUMNS)),))
    except csv.Error as exc:
        return RunsTable(file, (), (err("E766", f"the runs table is not CSV: {exc}", file, 1,
                                         hint="the first line names the columns: "
                                              + ",".join(COLUMNS)),))
    if lines.taken > 1 and any("\n" in c or "\r" in c for c in header):    # as a row's
        return RunsTable(file, (), (unclosed(lines.first, file, 1, reader.line_num),))
    names = [h.strip().lower() for h in header]
    sep = next((s for s in SEPARATORS if len(header) == 1 and s in header[0]
                and header[0].split(s)[0].strip().lower() in COLUMNS), None)
    if sep is not None:        # a spreadsheet's export where the decimal mark is a comma
        at = len(header[0].split(sep)[0]) + 1
        return RunsTable(file, (), (err(
            "E766", f"the runs table's cells are separated by {SEPARATORS[sep]}, not commas",
            file, 1, at, at + 1, "save it as CSV with commas between cells (and a decimal "
            "point in numbers: a spreadsheet's `CSV UTF-8`)"),))
    if not set(names) & set(COLUMNS):       # each cell was an unknown column (and more)
        return RunsTable(file, (), (_no_header(file, len(",".join(header))),))
    diags: List[Diagnostic] = []
    col, unknown = 1, 0
    for h, raw in zip(names, header):
        if h not in COLUMNS:
            unknown += 1
            if unknown <= UNKNOWN_SHOWN:
                diags.append(err("E766", f"unknown column `{raw.strip()[:60]}` in the runs "
                                  "table", file, 1, col, col + max(1, len(raw)), _COLUMNS_HINT))
            elif unknown == UNKNOWN_SHOWN + 1:
                first_more = col
        col += len(raw) + 1
    if unknown > UNKNOWN_SHOWN:
        diags.append(err("E766", f"{unknown - UNKNOWN_SHOWN:,} more unknown columns in the runs "
                          "table, from here on", file, 1, first_more, first_more + 1,
                          _COLUMNS_HINT))
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        diags.append(err("E766", "the runs table lacks the column(s) " + ", ".join(missing),
                          file, 1, 1, max(2, len(",".join(header)) + 1),
                          "add them (a cell may be empty): docs/runs.md defines every column"))
    # counted once (names.count per name was quadratic: a header of 50,000 columns, 34 s)
    dup = sorted(n for n, k in Counter(names).items() if k > 1 and n in COLUMNS)
    if dup:
        diags.append(err("E766", "the runs table names the column(s) " + ", ".join(dup)
                          + " twice", file, 1, 1, max(2, len(",".join(header)) + 1),
                          "keep one column of each name"))
    if diags:
        return RunsTable(file, (), tuple(diags))
    runs: List[Run] = []
    seen: Dict[str, int] = {}
    end = reader.line_num
    lines.next_record()
    try:
        for cells in reader:
            start, end = end + 1, reader.line_num
            line = end
            if end > start and any("\n" in c or "\r" in c for c in cells):
                diags.append(unclosed(lines.first, file, start, end))
                break
            lines.next_record()
            if not any(c.strip() for c in cells):
                continue
            if len(runs) >= MAX_ROWS:
                diags.append(err("E766", f"the runs table has more than {MAX_ROWS:,} rows",
                                  file, line, hint="a runs table is a few hundred rows: split "
                                                   "it"))
                break
            runs.append(_row(names, cells, line, seen))
    except RecordTooLong:
        diags.append(too_long(lines, file, end + 1, "row", len(COLUMNS)))
    except csv.Error as exc:
        long = "field larger than field limit" in str(exc)
        diags.append(err("E766", f"the runs table is not CSV: {exc}", file, reader.line_num,
                          hint=f"a cell holds at most {csv.field_size_limit():,} characters: "
                               "shorten it (notes belong in a few sentences)" if long else
                               "quote a cell that holds commas or quotes (\"a, b\"), doubling "
                               "its quotes"))
    runs = _generated_ids(runs)
    return RunsTable(file, tuple(runs), tuple(diags), tuple(_rejections(runs, names, text, file)),
                     tuple(disagreements(runs, names, text, file)))


# what a rejected cell should hold, by its column (docs/runs.md, "How cells are read")
REJECT_HINTS = {
    "row": "a row has one cell per column of the header: quote a cell that holds a comma "
           "(\"a, b\"), and separate cells with commas (not semicolons)",
    "id": "give each row an id of its own (or leave it empty: `line N`)",
    "recompute": "write full, selective or none (a remark in parentheses may follow), or leave "
                 "it empty for Seer's rule",
}


def _hint(field: str, why: str = "") -> str:
    if DISAGREE in why:
        return ("one of the two is wrong: check both cells against the source (a decimal comma "
                "left unquoted moves the cells after it), or leave one empty")
    if field in REJECT_HINTS:
        return REJECT_HINTS[field]
    if field in COUNTS:
        low = 0 if field == "fsdp" else 1
        return (f"a whole number from {low} to {COUNTS[field]:,.0f}, `n/a` where the run does not "
                "use the dimension, or empty (docs/runs.md)")
    low, high = RATES.get(field, (0.0, 0.0))
    return (f"a finite number from {low:g} to {high:g} (a decimal point, commas only between "
            "groups of three digits), or empty / `n/a` when not published (docs/runs.md)")


def _rejections(runs: List[Run], names: List[str], text: str, file: str) -> List[Diagnostic]:
    """E777 for each problem of each rejected row, at its cell (the whole line where the line's
    cells do not line up with the header's `names`: `row`, a quote inside a cell)."""
    if not any(r.problems for r in runs):
        return []
    lines = lines_of(text)
    out = []
    for r in runs:
        line = lines[r.line - 1] if r.line <= len(lines) else ""
        cells = cell_columns(line)
        for field, why in r.problems:
            k = names.index(field) if field in names else -1
            col, end = (cells[k] if 0 <= k < len(cells) and len(cells) == len(names)
                        else (1, len(line) + 1))
            out.append(err("E777", f"row `{r.id}` is rejected: {field}: {why}", file, r.line,
                            col, max(end, col + 1), _hint(field, why)))
    return out


def _row(names: List[str], cells: List[str], line: int, seen: Dict[str, int]) -> Run:
    problems: List[Tuple[str, str]] = []
    if len(cells) != len(names):
        problems.append(("row", f"{len(cells)} cells for {len(names)} columns"))
    raw = dict(zip(names, cells + [""] * (len(names) - len(cells))))
    text = tuple((k, raw[k].strip()) for k in TEXT)
    values = []
    for k in COLUMNS:
        if k in TEXT:
            continue
        v, why = _cell(k, raw[k])
        if why:
            problems.append((k, why))
        values.append((k, v))
    disagree = rates_disagree(dict(values))
    if disagree:
        problems.append(("tokens_per_s_per_gpu", disagree))
    rec = raw["recompute"].strip()
    if rec and not RECOMPUTE.fullmatch(rec):
        problems.append(("recompute", f"`{rec[:40]}` is not full, selective or none"))
    rid = raw["id"].strip()
    if rid in seen:
        problems.append(("id", f"`{rid}` is also the id of line {seen[rid]}"))
    elif rid:
        seen[rid] = line
    return Run(line, rid or f"line {line}", text, tuple(values), tuple(problems))


def _generated_ids(runs: List[Run]) -> List[Run]:
    """A row without an id is `line N`, or `line N (no id)` where an explicit id of the table
    is `line N` (so a generated id never takes an explicit one's)."""
    explicit = {r.id for r in runs if r.text[0][1]}
    out = []
    for r in runs:
        rid = r.id
        while not r.text[0][1] and rid in explicit:
            rid += " (no id)"
        out.append(r if rid == r.id else attrs.evolve(r, id=rid))
    return out


def read_table(path) -> RunsTable:
    """The runs table in `path` (E766 when it cannot be read or is not one)."""
    name = str(path)
    limit = 64 * 1024 * 1024

    def fail(message: str, hint: str, offset: Optional[int] = None) -> RunsTable:
        span = None
        if offset is not None:
            line, col = at(data, offset)
            span = Span.at(name, line, col, line, col + 1)
        return RunsTable(name, (), (Diagnostic("E766", Severity.ERROR, message, span, hint,
                                               file=name),))

    from astral_dsl.encodings import wide as wide_text
    from astral_dsl.regularfile import read_regular
    from astral_dsl.semantics.source_files import unreadable_hint

    data = b""
    try:
        data = read_regular(path, limit)      # a FIFO blocked, a device was read 64 MiB
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            return fail("the runs table is over 64 MiB", "a runs table is a few hundred rows: "
                        "split it, or leave out what is not a run")
        hint = unreadable_hint(exc.errno, "its CSV file", imports=False)
        return RunsTable(name, (), (Diagnostic("E766", Severity.ERROR, f"cannot read the runs "
                                               f"table: {exc.strerror}", hint=hint, file=name),))
    wide = wide_text(data)
    if wide is not None:      # said as a byte 0xff, or (without a byte-order mark) as binary
        return fail(f"the runs table is {wide} text, not UTF-8", "save it as UTF-8 (CSV UTF-8 "
                    f"in a spreadsheet; `iconv -f {wide[:6]} -t UTF-8`; in Windows PowerShell, "
                    f"`Out-File -Encoding utf8`)", 0)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        return fail(f"the runs table is not UTF-8 text (byte 0x{data[start]:02x})",
                    "save it as UTF-8 (CSV UTF-8 in a spreadsheet)", start)
    if "\x00" in text:
        return fail("the runs table is binary (it holds NUL bytes)",
                    "a runs table is CSV text: docs/runs.md", data.index(b"\x00"))
    return parse_table(text, name)
