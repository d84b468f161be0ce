"""`astral lsp`: the language server (pygls, LSP over stdio).

- diagnostics on open, save and change (debounced), as `astral check` reports them: the front
  end's and the engineering checks' (constraints, power, cooling, network, required scenarios),
  one Diagnostic type for both; a problem in an imported file is shown on its import; an
  imported file edited in the editor (unsaved), closed, saved or changed on disk (a file event,
  which the server asks a client for) re-checks the open documents that import it;
- hover: the evaluated value and unit under the cursor, conversions, the type, and for stdlib
  items the source of the number;
- go to definition and find references, across imports and into the stdlib;
- completion: units, declared names, template parameters, fields, members, stdlib items;
- document symbols and formatting (`astral fmt`).

Positions are converted between the compiler's 1-based code-point columns and the LSP's
0-based UTF-16 (or negotiated) columns in positions.py.

Responsiveness: the event loop only dispatches. An analysis runs in a worker process
(workers.py, checker.py) that a newer version of the document or the deadline ends (E407 says
so; the next edit is analysed afresh), whose diagnostics are published as soon as it answers;
then the document is compiled in the server for hover and navigation; hover, lookups, the outline, formatting and the project scan run as jobs of their
own threads, and a request that runs out of time gets an error (RequestFailed); a compile in
those threads stops with its job (astral_dsl/cancel.py), and every request is answered within
workers.START + 3 x the deadline (README, "The language server answers every request"). Nothing
is ever raised into a running thread from outside, so a cancelled analysis leaves nothing
half-imported, and an
internal error (E000) lasts until the next edit. Requests with invalid params get InvalidParams
(-32602), a document that is not open an InvalidParams error too, and no error carries a Python
traceback (they go to the server's log on standard error). A message longer than 64 MiB is
read in chunks and skipped, and the editor told (transport.py).

The server's state is documents.py's AstralServer, its protocol and errors protocol.py's,
the answers of its requests features.py's."""
from __future__ import annotations

import logging
import signal
import sys
from typing import NoReturn

from lsprotocol import types as lsp

from astral_dsl.lsp import features, transport
from astral_dsl.lsp.documents import TIMEOUT, AstralServer
from astral_dsl.lsp.protocol import answered

log = logging.getLogger("astral.lsp")


# ---- features ------------------------------------------------------------------------------------
def build(debounce: float = 0.3, timeout: float = TIMEOUT) -> AstralServer:
    server = AstralServer(debounce, timeout)

    @server.feature(transport.TOO_LARGE)
    async def too_large(ls: AstralServer, params):
        text = transport.describe(params)
        log.warning(text)
        ls.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=text))

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: AstralServer, params: lsp.InitializedParams):
        await ls.watch_files()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def files_changed(ls: AstralServer, params: lsp.DidChangeWatchedFilesParams):
        ls.files_event([change.uri for change in params.changes])

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: AstralServer, params: lsp.DidOpenTextDocumentParams):
        uri = params.text_document.uri
        ls.files_event([uri], but=uri)       # its importers now read the editor's text
        await ls.refresh(uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: AstralServer, params: lsp.DidChangeTextDocumentParams):
        uri = params.text_document.uri
        ls.schedule(uri)
        for other in ls.dependents(uri):
            ls.schedule(other)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: AstralServer, params: lsp.DidSaveTextDocumentParams):
        uri = params.text_document.uri
        ls.schedule(uri)
        ls.files_event([uri], but=uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: AstralServer, params: lsp.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        flight = ls.inflight.pop(uri, None)
        if flight is not None:
            flight[1].cancel()
        ls.latest.pop(uri, None)
        ls.good.pop(uri, None)
        ls.shown.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri,
                                                                          diagnostics=[]))
        ls.files_event([uri])                # its importers now read the file on disk

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @answered
    async def hover(ls: AstralServer, params: lsp.HoverParams):
        a = await ls.current(params.text_document.uri)
        if a is None or not a.parsed:
            return None
        return await ls.job("hover", features.hover, a, ls.encoding, params.position)

    async def declaration_at(ls: AstralServer, params):
        """The analysis of the document and the declaration under the cursor (or None)."""
        a = await ls.current(params.text_document.uri)
        if a is None or not a.parsed:
            return a, None
        return a, await ls.job("the lookup", features.declaration, a, ls.encoding,
                               params.position)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @answered
    async def definition(ls: AstralServer, params: lsp.DefinitionParams):
        a, d = await declaration_at(ls, params)
        return None if d is None else ls.location(a, d.span)

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    @answered
    async def references(ls: AstralServer, params: lsp.ReferenceParams):
        a, d = await declaration_at(ls, params)
        if a is None or not a.parsed:
            return None
        if d is None:
            return []
        return await ls.job("references", features.references, ls, a, d,
                            params.context.include_declaration)

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=["."]))
    @answered
    async def completion(ls: AstralServer, params: lsp.CompletionParams):
        uri = params.text_document.uri
        text = ls.document(uri).source
        a = ls.good.get(uri)
        if a is None:
            a = await ls.current(uri)
            if a is not None and not a.parsed:
                a = None
        items = await ls.job("completion", features.completion, a, text, ls.encoding,
                             params.position)
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @answered
    async def symbols(ls: AstralServer, params: lsp.DocumentSymbolParams):
        uri = params.text_document.uri
        text = ls.document(uri).source
        # the outline needs only the syntax: the tree of an analysis of exactly this text when
        # there is one, else the text parsed now (it waited for the analysis, up to wait_limit:
        # 70 s by default, with nothing shown, when the analysis was slow or stalled)
        a = ls.latest.get(uri)
        tree = a.entry.tree if a is not None and a.parsed and a.text == text else None
        return await ls.job("the outline", features.symbols, tree, text, ls.encoding)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    @answered
    async def formatting(ls: AstralServer, params: lsp.DocumentFormattingParams):
        uri = params.text_document.uri
        text = ls.document(uri).source
        return await ls.job("formatting", features.formatting, text, uri, ls.encoding)

    return server


