"""The analyses references are looked for in: the document's, the other open documents' latest
that parsed, and those of the project's other files (compiled once per modification time, kept
in the server's `project` until a file event clears it)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

from pygls.uris import from_fs_path, to_fs_path

from astral_dsl.lsp.analysis import Analysis, analyse, project_files


def uri_path(uri: str) -> Optional[Path]:
    """The file of a `file:` URI; None for another scheme (`untitled:`), and for a path that no
    file can have (a NUL, `%00`: the operating system refuses it, and every open, resolve or
    stat of it raised ValueError, E000 in the document and, while it stayed open, in every
    other one, whose worker read the open documents' paths): the document is then a text of
    its own, as an unsaved one is."""
    if not uri.startswith("file:"):
        return None
    p = to_fs_path(uri)
    return Path(p) if p and "\0" not in p else None


def path_uri(path: Path) -> str:
    return from_fs_path(str(path.resolve())) or path.resolve().as_uri()


def real_path(path) -> str:
    """`path` resolved (links followed), or as given where it cannot be."""
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError, ValueError):      # ValueError: a NUL in it
        return str(path)


def by_real_path(texts: Dict[str, str]) -> Dict[str, str]:
    """`texts` keyed by their paths resolved (real_path)."""
    return {real_path(p): t for p, t in texts.items()}


def same_file(a: Path, b: Path) -> bool:
    """Whether `a` and `b` resolve to one path (compared as given where they cannot)."""
    try:
        return a.resolve() == b.resolve()
    except (OSError, ValueError):                      # ValueError: a NUL in one
        return a == b


def analyses(ls, a: Analysis, limit: int) -> List[Analysis]:
    """`a`, then the other open documents' analyses, then the project's other files' (at most
    `limit` files), each file once."""
    from astral_dsl.semantics.modules import project_root
    from astral_dsl.semantics.source_files import read_file

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
