"""Text from a design on a terminal: control characters escaped.

Strings, messages, comments, source lines and file names come from files anyone may have
written. Printed raw, a control character is an instruction to the terminal: ESC starts escape
sequences (OSC 52 writes the clipboard, OSC 8 hides a link, CSI moves the cursor and rewrites
what was printed), a carriage return or a line separator overwrites or fakes output lines, and
bidirectional overrides make text read differently from what it is ("Trojan Source",
CVE-2021-42574). Every such character is shown as an escape (`\\x1b`, `\\u202e`) instead; a tab
is kept."""
from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                      "\u202a-\u202e\u2066-\u2069\ufff9-\ufffb]")


def _escape(m: "re.Match[str]") -> str:
    c = ord(m.group(0))
    if c == 0x0A:
        return "\\n"
    if c == 0x0D:
        return "\\r"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: object) -> str:
    """`text` with every control character (except tab) written as an escape."""
    s = str(text)
    return _CONTROL.sub(_escape, s) if _CONTROL.search(s) else s


def printable_line(text: str) -> str:
    """One line of output: escaped, with the final newline (if any) kept."""
    if text.endswith("\n"):
        return printable(text[:-1]) + "\n"
    return printable(text)


def printable_text(text: str) -> str:
    """Several lines of output: each escaped, the line breaks kept."""
    return "\n".join(printable(line) for line in text.split("\n"))
