"""The language server's JSON-RPC protocol and errors (server.py serves with them): a request
whose params do not validate is answered with InvalidParams (not dropped), a request about a
document that is not open too, one that runs out of time gets RequestFailed, a bug an
InternalError naming it, and no error response carries a Python traceback (it goes to the
server's log on standard error). An edit of a range is applied on LSP's lines (`splice`), not
on pygls's splitlines."""
from __future__ import annotations

import asyncio
import functools
import json
import logging
from typing import Callable, List, Optional, Tuple
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.language_server import lsp_method

from astral_dsl.line_ends import lines_kept
from astral_dsl.lsp import workers

log = logging.getLogger("astral.lsp")


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: the request was valid but could not be answered (it ran out of time)."""
    CODE = -32803
    MESSAGE = "Request Failed"


class NotOpen(JsonRpcInvalidParams):
    """A request about a document the client has not opened."""


class _Dropped:
    """A request whose params did not validate: answered with InvalidParams, not handled."""
    jsonrpc = None


class AstralProtocol(LanguageServerProtocol):
    """pygls's protocol, but a request whose params do not validate (a negative or fractional
    position, a string for a number (`converter`), missing or null params) is answered with InvalidParams instead of
    being dropped (which leaves the client waiting for good), a message that is no JSON-RPC
    message InvalidRequest, a request before `initialize` ServerNotInitialized, and no error
    response carries a traceback."""

    def structure_message(self, data):
        problem = _invalid(data) if isinstance(data, dict) and "jsonrpc" in data else None
        if problem is not None:
            # pygls keyed a request by an object's id ("unhashable type: 'dict'", answered as
            # its InternalError) and took a message of an id alone for a response to the server
            self.invalid(data.get("id") if _an_id(data.get("id")) else None, problem)
            return _Dropped()
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not (isinstance(data, dict) and "id" in data and "method" in data):
                raise                                     # a notification: nobody to answer
            detail = _validation_detail(exc.__cause__)
            self._send_response(data["id"], error=JsonRpcInvalidParams(
                message=f"invalid params for {data.get('method')}"
                        + (f": {detail}" if detail else "")).to_response_error())
            return _Dropped()

    def handle_message(self, message):
        if isinstance(message, _Dropped):
            return
        if not hasattr(message, "jsonrpc"):     # an array, null, a number, an object without
            self.invalid(None, "a message is a JSON object with `\"jsonrpc\": \"2.0\"`")
            return                              # `jsonrpc`: pygls's AttributeError, logged
        method = getattr(message, "method", None)
        if self._workspace is None and method not in (None, lsp.INITIALIZE, lsp.EXIT):
            # before `initialize` (LSP: a request is answered ServerNotInitialized, a
            # notification dropped): a hover was an InternalError naming pygls's RuntimeError
            if getattr(message, "id", None) is not None:
                self._send_response(message.id, error=lsp.ResponseError(
                    code=lsp.ErrorCodes.ServerNotInitialized,
                    message=f"{method}: the server is not initialized: send `initialize` "
                            f"first"))
            else:
                log.warning("%s before `initialize`, dropped", method)
            return
        if self._shutdown and method not in (None, lsp.EXIT) and \
                getattr(message, "id", None) is not None:
            # LSP: a request after `shutdown` is answered InvalidRequest; pygls dropped it,
            # and its client waited for the answer for good
            self._send_response(message.id, error=lsp.ResponseError(
                code=lsp.ErrorCodes.InvalidRequest,
                message=f"{method}: the server is shut down: send `exit`"))
            return
        super().handle_message(message)

    def invalid(self, msg_id, problem: str, code: int = lsp.ErrorCodes.InvalidRequest) -> None:
        """JSON-RPC's answer to a message that is no request, notification or response (or
        not JSON: ParseError): an error response, whose id is null where it is not known."""
        log.warning("a message skipped: %s", problem)
        kind = "parse error" if code == lsp.ErrorCodes.ParseError else "invalid request"
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": code, "message": f"{kind}: {problem}"}})

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams):
        """pygls's, but a change of a document the client never opened (a client that broke the
        protocol: pygls raised KeyError, which the editor showed as "Error in server") opens it
        when the change is the whole text, and is otherwise ignored; either way it is logged."""
        doc = params.text_document
        if unquote(doc.uri) not in self.workspace.text_documents:
            whole = [c for c in params.content_changes
                     if isinstance(c, lsp.TextDocumentContentChangeWholeDocument)]
            if not whole:
                log.warning("didChange of %s, which is not open, ignored (a change of a range "
                            "of an unknown text)", doc.uri)
                return
            log.warning("didChange of %s, which is not open: opened with its text", doc.uri)
            self.workspace.put_text_document(lsp.TextDocumentItem(
                uri=doc.uri, language_id="astral", version=doc.version, text=whole[-1].text))
            params = lsp.DidChangeTextDocumentParams(
                text_document=doc, content_changes=params.content_changes[
                    params.content_changes.index(whole[-1]) + 1:])
        # a range is applied here, on LSP's lines: pygls's `lines` are Python's splitlines,
        # which also break at U+2028, a form feed, U+0085...: in a document with one in a
        # comment, an edit below it went in a line too low, and the server's text was no longer
        # the editor's. The ranges of one message are applied to one list of lines, each to the
        # lines it spans (each split the whole text again: an editor's replace-all of 20,000
        # matches in a file of 5,000 lines held the event loop for over a minute)
        text = self.workspace.get_text_document(doc.uri)
        units = text.position_codec.client_num_units
        lines: Optional[List[str]] = None
        for change in params.content_changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial):
                if lines is None:
                    lines = lsp_lines(self.workspace.get_text_document(doc.uri).source)
                fitted = self._fitted(doc.uri, lines, change, units)
                splice(lines, fitted.range, fitted.text, units)
                continue
            lines = None
            self.workspace.update_text_document(doc, change)
        if lines is not None:
            self.workspace.update_text_document(
                doc, lsp.TextDocumentContentChangeWholeDocument(text="".join(lines)))
        handler = self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)
        if handler is not None:
            yield handler, (params,), None

    def _fitted(self, uri: str, lines: List[str], change: lsp.TextDocumentContentChangePartial,
                units: Callable[[str], int]):
        """`change` with its range within the text of `lines` (fit_range), logged and told the
        client when it was not: pygls dropped an edit that starts past the last line, and put
        one past a line's end after its line break, in silence."""
        fitted = fit_range(lines, change.range, units)
        if fitted == change.range:
            return change
        start, end = change.range.start, change.range.end
        why = ("ends before it starts" if (end.line, end.character) < (start.line, start.character)
               else "runs past the text")
        message = (f"astral: didChange of {uri}: the range {_show(change.range)} {why}; "
                   f"applied at {_show(fitted)}")
        log.warning(message)
        self.notify(lsp.WINDOW_LOG_MESSAGE, lsp.LogMessageParams(
            type=lsp.MessageType.Warning, message=message))
        return lsp.TextDocumentContentChangePartial(range=fitted, text=change.text)

    def _send_response(self, msg_id, result=None, error=None):
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            error = lsp.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)


