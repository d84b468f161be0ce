"""Where a line ends, one rule for the files astral reads besides its source and for the
language server (astral_dsl/line_ends.py): `\n`, `\r\n` and a lone `\r`, never the other ends
of str.splitlines. The runs tables (runs/csvtext.py, runs/table.py, runs/agree.py), the rank
logs (observe/ranklog.py) and the language server (lsp/protocol.py) each had their own regular
expression for it."""
from __future__ import annotations

import io
import re
from pathlib import Path

from astral_dsl.line_ends import lines_kept, lines_of

PACKAGE = Path(__file__).resolve().parents[1] / "astral_dsl"

TEXT = "a,b\r\nc\u2028d,e\rf\x85g\x0bh\x1ci\nj\u2029k\r\n\rlast"


def test_lines_end_where_csv_and_the_language_server_end_them():
    kept = list(lines_kept(TEXT))
    assert kept == io.StringIO(TEXT, newline="").readlines()
    assert kept == ["a,b\r\n", "c\u2028d,e\r", "f\x85g\x0bh\x1ci\n", "j\u2029k\r\n", "\r", "last"]
    assert lines_of(TEXT) == [line.rstrip("\r\n") for line in kept]
    assert lines_of(TEXT, 2) == ["a,b", "c\u2028d,e", "f\x85g\x0bh\x1ci\nj\u2029k\r\n\rlast"]
    assert lines_of("x\n") == ["x", ""] and list(lines_kept("x\n")) == ["x\n"]
    assert lines_of("") == [""] and list(lines_kept("")) == []


def test_one_module_spells_the_line_ends():
    spelt = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if re.search(r'r"[^"\n]*\\r\\n(\?|\|\\r)', p.read_text(encoding="utf-8")))
    assert spelt == ["line_ends.py"]
