"""`astral render FILE -o OUT`: a picture of the design (SVG, PNG, PDF or DOT by OUT's
extension) through graphviz; `--view` picks the picture, `--name` the part, `--scenario` the
what-if to draw. Problems of the design are drawn on the picture and printed on stderr; a
missing `dot` program is a diagnostic (E700) naming the package to install.

Exit codes: 0 picture written; 1 picture written but the design has errors (drawn in red), or
the design has errors that leave nothing to draw; 2 bad arguments (an unknown --name, format),
no `dot` (E700) or a broken one (E701); 3 `dot` cannot read the DOT text astral drew (E000:
astral's bug)."""
from __future__ import annotations

import sys
from typing import Optional

from astral_dsl.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_common, \
    checked, colour, print_diagnostics, unreadable, usage, whole

NAME = "render"
HELP = "draw the design: network, power one-line or cooling diagram (SVG, PNG, PDF, DOT)"


def register(sub) -> None:
    from astral_dsl.outputs.render import VIEWS

    r = sub.add_parser(NAME, help=HELP)
    r.add_argument("file", metavar="FILE")
    r.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the picture to write: .svg, .png, .pdf or .dot (DOT needs no `dot`)")
    r.add_argument("--view", choices=list(VIEWS), default="cluster",
                   help="cluster (default): pods, rails and tiers; pod: one pod's ToR and Agg "
                        "per rail and plane; rack: hosts, GPUs and NIC ports; power: one-line "
                        "diagram; cooling: facility water, loops and air")
    r.add_argument("--name", metavar="PATH",
                   help="the part to draw, as a path: `Astral.pods[3]`, "
                        "`Astral.pods[0].rows[0].racks[0]` (default: the first one)")
    r.add_argument("--scenario", metavar="NAME",
                   help="draw the design under this scenario: failed parts greyed out, what "
                        "breaks in red")
    r.add_argument("--highlight", metavar="DIAGNOSIS.json",
                   help="draw the suspects of `astral diagnose -o DIAGNOSIS.json` in red (rack "
                        "and pod views)")
    r.add_argument("--dpi", type=whole, default=None,
                   help=f"resolution of a PNG, 1 to {MAX_DPI} (default 96)")
    add_common(r, formats=())


MAX_DPI = 600      # print quality; the cluster view at 600 dpi is already 9,400 x 8,100 pixels


