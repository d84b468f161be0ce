"""The `astral` command line. I/O lives here; everything else is pure functions of the source."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Optional

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 with a one-line reason
        self.print_usage(sys.stderr)
        sys.stderr.write(f"astral: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _sets(values: List[str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for item in values or []:
        if "=" not in item:
            raise SystemExit(_usage(f"--set expects NAME=VALUE, got `{item}`"))
        name, value = item.split("=", 1)
        out[name.strip()] = value.strip()
    return out


def _usage(message: str) -> int:
    sys.stderr.write(f"astral: error: {message}\n")
    return EXIT_USAGE


def build_parser() -> argparse.ArgumentParser:
    from astral_dsl import __version__

    p = _Parser(prog="astral", description="Compile and check .astral datacenter designs.")
    p.add_argument("--version", action="version", version=f"astral {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(sp):
        sp.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a top-level `param` (a bare number takes its unit)")
        sp.add_argument("--format", choices=["human", "json"], default="human")
        sp.add_argument("--color", choices=["auto", "always", "never"], default="auto")

    c = sub.add_parser("check", help="compile designs and report diagnostics and a summary")
    c.add_argument("files", nargs="+", metavar="FILE")
    c.add_argument("--scenario", action="append", default=[], metavar="NAME",
                   help="also check the design under this scenario (repeatable)")
    c.add_argument("--all-scenarios", action="store_true", help="check every scenario")
    common(c)
    z = sub.add_parser("size", help="power, cooling and network sizing report")
    z.add_argument("file", metavar="FILE")
    z.add_argument("--scenario", metavar="NAME", help="size the design under this scenario")
    common(z)
    e = sub.add_parser("export", help="the compiled design model as JSON")
    e.add_argument("file", nargs="?", metavar="FILE")
    e.add_argument("--schema", action="store_true", help="print the JSON Schema of the export")
    common(e)
    e.set_defaults(format="json")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        sets = _sets(args.set)
    except SystemExit as exc:
        return int(exc.code)
    try:
        if args.command == "check":
            return _check(args, sets)
        if args.command == "export":
            return _export(args, sets)
        if args.command == "size":
            return _size(args, sets)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        import traceback

        sys.stderr.write("error[E000]: internal compiler error: "
                         f"{type(exc).__name__}: {exc}\n"
                         " = note: this is a bug in astral_dsl, not in your design; please report "
                         "it with the input file\n")
        if os.environ.get("ASTRAL_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL
    return EXIT_USAGE


def _colour(args) -> bool:
    if args.color == "always":
        return True
    if args.color == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _compile(path: str, sets):
    from astral_dsl.compiler import compile_file

    return compile_file(path, sets)


def _recompile(path: str, sets):
    from astral_dsl.compiler import compile_file

    return lambda assignments: compile_file(path, sets, assignments=assignments)


def _unreadable(design) -> bool:
    return any(d.code == "E100" for d in design.diagnostics)


def _print_diagnostics(diagnostics, colour: bool, stream) -> None:
    from astral_dsl.outputs.human import render

    lines_cache: Dict[str, List[str]] = {}

    def line_of(file: str, n: int):
        if file not in lines_cache:
            try:
                with open(file, "rb") as fh:
                    text = fh.read().decode("utf-8-sig", errors="replace")
                lines_cache[file] = [ln.rstrip("\r") for ln in text.split("\n")]
            except (OSError, ValueError):
                lines_cache[file] = []
        lines = lines_cache[file]
        return lines[n - 1] if 0 < n <= len(lines) else None

    for d in diagnostics:
        stream.write(render(d, line_of, colour) + "\n\n")


def _check(args, sets) -> int:
    from astral_dsl.analyses.summary import one_line, summarize
    from astral_dsl.diagnostics import has_errors
    from astral_dsl.outputs.jsonout import dumps, envelope

    worst = EXIT_OK
    colour = _colour(args)
    from astral_dsl.analyses.checking import check_design
    from astral_dsl.outputs.size_report import chosen_json

    for path in args.files:
        design = _compile(path, sets)
        checked = check_design(design, args.scenario, args.all_scenarios,
                               _recompile(path, sets))
        design = checked.design
        summary = summarize(design, checked.engineering) if design.valid else None
        if args.format == "json":
            scen = [{"name": o.name, "required": o.required, "broken": len(o.broken)}
                    for o in checked.scenarios]
            sys.stdout.write(dumps(envelope(checked.diagnostics, file=design.file,
                                            summary=summary, scenarios=scen,
                                            chosen=chosen_json(design))) + "\n")
        else:
            _print_diagnostics(checked.diagnostics, colour, sys.stdout)
            errors = sum(d.is_error for d in checked.diagnostics)
            warnings = sum(d.severity.value == "warning" for d in checked.diagnostics)
            for item in chosen_json(design):
                sys.stdout.write(f"chosen by sizing: {item['file']}:{item['line']}:"
                                 f"{item['column']} = {item['value']}\n")
            for o in checked.scenarios:
                state = "holds" if not o.broken else f"breaks {len(o.broken)} constraint(s)"
                sys.stdout.write(f"scenario {o.name}{' (required)' if o.required else ''}: "
                                 f"{state}\n")
            status = "ok" if not errors else f"{errors} error(s)"
            if warnings:
                status += f", {warnings} warning(s)"
            if summary is not None:
                sys.stdout.write(one_line(design, summary) + f" [{status}]\n")
            else:
                sys.stdout.write(f"{design.file}: {status}\n")
        if _unreadable(design):
            worst = max(worst, EXIT_USAGE)
        elif has_errors(checked.diagnostics):
            worst = max(worst, EXIT_ERRORS)
    return worst


def _size(args, sets) -> int:
    from astral_dsl.analyses.checking import check_design
    from astral_dsl.outputs.jsonout import dumps, envelope
    from astral_dsl.outputs.size_report import chosen_json, render_report, size_summary

    design = _compile(args.file, sets)
    checked = check_design(design, [args.scenario] if args.scenario else None,
                           compile_with=_recompile(args.file, sets))
    design = checked.design
    eng = checked.engineering
    if args.scenario and checked.scenarios:
        eng = checked.scenarios[0].result
    if args.format == "json":
        summary = size_summary(design, eng) if eng is not None else None
        sys.stdout.write(dumps(envelope(checked.diagnostics, file=design.file,
                                        scenario=args.scenario, summary=summary,
                                        chosen=chosen_json(design))) + "\n")
    else:
        _print_diagnostics(checked.diagnostics, _colour(args), sys.stdout)
        if eng is not None:
            sys.stdout.write(render_report(design, eng, _colour(args)))
    if _unreadable(design):
        return EXIT_USAGE
    return EXIT_OK if checked.valid else EXIT_ERRORS


def _export(args, sets) -> int:
    from astral_dsl.outputs.export import export_design, schema_text
    from astral_dsl.outputs.jsonout import dumps, envelope

    if args.schema:
        sys.stdout.write(schema_text())
        return EXIT_OK
    if not args.file:
        return _usage("export needs a FILE (or --schema)")
    design = _compile(args.file, sets)
    diagnostics = design.diagnostics
    if design.unknowns:
        from astral_dsl.analyses.checking import check_design

        checked = check_design(design, compile_with=_recompile(args.file, sets))
        design, diagnostics = checked.design, checked.diagnostics
    valid = not any(d.is_error for d in diagnostics)
    if args.format == "human":
        _print_diagnostics(diagnostics, _colour(args), sys.stderr)
    doc = envelope(diagnostics, design=export_design(design) if valid else None)
    sys.stdout.write(dumps(doc) + "\n")
    if _unreadable(design):
        return EXIT_USAGE
    return EXIT_OK if valid else EXIT_ERRORS


if __name__ == "__main__":
    raise SystemExit(main())
