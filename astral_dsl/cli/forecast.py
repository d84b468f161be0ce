"""`astral forecast FILE`: Seer's forecast of one training iteration of a job (docs/seer.md)."""
from __future__ import annotations

import sys
from argparse import ArgumentTypeError

from astral_dsl.cli.common import (EXIT_ERRORS, EXIT_OK, EXIT_USAGE, accepted_apart,
                                   add_common, add_schema, colour, open_path, plot_failure,
                                   plotted, print_diagnostics, schema_first, unreadable, usage,
                                   design_written_over, whole, written_over)
from astral_dsl.regularfile import output

NAME = "forecast"
HELP = "forecast one training iteration of a job, operator by operator"


def register(sub) -> None:
    f = sub.add_parser(NAME, help=HELP)
    f.add_argument("file", metavar="FILE", nargs="?")
    f.add_argument("--job", metavar="NAME", help="the job to forecast (default: the first)")
    f.add_argument("--scenario", metavar="NAME", help="forecast under this scenario")
    f.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace (ui.perfetto.dev)")
    f.add_argument("--plot", metavar="OUT.png", help="draw a Gantt chart (needs matplotlib)")
    f.add_argument("--window", metavar="A..B",
                   help="micro-batches A to B only in --trace/--plot (`A..<B` or `A:B` stop "
                        "before B, `A:` runs to the last; default: all when small)")
    f.add_argument("--level", choices=["op", "layer", "block"],
                   help="trace detail: operators, layers or pipeline blocks")
    f.add_argument("--operator-table", metavar="CSV",
                   help="measured operator times: operator,shape,dtype,time")
    f.add_argument("--calibration", metavar="FIT.json",
                   help="fitted constants written by `astral calibrate -o` (default: the "
                        "shipped fit)")
    f.add_argument("--ranks", metavar="OUT.json",
                   help="write the rank map: rank -> parallel coordinates -> GPU -> host -> NIC "
                        "ports -> switches, and the path of every collective group")
    add_common(f)
    add_schema(f)


def _window(text):
    """`A..B` (micro-batches A to B, as the language reads a range), `A..<B` or `A:B` (A to
    B-1), `A:` (A to the last), `A` (one): (first, last + 1), last + 1 None for `A:` (the
    forecast's micro-batches bound it: seer.timeline.fitted_window)."""
    if not text:
        return None
    if "..<" in text:
        a, _, b = text.partition("..<")
        lo, hi = whole(a), whole(b)
    elif ".." in text:
        a, _, b = text.partition("..")
        lo, hi = whole(a), whole(b) + 1
    else:
        a, colon, b = text.partition(":")
        lo = whole(a or "0")
        hi = whole(b) if b else None if colon else lo + 1
    if lo < 0 or (hi is not None and hi <= lo):
        raise ValueError(text)
    return lo, hi


