"""The language server's worker process: it runs the analysis of one document at a time, as
`astral check` would (lsp/analysis.py), and answers with its diagnostics. The server ends the
process to cancel an analysis (workers.py): whatever it was doing, importing a module included,
ends with it."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Tuple

from astral_dsl.pools import limit_memory


def check(uri: str, path: Optional[str], text: str, open_texts: Dict[str, str]):
    """("ok", diagnostics) of the document, each placed in it (lsp/placed.py: a problem in
    an imported file on its import), or ("error", "Type: message") when the compiler itself
    failed. `open_texts`: the editor's text of the other open documents, by path."""
    from astral_dsl.lsp.analysis import analyse
    from astral_dsl.lsp.project import by_real_path
    from astral_dsl.lsp.placed import placed

    documents = by_real_path(open_texts)    # outside the try below: a path it could not
    #                                          resolve had ended this process (E000 everywhere)

    def overlay(p: Path) -> Optional[str]:
        try:
            return documents.get(str(p.resolve()))
        except (OSError, ValueError):
            return None

    try:
        a = analyse(uri, Path(path) if path is not None else None, text, None, overlay)
    except MemoryError:
        return "memory", None           # past the worker's limit (serve): E410, then a new worker
    except Exception as exc:  # noqa: BLE001 - a compiler bug is the server's E000, not a crash
        return "error", f"{type(exc).__name__}: {exc}"
    return "ok", placed(a)


# checked once at start: the modules every analysis needs (the compiler, the engineering checks,
# Seer's job validation) are imported before the first deadline starts
WARM = "gpu G { power = 700 W }\nhost H { gpus = 8 x G }\nsite S { hosts = 2 x H }\n"


def serve(conn, memory: Optional[int] = None) -> None:
    """Answer requests (check's arguments) until the server closes the pipe; `memory`: the
    bytes of address space the analyses may take beyond this process's start (limit_memory).
    An analysis past it answers ("memory", None), and the process ends after answering: what
    it had allocated may have left it in no state to serve another (the server starts a new
    one)."""
    limit_memory(memory)
    check("warm.astral", None, WARM, {})
    conn.send("ready")
    while True:
        try:
            request: Tuple = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        answer = check(*request)
        conn.send(answer)
        if answer[0] == "memory":
            return