def serve(debounce: float = 0.3, timeout: float = TIMEOUT) -> int:
    """Serve until the client's `exit` or the end of its input (0), or a signal of ENDING
    (the process exits with 128 + its number)."""
    from astral_dsl.stdio import detach_stdout

    logging.basicConfig(level=logging.WARNING)
    transport.quiet_client_errors()          # a client's malformed message: one line, no traceback
    protocol = detach_stdout()     # nothing but the protocol ever reaches the client's stream
    # the compiler's modules are imported here, at start: what a thread imports lazily later
    # is never cut short (nothing is raised into threads), and the checks' heavy ones (cvxpy,
    # CoolProp, Seer) are imported in the worker processes
    import astral_dsl.api  # noqa: F401
    import astral_dsl.lsp.hover  # noqa: F401

    server = build(debounce, timeout)
    server.checker.warm()          # after the detach: the workers' standard output is stderr
    previous = _end_on(ENDING, server)
    try:
        server.start_io(transport.BoundedInput(sys.stdin.buffer), protocol)
    finally:
        # a signal from now on is noted, not raised: an editor's SIGTERM right after its `exit`
        # (or a second one) had cut the workers' closing short
        _end_on(ENDING, server, raising=False)
        server.checker.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if server.ending is not None:
        _leave(server.ending)
    return 0


# what an editor or a closed terminal sends a server it ends: each ends this one as the end of
# its input would, its worker processes ended and the fork server's socket directory removed
# (before, every server ended so left a /tmp/pymp-* behind, and its workers to the fork server)
ENDING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _end_on(signals, server, raising: bool = True) -> dict:
    """Handle each of `signals` by ending `server` (SystemExit in the main thread, on which pygls
    stops; not `raising`: once it is closing), noting the first signal; returns the handlers
    it replaced."""
    def end(signum, frame):
        if server.ending is None:
            server.ending = signum
        if raising:
            raise SystemExit(128 + signum)

    return {signum: signal.signal(signum, end) for signum in signals}


def _leave(signum: int) -> NoReturn:
    """Exit at once with the status a shell gives a command ended by `signum`: the thread that
    reads the input is blocked in a read that will not return, and a normal exit waits for it.
    What a normal exit would clean up is cleaned here: the fork server's directory (its
    workers were ended by Checker.close; the fork server ends when this process does)."""
    import multiprocessing.util
    import os
    import shutil

    logging.shutdown()
    # the fork server's listening socket is in this process's multiprocessing directory
    shutil.rmtree(multiprocessing.util.get_temp_dir(), ignore_errors=True)
    sys.stderr.flush()
    os._exit(128 + signum)
