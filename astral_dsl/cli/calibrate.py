"""`astral calibrate RUNS.csv... -o FIT.json`: refit Seer's fitted constants on runs tables (a
team's own measured runs included) and report how well they forecast runs left out of the fit
(docs/runs.md, docs/seer.md "Calibration")."""
from __future__ import annotations

import sys
from typing import Optional

from astral_dsl.cli.common import EXIT_ERRORS, EXIT_OK, add_common, colour, usage, written_over
from astral_dsl.cli.common import whole as whole_number
from astral_dsl.outputs.whole import whole

NAME = "calibrate"
HELP = "refit Seer's constants on runs tables and report the leave-one-group-out error"
ITERATIONS = 40           # runs.accuracy.calibrate's default


def register(sub) -> None:
    from astral_dsl.cli.runs import add_runs_options

    c = sub.add_parser(NAME, help=HELP, description=(
        "Fits Seer's constants (seer/calibration) on every row of the tables that Seer can "
        "state and that publishes a figure, then forecasts each group of rows (one "
        "configuration across releases) with the constants refitted without it: the error "
        "printed is on runs the fit did not see. `-o` writes the fit for `--calibration`."))
    c.add_argument("tables", metavar="RUNS.csv", nargs="+",
                   help="runs tables (docs/runs.md); a table is named by its file name")
    c.add_argument("-o", "--output", metavar="FIT.json",
                   help="write the fit (constants, spreads, leave-out errors, error bands)")
    c.add_argument("--by-source", action="append", default=[], metavar="TABLE",
                   help="also leave out each source (`source_version`) of this table in turn, "
                        "e.g. the papers of the A100 runs")
    c.add_argument("--max-iterations", type=whole_number, default=ITERATIONS, metavar="N",
                   help=f"at most N iterations of the least-squares fit (default {ITERATIONS})")
    c.add_argument("--leave-out", choices=("exact", "one-step"), dest="leave_out",
                   help="how each group's refit without its rows is made: exact (a whole fit, "
                        "as -o's constants are fitted: a minute and more a group on the shipped "
                        "tables) or one-step (one Gauss-Newton step from the fit: the standard "
                        "approximation, which understates the error of a group that alone "
                        "fixes a constant); default: exact where groups x rows is at most 400")
    c.add_argument("--jobs", type=whole_number, metavar="N",
                   help="processes running the exact refits, at most 1,024 (default: one per "
                        "core); the fit and its figures are the same whatever N")
    c.add_argument("--docs", metavar="FILE.md",
                   help="rewrite the calibration tables between FILE.md's markers from the fit, "
                        "and nothing else (make calibrate: docs/seer.md)")
    add_runs_options(c, "a fit to compare with (exit 1 when the refit differs from it)")
    add_common(c, params=False)


def _unused(every, names) -> list:
    from astral_dsl.runs import score

    out = []
    for p in every:
        metric, _ = score.published(p.row)
        if p.status == "ok" and metric:
            continue
        out.append({"table": names.get(id(p.row), ""), "id": p.row.id, "line": p.row.line,
                    "status": p.status if p.status != "ok" else "not_scored",
                    "field": p.field or "published",
                    "reason": p.reason or "the row publishes no tokens/s, step time or TFLOP/s"})
    return out


