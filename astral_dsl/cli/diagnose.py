"""`astral diagnose FILE --observed PATH...`: compare a running job's observed per-rank
timelines (profiler traces or rank logs, files or directories) with its forecast and its peers,
and name the suspect parts (docs/diagnose.md). `--schema` prints the JSON Schema of the
diagnosis document.

Exit codes (the verdict; `--format json` says it as `verdict` and `exit_code`):
0 healthy (every rank read, nothing suspect, the job's probability below 0.5); 1 suspects
found; 2 inconclusive (a fault the more likely, none nameable), or the observed data cannot be
used, or part of it could not (or ranks are missing) and nothing is suspect in the rest, or a
usage error, or the design has errors (nothing compared: no all-clear); 3 an internal error
(E000), as for every command."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import (EXIT_OK, accepted_apart, add_calibration, add_common, colour,
                                   open_path,
                                   print_diagnostics, unreadable, usage, design_written_over,
                                   whole, written_over)
from astral_dsl.regularfile import output

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
    d.add_argument("--hta", action="store_true",
                   help="profiler traces: add HolisticTraceAnalysis's idle time by cause (host "
                        "wait, kernel wait, other) to the per-rank breakdown (pip install "
                        "'astral-dsl[hta]'; about a second or two a trace)")
    d.add_argument("-o", "--output", metavar="DIAGNOSIS.json",
                   help="also write the diagnosis as JSON (for `astral render --highlight`)")
    d.add_argument("--jobs", type=whole, metavar="N",
                   help="processes reading the observed files, at most 1,024 "
                        "(default: one per core, from 64 files on); the diagnosis is the same "
                        "whatever N")
    d.add_argument("--schema", action="store_true",
                   help="print the JSON Schema of the diagnosis document")
    add_calibration(d)
    add_common(d)


def run(args, overrides) -> int:
    from astral_dsl import observe
    from astral_dsl.outputs import diagnosis as out
    from astral_dsl.outputs.progress import Progress

    if args.schema:
        sys.stdout.write(out.schema_text())
        return EXIT_OK
    if not args.file or not args.observed:
        return usage("diagnose needs FILE and --observed PATH... (or --schema)")
    clobbers = written_over("-o", args.output, [args.file, *args.observed, args.calibration],
                            folders=True)
    if clobbers is not None:
        return clobbers
    if args.jobs is not None and args.jobs < 1:
        return usage(f"--jobs {args.jobs}: at least one process reads the files")
    from astral_dsl.pools import too_many

    if (refused := too_many("--jobs", args.jobs)) is not None:
        return usage(refused)
    from astral_dsl.cli.runs import read_calibration

    calibration, failed = read_calibration(args)
    if failed is not None:
        return failed
    # the work under a progress line (a terminal only), the output once it is erased
    done = None
    with Progress("astral diagnose") as progress:
        progress.step("compiling the design")
        ws = open_path(args.file, overrides)
        design = ws.sized                         # the values sizing chose for its `?`s
        diags = list(design.diagnostics)
        if design.valid:
            from astral_dsl.analyses.devices import annotated
            from astral_dsl.pipeline import devices

            progress.step("naming the devices")
            found, named = devices(ws, design)    # names beside the suspects' paths
            diags = list(annotated(tuple(diags) + tuple(named), found))
            progress.step("reading the observed data")
            observed = observe.load(args.observed, workers=args.jobs)
            observed, streams_idle, done = _idle_by_cause(args, observed)
            if done is None:
                progress.step("forecasting the job and comparing the ranks")
                done = _diagnose(args, design, observed, streams_idle, found, calibration)
    if not design.valid:
        return _fail(args, design, diags, "unusable" if unreadable(design) else "design-errors")
    clobbers = design_written_over("-o", args.output, ws)       # its imports too
    if clobbers is not None:
        return clobbers
    return done(diags)


def usage_json():
    """A usage error's JSON document (cli.common.usage_as_json) says it as every diagnosis
    document that is no diagnosis: verdict `unusable`, exit 2, the reason as `error`."""
    from astral_dsl.outputs import diagnosis as out

    return {"error": None, **out.verdict_json("unusable")}


def _idle_by_cause(args, observed):
    """(observed, HolisticTraceAnalysis's idle time by cause or None, None) with `--hta`, or
    (.., .., what reports the usage error)."""
    if not args.hta:
        return observed, None, None
    from astral_dsl.observe import hta

    traces = {t.rank: t for t in observed.traces if t.source == "kineto"}
    try:
        return observed, hta.idle_by_cause({r: t.file for r, t in traces.items()},
                                           {r: t.iterations for r, t in traces.items()}), None
    except hta.HtaMissing as exc:
        return observed, None, lambda diags, text=f"--hta: {exc}": usage(text)
    except hta.HtaFailed as exc:
        import attrs        # here: `astral --help` imports this module (for start-up)

        from astral_dsl.observe.kineto import diag

        return attrs.evolve(observed, diagnostics=observed.diagnostics + (diag(
            "W793", f"HolisticTraceAnalysis could not read the traces ({exc}): no idle "
                    f"time by cause", next(iter(traces.values())).file),)), None, None


def _diagnose(args, design, observed, streams_idle, found=None, calibration=None):
    """The diagnosis, as what prints it and returns the exit code given the design's
    diagnostics (printed once the progress line is gone)."""
    from astral_dsl import diagnose
    from astral_dsl.analyses.rankmap import RankMapError
    from astral_dsl.seer import ForecastError

    try:
        result = diagnose.diagnose(design, observed, job=args.job, order=args.order,
                                   timers=args.timers, streams_idle=streams_idle,
                                   calibration=calibration)
    except ForecastError as exc:
        if not exc.diagnostics:
            return lambda diags, text=str(exc): usage(text)
        return lambda diags, more=list(exc.diagnostics): _fail(args, design, diags + more,
                                                                "design-errors")
    except RankMapError as exc:
        return lambda diags, text=f"--order: {exc}": usage(text)
    except diagnose.DiagnoseError as exc:
        return lambda diags, more=list(exc.diagnostics), text=str(exc): _fail(
            args, design, diags + more, "unusable", text)
    return lambda diags: _show(args, design, diags + list(result.diagnostics), result, found)


def _show(args, design, diags, result, found=None) -> int:
    from astral_dsl.outputs import diagnosis as out
    from astral_dsl.outputs.jsonout import dumps, envelope

    from astral_dsl.outputs.jsonout import accepted_json

    diags, accepted = accepted_apart(diags, design)     # the warnings its `allow`s accept
    verdict = out.final_verdict(result, diags)   # part not seen: no all-clear for it
    doc = envelope(diags, file=design.file, accepted=accepted_json(accepted),
                   **out.to_json(result, verdict, found))
    if args.output:
        try:
            with open(output(args.output), "w", encoding="utf-8") as fh:
                fh.write(dumps(doc) + "\n")
        except OSError as exc:
            return usage(f"cannot write `{args.output}`: {exc.strerror or exc}")
    if args.format == "json":
        sys.stdout.write(dumps(doc) + "\n")
    else:
        _print(args, diags, accepted)
        sys.stdout.write(out.render(result, found, verdict))
        if args.output:
            sys.stderr.write(f"note: diagnosis written to {args.output}\n")
    return out.EXIT_CODES[verdict]


def _fail(args, design, diags, verdict, message=None) -> int:
    from astral_dsl.outputs import diagnosis as out
    from astral_dsl.outputs.jsonout import accepted_json, dumps, envelope

    diags, accepted = accepted_apart(diags, design)
    if args.format == "json":
        sys.stdout.write(dumps(envelope(diags, file=design.file, error=message,
                                        accepted=accepted_json(accepted),
                                        **out.verdict_json(verdict))) + "\n")
    else:
        _print(args, diags, accepted)
        if message:
            sys.stdout.write(f"astral diagnose: {message}\n")
    return out.EXIT_CODES[verdict]


def _print(args, diags, accepted) -> None:
    """The diagnostics reported, then the warnings the design accepts, a line each (as
    `astral forecast` and `astral check` print them)."""
    from astral_dsl.outputs.human import accepted_lines
    from astral_dsl.outputs.terminal import printable_line

    print_diagnostics(diags, colour(args), sys.stdout)
    sys.stdout.writelines(printable_line(line + "\n") for line in accepted_lines(accepted))


__all__ = ["NAME", "HELP", "register", "run"]
