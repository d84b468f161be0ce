"""The CSV files of `astral export --netbox` (netbox.py), streamed: the bytes csv.writer writes
(QUOTE_MINIMAL, `\n` line ends), each row joined directly when none of its fields needs
quoting."""
from __future__ import annotations

import csv
import itertools
from typing import Iterable, List, Optional, Sequence

from astral_dsl.regularfile import created

STATUS = "planned"          # every row's `status`: the design is a plan


def write_csv(path: str, header: Sequence[str], rows: Iterable[Sequence]) -> int:
    """Write rows as CSV, streamed; the number of rows."""
    count = 0
    with open(created(path), "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        it = iter(rows)
        while True:
            batch = list(itertools.islice(it, 4096))
            if not batch:
                break
            count += len(batch)
            text = plain_lines(batch)
            if text is not None:
                fh.write(text)
                continue
            lines: List[str] = []
            for r in batch:
                line = plain_line(r)
                if line is not None:
                    lines.append(line)
                    continue
                fh.write("".join(lines))      # quoting, a number or a lone empty field:
                lines.clear()                 # csv's rules
                w.writerow(r)
            fh.write("".join(lines))
    return count


def plain_lines(batch: List[Sequence]) -> Optional[str]:
    """The rows as csv.writer writes them when every row is a plain line (plain_line), else
    None. Checked on the batch's text at once: every field a string; no quote, CR or newline in
    it; as many commas as the rows have separators (so none inside a field); no row of one
    field (an empty one is quoted)."""
    try:
        text = "\n".join(map(",".join, batch))
    except TypeError:
        return None
    if '"' in text or "\r" in text or text.count("\n") != len(batch) - 1 \
            or min(map(len, batch)) < 2 \
            or text.count(",") != sum(map(len, batch)) - len(batch):
        return None
    return text + "\n"


def plain_line(row: Sequence) -> Optional[str]:
    """The row as csv.writer writes it (QUOTE_MINIMAL, `\\n`) when every field is a string that
    needs no quotes, else None. csv's writer costs about 4 us a row, ten times joining: the
    millions of cables of a large design are mostly such rows."""
    try:
        line = ",".join(row)
    except TypeError:
        return None
    if not line or line.count(",") != len(row) - 1 or '"' in line or "\n" in line \
            or "\r" in line:
        return None
    return line + "\n"


__all__ = ["plain_line", "plain_lines", "write_csv"]
