"""`astral lsp`: the language server over standard input and output (astral_dsl/lsp)."""
from __future__ import annotations

from astral_dsl.cli.common import number

NAME = "lsp"
HELP = "run the language server (LSP over stdio) for editors"


def register(sub) -> None:
    p = sub.add_parser(NAME, help=HELP)
    p.add_argument("--stdio", action="store_true",
                   help="talk LSP over standard input/output (the default and only transport)")
    p.add_argument("--debounce", type=number, default=0.3, metavar="SECONDS",
                   help="wait this long after the last change before checking (default 0.3)")
    p.add_argument("--timeout", type=number, default=20.0, metavar="SECONDS",
                   help="stop an analysis or a request that takes longer (default 20)")


# a debounce past a minute leaves the editor's diagnostics stale for as long after each change
MAX_DEBOUNCE_S = 60.0


def run(args, overrides) -> int:
    from astral_dsl.cli.common import usage

    # (the server took any float: --timeout -5 or 0 timed every analysis out, --debounce 1e308
    # never checked a change, nan was read as 0 or as no limit)
    if not 0 <= args.debounce <= MAX_DEBOUNCE_S:
        return usage(f"--debounce {args.debounce:g}: seconds from 0 to {MAX_DEBOUNCE_S:g} after "
                     f"the last change")
    if not 0 < args.timeout < float("inf"):
        return usage(f"--timeout {args.timeout:g}: a finite time in seconds, more than 0")
    from astral_dsl.lsp.server import serve

    return serve(debounce=args.debounce, timeout=args.timeout)
