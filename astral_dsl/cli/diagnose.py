"""`astral diagnose FILE --observed PATH...`: compare a running job's observed per-rank
timelines (profiler traces or rank logs, files or directories) with its forecast and its peers,
and name the suspect parts (docs/diagnose.md). `--schema` prints the JSON Schema of the
diagnosis document.

Exit codes (the verdict; `--format json` says it as `verdict` and `exit_code`):
0 healthy; 1 suspects found; 2 the observed data (or part of it) cannot be used, or a usage
error; 3 the design has errors."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import EXIT_OK, add_common, colour, compile_path, \
    print_diagnostics, unreadable, usage

NAME = "diagnose"
HELP = "diagnose a running job: observed timelines against the forecast, down to the suspect part"


def register(sub) -> None:
    d = sub.add_parser(NAME, help=HELP)
    d.add_argument("file", nargs="?", metavar="FILE")
    d.add_argument("--observed", nargs="+", metavar="PATH",
                   help="profiler traces (.json, .json.gz; one per rank), rank logs (CSV or "
                        "JSON Lines) or directories of them")
    d.add_argument("--job", metavar="NAME", help="the job observed (default: the first)")
    d.add_argument("--order", metavar="ORDER",
                   help="rank order of the parallel dimensions (default: the job's, else "
                        "tp-cp-ep-dp-pp)")
    d.add_argument("--timers", choices=("auto", "compute", "megatron"), default="auto",
                   help="what the compute columns measure: the GPU's compute alone (profiler "
                        "kernels, a log's forward/backward rows), or Megatron-LM's "
                        "forward-compute/backward-compute wall time (TP collectives and waits "
                        "included; NeMo logs the same); default: read from the data")
    d.add_argument("-o", "--output", metavar="DIAGNOSIS.json",
                   help="also write the diagnosis as JSON (for `astral render --highlight`)")
    d.add_argument("--schema", action="store_true",
                   help="print the JSON Schema of the diagnosis document")
    add_common(d)


def run(args, overrides) -> int:
    from astral_dsl import diagnose, observe
    from astral_dsl.analyses.rankmap import RankMapError
    from astral_dsl.outputs import diagnosis as out
    from astral_dsl.outputs.jsonout import dumps, envelope
    from astral_dsl.seer import ForecastError

    if args.schema:
        sys.stdout.write(out.schema_text())
        return EXIT_OK
    if not args.file or not args.observed:
        return usage("diagnose needs FILE and --observed PATH... (or --schema)")
    design = compile_path(args.file, overrides)
    diags = list(design.diagnostics)
    if not design.valid:
        return _fail(args, design, diags, "unusable" if unreadable(design) else "design-errors")
    observed = observe.load(args.observed)
    try:
        result = diagnose.diagnose(design, observed, job=args.job, order=args.order,
                                   timers=args.timers)
    except ForecastError as exc:
        if not exc.diagnostics:
            return usage(str(exc))
        return _fail(args, design, diags + exc.diagnostics, "design-errors")
    except RankMapError as exc:
        return usage(f"--order: {exc}")
    except diagnose.DiagnoseError as exc:
        return _fail(args, design, diags + exc.diagnostics, "unusable", str(exc))
    diags += list(result.diagnostics)
    verdict = result.verdict
    if verdict == "healthy" and any(d.is_error for d in diags):
        verdict = "unusable"          # part of the input could not be used: no all-clear
    doc = envelope(diags, file=design.file, **out.to_json(result, verdict))
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
        sys.stdout.write(out.render(result))
        if args.output:
            sys.stderr.write(f"note: diagnosis written to {args.output}\n")
    return out.EXIT_CODES[verdict]


def _fail(args, design, diags, verdict, message=None) -> int:
    from astral_dsl.outputs import diagnosis as out
    from astral_dsl.outputs.jsonout import dumps, envelope

    if args.format == "json":
        sys.stdout.write(dumps(envelope(diags, file=design.file, error=message,
                                        **out.verdict_json(verdict))) + "\n")
    else:
        print_diagnostics(diags, colour(args), sys.stdout)
        if message:
            sys.stdout.write(f"astral diagnose: {message}\n")
    return out.EXIT_CODES[verdict]


__all__ = ["NAME", "HELP", "register", "run"]
