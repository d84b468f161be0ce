"""`astral size FILE`: power, cooling and network tables (or the JSON summary)."""
from __future__ import annotations

import os
import sys

from astral_dsl.cli.common import (add_common, add_schema, checked, colour, exit_code,
                                   print_diagnostics, schema_first)

NAME = "size"
HELP = "power, cooling and network sizing report"


def register(sub) -> None:
    z = sub.add_parser(NAME, help=HELP)
    z.add_argument("file", metavar="FILE", nargs="?")
    z.add_argument("--scenario", metavar="NAME", help="size the design under this scenario")
    add_common(z)
    add_schema(z)


def terminal_width(stream, environ) -> int:
    """$COLUMNS when set to a width, else the width of the terminal `stream` writes to, else 100
    (a pipe or a file: no terminal to fit)."""
    text = environ.get("COLUMNS", "")
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or 100
    except (AttributeError, OSError, ValueError):
        pass
    return 100


def run(args, overrides) -> int:
    from astral_dsl.outputs.human import accepted_lines
    from astral_dsl.outputs.jsonout import accepted_json, dumps, envelope, scenario_json
    from astral_dsl.outputs.size_report import chosen_json, render_report, size_summary

    done = schema_first(args, NAME, "FILE" if args.file is None else None)
    if done is not None:
        return done
    result = checked(args.file, overrides, [args.scenario] if args.scenario else None)
    design, eng = result.design, result.engineering
    outcome = next((o for o in result.scenarios if o.name == args.scenario), None)
    diagnostics, accepted = result.diagnostics, result.accepted
    if outcome is not None:
        # the design as compiled under the scenario, its results and their warnings
        design, eng = outcome.applied.design, outcome.result
        diagnostics, accepted = result.under(outcome)
    elif args.scenario:
        # no such scenario (E216): the design as declared is not what was asked for
        eng = None
    if args.format == "json":
        summary = size_summary(design, eng, result.sizing) if eng is not None else None
        scenario = None if outcome is None else scenario_json(outcome.name, outcome.applied)
        sys.stdout.write(dumps(envelope(diagnostics, file=design.file,
                                        scenario=scenario, summary=summary,
                                        chosen=chosen_json(design),
                                        accepted=accepted_json(accepted))) + "\n")
    else:
        width = terminal_width(sys.stdout, os.environ)
        print_diagnostics(diagnostics, colour(args), sys.stdout)
        sys.stdout.writelines(line + "\n" for line in accepted_lines(accepted, width))
        if outcome is not None:
            sys.stdout.write(f"under scenario `{outcome.name}`: "
                             + ("; ".join(outcome.notes) or "no change") + "\n")
        if eng is not None:
            sys.stdout.write(render_report(design, eng, colour(args), width, result.sizing))
    return exit_code(design, diagnostics)
