"""Completion: units after a number or `to`, declared names, template parameters, fields of the
kind being declared (astral_dsl/model/kinds.py), members after a dot, enumeration values, stdlib
items (with the import they need) and keywords.

The context comes from the text before the cursor (the document is usually unfinished while
typing); what the names mean comes from the last analysis whose entry file parsed."""
from __future__ import annotations

import re
from typing import List, Optional

from lsprotocol import types as lsp

from astral_dsl.lsp.analysis import Analysis
from astral_dsl.lsp.completion.context import (_FIELD_VALUE, _IMPORT_NAMES, _IMPORT_PATH,
                                               _NUMBER_UNIT, _TO_UNIT, _in_argument_value,
                                               _in_comment_or_string, dotted_chain,
                                               enclosing_headers, open_call)
from astral_dsl.lsp.completion.imports import (StdlibItem, _export_items, _module_items,
                                               _stdlib_items, stdlib_items)
from astral_dsl.lsp.completion.items import (COMPOUND_UNITS, KEYWORDS_BODY, KEYWORDS_EXPR,
                                             KEYWORDS_TOP, _builtin_items, _dedupe, _enum_items,
                                             _field_items, _keyword_items, _kind_items, unit_items)
from astral_dsl.lsp.completion.names import _argument_items, _member_items, _scope_items

__all__ = ["COMPOUND_UNITS", "KEYWORDS_BODY", "KEYWORDS_EXPR", "KEYWORDS_TOP", "StdlibItem",
           "complete", "enclosing_headers", "open_call", "stdlib_items", "unit_items"]


def complete(analysis: Optional[Analysis], text: str, line0: int, char_cp: int,
             encoding: str = "utf-16") -> List[lsp.CompletionItem]:
    lines = text.split("\n")
    line = lines[line0] if line0 < len(lines) else ""
    prefix = line[:char_cp]
    before = "\n".join(lines[:line0] + [prefix])
    if _in_comment_or_string(prefix):
        return []
    m = _IMPORT_PATH.match(prefix)
    if m:
        return _module_items(analysis, m.group("path"))
    m = _IMPORT_NAMES.match(prefix)
    if m:
        return _export_items(analysis, m.group("path"))
    if _TO_UNIT.search(prefix) or _NUMBER_UNIT.search(prefix):
        return unit_items()
    chain = dotted_chain(prefix)
    # (`1.` is a number being typed; `H200.` is a name)
    if chain is not None and not re.search(r"(?<![\w.])\d[\d_]*\.$", prefix):
        return _member_items(analysis, chain, before)
    headers = enclosing_headers(before)
    items: List[lsp.CompletionItem] = []
    statement_start = re.match(r"^\s*[A-Za-z_]*$", prefix) is not None or \
        re.search(r"[{,;]\s*[A-Za-z_]*$", prefix) is not None and open_call(prefix) is None
    callee = open_call(before)
    fv = _FIELD_VALUE.search(prefix)
    if callee is not None and not _in_argument_value(before):
        items.extend(_argument_items(analysis, callee))
    if statement_start and callee is None:
        if headers:
            items.extend(_field_items(headers[-1][0]))
            items.extend(_keyword_items(KEYWORDS_BODY))
            # the kinds that can be declared there; a kind named as a field (`power`) once
            items.extend(_kind_items(headers[-1][0]))
        else:
            items.extend(_keyword_items(KEYWORDS_TOP))
            items.extend(_kind_items())
        return _dedupe(items)
    if fv is not None and headers:
        items.extend(_enum_items(headers[-1][0], fv.group("field")))
    items.extend(_scope_items(analysis, headers, before))
    items.extend(_stdlib_items(analysis, text))
    items.extend(_builtin_items())
    items.extend(_keyword_items(KEYWORDS_EXPR, sort="8"))
    return _dedupe(items)