def run(args, overrides) -> int:
    from pathlib import Path

    from astral_dsl.cli.runs import read_calibration, read_gpu_file, read_tables
    from astral_dsl.outputs import calibration as out
    from astral_dsl.outputs.jsonout import dumps, envelope

    if args.max_iterations < 1:
        return usage("--max-iterations must be at least 1")
    if args.jobs is not None and args.jobs < 1:
        return usage(f"--jobs {args.jobs}: at least one process refits")
    from astral_dsl.pools import cores, too_many

    if (refused := too_many("--jobs", args.jobs)) is not None:
        return usage(refused)
    clobbers = written_over("-o", args.output, [*args.tables, args.gpu_file, args.calibration,
                                                args.docs])
    if clobbers is not None:
        return clobbers
    names = [Path(t).stem for t in args.tables]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return usage(f"two tables are named `{twice[0]}`: a table is named by its file name, "
                     "give them different names")
    unknown = [b for b in args.by_source if b not in names]
    if unknown:
        return usage(f"--by-source {unknown[0]}: no table of that name (tables: "
                     f"{', '.join(names)})")
    if args.docs:
        refused = _docs_refused(args, out)
        if refused is not None:
            return refused
    json_out = args.format == "json"
    old, failed = read_calibration(args)
    if failed is not None:
        return failed
    old_doc = _document(args.calibration) if old is not None else None
    systems, diags, failed = read_gpu_file(args, json_out)
    if failed is not None:
        return failed
    tables, failed = read_tables(args, args.tables, json_out)
    if failed is not None:
        return failed
    from astral_dsl.outputs.progress import Progress
    from astral_dsl.runs.accuracy import calibrate

    try:
        with Progress("astral calibrate") as progress:
            doc, _, _, every = calibrate(tables, by_source=tuple(args.by_source),
                                         max_iter=args.max_iterations, systems=systems,
                                         step=progress.step, leave_out_by=args.leave_out,
                                         workers=args.jobs or cores())
    except ValueError as exc:            # no usable row: the rows rejected may be why
        said = _said(diags, tables)
        if not json_out:
            from astral_dsl.cli.common import print_diagnostics

            print_diagnostics(said, colour(args), sys.stdout)
        return usage(f"{exc} ({', '.join(args.tables)})", said)
    unusable = _unusable(doc)
    if unusable is not None:
        return usage(unusable, _said(diags, tables))
    rejected = [d for _, table in tables for d in table.rejected]     # E777, at their cells
    diags = _said(diags, tables) + _twice(tables, every) + _warnings(doc, tables)
    owner = {id(run): name for name, table in tables for run in table.runs}
    unused = _unused(every, owner)
    differ = out.compare(doc, old_doc) if old_doc is not None else None
    if args.output:
        try:
            with whole(args.output, "utf-8") as fh:
                fh.write(fit_text(doc))
        except OSError as exc:
            return usage(f"-o {args.output}: {exc.strerror or exc}")
    if args.docs:
        try:       # read again: the fit takes minutes, and the file may have been edited since
            docs_text = _docs_text(args.docs)
            if not out.markers(docs_text):
                return usage(f"--docs: {args.docs} no longer marks a calibration table")
            text = out.rewrite(docs_text, doc)
            if text != docs_text:
                with whole(args.docs, "utf-8") as fh:      # whole or not at all: Ctrl-C,
                    fh.write(text)                        # a full disk leave the old one
        except out.MarkerError as exc:
            return usage(f"--docs: {args.docs}, {exc}")
        except (OSError, UnicodeDecodeError) as exc:
            return usage(f"--docs {args.docs}: {getattr(exc, 'strerror', None) or exc}")
    if json_out:
        extra = {"fit": doc, "not_used": unused}
        if differ is not None:
            extra["compared"] = {"file": args.calibration, "differences": differ}
        sys.stdout.write(dumps(envelope(diags, files=[t.file for _, t in tables], **extra))
                         + "\n")
    else:
        from astral_dsl.cli.common import print_diagnostics
        from astral_dsl.outputs.table import terminal_width
        from astral_dsl.outputs.terminal import printable

        print_diagnostics(diags, colour(args), sys.stdout)
        sys.stdout.write(out.report(doc, unused, colour(args), terminal_width(sys.stdout)))
        if args.output:
            sys.stdout.write(printable(f"fit written to {args.output}") + "\n")
        if differ is not None:
            sys.stdout.write(printable(
                f"reproduces {args.calibration} exactly" if not differ else
                f"differs from {args.calibration}: " + "; ".join(differ)) + "\n")
    return EXIT_ERRORS if differ or rejected else EXIT_OK


DOCS = (".md", ".markdown")


def _docs_refused(args, out) -> Optional[int]:
    """The usage error of a --docs that is not what it is for (None when it is): a Markdown
    file, none of the files the command reads, whose markers pair (outputs/calibration.py
    regions; said before the fit, which takes minutes). It rewrote any file that held the
    markers' text, and what lay between markers that did not pair."""
    if not args.docs.lower().endswith(DOCS):
        return usage(f"--docs {args.docs}: the tables are rewritten in a Markdown file "
                     "(FILE.md, as docs/seer.md); name one")
    clobbers = written_over("--docs", args.docs, [*args.tables, args.gpu_file,
                                                  args.calibration])
    if clobbers is not None:
        return clobbers
    try:
        docs_text = _docs_text(args.docs)
    except (OSError, UnicodeDecodeError) as exc:
        return usage(f"--docs: cannot read {args.docs}: "
                     f"{getattr(exc, 'strerror', None) or exc}")
    try:
        marked = out.markers(docs_text)
    except out.MarkerError as exc:
        return usage(f"--docs: {args.docs}, {exc}")
    if not marked:
        return usage(f"--docs: {args.docs} marks no calibration table "
                     "(<!-- calibration:accuracy --> ... <!-- /calibration:accuracy -->, "
                     "each on a line of its own)")
    return None