def lsp_lines(text: str) -> List[str]:
    """The lines of `text` with their line breaks, as LSP counts them: a line ends at `\n`,
    `\r\n` or `\r` only (Python's splitlines also ends one at `\x0b`, `\x0c`, `\x1c`-`\x1e`,
    `\x85`, U+2028 and U+2029, which an editor shows within its line)."""
    return list(lines_kept(text))


def edited(text: str, rng: lsp.Range, new: str, units: Callable[[str], int]) -> str:
    """`text` with `rng` (within the text: fit_range; characters in the client's units,
    `units` a string's length in them) replaced by `new`."""
    lines = lsp_lines(text)

    def offset(p: lsp.Position) -> int:
        if p.line >= len(lines):
            return len(text)
        base = sum(map(len, lines[:p.line]))
        line, n = lines[p.line].rstrip("\r\n"), 0
        for i, ch in enumerate(line):
            if n >= p.character:
                return base + i
            n += units(ch)
        return base + len(line)

    return text[:offset(rng.start)] + new + text[offset(rng.end):]


def splice(lines: List[str], rng: lsp.Range, new: str, units: Callable[[str], int]) -> None:
    """`lines` (lsp_lines, changed in place) with `rng` (within their text: fit_range)
    replaced by `new`, as `edited` replaces it in their text: the lines it spans, and one on
    either side (a `\r` ending one line and a `\n` starting the next are one line end), split
    again."""
    def cut(p: lsp.Position) -> Tuple[int, int]:
        if p.line >= len(lines):
            return len(lines), 0
        body, n = lines[p.line].rstrip("\r\n"), 0
        for i, ch in enumerate(body):
            if n >= p.character:
                return p.line, i
            n += units(ch)
        return p.line, len(body)

    (first, start), (last, end) = cut(rng.start), cut(rng.end)
    head = lines[first][:start] if first < len(lines) else ""
    tail = lines[last][end:] if last < len(lines) else ""
    low, high = max(0, first - 1), min(len(lines), last + 2)
    joined = "".join(lines[low:first]) + head + new + tail + "".join(lines[last + 1:high])
    lines[low:high] = lsp_lines(joined)


