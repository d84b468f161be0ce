"""The analyses references are looked for in: the document's, the other open documents' latest
that parsed, and those of the project's other files (compiled once per modification time, kept
in the server's `project` until a file event clears it)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from pygls.uris import from_fs_path, to_fs_path

from astral_dsl.lsp.analysis import Analysis, analyse, project_files


def uri_path(uri: str) -> Optional[Path]:
    if not uri.startswith("file:"):
        return None
    p = to_fs_path(uri)
    return Path(p) if p else None


def path_uri(path: Path) -> str:
    return from_fs_path(str(path.resolve())) or path.resolve().as_uri()


def analyses(ls, a: Analysis, limit: int) -> List[Analysis]:
    """`a`, then the other open documents' analyses, then the project's other files' (at most
    `limit` files), each file once."""
    from astral_dsl.semantics.modules import project_root, read_file

    out = [a]
    open_paths = set()
    for doc in list(ls.workspace.text_documents.values()):
        p = uri_path(doc.uri)
        if p is not None:
            open_paths.add(str(p.resolve()))
        if doc.uri != a.uri and doc.uri in ls.good:
            out.append(ls.good[doc.uri])
    if a.entry.path is None:
        return out
    for path in project_files(project_root(a.entry.path), limit):
        key = str(path.resolve())
        if key in open_paths:
            continue
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        hit = ls.project.get(key)
        if hit is None or hit[0] != mtime:
            try:               # the compiler's reading: regular files of at most 8 MiB
                text = read_file(path).decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            hit = (mtime, analyse(path_uri(path), path, text, None, ls.overlay,
                                  engineering=False))
            ls.project[key] = hit
        out.append(hit[1])
    return out
