"""The language server's other files (a mixin of documents.AstralServer, whose docstring tells
the server's state): the editor's texts of the open documents by path, which an analysis reads
instead of the disk's; whether an analysis no longer holds because a file it read, or an import
it could not find, changed since (`stale`); and on a file opened, closed, saved or changed on
disk (the client's file watcher), the open documents to check again."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Dict, List, Optional

from lsprotocol import types as lsp

from astral_dsl.lsp.analysis import Analysis
from astral_dsl.lsp.project import by_real_path, same_file, uri_path

log = logging.getLogger("astral.lsp")


class FileEvents:
    """AstralServer's other files (attributes: documents.AstralServer)."""

    def overlay(self, path: Path) -> Optional[str]:
        """The editor's text of an open document (instead of the file on disk)."""
        for doc in list(self.workspace.text_documents.values()):
            p = uri_path(doc.uri)
            if p is not None and same_file(p, path):
                return doc.source
        return None

    def stale(self, a: Analysis) -> bool:
        """Whether an analysis no longer holds for its document's text: an imported file it read
        is open with another text now (or was closed, or opened, since), or an import it could
        not find may be found now (a file was opened, closed, saved or changed on disk since)."""
        if a.inputs:
            now = by_real_path(self.open_texts(a.uri))
            for key, (text, from_editor) in a.inputs.items():
                if (now[key] != text) if key in now else from_editor:
                    return True
        return a.files != self.files and any(d.code == "E205" for d in a.diagnostics)

    def open_texts(self, uri: str) -> Dict[str, str]:
        """The editor's text of the open documents other than `uri`, by path."""
        out = {}
        for doc in list(self.workspace.text_documents.values()):
            p = uri_path(doc.uri)
            if doc.uri != uri and p is not None:
                out[str(p)] = doc.source
        return out

    def files_event(self, uris: List[str], but: Optional[str] = None) -> None:
        """Files were opened, closed, saved or changed on disk: the open documents (other than
        `but`) whose analysis read one of them, or could not find an import, are checked again
        (their cached analysis is stale: `stale`), and the project scan of references is redone."""
        self.files += 1
        self.project.clear()
        again = set()
        for uri in uris:
            again.update(self.dependents(uri))
        again.update(other for other, a in self.latest.items()
                     if any(d.code == "E205" for d in a.diagnostics))
        for other in sorted(again):
            if other != but and self.is_open(other):
                self.schedule(other)

    async def watch_files(self) -> None:
        """Ask a client that can be asked for the changes of .astral files on disk (a file an
        open document imports, deleted, renamed or rewritten by git)."""
        caps = getattr(self, "client_capabilities", None)
        watched = getattr(getattr(caps, "workspace", None), "did_change_watched_files", None)
        if not getattr(watched, "dynamic_registration", False):
            return
        try:
            await asyncio.wait_for(self.client_register_capability_async(lsp.RegistrationParams(
                registrations=[lsp.Registration(
                    id="astral-watched-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=[
                        lsp.FileSystemWatcher(glob_pattern="**/*.astral")]))])), 10)
        except Exception as exc:  # noqa: BLE001 - a client that refuses: no file events
            log.warning("the client did not register the file watcher: %s", exc)

    def dependents(self, uri: str) -> List[str]:
        """Open documents whose last analysis read the file of `uri`."""
        path = uri_path(uri)
        out: List[str] = []
        if path is None:
            return out
        for other, a in self.latest.items():
            if other == uri:
                continue
            if any(m.path is not None and same_file(m.path, path) for m in a.modules.values()):
                out.append(other)
        return out
