"""`astral report FILE -o review.html`: the design review as one self-contained HTML page
(summary, every diagnostic with its source, the pictures, the size tables, the bill of
materials, PUE components, the scenario matrix and each job's forecast with its timeline).

Exit codes: 0 page written, design without errors; 1 page written, the design has errors or a
job cannot be forecast (they are on the page), or no page for an unknown --job or --scenario
(E221, E216, on standard error); 2 usage error (unreadable input, unwritable output)."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import (EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_calibration,
                                   add_common, colour, open_path, print_diagnostics, unreadable,
                                   usage, design_written_over, written_over)

NAME = "report"
HELP = "the design review as one self-contained HTML page"


def register(sub) -> None:
    r = sub.add_parser(NAME, help=HELP)
    r.add_argument("file", metavar="FILE")
    r.add_argument("-o", "--output", required=True, metavar="OUT.html",
                   help="the page to write")
    r.add_argument("--scenario", metavar="NAME",
                   help="draw this scenario's pictures beside the baseline's (the scenario "
                        "matrix always covers every scenario)")
    r.add_argument("--job", action="append", default=None, metavar="NAME",
                   help="the job to forecast (repeatable; default: every job)")
    r.add_argument("--diagnosis", metavar="DIAGNOSIS.json",
                   help="add a running job's diagnosis (`astral diagnose -o`): its verdict, "
                        "suspects, clocks and per-rank breakdown")
    r.add_argument("--title", metavar="TEXT", help="the page's title")
    r.add_argument("--stamp", metavar="TEXT",
                   help="a line for the footer (a date, a commit); none by default, so the "
                        "same design gives the same bytes")
    add_calibration(r)
    add_common(r, formats=())


def run(args, overrides) -> int:
    from astral_dsl.api.review import collect
    from astral_dsl.outputs.report import ReviewError, build
    from astral_dsl.outputs.terminal import printable_line

    from astral_dsl.cli.runs import read_calibration

    use_colour = colour(args, sys.stderr)
    clobbers = written_over("-o", args.output, [args.file, args.calibration, args.diagnosis])
    if clobbers is not None:
        return clobbers
    calibration, failed = read_calibration(args)
    if failed is not None:
        return failed
    ws = open_path(args.file, overrides)
    design = ws.design
    if unreadable(design):
        print_diagnostics(design.diagnostics, use_colour, sys.stderr)
        return EXIT_USAGE
    clobbers = design_written_over("-o", args.output, ws)       # its imports too
    if clobbers is not None:
        return clobbers
    import attrs

    diagnosis = None
    if args.diagnosis:
        diagnosis = _diagnosis(args.diagnosis)
        if isinstance(diagnosis, str):
            return usage(diagnosis)
        other = _of_another_design(args.diagnosis, diagnosis, design, args.file)
        if other is not None:
            return usage(other)
    from astral_dsl.outputs.progress import Progress

    try:
        with Progress("astral report") as progress:
            review = collect(ws, jobs=args.job, scenario=args.scenario, step=progress.step,
                             calibration=calibration)
            review = attrs.evolve(review, overrides=tuple(sorted(overrides.items())),
                                  diagnosis=diagnosis)
            progress.step("writing the page")
            page = build(review, title=args.title, stamp=args.stamp).encode("utf-8")
    except ReviewError as exc:
        if exc.diagnostics:     # an unknown --job or --scenario: E221, E216, as every command
            print_diagnostics(exc.diagnostics, use_colour, sys.stderr)
            return EXIT_ERRORS
        return usage(str(exc))
    failed = _write(args.output, page)
    if failed is not None:
        return usage(f"cannot write `{args.output}`: {failed}")
    problems = [v.error for v in review.views if v.error is not None]
    if problems:
        print_diagnostics(problems[:1], use_colour, sys.stderr)
    errors, warnings = review.counts()     # as the page's cards: the jobs' warnings too
    jobs = sum(j.forecast is not None for j in review.jobs)
    outside = sum(j.forecast is not None and not j.forecast.envelope().inside
                  for j in review.jobs)
    sys.stdout.write(printable_line(
        f"wrote {args.output} ({len(page):,} bytes): {len(review.checked.scenarios)} "
        f"scenario(s), {sum(v.svg is not None for v in review.views)} picture(s), {jobs} "
        f"job forecast(s)" + (f" ({outside} outside the calibrated envelope, W753)" if outside
                              else "") + f"; {errors} error(s), {warnings} warning(s)"
        + (f", {len(review.checked.accepted)} accepted" if review.checked.accepted else "")
        + "\n"))
    return EXIT_ERRORS if errors else EXIT_OK


def _write(path: str, data: bytes):
    """Write `data` to `path` whole or not at all (outputs/report/written.py): None, or why it
    could not be written."""
    from astral_dsl.outputs.report.written import write_whole

    try:
        write_whole(path, data)
        return None
    except OSError as exc:
        return exc.strerror or str(exc)


def _of_another_design(path: str, doc: dict, design, file: str):
    """Why the diagnosis is not of this design (its job is none the design declares), or None:
    the page of a design without a job showed another design's diagnosis as its own."""
    job = doc.get("job")
    declared = [j.template for j in design.jobs]
    if not isinstance(job, str) or job in declared:
        return None
    return (f"--diagnosis: `{path}` diagnoses job `{job}`, which {file} does not declare "
            f"({'jobs: ' + ', '.join(declared[:20]) if declared else 'it declares no job'}): "
            f"a diagnosis of another design")


def _diagnosis(path: str):
    """The diagnosis document at `path`, or why it cannot be used."""
    from astral_dsl import jsonin

    try:
        doc = jsonin.load_path(path)
    except (OSError, ValueError) as exc:
        return f"--diagnosis: cannot read `{path}`: {getattr(exc, 'strerror', None) or exc}"
    if not isinstance(doc, dict) or doc.get("diagnosis_version") != 1 or \
            not isinstance(doc.get("suspects"), list):
        return f"--diagnosis: `{path}` is not a diagnosis (astral diagnose -o, version 1)"
    from astral_dsl.outputs.report.diagnosis import diagnosis_section

    try:                     # a document edited by hand: its fields as the section reads them
        diagnosis_section(doc)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        return f"--diagnosis: `{path}` is not a diagnosis of version 1 ({type(exc).__name__}: " \
               f"{exc})"
    return doc
