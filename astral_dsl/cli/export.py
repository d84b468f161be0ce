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
    e.add_argument("--netbox", metavar="DIR",
                   help="write what NetBox's bulk import takes into DIR: sites, locations, "
                        "racks, device types (CSV and devicetype-library YAML), devices named "
                        "by the design's patterns or inventory, cables, power panels and feeds")
    add_common(e, formats=("json", "human"),
               format_help="json (default): the document alone; human: the same document, "
                           "and the diagnostics as text on standard error; with --netbox, "
                           "what was written: as lines of text unless json is given")
    e.set_defaults(format=None)     # given or not: --netbox answers in text unless asked


def default_format(words) -> str:
    """The format without --format (cli._json_usage): json, text with --netbox."""
    return "human" if any(w == "--netbox" or w.startswith("--netbox=") for w in words) \
        else "json"


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
    if args.netbox:
        return _netbox(args, result, valid)
    if args.format == "human":
        print_diagnostics(diagnostics, colour(args, sys.stderr), sys.stderr)
    fabrics = result.engineering.fabrics if result.engineering is not None else ()
    # `file` as every command's envelope has it: a design with errors exports `design: null`
    doc = envelope(diagnostics, file=design.file,
                   design=export_design(design, fabrics) if valid else None,
                   accepted=accepted_json(result.accepted))
    sys.stdout.write(dumps(doc) + "\n")
    return exit_code(design, diagnostics)


def _netbox(args, result, valid: bool) -> int:
    """`--netbox DIR`: the files, then a line per file and what NetBox will default (with
    `--format json`, the envelope with them as `netbox`: null when nothing was written)."""
    from astral_dsl.outputs import netbox
    from astral_dsl.outputs.jsonout import dumps, envelope
    from astral_dsl.outputs.terminal import printable_line

    as_json = args.format == "json"
    code = exit_code(result.design, result.diagnostics)
    if not as_json:
        print_diagnostics(result.diagnostics, colour(args, sys.stderr), sys.stderr)
    if not valid:
        if as_json:
            sys.stdout.write(dumps(envelope(result.diagnostics, file=result.design.file,
                                            netbox=None)) + "\n")
        else:
            sys.stderr.write("astral: the design has errors: nothing written to "
                             f"`{args.netbox}`\n")
        return code
    try:
        written = netbox.write(result.design, args.netbox, result.devices)
    except OSError as exc:
        return usage(f"--netbox: cannot write `{args.netbox}`: {exc.strerror or exc}")
    if written.diagnostics:          # E705: a value longer than NetBox takes; nothing written
        said = tuple(result.diagnostics) + written.diagnostics
        if as_json:
            sys.stdout.write(dumps(envelope(said, file=result.design.file, netbox=None)) + "\n")
        else:
            print_diagnostics(written.diagnostics, colour(args, sys.stderr), sys.stderr)
            sys.stderr.write("astral: NetBox would refuse these values: nothing written to "
                             f"`{args.netbox}`\n")
        return exit_code(result.design, said)
    said = tuple(result.diagnostics) + written.warnings     # W707: a number assumed; W709
    if as_json:
        sys.stdout.write(dumps(envelope(said, file=result.design.file, netbox={
            "directory": args.netbox,
            "files": [{"name": name, "rows": rows} for name, rows in written.files],
            "notes": list(written.notes)})) + "\n")
        return code
    print_diagnostics(written.warnings, colour(args, sys.stderr), sys.stderr)
    lines = [f"wrote {len(written.files)} file(s) to {args.netbox} for NetBox's bulk import:"]
    lines += [f"  {name}: {rows:,} row(s)" for name, rows in written.files]
    lines += [f"  note: {n}" for n in written.notes]
    sys.stdout.writelines(printable_line(line + "\n") for line in lines)
    return exit_code(result.design, result.diagnostics)
