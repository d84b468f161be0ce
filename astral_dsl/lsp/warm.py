"""Imported by the language server's fork server (lsp/workers.py PRELOAD): importing this module
runs one analysis of a tiny design, so that every module an analysis needs is loaded once, in
the single-threaded fork server, and each worker forked from it starts warm (a worker that takes
the place of an ended one is ready in milliseconds instead of half a second of imports). The
code's stamp in sizing's cache key (analyses/sizing_cache.py: a walk of the package's files and
the solvers' versions, ~70 ms with importing importlib.metadata) is taken here too, once per
server, not by every worker that sizes a design."""
from __future__ import annotations

from astral_dsl.analyses import sizing_cache
from astral_dsl.lsp.checker import WARM, check

check("warm.astral", None, WARM, {})
sizing_cache.key((), {})
