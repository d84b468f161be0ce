"""`astral export FILE`: the compiled design model as JSON; `--schema`: its JSON Schema."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import EXIT_OK, add_common, checked, colour, exit_code, \
    print_diagnostics, usage

NAME = "export"
HELP = "the compiled design model as JSON"


def register(sub) -> None:
    e = sub.add_parser(NAME, help=HELP)
    e.add_argument("file", nargs="?", metavar="FILE")
    e.add_argument("--schema", action="store_true", help="print the JSON Schema of the export")
    add_common(e, formats=("json", "human"))


def run(args, overrides) -> int:
    from astral_dsl.outputs.export import export_design, schema_text
    from astral_dsl.outputs.jsonout import accepted_json, dumps, envelope

    if args.schema:
        sys.stdout.write(schema_text())
        return EXIT_OK
    if not args.file:
        return usage("export needs a FILE (or --schema)")
    result = checked(args.file, overrides)
    design, diagnostics = result.design, result.diagnostics
    valid = not any(d.is_error for d in diagnostics)
    if args.format == "human":
        print_diagnostics(diagnostics, colour(args, sys.stderr), sys.stderr)
    doc = envelope(diagnostics, design=export_design(design) if valid else None,
                   accepted=accepted_json(result.accepted))
    sys.stdout.write(dumps(doc) + "\n")
    return exit_code(design, diagnostics)
