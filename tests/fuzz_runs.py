"""The fuzz target of runs tables (`astral runs`, docs/runs.md): a user's own CSV of measured
runs is input like a design, so a mutated one must give diagnostics, never a traceback.

Inputs: one to four rows of the shipped runs tables (astral_dsl/seer/calibration/*.csv, the
columns of modern.csv) under its header, then one to four mutations: a cell replaced by a
hostile value (numbers at their extremes, NaN, infinities, signs, separators, other scripts'
digits, a huge cell, unicode, CSV quoting), a number scaled, a text cell taken from another row
(systems, GPUs, precisions and models mixed), a cell dropped or added, a row duplicated (ids
twice), the header's columns dropped, doubled or swapped, a byte-order mark, CRLF line ends or
a NUL. Now and then the table is first refitted on itself (`astral calibrate -o`) and its
fit passed to `astral runs --calibration`, a malformed fit is passed, or a user's systems file
(`--gpu-file`, mutated as a design is) with some rows on its system.

The invariant, beyond the command line's (exit 0, 1 or 2; no E000, no traceback): the JSON
parses; without rows (a systems file with errors: nothing is forecast) it is invalid and has
the errors that say why; otherwise every row of the table is reported once, in order, with a status of ok,
not_expressible or rejected; a row that is not ok says why; an ok row has a finite, positive
forecast and, when it published a figure, a finite, positive published value and the error
forecast / published - 1 (none without)."""
from __future__ import annotations

import csv
import io
import json
import math
import random
import sys
import zlib
from pathlib import Path
from typing import List

from fuzz_common import REPO, Failure, UNICODE, _cli_rc, mutate

TABLES = sorted((REPO / "astral_dsl" / "seer" / "calibration").glob("*.csv"))
# a user's own systems (`--gpu-file`, docs/runs.md): stdlib parts and their own blocks, racks and
# fabric, mutated as a design is
SYSTEMS = ["""
import stdlib.systems { DGX_H100_Rack, NDR_Fabric }
block Lab_SU { racks = 8 x DGX_H100_Rack }
fabric Lab_Fabric = NDR_Fabric
""", """
import stdlib.hardware { DGX_H100, QM9700_NDR }
rack LabRack { hosts = 4 x DGX_H100 }
block Lab_SU { racks = 8 x LabRack }
fabric Lab_Fabric {
  rails = 8, planes = 1, max_oversubscription = 1
  tier leaf { switch = QM9700_NDR, scope = block, per = [rail], down = 32 x 400 Gb/s, up = 32 x 400 Gb/s }
  tier spine { switch = QM9700_NDR, scope = site, down = 64 x 400 Gb/s }
}
"""]

HOSTILE = ["", " ", "0", "-0", "-1", "1e308", "-1e308", "1e400", "1e-300", "nan", "NaN", "inf",
           "-inf", "Infinity", "9007199254740993", "2.5", "0.5", "1e9", "1e15", "65536",
           "1,000", "1_000", "0x10", "\u0661\u0662", "\u22125", "+7", "007", "1e", "e5", "..",
           "n/a", "NA", "-", "?", "9" * 400, "x" * 5000, "\"", "\"\"", "a,b", "a\nb", "\t",
           "selective", "full", "selective (per-op)", "none", "modules", "BF16", "FP8",
           "MXFP8", "NVFP4", "FP8 rowwise (torchao)", "FP8 alt", "torchtitan", "AutoModel",
           "DGX-GB300", "DGX-A100", "H800", "GB200", "B300", "TPU v5p", "NeMo 99.99 container",
           "torchtitan abc (2030-13)"]


