"""Completion context: what the text before the cursor says about where it is (the enclosing
declarations, an open call, an argument value, a comment or string), read with regular expressions
and a brace scan because the document is usually unfinished while typing."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

_NUMBER_UNIT = re.compile(r"(?<![\w.])(?:\d[\d_]*(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?"
                          r"[ \t]*(?P<unit>[A-Za-z\u00b0\u00b5%][\w/*^\u00b0\u00b5]*)?$")
_TO_UNIT = re.compile(r"\bto[ \t]+(?P<unit>[\w/*^\u00b0\u00b5%]*)$")
_IMPORT_PATH = re.compile(r"^\s*import\s+(?P<path>[\w.]*)$")
_IMPORT_NAMES = re.compile(r"^\s*import\s+(?P<path>[\w.]+)\s*\{[^}]*$")
_HEADER = re.compile(r"^\s*(?P<kind>[A-Za-z_]\w*)\s+(?P<name>[A-Za-z_]\w*)\b")
_FIELD_VALUE = re.compile(r"(?:^|[{,;(]|\s)(?P<field>[A-Za-z_]\w*)\s*=\s*(?P<rest>[^=]*)$")


# ---- context -------------------------------------------------------------------------------------
def dotted_chain(prefix: str) -> Optional[str]:
    """The chain of names before the last `.` when `prefix` ends in `CHAIN.` or `CHAIN.partial`
    (`racks[0].hosts.`: `racks[0].hosts`), else None: a name, then `[...]` or not, then any
    `.name` with `[...]` or not, the longest such chain before that `.`. Read backwards from
    the end, each character once: a regular expression searched for it, anchored at the end,
    was tried from every position (0.7 s for a line of 5,000 letters, 12 s for 20,000, on the
    editor's every completion request)."""
    start = _word_start(prefix, len(prefix))              # the partial name after the `.`
    if start < len(prefix) and not _name_head(prefix[start]):
        return None
    if start == 0 or prefix[start - 1] != ".":
        return None
    last = dot = start - 1
    begin = None
    while True:
        found = _segment(prefix, dot)
        if found is None:
            break
        begin, whole = found
        if not whole or begin == 0 or prefix[begin - 1] != ".":
            break
        dot = begin - 1
    return None if begin is None else prefix[begin:last]


def _name_head(ch: str) -> bool:
    return ch == "_" or "a" <= ch <= "z" or "A" <= ch <= "Z"


def _word(ch: str) -> bool:          # `\w` of a str pattern
    return ch == "_" or ch.isalnum()


def _word_start(text: str, end: int) -> int:
    """Where the run of word characters ending at `end` starts."""
    while end > 0 and _word(text[end - 1]):
        end -= 1
    return end


def _segment(text: str, end: int) -> Optional[Tuple[int, bool]]:
    """The `name` or `name[...]` ending at `end`: (where the name starts, whether at the start
    of its run of word characters, as a name after a `.` must), or None."""
    if end > 0 and text[end - 1] == "]":
        opened = max(text.rfind("[", 0, end - 1), text.rfind("]", 0, end - 1))
        if opened < 0 or text[opened] != "[":
            return None
        end = opened
    run = _word_start(text, end)
    head = next((i for i in range(run, end) if _name_head(text[i])), None)
    return None if head is None else (head, head == run)


def enclosing_headers(text_before: str) -> List[Tuple[str, str]]:
    """The (kind, name) of the declarations whose `{` is still open before the cursor,
    outermost first, found by scanning braces (strings and comments skipped)."""
    stack: List[Optional[Tuple[str, str]]] = []
    i, n = 0, len(text_before)
    line_start = 0
    while i < n:
        ch = text_before[i]
        if ch == "\n":
            line_start = i + 1
        elif ch == '"':
            j = i + 1
            while j < n and text_before[j] not in '"\n':
                j += 2 if text_before[j] == "\\" else 1
            i = j
        elif text_before.startswith("//", i):
            j = text_before.find("\n", i)
            i = n if j < 0 else j - 1
        elif text_before.startswith("/*", i):
            j = text_before.find("*/", i + 2)
            i = n if j < 0 else j + 1
        elif ch == "{":
            header = _strip_brackets(text_before[line_start:i])
            # the header may end a previous statement on the same line: take the last one
            head = re.split(r"[,;{]", header)[-1]
            m = _HEADER.match(head)
            if m and m.group("kind") != "import":
                stack.append((m.group("kind"), m.group("name")))
            elif re.match(r"^\s*[A-Za-z_]\w*\s*$", head):
                stack.append(("record", head.strip()))
            else:
                stack.append(None)
        elif ch == "}":
            if stack:
                stack.pop()
        i += 1
    return [h for h in stack if h is not None]


def _strip_brackets(text: str) -> str:
    """`host N(p = 1) = B(x = 2, y = 3) ` -> `host N = B `."""
    out, depth = [], 0
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def open_call(text_before: str) -> Optional[str]:
    """The callee of the innermost `(` still open on the current statement, if any."""
    depth = 0
    for i in range(len(text_before) - 1, -1, -1):
        ch = text_before[i]
        if ch in ")]":
            depth += 1
        elif ch in "[":
            if depth == 0:
                return None
            depth -= 1
        elif ch == "(":
            if depth == 0:
                m = re.search(r"([A-Za-z_][\w.]*)\s*$", text_before[:i])
                return m.group(1) if m else None
            depth -= 1
        elif ch in "{}\n" and depth == 0 and ch != "\n":
            return None
    return None


def _in_argument_value(before: str) -> bool:
    """Inside `T(a = 1, b = |`: after the `=` of the current argument."""
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        ch = before[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                return "=" in before[i + 1:]
            depth -= 1
        elif ch == "," and depth == 0:
            return "=" in before[i + 1:]
    return False


def _in_comment_or_string(prefix: str) -> bool:
    in_string = False
    i = 0
    while i < len(prefix):
        ch = prefix[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif prefix.startswith("//", i):
            return True
        i += 1
    return in_string
