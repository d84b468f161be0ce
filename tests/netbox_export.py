"""What the NetBox export tests share: a design exported to a folder, a CSV file's rows."""
from __future__ import annotations

import csv
import textwrap

from clirun import astral


def export(tmp_path, text: str, *more: str):
    """(the process, the folder written) of `astral export d.astral --netbox nb` on `text`
    (dedented) written to tmp_path/d.astral."""
    src = tmp_path / "d.astral"
    src.write_text(textwrap.dedent(text), encoding="utf-8")
    out = tmp_path / "nb"
    return astral("export", str(src), "--netbox", str(out), *more), out


def rows(path):
    """A CSV file's rows as dicts."""
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))