def run(args, overrides) -> int:
    from astral_dsl import api, seer
    from astral_dsl.diagnostics import Diagnostic, Severity
    from astral_dsl.outputs.forecast import report, trace
    from astral_dsl.outputs.jsonout import dumps, envelope
    from astral_dsl.seer.timeline import fitted_window

    done = schema_first(args, NAME, "FILE" if args.file is None else None)
    if done is not None:
        return done
    for flag, output in (("--ranks", args.ranks), ("--trace", args.trace)):
        clobbers = written_over(flag, output, [args.file, args.calibration, args.operator_table])
        if clobbers is not None:
            return clobbers
    try:
        window = _window(args.window)
    except (ValueError, ArgumentTypeError):          # `１:３`: ASCII digits only (common.whole)
        return usage(f"--window expects micro-batches A..B (or A..<B), got `{args.window}`")
    if args.window and not (args.trace or args.plot):      # (it would be ignored)
        return usage("--window picks the micro-batches of --trace or --plot: give one of them")
    if args.level and not args.trace:
        return usage("--level sets the detail of --trace: give it")
    calibration = None
    if args.calibration:
        from astral_dsl.seer.calibration import read_calibration

        try:
            calibration = read_calibration(args.calibration)
        except (OSError, ValueError) as exc:
            return usage(f"--calibration: {exc}")
    ws = open_path(args.file, overrides)
    for flag, output in (("--ranks", args.ranks), ("--trace", args.trace)):
        clobbers = design_written_over(flag, output, ws)         # its imports too
        if clobbers is not None:
            return clobbers
    design = ws.sized                   # with the values sizing chose for its `?`s
    diags = list(design.diagnostics)
    if not design.valid:
        return _fail(args, design, diags, EXIT_USAGE if unreadable(design) else EXIT_ERRORS)
    try:
        fc = api.forecast(ws, job=args.job, scenario=args.scenario,
                          operator_table=args.operator_table, calibration=calibration).detail
    except seer.ForecastError as exc:
        if not exc.diagnostics:
            return usage(str(exc))
        return _fail(args, design, diags + exc.diagnostics, EXIT_ERRORS)
    except (OSError, ValueError) as exc:
        return usage(f"--operator-table: {exc}")
    if window is not None:
        try:
            window = fitted_window(fc.job.microbatches, window)
        except ValueError as exc:
            return usage(f"--window {args.window}: {exc}")
    diags = diags + list(fc.diagnostics)      # the job's warnings: W750 "may not fit", W751, ...
    notes = []
    if args.job is None and len(design.jobs) > 1:     # the others are not forecast in silence
        from astral_dsl.seer import MAX_JOBS_LISTED

        others = [j.template for j in design.jobs[1:]]
        listed = ", ".join(others[:MAX_JOBS_LISTED]) + (
            f" and {len(others) - MAX_JOBS_LISTED} more" if len(others) > MAX_JOBS_LISTED else "")
        notes.append(f"job `{fc.job.name}` is the first of the design's {len(design.jobs)} "
                     f"jobs: `--job NAME` forecasts another ({listed})")
    if args.ranks:
        failed = _write_ranks(design, args)
        if failed is not None:
            return failed
        notes.append(f"rank map written to {args.ranks}")
    if args.trace:
        try:
            note = trace.write_trace(fc, args.trace, args.level, window)
        except trace.TraceTooLarge as exc:
            return _fail(args, design, diags + [Diagnostic(
                "E704", Severity.ERROR, f"--trace: {exc}", None, exc.hint, file=design.file)],
                EXIT_USAGE)
        except OSError as exc:
            return usage(f"--trace: cannot write `{args.trace}`: {exc.strerror or exc}")
        notes.append(f"trace written to {args.trace}" + (f": {note}" if note else ""))
    if args.plot:
        try:
            from astral_dsl.outputs.forecast.plot import plot

            plot(fc, args.plot, window)
            notes.append(f"timeline drawn to {plotted(args.plot)}")
        except ImportError:
            return usage("--plot needs matplotlib (pip install matplotlib)")
        except (OSError, ValueError) as exc:     # no such folder; an extension it cannot draw
            return usage(plot_failure(args.plot, exc))
    from astral_dsl.model.allows import accept, once
    from astral_dsl.outputs.size_report import chosen_json, chosen_lines

    split = accept(once(diags), design.allows, complete=False)   # what the design accepts
    diags = list(split.reported)
    if args.format == "json":
        from astral_dsl.outputs.jsonout import accepted_json

        # the forecast's own fields sit beside the envelope's, as in every command's JSON
        doc = envelope(diags, file=design.file, chosen=chosen_json(design),
                       accepted=accepted_json(split.accepted), **report.to_json(fc))
        if notes:           # after the forecast's own (an assumed etp, a scenario's effect)
            doc["notes"] = list(doc.get("notes") or []) + notes
        sys.stdout.write(dumps(doc) + "\n")
    else:
        from astral_dsl.outputs.human import accepted_lines
        from astral_dsl.outputs.terminal import printable, printable_line, printable_text

        print_diagnostics(diags, colour(args), sys.stdout)
        # on the values sizing chose, said as `astral check` says them
        sys.stdout.writelines(printable_line(line + "\n") for line in
                              accepted_lines(split.accepted) + chosen_lines(design))
        sys.stdout.write(printable_text(report.render(fc)))
        for n in notes:
            sys.stderr.write(f"note: {printable(n)}\n")
    return EXIT_OK


def _write_ranks(design, args):
    """The rank map as JSON (docs/diagnose.md); an exit code when it cannot be written."""
    from astral_dsl.analyses.rankmap import RankMapError
    from astral_dsl.diagnose import rank_map
    from astral_dsl.outputs.jsonout import dumps

    try:
        ranks = rank_map(design, args.job)
    except RankMapError as exc:
        return usage(f"--ranks: {exc}")
    try:
        with open(output(args.ranks), "w", encoding="utf-8") as fh:
            # the document of RankMap.to_json, byte for byte, written a part at a time: whole,
            # it and its text took 5.7 GB for a job of the reference design's 524,288 GPUs
            # (2.0 GB now, the map 1.2 GB of it)
            head = dumps(ranks.head_json())
            fh.write(head[:-1] + ',"ranks":[')
            for i in range(0, ranks.world, 4096):
                fh.write(("," if i else "") + ",".join(
                    dumps(ranks.rank_json(r)) for r in ranks.ranks[i:i + 4096]))
            fh.write('],"groups":{')
            for k, (kind, groups) in enumerate(ranks.groups.items()):
                fh.write(("," if k else "") + dumps(kind) + ":["
                         + ",".join(dumps(ranks.group_json(g)) for g in groups) + "]")
            fh.write("}}\n")
    except OSError as exc:
        return usage(f"--ranks: cannot write `{args.ranks}`: {exc.strerror or exc}")
    return None


def _fail(args, design, diags, code) -> int:
    """The diagnostics of a forecast that did not run, but those the design accepts (`allow`),
    as when it runs."""
    from astral_dsl.outputs.jsonout import dumps, envelope

    diags, _ = accepted_apart(diags, design)

    if args.format == "json":
        sys.stdout.write(dumps(envelope(diags, file=design.file)) + "\n")
    else:
        print_diagnostics(diags, colour(args), sys.stdout)
    return code