def fit_range(lines: List[str], rng: lsp.Range, units: Callable[[str], int]) -> lsp.Range:
    """`rng` within the text of `lines` (with their line breaks; `units` a line's length in
    the client's units): a character past its line's end is the line's end (LSP: "it defaults
    back to the line length"), a position past the last line the end of the text."""
    if lines and lines[-1].endswith(("\n", "\r")):
        end = lsp.Position(line=len(lines), character=0)
    else:
        end = lsp.Position(line=max(0, len(lines) - 1),
                           character=units(lines[-1]) if lines else 0)

    def fit(p: lsp.Position) -> lsp.Position:
        if (p.line, p.character) >= (end.line, end.character):
            return end
        return lsp.Position(line=p.line, character=min(
            p.character, units(lines[p.line].rstrip("\r\n"))))

    start, stop = fit(rng.start), fit(rng.end)
    return lsp.Range(start=start, end=max(stop, start, key=lambda q: (q.line, q.character)))


def _an_id(value) -> bool:
    """Whether `value` is a JSON-RPC id, or none (a notification's; null, an error's)."""
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def _invalid(data: dict) -> Optional[str]:
    """What makes a JSON-RPC message invalid (its id; neither a method, a result nor an error),
    or None."""
    if data["jsonrpc"] != "2.0":        # "1.0": pygls dropped it, and the client waited
        return (f"a message is a JSON object with `\"jsonrpc\": \"2.0\"`, not "
                f"{json.dumps(data['jsonrpc'])[:40]}")
    if not _an_id(data.get("id")):
        return f"an id is a string or a number, not {_json_type(data['id'])}"
    if "method" in data and not isinstance(data["method"], str):   # pygls's TypeError, sent
        return f"a method is a string, not {_json_type(data['method'])}"   # as InternalError
    if not any(k in data for k in ("method", "result", "error")):
        return ("a message names a `method` (a request, a notification) or holds a `result` or "
                "an `error` (a response)")
    return None


def converter():
    """pygls's converter of messages to lsprotocol's types, but an integer of the protocol (a
    position's `line` and `character`, a document's `version`, a `tabSize`) is a JSON integer:
    cattrs read 1.5 as 1, and "1" and true as 1, so a hover at line 1.5 answered line 1's. Any
    other value fails the params' validation (InvalidParams, as for a negative line)."""
    made = default_converter()
    made.register_structure_hook(int, _integer)
    made.register_structure_hook(bool, _boolean)    # (int's hook would serve its subclass)
    return made


def _integer(value, _type) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():    # 2.0: an integer, written so
        return int(value)
    raise ValueError(f"an integer, not {json.dumps(value)[:40]}")


def _boolean(value, _type) -> bool:
    if isinstance(value, bool):             # (lsprotocol's validators refuse any other value)
        return value
    raise ValueError(f"true or false, not {json.dumps(value)[:40]}")


def _json_type(value) -> str:
    return ("true or false" if isinstance(value, bool) else "an object"
            if isinstance(value, dict) else "an array" if isinstance(value, list) else
            "null" if value is None else "a number" if isinstance(value, (int, float)) else
            type(value).__name__)


def _show(rng: lsp.Range) -> str:
    return (f"{rng.start.line}:{rng.start.character}-{rng.end.line}:{rng.end.character}")


def _validation_detail(cause: Optional[BaseException]) -> str:
    """What failed to validate, as cattrs says it ("invalid value @ $.params.position")."""
    if cause is None:
        return ""
    try:
        import cattrs

        return "; ".join(cattrs.transform_error(cause))[:300]
    except Exception:  # noqa: BLE001 - not a cattrs error: its first line
        return (str(cause).splitlines() or [""])[0][:300]


def answered(handler):
    """A request handler whose failures are error responses without a traceback: an unknown
    document and bad params are InvalidParams, running out of time RequestFailed, a bug an
    InternalError whose message names it (the traceback goes to the log)."""
    @functools.wraps(handler)
    async def wrapper(ls: "AstralServer", params):
        try:
            return await handler(ls, params)
        except (JsonRpcException, asyncio.CancelledError):
            raise
        except workers.Superseded:
            raise RequestFailed(message="the document changed while the request ran") from None
        except Exception as exc:  # noqa: BLE001 - a bug answers with an error, not silence
            log.exception("%s failed", handler.__name__)
            raise JsonRpcInternalError(
                message=f"internal error in {handler.__name__}: {type(exc).__name__}: {exc}",
                data=None) from None
    return wrapper
