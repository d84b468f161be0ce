"""Imported by the language server's fork server (lsp/workers.py PRELOAD): importing this module
runs one analysis of a tiny design, so that every module an analysis needs is loaded once, in
the single-threaded fork server, and each worker forked from it starts warm (a worker that takes
the place of an ended one is ready in milliseconds instead of half a second of imports)."""
from __future__ import annotations

from astral_dsl.lsp.checker import WARM, check

check("warm.astral", None, WARM, {})
