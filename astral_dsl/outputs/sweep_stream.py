"""`astral sweep`'s rows written as they come (explore/sweep.py evaluate), in grid order, none
held: `--format jsonl` on standard output and `-o FILE.csv|.jsonl` as each row arrives,
`--format json`'s document at the end from a spool on disk (its `valid` precedes its rows). The
bytes are those of outputs/sweep.py's functions on every row held (jsonl, csv_text, document).

The columns are known once the cost column is. A design none of whose sources writes `price`
has none (explore/sweep.py Plan.priceable); otherwise a row with a cost (`cost_usd`) decides
that every row has the column, and when no row has one, only the end decides. Until then the
rows wait in the spool, a temporary file, not in memory. What stays in memory is what the
summary needs: the points, the valid ones."""
from __future__ import annotations

import csv
import json
import tempfile
from typing import Any, Dict, Iterator, List, Optional, Sequence

from astral_dsl.outputs.jsonout import csv_cell, dumps, envelope
from astral_dsl.outputs.sweep import flat, literal_json, param_columns


class OutputError(Exception):
    """-o's file cannot be opened or written (its reason, as the OSError says it)."""


class Stream:
    """Rows in, outputs written: add() each row in grid order, then finish(); a context
    manager, which closes -o's file and the spool. `fmt`: `--format` (`jsonl` and `json` print
    to `stdout`), `output`: -o's path (CSV or JSON Lines by its extension) or None."""

    def __init__(self, plan, scenario: Optional[str], job: Optional[str], fmt: str,
                 output: Optional[str], stdout):
        self.plan = plan
        self.names = [g.name for g in plan.grids]
        self.scenario, self.job = scenario, job
        self.live: List[Any] = [_Lines(stdout)] if fmt == "jsonl" else []
        self.document = stdout if fmt == "json" else None
        self.columns: Optional[Sequence[str]] = None if plan.priceable else plan.columns(False)
        self.points = self.valid = 0
        self._file = None
        if output:
            from astral_dsl.regularfile import output as opened

            try:
                self._file = open(opened(output), "w", encoding="utf-8", newline="")
            except OSError as exc:
                raise OutputError(exc.strerror or str(exc)) from None
            kind = _Csv if output.lower().endswith(".csv") else _Lines
            self.live.append(_Own(kind(self._file)))
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", newline="")

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self._spool.close()
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as err:
                if exc[0] is None:
                    raise OutputError(err.strerror or str(err)) from None

    def add(self, row: Dict[str, Any]) -> None:
        self.points += 1
        self.valid += row["valid"]
        if self.columns is None and "cost_usd" in row["metrics"]:
            self._decide(True)
        if self.columns is None or self.document is not None:
            self._spool.write(json.dumps(row) + "\n")
        if self.columns is not None:
            self._write(row)

    def finish(self) -> None:
        if self.columns is None:
            self._decide(False)
        for w in self.live:
            w.end(self._header())
        if self.document is not None:
            self._print_document()

    def _decide(self, cost: bool) -> None:
        self.columns = self.plan.columns(cost)
        for row in self._spooled():
            self._write(row)
        if self.document is None:
            self._spool.seek(0)
            self._spool.truncate()

    def _spooled(self) -> Iterator[Dict[str, Any]]:
        self._spool.flush()
        self._spool.seek(0)
        for line in self._spool:
            yield json.loads(line)
        self._spool.seek(0, 2)

    def _write(self, row: Dict[str, Any]) -> None:
        scenario = self.scenario is not None
        for w in self.live:
            w.row(flat(row, self.names, self.columns, scenario, w.json))

    def _header(self) -> List[str]:
        """The CSV's header for no row (a row's own keys are the same names)."""
        cols = param_columns(self.names, self.columns)
        return list(cols.values()) + ["valid", "errors", "warnings"] + (
            ["scenario_broken"] if self.scenario is not None else []) + list(self.columns) + [
            "diagnostics"]

    def _print_document(self) -> None:
        """document()'s bytes: the envelope without its rows, then the rows from the spool."""
        doc = dumps(envelope((), file=self.plan.file, valid=self.valid == self.points,
                             grid=[{"name": g.name, "values": [literal_json(v)
                                                               for v in g.values]}
                                   for g in self.plan.grids],
                             scenario=self.scenario, job=self.job, columns=list(self.columns),
                             notes=list(self.plan.notes), rows=[]))
        out = self.document
        out.write(doc[:-len("]}")])             # `..."rows":[`: rows is the last field
        scenario = self.scenario is not None
        for k, row in enumerate(self._spooled()):
            out.write(("," if k else "") + dumps(flat(row, self.names, self.columns, scenario,
                                                      True)))
        out.write("]}\n")
        out.flush()


class _Lines:
    """JSON Lines: a row a line, flushed (a reader of a pipe sees each row as it comes)."""
    json = True

    def __init__(self, fh):
        self.fh = fh

    def row(self, cells: Dict[str, Any]) -> None:
        self.fh.write(dumps(cells) + "\n")
        self.fh.flush()

    def end(self, header: List[str]) -> None:
        self.fh.flush()


class _Csv:
    """CSV: the header before the first row (or alone, for no row), then a row a line."""
    json = False

    def __init__(self, fh):
        self.fh = fh
        self.writer = None

    def _start(self, header: List[str]) -> None:
        self.writer = csv.DictWriter(self.fh, fieldnames=header, lineterminator="\n")
        self.writer.writeheader()

    def row(self, cells: Dict[str, Any]) -> None:
        if self.writer is None:
            self._start(list(cells))
        self.writer.writerow({k: csv_cell(v) for k, v in cells.items()})
        self.fh.flush()

    def end(self, header: List[str]) -> None:
        if self.writer is None:
            self._start(header)
        self.fh.flush()


class _Own:
    """-o's writer: a failed write is OutputError (a usage error), not standard output's."""

    def __init__(self, writer):
        self.writer = writer
        self.json = writer.json

    def row(self, cells: Dict[str, Any]) -> None:
        try:
            self.writer.row(cells)
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from None

    def end(self, header: List[str]) -> None:
        try:
            self.writer.end(header)
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from None