def _docs_text(path) -> str:
    """The text of --docs FILE.md: a regular file of at most 64 MiB (a FIFO blocked the command,
    `/dev/zero` filled the memory: E000), UTF-8."""
    from astral_dsl.jsonin import MAX_BYTES
    from astral_dsl.regularfile import read_regular

    return read_regular(path, MAX_BYTES).decode("utf-8")


def _unusable(doc) -> Optional[str]:
    """Why the fit is not one `--calibration` takes (seer/calibration from_document), naming
    the rows forecast furthest off, whose figures made it so; None when it is one. A step
    published as 10^9 s (within a cell's bounds) gave an error band up to 661 million times
    the forecast: the fit was written, and every command then refused it."""
    from astral_dsl.seer.calibration import from_document

    try:
        from_document(doc, "the fit")
    except ValueError as exc:
        worst = sorted((r for r in doc.get("rows", []) if r.get("left_out_pct") is not None),
                       key=lambda r: -abs(r["left_out_pct"]))[:3]
        rows = ", ".join(f"{r['id']} ({r['left_out_pct']:+,.0f} %)" for r in worst)
        why = str(exc).removeprefix("the fit: not a calibration fit ")
        return (f"the fit is not one --calibration takes {why}: the rows forecast furthest "
                f"off, left out, are {rows}: check their published figures; nothing written")
    return None


def _said(diags, tables) -> list:
    """The --gpu-file's diagnostics, then each table's rows rejected (E777) and its rows whose
    tokens/s and step time disagree (W778), at their cells."""
    return list(diags) + [d for _, table in tables for d in table.rejected] \
        + [d for _, table in tables for d in table.warnings]


# rows that repeat an earlier one said one by one, the rest in one W779 (a table given twice
# under two names repeats every row)
TWICE_SHOWN = 8
TWICE_HINT = ("keep one of the two; a run repeated to measure its spread differs in its figures "
              "or its source_version (docs/runs.md)")


def _twice(tables, every) -> list:
    """W779 for each row fitted that repeats an earlier one (of its table or another) in every
    cell but its id and notes: one publication given twice (a table and its copy, both named)
    was fitted twice, weighing twice, and said as a run "published more than once". `every`:
    the prepared rows (runs/evaluate.py)."""
    from astral_dsl.diagnostics import Diagnostic, Severity, Span
    from astral_dsl.runs import score

    fitted = {id(p.row) for p in every if p.status == "ok" and score.published(p.row)[0]}
    seen: dict = {}
    found = []
    for _, table in tables:
        for run in table.runs:
            if id(run) not in fitted:
                continue
            key = (tuple(kv for kv in run.text if kv[0] not in ("id", "notes")), run.values)
            first = seen.setdefault(key, (table.file, run))
            if first[1] is not run:
                found.append((table.file, run, first))

    def at(file, run):
        return Span.at(file, run.line, 1, run.line, 1 + max(1, len(run.id)))

    out = [Diagnostic("W779", Severity.WARNING, f"row `{run.id}` repeats row `{first.id}` "
                      f"({where}, line {first.line}) in every cell but its id and notes: the "
                      f"same run, fitted twice, weighs twice in the fit", at(file, run),
                      TWICE_HINT, file=file)
           for file, run, (where, first) in found[:TWICE_SHOWN]]
    if len(found) > TWICE_SHOWN:
        file, run, _ = found[TWICE_SHOWN]
        out.append(Diagnostic("W779", Severity.WARNING, f"{len(found) - TWICE_SHOWN:,} more "
                              f"row(s) repeat an earlier one in every cell but its id and "
                              f"notes, from here on", at(file, run), TWICE_HINT, file=file))
    return out


def _warnings(doc: dict, tables) -> list:
    """W769 for each of the fit's warnings (runs/accuracy.py), at the first table's header."""
    from astral_dsl.diagnostics import Diagnostic, Severity, Span

    return [Diagnostic("W769", Severity.WARNING, w, Span.at(tables[0][1].file, 1, 1, 1, 2),
                       "fit your runs beside the shipped tables (`astral calibrate "
                       "astral_dsl/seer/calibration/a100.csv .../modern.csv mine.csv`), whose "
                       "configurations fix the constants yours do not")
            for w in doc.get("warnings", ())]


def fit_text(doc: dict) -> str:
    """fit.json's text: the same document, the same bytes."""
    import json

    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _document(path) -> dict:
    import json

    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
