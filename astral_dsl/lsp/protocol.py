"""The language server's JSON-RPC protocol and errors (server.py serves with them): a request
whose params do not validate is answered with InvalidParams (not dropped), a request about a
document that is not open too, one that runs out of time gets RequestFailed, a bug an
InternalError naming it, and no error response carries a Python traceback (it goes to the
server's log on standard error)."""
from __future__ import annotations

import asyncio
import functools
import logging
from typing import Optional
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

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
    """pygls's protocol, but a request whose params do not validate (a negative position, a
    string for a number, missing or null params) is answered with InvalidParams instead of
    being dropped (which leaves the client waiting for good), and no error response carries a
    traceback."""

    def structure_message(self, data):
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
        super().handle_message(message)

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
        yield from super().lsp_text_document__did_change(params)

    def _send_response(self, msg_id, result=None, error=None):
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            error = lsp.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)


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
