"""Rank logs and traces in the encodings and line ends a cluster's tooling writes: a log of lone
`\\r` line ends was E000 (csv's "new-line character seen in unquoted field"), a JSON Lines row
holding a raw U+2028 in a string (legal JSON) was cut in two bad rows (str.splitlines), and a
UTF-16 file (PowerShell 5's default) was "not UTF-8" with no hint."""
from __future__ import annotations

import json

import pytest

from astral_dsl import observe
from test_observe import LOG, codes


def _same_as_the_plain_log(obs, tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text(LOG)
    want = observe.load([str(plain)])
    assert codes(obs) == [] and sorted(obs.ranks) == [0, 1]
    for rank in (0, 1):
        assert obs.ranks[rank].summary() == want.ranks[rank].summary()
        assert list(obs.ranks[rank].peer) == list(want.ranks[rank].peer)


@pytest.mark.parametrize("end", ["\r", "\r\n"])
def test_a_csv_log_with_cr_line_ends_reads_as_with_lf(tmp_path, end):
    p = tmp_path / "job.csv"
    p.write_bytes(LOG.replace("\n", end).encode())
    _same_as_the_plain_log(observe.load([str(p)]), tmp_path)


def _jsonl_rows():
    return [{"rank": 0, "iteration": 1, "phase": "forward", "start_s": 1.0, "duration_s": 0.5},
            {"rank": 0, "iteration": 1, "phase": "dp_comm", "start_s": 1.5, "duration_s": 0.25,
             "op": "all\u2028reduce"}]


@pytest.mark.parametrize("end", ["\n", "\r", "\r\n"])
def test_a_jsonl_log_with_a_raw_line_separator_in_a_string_is_one_row(tmp_path, end):
    """U+2028 (and U+0085, \\x1c-\\x1e) end a line for str.splitlines, not for JSON Lines: the
    row was cut in two, read back joined by a comma (`dp,comm`), and every line number after it
    was one too many."""
    rows = _jsonl_rows() + [{"rank": 0, "iteration": 1, "phase": "dp\u2028comm",
                             "start_s": 2.0, "duration_s": 0.1},
                            {"rank": 0, "iteration": 1, "phase": "forward", "start_s": 3.0,
                             "duration_s": -2}]
    p = tmp_path / "log.jsonl"
    p.write_bytes(end.join(json.dumps(r, ensure_ascii=False) for r in rows).encode()
                  + end.encode())
    obs = observe.load([str(p)])
    assert codes(obs) == ["E784", "W784"]
    assert "line 4:" in obs.diagnostics[0].message               # was line 6
    # the name as logged (the terminal's renderer writes it `dp\\u2028comm`), not `dp,comm`
    assert obs.diagnostics[1].message.startswith("phase `dp\u2028comm` is not known")
    assert obs.ranks[0].summary()[1]["compute_s"] == 0.5


@pytest.mark.parametrize("encoding, said, iconv", [
    ("utf-16", "the file is UTF-16 text, not UTF-8", "iconv -f UTF-16 -t UTF-8"),
    ("utf-32", "the file is UTF-32 text, not UTF-8", "iconv -f UTF-32 -t UTF-8"),
    ("utf-16-be", "the file is UTF-16 (or UTF-32, without a byte-order mark) text, not UTF-8",
     "iconv -f UTF-16 -t UTF-8"),
    ("utf-16-le", "the file is UTF-16 (or UTF-32, without a byte-order mark) text, not UTF-8",
     "iconv -f UTF-16 -t UTF-8"),
])
@pytest.mark.parametrize("name", ["job.csv", "log.jsonl"])
def test_a_wide_text_log_is_e781_naming_its_encoding(tmp_path, encoding, said, iconv, name):
    text = LOG if name.endswith(".csv") else \
        "\n".join(json.dumps(r) for r in _jsonl_rows()) + "\n"
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    obs = observe.load([str(p)])
    (d,) = obs.diagnostics
    assert (d.code, d.message, d.file) == ("E781", said, str(p)) and obs.ranks == {}
    assert f"`{iconv}`" in d.hint


def test_a_latin_1_log_says_the_byte_and_where(tmp_path):
    p = tmp_path / "job.csv"
    p.write_bytes(LOG.replace("forward", "forw\u00e9rd", 1).encode("latin-1"))
    (d,) = observe.load([str(p)]).diagnostics
    at = LOG.index("forward") + 4
    assert d.code == "E781"
    assert d.message == f"the file is neither JSON nor CSV text (not UTF-8: byte 0xe9 at " \
                        f"offset {at})"
    assert d.hint.startswith("a trace or a rank log is UTF-8 text")


def test_a_file_of_zero_bytes_is_not_said_to_be_utf_16(tmp_path):
    """4 KiB of zero bytes (a file preallocated by a writer that was killed) has a zero at every
    other byte too: it was "UTF-16 (or UTF-32, ...) text" with an iconv hint; it is not text,
    and is said to be no trace or rank log (E782), as before the UTF-16 check."""
    p = tmp_path / "log.jsonl"
    p.write_bytes(b"\x00" * 4096)
    (d,) = observe.load([str(p)]).diagnostics
    assert d.code == "E782" and "UTF-16" not in d.message and "iconv" not in (d.hint or "")
