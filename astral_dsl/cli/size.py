"""`astral size FILE`: power, cooling and network tables (or the JSON summary)."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import add_common, checked, colour, exit_code, print_diagnostics

NAME = "size"
HELP = "power, cooling and network sizing report"


def register(sub) -> None:
    z = sub.add_parser(NAME, help=HELP)
    z.add_argument("file", metavar="FILE")
    z.add_argument("--scenario", metavar="NAME", help="size the design under this scenario")
    add_common(z)


def run(args, overrides) -> int:
    from astral_dsl.outputs.jsonout import dumps, envelope
    from astral_dsl.outputs.size_report import chosen_json, render_report, size_summary

    result = checked(args.file, overrides, [args.scenario] if args.scenario else None)
    design, eng = result.design, result.engineering
    if args.scenario and result.scenarios:
        eng = result.scenarios[0].result
    if args.format == "json":
        summary = size_summary(design, eng) if eng is not None else None
        sys.stdout.write(dumps(envelope(result.diagnostics, file=design.file,
                                        scenario=args.scenario, summary=summary,
                                        chosen=chosen_json(design))) + "\n")
    else:
        print_diagnostics(result.diagnostics, colour(args), sys.stdout)
        if eng is not None:
            sys.stdout.write(render_report(design, eng, colour(args)))
    return exit_code(design, result.diagnostics)
