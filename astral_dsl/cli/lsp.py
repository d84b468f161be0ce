"""`astral lsp`: the language server over standard input and output (astral_dsl/lsp)."""
from __future__ import annotations

NAME = "lsp"
HELP = "run the language server (LSP over stdio) for editors"


def register(sub) -> None:
    p = sub.add_parser(NAME, help=HELP)
    p.add_argument("--stdio", action="store_true",
                   help="talk LSP over standard input/output (the default and only transport)")
    p.add_argument("--debounce", type=float, default=0.3, metavar="SECONDS",
                   help="wait this long after the last change before checking (default 0.3)")
    p.add_argument("--timeout", type=float, default=20.0, metavar="SECONDS",
                   help="stop an analysis or a request that takes longer (default 20)")


def run(args, overrides) -> int:
    from astral_dsl.lsp.server import serve

    return serve(debounce=args.debounce, timeout=args.timeout)
