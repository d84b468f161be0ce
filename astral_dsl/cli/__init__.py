"""The `astral` command line: one module per command, each with NAME, HELP, register(sub) and
run(args, overrides) -> exit code. A new command is a module here and a line in COMMANDS."""
from __future__ import annotations

import importlib
import os
import sys
from typing import List, Optional

from astral_dsl.cli.common import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Parser, UsageError, \
    sets, usage

COMMANDS = ["check", "size", "export", "fmt", "lsp", "render", "forecast", "sweep",
            "diagnose"]


def _modules():
    return [importlib.import_module(f"astral_dsl.cli.{name}") for name in COMMANDS]


def build_parser() -> Parser:
    from astral_dsl import __version__

    p = Parser(prog="astral", description="Compile and check .astral datacenter designs.")
    p.add_argument("--version", action="version", version=f"astral {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in _modules():
        module.register(sub)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        overrides = sets(args)
    except UsageError as exc:
        return usage(str(exc))
    command = importlib.import_module(f"astral_dsl.cli.{args.command}")
    try:
        return command.run(args, overrides)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        import traceback

        from astral_dsl.outputs.terminal import printable

        sys.stderr.write("error[E000]: internal compiler error: "
                         f"{type(exc).__name__}: {printable(exc)}\n"
                         " = note: this is a bug in astral_dsl, not in your design; please report "
                         "it with the input file\n")
        if os.environ.get("ASTRAL_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL


__all__ = ["COMMANDS", "EXIT_USAGE", "build_parser", "main"]
