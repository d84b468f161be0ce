"""`astral runs RUNS.csv`: every row of a runs table (published or measured training runs)
forecast by Seer and scored against what it published (docs/runs.md)."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import (EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_common, add_schema,
                                   colour, print_diagnostics, schema_first, usage)

NAME = "runs"
HELP = "forecast every row of a runs table and score it against what the run published"


def register(sub) -> None:
    r = sub.add_parser(NAME, help=HELP, description=(
        "Each row is stated as a job on its system (a stdlib one by the `system` and `gpu` "
        "cells, or one of --gpu-file), forecast as `astral forecast` forecasts a job, and "
        "compared with the tokens/s, step time or model TFLOP/s it published; a row Seer cannot "
        "state is listed with the field and why (docs/runs.md)."))
    r.add_argument("table", metavar="RUNS.csv", nargs="?")
    add_runs_options(r)
    add_common(r, params=False)
    add_schema(r)


def add_runs_options(p, calibration_help: str = "fitted constants written by `astral "
                     "calibrate -o` (default: the shipped fit)") -> None:
    p.add_argument("--gpu-file", metavar="FILE.astral",
                   help="your own systems: each top-level `block` with its `fabric`, matched to a "
                        "row by its `system` cell, then its `gpu` cell (docs/runs.md)")
    p.add_argument("--calibration", metavar="FIT.json", help=calibration_help)


def read_calibration(args):
    """(the Calibration of --calibration or None, an exit code when it cannot be read)."""
    if not getattr(args, "calibration", None):
        return None, None
    from astral_dsl.seer.calibration import read_calibration as read

    try:
        return read(args.calibration), None
    except (OSError, ValueError) as exc:
        return None, usage(f"--calibration: {exc}")


def read_gpu_file(args, json_out: bool):
    """(the systems of --gpu-file by key or None, its diagnostics, an exit code when it cannot
    be used)."""
    if not args.gpu_file:
        return None, [], None
    from astral_dsl.runs.systems import read_systems

    gf = read_systems(args.gpu_file)
    diags = list(gf.diagnostics)
    if gf.valid:
        return gf.by_key(), diags, None
    code = EXIT_USAGE if any(d.code in ("E100", "E108") and d.span is None for d in diags) \
        else EXIT_ERRORS
    return None, diags, _fail(args, gf.file, diags, code, json_out)


def read_tables(args, paths, json_out: bool):
    """([(name, RunsTable)], an exit code when one cannot be read: E766, exit 2)."""
    from pathlib import Path

    from astral_dsl.runs.table import read_table

    out = []
    for path in paths:
        table = read_table(path)
        if not table.valid:
            return None, _fail(args, table.file, list(table.diagnostics), EXIT_USAGE, json_out)
        out.append((Path(path).stem, table))
    return out, None


def _fail(args, file, diags, code, json_out: bool) -> int:
    from astral_dsl.outputs.jsonout import dumps, envelope

    if json_out:
        sys.stdout.write(dumps(envelope(diags, file=file)) + "\n")
    else:
        print_diagnostics(diags, colour(args), sys.stdout)
    return code


def run(args, overrides) -> int:
    from astral_dsl.outputs import runs as out
    from astral_dsl.outputs.jsonout import dumps, envelope
    from astral_dsl.runs.evaluate import evaluate, prepare
    from astral_dsl.seer.calibration import shipped

    done = schema_first(args, NAME, "RUNS.csv" if args.table is None else None)
    if done is not None:
        return done
    json_out = args.format == "json"
    calibration, failed = read_calibration(args)
    if failed is not None:
        return failed
    systems, diags, failed = read_gpu_file(args, json_out)
    if failed is not None:
        return failed
    tables, failed = read_tables(args, [args.table], json_out)
    if failed is not None:
        return failed
    (_, table), = tables
    # E777: the rows rejected, at their cells; W778: a row's two figures that disagree
    diags = list(diags) + list(table.rejected) + list(table.warnings)
    calibration = calibration or shipped()
    results = evaluate(prepare(table, systems), calibration)
    if json_out:
        sys.stdout.write(dumps(envelope(diags, file=table.file,
                                        **out.to_json(results, calibration))) + "\n")
    else:
        from astral_dsl.outputs.table import terminal_width

        print_diagnostics(diags, colour(args), sys.stdout)
        sys.stdout.write(out.table(table.file, results, calibration, colour(args),
                                   terminal_width(sys.stdout)))
    return EXIT_ERRORS if any(r.status == "rejected" for r in results) else EXIT_OK
