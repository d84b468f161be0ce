"""Write the bad-input cases that cannot be plain UTF-8 text (and so cannot carry a comment).

Run `python tests/bad/make_binary_cases.py` to (re)create them; tests/test_bad.py checks that the
committed files hold exactly these bytes, so an editor or a line-ending conversion cannot change
them unnoticed. Their expected diagnostics are in EXPECTED, like every other case.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

BOM = b"\xef\xbb\xbf"

CASES: dict[str, bytes] = {
    # An empty file: a warning (W100) at 1:1, not an error.
    "encoding_empty.astral": b"",
    # A NUL byte on line 2, after `gpu G {` (column 8): a binary file, not .astral text.
    "encoding_binary_nul.astral":
        b"// looks like text at first\ngpu G {\x00\x01\x02\xff power = 700 W }\n",
    # Windows line endings: the stray `$` is on line 4, column 16 (a `\r` is not a column).
    "syntax_crlf_stray_character.astral":
        b"// Windows line endings; the stray `$` is on line 4.\r\ngpu G { power = 700 W }\r\n"
        b"site S {\r\n  gpus = 8 x G $\r\n}\r\n",
    # Only `\n` ends a line: a form feed (in a comment) and U+2028 (in a string) do not, so the
    # unknown unit is on line 3, column 21, and the CLI must show line 3's text under that number.
    "syntax_unusual_line_breaks.astral":
        b"// page one\x0c page two\nlet label = \"a\xe2\x80\xa8b\"\ngpu G { power = 700 Wattz }\n",
    # Mostly binary from the first byte (a PNG header).
    "encoding_binary_png.astral":
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
    # Invalid UTF-8 (a lone 0xFF) on line 3, after 16 code points of which two are non-ASCII
    # (`ö` and `ß`, two bytes each in UTF-8): columns count code points, so it is column 17
    # (column 19 would be counting bytes).
    "encoding_invalid_utf8.astral":
        b"// a comment\ngpu G {\n  note = \"Gr\xc3\xb6\xc3\x9fe \xff\"\n}\n",
    # Latin-1 text saved as-is: `\xe9` (e acute in Latin-1) at line 2, column 14.
    "encoding_latin1.astral":
        b"gpu G {\n  note = \"caf\xe9\"\n}\n",
    # A UTF-8 sequence cut short at the very end of the file (line 1, column 18).
    "encoding_truncated_utf8.astral":
        b"let name = \"abc\" \xe2\x82",
    # A UTF-8 byte-order mark is allowed; the unknown unit `Wattz` after it is at column 21:
    # the BOM is not a column (22 would count it as a code point, 24 as three bytes).
    "encoding_bom_unknown_unit.astral":
        BOM + b"gpu G { power = 700 Wattz }\n",
    # A UTF-16 text file (as PowerShell's `>` writes) is text in the wrong encoding, not binary:
    # it should get E101 ("not UTF-8", hint: save as UTF-8) at 1:1, where its BOM is, even though
    # its ASCII characters come with NUL bytes.
    "encoding_utf16.astral":
        "gpu G { power = 700 W }\n".encode("utf-16"),
}


def main() -> None:
    for name, data in CASES.items():
        (HERE / name).write_bytes(data)


if __name__ == "__main__":
    main()
