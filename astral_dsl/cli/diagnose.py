"""`astral diagnose FILE --observed PATH...`: compare a running job's observed per-rank
timelines (profiler traces or rank logs, files or directories) with its forecast and its peers,
and name the suspect parts (docs/diagnose.md).

Exit codes: 0 nothing suspect; 1 suspects reported, or some input could not be used; 2 the
design or the observed data cannot be used at all."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import (EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_common, colour,
                                   open_path, print_diagnostics, usage)

NAME = "diagnose"
HELP = "diagnose a running job: observed timelines against the forecast, down to the suspect part"


def register(sub) -> None:
    d = sub.add_parser(NAME, help=HELP)
    d.add_argument("file", metavar="FILE")
    d.add_argument("--observed", nargs="+", required=True, metavar="PATH",
                   help="profiler traces (.json, .json.gz; one per rank), rank logs (CSV or "
                        "JSON Lines) or directories of them")
    d.add_argument("--job", metavar="NAME", help="the job observed (default: the first)")
    d.add_argument("--order", metavar="ORDER",
                   help="rank order of the parallel dimensions (default: the job's, else "
                        "tp-cp-ep-dp-pp)")
    d.add_argument("-o", "--output", metavar="DIAGNOSIS.json",
                   help="also write the diagnosis as JSON (for `astral render --highlight`)")
    add_common(d)


def run(args, overrides) -> int:
    from astral_dsl import observe
    from astral_dsl.outputs.progress import Progress

    # the work under a progress line (a terminal only), the output once it is erased
    with Progress("astral diagnose") as progress:
        progress.step("compiling the design")
        ws = open_path(args.file, overrides)
        design = ws.sized                         # the values sizing chose for its `?`s
        diags = list(design.diagnostics)
        if design.valid:
            from astral_dsl.pipeline import devices

            progress.step("naming the devices")
            from astral_dsl.analyses.fleet import annotated

            found, named = devices(ws, design)    # names beside the suspects' paths
            diags = list(annotated(tuple(diags) + tuple(named), found))
            progress.step("reading the observed data")
            observed = observe.load(args.observed)
            progress.step("forecasting the job and comparing the ranks")
            done = _diagnose(args, design, observed, found)
    if not design.valid:
        return _fail(args, design, diags, EXIT_USAGE)
    return done(diags)


def _diagnose(args, design, observed, found=None):
    """The diagnosis, as what prints it and returns the exit code given the design's
    diagnostics."""
    from astral_dsl import diagnose
    from astral_dsl.analyses.rankmap import RankMapError
    from astral_dsl.seer import ForecastError

    try:
        result = diagnose.diagnose(design, observed, job=args.job, order=args.order)
    except ForecastError as exc:
        if not exc.diagnostics:
            return lambda diags, text=str(exc): usage(text)
        return lambda diags, more=list(exc.diagnostics): _fail(args, design, diags + more,
                                                                EXIT_USAGE)
    except RankMapError as exc:
        return lambda diags, text=f"--order: {exc}": usage(text)
    except diagnose.DiagnoseError as exc:
        return lambda diags, more=list(exc.diagnostics), text=str(exc): _fail(
            args, design, diags + more, EXIT_USAGE, text)
    return lambda diags: _show(args, design, diags + list(result.diagnostics), result, found)


def _show(args, design, diags, result, found=None) -> int:
    from astral_dsl.outputs import diagnosis as out
    from astral_dsl.outputs.jsonout import dumps, envelope

    doc = envelope(diags, file=design.file, **out.to_json(result, found))
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(dumps(doc) + "\n")
        except OSError as exc:
            return usage(f"cannot write `{args.output}`: {exc.strerror or exc}")
    if args.format == "json":
        sys.stdout.write(dumps(doc) + "\n")
    else:
        print_diagnostics(diags, colour(args), sys.stdout)
        sys.stdout.write(out.render(result, found))
        if args.output:
            sys.stderr.write(f"note: diagnosis written to {args.output}\n")
    errors = any(d.is_error for d in diags)
    return EXIT_ERRORS if result.suspects or errors else EXIT_OK


def _fail(args, design, diags, code, message=None) -> int:
    from astral_dsl.outputs.jsonout import dumps, envelope

    if args.format == "json":
        sys.stdout.write(dumps(envelope(diags, file=design.file, error=message)) + "\n")
    else:
        print_diagnostics(diags, colour(args), sys.stdout)
        if message:
            sys.stdout.write(f"astral diagnose: {message}\n")
    return code


__all__ = ["NAME", "HELP", "register", "run"]