def _read(path: Path):
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def _write(header: List[str], rows: List[List[str]]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue()


def mutate_table(rng: random.Random) -> str:
    """A runs table of one to four shipped rows, mutated (module docstring)."""
    header, pool = _read(rng.choice(TABLES))
    rows = [list(rng.choice(pool)) for _ in range(rng.randint(1, 4))]
    every = [r for t in TABLES for r in _read(t)[1]]
    raw = None
    for _ in range(rng.randint(1, 4)):
        r = rng.choice(rows)
        k = rng.randrange(len(r)) if r else 0
        op = rng.choice(["hostile", "hostile", "hostile", "scale", "borrow", "drop_cell",
                         "add_cell", "duplicate_row", "header", "unicode", "bytes"])
        if op == "hostile" and r:
            r[k] = rng.choice(HOSTILE)
        elif op == "scale" and r:
            try:
                v = float(r[k])
            except ValueError:
                continue
            r[k] = repr(v * rng.choice([1000.0, 1e-3, -1.0, 1e6, 3.0, 0.0]) +
                        rng.choice([0, 0, 1, -1]))
        elif op == "borrow" and r:
            other = rng.choice(every)
            if k < len(other):
                r[k] = other[k]
        elif op == "drop_cell" and r:
            del r[k]
        elif op == "add_cell":
            r.insert(k, rng.choice(HOSTILE))
        elif op == "duplicate_row":
            rows.insert(rng.randrange(len(rows) + 1), list(r))
        elif op == "header":
            header = list(header)
            i, j = rng.randrange(len(header)), rng.randrange(len(header))
            how = rng.choice(["drop", "double", "swap", "rename"])
            if how == "drop":
                del header[i]
            elif how == "double":
                header[i] = header[j]
            elif how == "swap":
                header[i], header[j] = header[j], header[i]
            else:
                header[i] = header[i].upper() + rng.choice(["", " ", "_x"])
        elif op == "unicode" and r:
            s = r[k]
            p = rng.randrange(len(s) + 1)
            r[k] = s[:p] + rng.choice(UNICODE) + s[p:]
        elif op == "bytes":
            raw = rng.choice(["\ufeff", "\r\n", "\x00", "\"unclosed"])
    text = _write(header, rows)
    if raw == "\ufeff":
        text = raw + text
    elif raw == "\r\n":
        text = text.replace("\n", "\r\n")
    elif raw is not None:
        p = rng.randrange(len(text) + 1)
        text = text[:p] + raw + text[p:]
    return text


def table_of(text: str) -> random.Random:
    """The generator a campaign's input `text` (the design it saves with a finding) seeds: the
    table and the options follow from it, so the saved finding reproduces them
    (`python tests/fuzz_runs.py FINDING` prints the table)."""
    return random.Random(zlib.crc32(text.encode("utf-8", "surrogatepass")))


def _runs(path: Path, text: str, rng: random.Random) -> None:
    rng = table_of(text)
    table = path.with_suffix(".csv")
    content = mutate_table(rng)
    table.write_text(content, encoding="utf-8", errors="surrogatepass")
    args = ["runs", str(table), "--format", "json"]
    if rng.random() < 0.1:
        # refitted on the table itself, and the fit read back (a user's own calibration)
        fit = path.with_name("own-fit.json")
        if fit.exists():
            fit.unlink()
        rc, _ = _cli_rc(["calibrate", str(table), "-o", str(fit)])
        if rc == 0:
            if not fit.exists():
                raise Failure("calibrate exited 0 without writing its fit")
            args += ["--calibration", str(fit)]
    elif rng.random() < 0.2:
        systems = path.with_name("lab.astral")
        systems.write_text(mutate(rng, rng.choice(SYSTEMS)), encoding="utf-8",
                           errors="surrogatepass")
        args += ["--gpu-file", str(systems)]
        if rng.random() < 0.5:                  # some rows on the user's own system
            content = "\n".join(line.replace("DGX-H100", "Lab SU") for line in
                                 content.split("\n"))
            table.write_text(content, encoding="utf-8", errors="surrogatepass")
    elif rng.random() < 0.15:
        cal = path.with_name("fit.json")
        cal.write_text(rng.choice(['{"format": 1}', "[]", "not json", '{"constants": {}}']),
                       encoding="utf-8")
        args += ["--calibration", str(cal)]
    rc, out = _cli_rc(args)
    if rc == 2:
        return                              # the table (or an option) cannot be read: said
    try:
        doc = json.loads(out)
    except ValueError as exc:
        raise Failure(f"runs --format json printed no JSON ({exc.__class__.__name__})")
    rows = doc.get("rows")
    if rows is None:          # nothing forecast (a systems file with errors): the errors say why
        if rc == 0 or doc.get("valid") is not False or not any(
                d.get("severity") == "error" for d in doc.get("diagnostics", [])):
            raise Failure("runs JSON without rows and without the errors that say why")
        return
    if not isinstance(rows, list):
        raise Failure("runs JSON rows not a list")
    lines = [row.get("line") for row in rows]
    if not all(isinstance(n, int) for n in lines) or lines != sorted(lines) or \
            len(set(lines)) != len(lines):
        raise Failure("runs JSON rows without their lines, out of order or twice")
    for row in rows:
        status = row.get("status")
        if status not in ("ok", "not_expressible", "rejected"):
            raise Failure(f"row status {status!r}")
        if status != "ok":
            if not row.get("reason"):
                raise Failure(f"a {status} row without a reason")
            continue
        pub, fc, err = row.get("published"), row.get("forecast"), row.get("error")
        if not (isinstance(fc, (int, float)) and math.isfinite(fc) and fc > 0):
            raise Failure("an ok row without a finite, positive forecast")
        if pub is None:
            if err is not None:
                raise Failure("an error without a published value")
            continue
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (pub, err)):
            raise Failure("an ok row with a published value or error not finite")
        if pub <= 0:
            raise Failure("an ok row with a published value not positive")
        if abs((fc / pub - 1.0) - err) > 1e-9 * max(1.0, abs(err)):
            raise Failure("an ok row whose error is not forecast / published - 1")

TARGETS = {"runs": _runs}


if __name__ == "__main__":
    finding = Path(sys.argv[1]).read_text(encoding="utf-8", errors="surrogatepass")
    sys.stdout.write(mutate_table(table_of(finding)))
