"""A runs table's records are bounded before Python's csv module reads their cells (csvtext.py):
csv keeps every cell of a record as a string in a list, so a 64 MiB header of `ab,ab,...` took
3.4 GiB of memory and 19 s, a 64 MiB row of `1,1,...` 5.0 GiB and 15 s, to say E766 (at 150
and 280 MB, under 1.5 s, now; measured with /usr/bin/time -v, not here)."""
from __future__ import annotations

import io

import pytest

from astral_dsl.runs import csvtext
from astral_dsl.runs.table import COLUMNS, parse_table

HEADER = ",".join(COLUMNS)
HINT = ("a runs table's row is a few hundred characters, one cell per column of docs/runs.md "
        "(31): check the separators, or that the file is a runs table")


def test_a_header_past_the_bound_is_e766_at_the_character_past_it():
    text = HEADER + ",ab" * (csvtext.MAX_RECORD // 3) + "\n"
    (d,) = parse_table(text, "t.csv").diagnostics
    assert d.code == "E766"
    assert d.message == ("the runs table's header on line 1 is over 1,048,576 characters (its "
                         "line end counted)")
    assert (d.span.start.line, d.span.start.column, d.span.end.column) == \
        (1, 1_048_577, 1_048_578)
    assert d.hint == HINT


def test_a_header_at_the_bound_is_read_as_before():
    """1,048,576 characters, its line end included: its columns are said as unknown, as any."""
    rest = csvtext.MAX_RECORD - len(HEADER) - 1                      # less the line end
    text = HEADER + ",y" * (rest // 2) + "y" * (rest % 2) + "\n"
    assert len(text) == csvtext.MAX_RECORD
    t = parse_table(text, "t.csv")
    assert [d.message for d in t.diagnostics][-1] == \
        f"{rest // 2 - 8:,} more unknown columns in the runs table, from here on"


def test_a_row_past_the_bound_is_e766_on_its_line_and_the_rows_before_are_read():
    ok = "k1," + ",".join("" for _ in COLUMNS[1:])
    text = HEADER + "\n" + ok + "\n" + "1," * (csvtext.MAX_RECORD // 2 + 1) + "\n" + ok + "\n"
    t = parse_table(text, "t.csv")
    (d,) = t.diagnostics
    assert (d.code, d.message) == ("E766", "the runs table's row on line 3 is over 1,048,576 "
                                           "characters (its line end counted)")
    assert (d.span.start.line, d.span.start.column) == (3, 1_048_577) and d.hint == HINT
    assert [r.id for r in t.runs] == ["k1"] and not t.valid


@pytest.mark.parametrize("times", [100, 220_000])
def test_a_header_run_on_by_an_open_quote_is_e766_where_the_quote_opens(times):
    """Short lines, one record: a quoted cell holding a line end, `"a<newline>",` repeated, within
    the bound (it was read as columns named `a<newline>`) and past it (1.1 million characters)."""
    text = HEADER + "," + '"a\n",' * times + "\n"
    (d,) = parse_table(text, "t.csv").diagnostics
    assert d.code == "E766"
    assert d.message.startswith("a quote opened on line 1 is not closed on it: lines 1-")
    assert (d.span.start.line, d.span.start.column) == (1, len(HEADER) + 2)


@pytest.mark.parametrize("text", ["a\r\nb", "a\rb\n\nc\r", "", "\n", "x", "a\n\r\nb\r\r",
                                  "\ufeffid\u2028x\n"])
def test_the_lines_are_those_csv_read_before(text):
    """csvtext.Lines cuts the text as io.StringIO(newline="") did (without its copy of the
    text, 4 bytes a character): line ends kept, \\r, \\n and \\r\\n each one end."""
    assert list(csvtext.Lines(text)) == list(io.StringIO(text, newline=""))
