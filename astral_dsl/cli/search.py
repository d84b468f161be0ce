"""`astral search FILE [--job J]`: the parallel configurations of a job ranked by forecast."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import (EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_common, add_schema,
                                   colour, print_diagnostics, schema_first, usage, whole)

NAME = "search"
HELP = "rank the parallel configurations of a job by its forecast"


def register(sub) -> None:
    from astral_dsl.cli.sweep import add_engine_options

    s = sub.add_parser(NAME, help=HELP, description=(
        "Every parallel configuration the job's placement admits (tp, cp, pp, dp, ep, virtual "
        "stages, micro-batch, recomputation, ZeRO), pruned by the rules a forecast applies "
        "and by Seer's memory estimate, ranked by Seer's forecast: the top ones are those an "
        "exhaustive forecast would rank first, with where their time goes."))
    s.add_argument("file", metavar="FILE", nargs="?")
    s.add_argument("--job", metavar="NAME", help="the job (default: the first)")
    s.add_argument("--objective", default="tokens_per_s",
                   choices=["tokens_per_s", "iteration_time", "cost_per_token"],
                   help="what ranks first (default: tokens_per_s); cost_per_token needs prices")
    s.add_argument("--top", type=whole, default=10, metavar="K",
                   help="how many configurations to rank, at most 1,000 (default: 10)")
    s.add_argument("--gpus", metavar="COUNTS",
                   help="GPU counts to split, e.g. 512,1024 or 256..1024:256 (default: the "
                        "job's `gpus`, else its placement's)")
    s.add_argument("--life", metavar="DURATION",
                   help="the write-off period of the cost per token, from a day to a century "
                        "(default: 4 yr, assumed)")
    s.add_argument("-o", "--output", metavar="FILE.csv|FILE.jsonl",
                   help="write the ranked rows as CSV or JSON Lines (by the extension)")
    s.add_argument("--calibration", metavar="FIT.json",
                   help="fitted constants written by `astral calibrate -o` (default: the "
                        "shipped fit)")
    s.add_argument("--sure-fit", action="store_true",
                   help="rank only configurations whose memory estimate plus its uncertainty "
                        "fits in the GPU (none that 'may not fit')")
    add_engine_options(s)
    add_common(s, formats=("human", "json", "jsonl"), format_help=(
        "json: one document, the envelope with the ranked rows and the summary; jsonl: a "
        "ranked row per line, nothing else (the summary on stderr)"))
    add_schema(s, jsonl=True)


def _counts(text: str):
    from astral_dsl.explore.grid import GridError, parse_spec

    try:
        values = parse_spec("gpus", text).values
    except GridError as exc:
        raise ValueError(str(exc).replace("--grid gpus=", "--gpus ")
                         .replace("a sweep takes", "--gpus takes")) from None
    out = []
    for v in values:
        whole = v.isascii() and v.isdigit()     # isdigit() and int() take `٨` (8) too
        if not whole and _past_a_design(v):  # was "not a whole number of GPUs"
            raise ValueError(f"--gpus {text}: more GPUs than a design holds (10^9)")
        if not whole or int(v) < 1:
            raise ValueError(f"--gpus {text}: `{v}` is not a whole number of GPUs of at "
                             f"least 1")
        out.append(int(v))
    return out


def _past_a_design(v: str) -> bool:
    """A --gpus value the grid's reader wrote in exponent form, past the 10^9 GPUs a design
    holds (E405): `99999999999999999999999` is read as 9.9999999999999999999999e22."""
    try:
        return v.isascii() and 1e9 < float(v) < float("inf")
    except ValueError:
        return False


def _life(text: str) -> float:
    from astral_dsl.explore.grid import GridError, quantity_si

    try:
        seconds = quantity_si(text, "s", "--life")
    except GridError as exc:
        raise ValueError(str(exc)) from None
    from astral_dsl.explore.search import life_refused

    why = life_refused(seconds)
    if why is not None:
        raise ValueError(f"--life {text}: {why}")
    return seconds


def run(args, overrides) -> int:
    from astral_dsl.explore import search
    from astral_dsl.explore.engines import EngineError
    from astral_dsl.outputs import search as out

    done = schema_first(args, NAME, "FILE" if args.file is None else None)
    if done is not None:
        return done
    if args.output and not args.output.lower().endswith((".csv", ".jsonl")):
        return usage(f"-o {args.output}: the extension chooses the format: .csv or .jsonl")
    if args.workers is not None and args.workers < 1:
        return usage("--workers must be at least 1")
    from astral_dsl.cli.sweep import cluster_failure, cluster_spec, progress_bar
    from astral_dsl.explore.cluster import ClusterError

    try:
        gpus = _counts(args.gpus) if args.gpus else ()
        life = _life(args.life) if args.life else search.LIFE_S
        cluster = cluster_spec(args)
    except ValueError as exc:
        return usage(str(exc))
    except ClusterError as exc:
        return _fail(args, [cluster_failure(exc)])
    from astral_dsl.pools import too_many

    # (after cluster_spec: --workers beside --cluster is refused as such)
    if (refused := too_many("--workers", args.workers)) is not None:
        return usage(refused)
    from astral_dsl.cli.runs import read_calibration

    calibration, failed = read_calibration(args)
    if failed is not None:
        return failed

    update, stop = progress_bar(sys.stderr.isatty(), "search")
    labels = {"screening": "screening", "forecasting": "forecasting"}

    def progress(stage, done, total):
        if update is not None:
            update(done, total, labels[stage])
    try:
        result = search.run(args.file, job=args.job, objective=args.objective, top=args.top,
                            gpus=gpus, sets=overrides, cluster=cluster,
                            workers=args.workers, progress=progress, life_s=life,
                            calibration=calibration, sure_fit=args.sure_fit)
    except search.SearchError as exc:
        if not exc.diagnostics:
            return usage(str(exc))
        return _fail(args, exc.diagnostics)
    except EngineError as exc:
        return _fail(args, [cluster_failure(exc)])
    finally:
        stop()
    from astral_dsl.outputs.terminal import printable

    if args.output:
        try:
            out.write(result, args.output)
        except OSError as exc:
            return usage(f"-o {args.output}: {exc.strerror or exc}")
    if args.format == "jsonl" or (args.output and args.format == "human"):
        for line in out.summary(result):
            sys.stderr.write(f"note: {printable(line.strip())}\n")
        print_diagnostics(list(result.diagnostics), False, sys.stderr)
    if args.format == "json":       # the summary and the diagnostics are in the document
        sys.stdout.write(out.document(result))
    elif args.format == "jsonl":    # the rows, or when none fits the document that says so
        sys.stdout.write(out.jsonl(result) if result.rows else out.document(result))
    elif args.output:
        sys.stdout.write(f"{result.file}: {len(result.rows)} configurations written to "
                         f"{args.output}\n")
    else:
        from astral_dsl.outputs.table import terminal_width

        print_diagnostics(list(result.diagnostics), colour(args), sys.stdout)
        sys.stdout.write(printable_text(out.table(result, colour(args),
                                                  terminal_width(sys.stdout))))
    return EXIT_OK if result.rows and not any(d.is_error for d in result.diagnostics) \
        else EXIT_ERRORS


def printable_text(text: str) -> str:
    from astral_dsl.outputs.terminal import printable_text as p

    return p(text)


def _fail(args, diagnostics) -> int:
    from astral_dsl.outputs.jsonout import dumps, envelope

    if args.format != "human":
        sys.stdout.write(dumps(envelope(diagnostics, file=args.file, rows=[])) + "\n")
    else:
        print_diagnostics(diagnostics, colour(args), sys.stdout)
    return EXIT_USAGE if any(d.code in ("E100", "E801", "E803") for d in diagnostics) \
        else EXIT_ERRORS