def run(args, overrides) -> int:
    from astral_dsl.diagnostics import Diagnostic, Severity
    from astral_dsl.outputs.render import (INSTALL_HINT, RenderError, canvas, dot_available,
                                           format_of, write)

    use_colour = colour(args, sys.stderr)
    fmt = format_of(args.output)
    if fmt is None:
        return usage(f"cannot tell the picture format of `{args.output}`: end it with .svg, "
                     f".png, .pdf or .dot")
    if args.dpi is not None and not 1 <= args.dpi <= MAX_DPI:
        return usage(f"--dpi {args.dpi}: a PNG's resolution is from 1 to {MAX_DPI} dots per inch")
    if args.dpi is not None and fmt != "png":        # (it would be ignored)
        return usage(f"--dpi sets the resolution of a PNG, not of a .{fmt} picture")
    if fmt != "dot" and not dot_available():
        # before compiling: the design may be fine, the machine lacks Graphviz
        print_diagnostics([Diagnostic("E700", Severity.ERROR,
                                      "Graphviz's `dot` program was not found on PATH: it lays "
                                      "out the picture", None, INSTALL_HINT)],
                          use_colour, sys.stderr)
        return EXIT_USAGE
    highlight = None
    if args.highlight:
        highlight = _suspects(args.highlight)
        if isinstance(highlight, str):
            return usage(highlight)
    result = checked(args.file, overrides, [args.scenario] if args.scenario else None)
    design = result.design
    if unreadable(design):
        print_diagnostics(result.diagnostics, use_colour, sys.stderr)
        return EXIT_USAGE
    try:
        drawing = canvas(design, args.view, args.name, args.scenario, result, highlight)
        size = write(drawing.g, args.output, args.dpi)
    except RenderError as exc:
        d = exc.diagnostic
        if d in result.diagnostics:         # the design has errors that leave nothing to draw
            print_diagnostics(result.diagnostics, use_colour, sys.stderr)
            return EXIT_ERRORS
        print_diagnostics([d], use_colour, sys.stderr)
        return EXIT_USAGE
    # each warning once (a scenario's split makes one finding per copy); the accepted ones
    # (the design's `allow`s) are not drawn, and counted
    problems, _ = result.present(drawing.ctx.shown_problems())
    # under a scenario, the warnings accepted are those of the design drawn (as `size`'s)
    outcome = next((o for o in result.scenarios if o.name == args.scenario), None)
    accepted = result.accepted if outcome is None else result.under(outcome)[1]
    if problems:
        print_diagnostics(problems, use_colour, sys.stderr)
    errors = sum(d.is_error for d in problems)
    warnings = len(problems) - errors
    status = f"{errors} error(s) drawn in red" if errors else "no errors"
    if warnings:
        status += f", {warnings} warning(s)"
    if accepted:
        status += f", {len(accepted)} accepted"
    from astral_dsl.outputs.terminal import printable_line

    sys.stdout.write(printable_line(
        f"wrote {args.output} ({args.view} view"
        + (f" of {args.name}" if args.name else "")
        + (f", scenario {args.scenario}" if args.scenario else "")
        + (_drawn(drawing.ctx.highlight) if highlight is not None else "")
        + f": {drawing.node_count} parts, {drawing.edge_count} links, "
          f"{size:,} bytes; {status})\n"))
    return EXIT_ERRORS if errors else EXIT_OK


def _suspects(path: str):
    """The suspects of a diagnosis file, or the reason it cannot be used."""
    from astral_dsl import jsonin

    try:
        doc = jsonin.load_path(path)
    except OSError as exc:
        return f"--highlight: cannot read `{path}`: {exc.strerror or exc}"
    except ValueError as exc:
        return f"--highlight: `{path}` is not JSON ({exc})"
    suspects = doc.get("suspects") if isinstance(doc, dict) else None
    if not isinstance(suspects, list):
        return (f"--highlight: `{path}` is not a diagnosis: write one with "
                f"`astral diagnose FILE --observed ... -o {path}`")
    for i, s in enumerate(suspects, start=1):
        wrong = _wrong_field(s)
        if wrong is not None:        # a file edited by hand: its fields as the pictures read them
            return (f"--highlight: `{path}`: suspect {i}: {wrong} (schema/diagnosis.schema.json; "
                    f"write the file with `astral diagnose FILE --observed ... -o {path}`)")
    return suspects


# the fields of a suspect the pictures read (outputs/render/context.py Highlight, pod.py), as
# schema/diagnosis.schema.json types them: a `parts` of numbers, or a `path` that was a list,
# was E000 (`'int' object has no attribute 'startswith'`)
_NAMES = ("parts", "tied", "given")


def _wrong_field(s) -> Optional[str]:
    """What is wrong with one suspect of a diagnosis for drawing it, or None."""
    if not isinstance(s, dict):
        return "not an object"
    if not isinstance(s.get("path"), str):
        return "`path` is not a part's name (a string)"
    if not isinstance(s.get("kind", ""), str):
        return "`kind` is not a string"
    for key in _NAMES:
        names = s.get(key)
        if names is not None and not (isinstance(names, list)
                                      and all(isinstance(n, str) for n in names)):
            return f"`{key}` is not a list of part names (strings)"
    return None


def _drawn(hl) -> str:
    drawn = len(hl.suspects) - len(hl.not_shown())
    return f", {drawn} of {len(hl.suspects)} suspect(s) drawn"
