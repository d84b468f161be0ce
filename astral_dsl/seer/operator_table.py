"""The measured operator table a forecast may be given (`--operator-table`): a CSV of whole
operators' times, read and checked row by row (a unit slip, a repeated row, a row with no time
refused at its line), and looked up by the operator, shape and dtype the trace shows; Costs
(costs.py) prices an operator from it before its roofline, and the forecast names the rows that
priced nothing."""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple


class OperatorTable:
    """Measured times: CSV with columns operator, shape, dtype and time (seconds), or time_ms /
    time_us. `shape` is `MxNxK` for GEMMs (any text for other operators: it must match the
    shape string Seer prints in the trace's args). An operator named `gemm` matches every GEMM of
    that shape."""

    def __init__(self, rows: Dict[Tuple[str, str, str], float],
                 lines: Optional[Dict[Tuple[str, str, str], int]] = None):
        self.rows = rows
        self.lines = lines or {}      # each row's line in its file
        self.matched: set = set()     # the rows some operator of a forecast took its time from

    MAX_BYTES = 64 * 1024 * 1024          # a table of every operator of a model is far smaller

    @classmethod
    def read(cls, path: str) -> "OperatorTable":
        """The table of a CSV file; ValueError naming the file and line of a row that has no
        time, a time that is not a finite number of seconds >= 0, or a file that is not a
        UTF-8 CSV of at most MAX_BYTES, or a row that repeats another's operator, shape and
        dtype (which of their times would price it?)."""
        import csv      # here, for start-up: a check validates jobs without an operator table
        import io

        from astral_dsl.regularfile import read_regular

        try:          # a FIFO (one swapped in after a check too) would block, a device never end
            data = read_regular(path, cls.MAX_BYTES)
        except OSError as exc:
            raise ValueError(f"{path}: {exc.strerror or exc}") from None
        rows, lines = {}, {}
        try:
            with io.StringIO(data.decode("utf-8-sig"), newline="") as fh:  # a BOM, as Excel writes
                reader = csv.DictReader(fh)
                _check_header(reader.fieldnames, path)
                for rec in reader:
                    where = f"{path}, line {reader.line_num}"
                    rec = {(k or "").strip().lower(): (v or "").strip()
                           for k, v in rec.items() if isinstance(v, str) or v is None}
                    key = (rec.get("operator", ""), rec.get("shape", "").replace(" ", ""),
                           rec.get("dtype", "bf16") or "bf16")
                    if key[2] not in DTYPES:
                        raise ValueError(f"{where}: dtype `{key[2]}` is none of the operators' "
                                         f"input dtypes ({', '.join(DTYPES)}): the row would "
                                         "price no operator")
                    if key in rows:
                        raise ValueError(f"{where}: repeats line {lines[key]}'s operator, "
                                         f"shape and dtype ({_row(key)})")
                    rows[key], lines[key] = _seconds(rec, where), reader.line_num
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ValueError(f"{path}: not a UTF-8 CSV table ({exc})") from None
        return cls(rows, lines)

    def unmatched(self, most: int = 5) -> str:
        """The rows that priced no operator, by line: '' when every row did."""
        left = sorted((self.lines.get(k, 0), k) for k in self.rows if k not in self.matched)
        text = ", ".join(f"line {n} ({_row(k)})" for n, k in left[:most])
        return text + (f" and {len(left) - most:,} more" if len(left) > most else "")

    def lookup(self, op: str, shape: str, dtype: str) -> Optional[float]:
        for key in ((op, shape, dtype), ("gemm", shape, dtype)):
            t = self.rows.get(key)
            if t is not None:
                self.matched.add(key)
                return t
        return None


# the dtypes of an operator's inputs, as the trace shows them (costs.Costs' lookups): a 16-bit,
# fp32 or quantised job's (docs/seer.md, "Compute costs")
DTYPES = ("bf16", "fp16", "fp32", "fp8", "fp8_block", "mxfp8", "nvfp4")


def _check_header(names, path: str) -> None:
    """ValueError for a table whose first line has no `operator` or no `shape` column: every
    row of it would have priced nothing (a header's `op` read as no operator, each row's
    operator ``), and the forecast said only that no row named an operator of its (W751)."""
    have = [(n or "").strip().lower() for n in names or ()]
    if not have:
        raise ValueError(f"{path}: the table is empty: its first line names the columns "
                         "operator, shape, dtype and time (or time_ms, time_us)")
    for column in ("operator", "shape"):
        if column not in have:
            raise ValueError(f"{path}, line 1: no `{column}` column (the header names "
                             f"{', '.join(f'`{n}`' for n in have)}): a table's columns are "
                             "operator, shape, dtype and time (or time_ms, time_us)")


def _row(key: Tuple[str, str, str]) -> str:
    """A row's operator, shape and dtype as the table states them."""
    return "`{}`, shape `{}`, {}".format(*key)


# an operator measured at more than an hour is a unit slip (microseconds written in `time`)
MAX_OPERATOR_S = 3600.0


def _seconds(rec: Dict[str, str], where: str) -> float:
    """A row's time in seconds, from `time`, `time_ms` or `time_us`."""
    for column, scale in (("time", 1.0), ("time_ms", 1e-3), ("time_us", 1e-6)):
        text = rec.get(column)
        if text:
            try:
                t = float(text) * scale
            except ValueError:
                raise ValueError(f"{where}: {column} `{text}` is not a number") from None
            if not math.isfinite(t) or t < 0:
                raise ValueError(f"{where}: {column} `{text}` is not a finite time >= 0")
            if t > MAX_OPERATOR_S:      # 1e308 s made the iteration infinite, 1e300 s 302 digits
                raise ValueError(f"{where}: {column} `{text}` is more than an hour: one "
                                 f"operator's measured time (milliseconds go in time_ms, "
                                 f"microseconds in time_us)")
            return t
    raise ValueError(f"{where}: the row has no time, time_ms or time_us")
