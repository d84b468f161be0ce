"""`astral sweep FILE --grid NAME=VALUES ...`: every point of a grid of parameters, one row each."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import (EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_common, add_schema,
                                   colour, plot_failure, plotted, print_diagnostics,
                                   schema_first, usage, whole, written_over)

NAME = "sweep"
HELP = "evaluate a design over a grid of parameter values"


def register(sub) -> None:
    s = sub.add_parser(NAME, help=HELP, description=(
        "One row per point: validity, error codes, GPUs, IT and facility power, PUE, switches, "
        "cost (when prices are declared) and, with --job, the forecast. --grid takes 2..6, "
        "2..10:2 or a comma list such as 40kW,45kW; the first --grid varies slowest."))
    s.add_argument("file", metavar="FILE", nargs="?")
    s.add_argument("--grid", action="append", default=[], metavar="NAME=VALUES",
                   help="values of a top-level param: 2..6, 2..10:2, 40kW..50kW:5kW or a,b,c "
                        "(a value listed twice is evaluated once, with a note)")
    s.add_argument("--job", metavar="NAME", help="also forecast this job at every point")
    s.add_argument("--scenario", metavar="NAME", help="evaluate every point under this scenario")
    s.add_argument("-o", "--output", metavar="FILE.csv|FILE.jsonl",
                   help="write the rows as CSV or JSON Lines (by the extension)")
    s.add_argument("--plot", metavar="FILE.png",
                   help="draw --x against --y with the Pareto front marked (needs matplotlib)")
    s.add_argument("--x", metavar="[min:|max:]COLUMN", help="the plot's x column")
    s.add_argument("--y", metavar="[min:|max:]COLUMN", help="the plot's y column")
    s.add_argument("--calibration", metavar="FIT.json",
                   help="with --job: fitted constants written by `astral calibrate -o` "
                        "(default: the shipped fit)")
    add_engine_options(s)
    add_common(s, formats=("human", "json", "jsonl"), format_help=(
        "json: one document, the envelope with the rows; jsonl: a row per line, nothing else"))
    add_schema(s, jsonl=True)


def add_engine_options(p) -> None:
    p.add_argument("--workers", type=whole, metavar="N",
                   help="local worker processes, at most 1,024 (default: every core)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run on an existing Dask cluster: tls://scheduler:8786 with the "
                        "cluster's certificates, or tcp://127.0.0.1:8786 on this machine")
    p.add_argument("--tls-ca-file", metavar="FILE",
                   help="the cluster's CA certificate (default: Dask's configuration)")
    p.add_argument("--tls-cert", metavar="FILE",
                   help="this client's certificate, signed by the cluster's CA")
    p.add_argument("--tls-key", metavar="FILE",
                   help="its private key (when not in the certificate's file)")
    p.add_argument("--insecure-cluster", action="store_true",
                   help="allow plain tcp:// to another machine: anyone who can reach the "
                        "scheduler can run code on the cluster's machines")


def cluster_spec(args):
    """The ClusterSpec of --cluster and its options (None without --cluster), before any work
    starts; ValueError for options that need --cluster or exclude it (a usage error), and
    ClusterError for an address or certificates that cannot be used (explore/cluster.py) or no
    Dask (E801: cluster_failure)."""
    from astral_dsl.explore.cluster import ClusterError, ClusterSpec, connection

    extra = [flag for flag, value in (("--tls-ca-file", args.tls_ca_file),
                                      ("--tls-cert", args.tls_cert),
                                      ("--tls-key", args.tls_key),
                                      ("--insecure-cluster", args.insecure_cluster)) if value]
    if not args.cluster:
        if extra:
            raise ValueError(f"{extra[0]} needs --cluster ADDRESS")
        return None
    if args.workers is not None:
        raise ValueError("--workers sizes the local pool; with --cluster the cluster's "
                         "workers run the work: give one or the other")
    spec = ClusterSpec(args.cluster, args.tls_ca_file, args.tls_cert, args.tls_key,
                       args.insecure_cluster)
    try:
        connection(spec)
    except ImportError:
        raise ClusterError("--cluster needs Dask distributed, an optional dependency: "
                           "pip install astral-dsl[cluster]") from None
    return spec


CLUSTER_HINT = ("a scheduler's address is tls://HOST:PORT with the cluster's certificates, or "
                "tcp://127.0.0.1:PORT on this machine, and its workers run this version of "
                "astral_dsl (README, \"Where it runs\"); without --cluster the work runs on this "
                "machine's cores")


def cluster_failure(exc: Exception):
    """E801: the Dask cluster of --cluster cannot be used (its address, its certificates, Dask
    missing, the scheduler unreachable, its workers absent or of another version): the
    diagnostic a command reports as it reports an unreadable FILE (exit 2). It names no file:
    the command line is at fault, not the design."""
    from astral_dsl.diagnostics import Diagnostic, Severity

    return Diagnostic("E801", Severity.ERROR, str(exc), None, CLUSTER_HINT)


def progress_bar(enabled: bool, label: str, first: float = None, every: float = None):
    """(callback(done, total, label=None), stop()) drawing a bar on stderr when it is a
    terminal, erased when the work ends; a new label starts a new bar, a total of None counts
    without one. Elsewhere (a pipe, a file, CI's log) a long run says what it is doing in a
    line of its own (progress_lines)."""
    if not enabled:
        return progress_lines(label, FIRST_LINE if first is None else first,
                              EVERY_LINE if every is None else every)
    import time

    state = {"label": None, "start": 0.0, "shown": 0}

    def update(done: int, total, what=None) -> None:
        what = what or label
        now = time.monotonic()
        if state["label"] != what:
            state.update(label=what, start=now)
        text = f"{what} {done:,}"
        if total:
            filled = int(BAR * min(done, total) / total)
            text += f"/{total:,} [{'#' * filled}{'.' * (BAR - filled)}]"
            if 0 < done < total:
                left = (now - state["start"]) / done * (total - done)
                text += f" ~{left:,.0f} s left"
        sys.stderr.write("\r" + text + " " * max(0, state["shown"] - len(text)))
        sys.stderr.flush()
        state["shown"] = len(text)

    def stop() -> None:
        if state["shown"]:
            sys.stderr.write("\r" + " " * state["shown"] + "\r")
            sys.stderr.flush()

    return update, stop


BAR = 30        # characters of the progress bar
# Off a terminal: nothing for a run shorter than FIRST_LINE seconds (its stderr stays the same
# byte for byte), then a line every EVERY_LINE seconds, whether or not a chunk has finished
# (one chunk of a large search takes minutes): at most 120 lines an hour.
FIRST_LINE = 10.0
EVERY_LINE = 30.0


def progress_lines(label: str, first: float, every: float):
    """(callback, stop()) for standard error off a terminal: a thread writes `label: what
    done/total (N s)` after `first` seconds and then every `every` seconds, the latest state
    the callback gave (`preparing` before the first)."""
    import threading
    import time

    start = time.monotonic()
    state = {"text": "preparing (the design compiled, the work laid out)"}
    done_event = threading.Event()

    def update(done: int, total, what=None) -> None:
        state["text"] = f"{what or label} {done:,}" + (f"/{total:,}" if total else "")

    def run() -> None:
        wait = first
        while not done_event.wait(wait):
            sys.stderr.write(f"{label}: {state['text']} "
                             f"({time.monotonic() - start:,.0f} s)\n")
            sys.stderr.flush()
            wait = every

    thread = threading.Thread(target=run, name="astral-progress-lines", daemon=True)
    thread.start()

    def stop() -> None:
        done_event.set()
        thread.join()

    return update, stop


def run(args, overrides) -> int:
    from astral_dsl.explore import sweep
    from astral_dsl.explore.engines import EngineError
    from astral_dsl.outputs import sweep as out

    done = schema_first(args, NAME, "FILE" if args.file is None else None)
    if done is not None:
        return done
    if not args.grid:
        return usage("sweep needs at least one --grid NAME=VALUES (e.g. --grid "
                     "hosts_per_rack=2..6)")
    if args.output and not args.output.lower().endswith((".csv", ".jsonl")):
        return usage(f"-o {args.output}: the extension chooses the format: .csv or .jsonl")
    if args.plot and not (args.x and args.y):
        return usage("--plot needs --x COLUMN and --y COLUMN")
    if args.workers is not None and args.workers < 1:
        return usage("--workers must be at least 1")
    from astral_dsl.explore.cluster import ClusterError

    try:
        cluster = cluster_spec(args)
    except ValueError as exc:
        return usage(str(exc))
    except ClusterError as exc:
        return _no_rows(args, [cluster_failure(exc)], args.file)
    from astral_dsl.pools import too_many

    # (after cluster_spec: --workers beside --cluster is refused as such)
    if (refused := too_many("--workers", args.workers)) is not None:
        return usage(refused)
    if args.calibration and not args.job:
        return usage("--calibration prices the forecasts of --job: give the job too")
    from astral_dsl.cli.runs import read_calibration

    calibration, failed = read_calibration(args)
    if failed is not None:
        return failed
    if not args.plot and (args.format != "human" or args.output):
        return _streamed(args, overrides, cluster, calibration)
    update, stop = progress_bar(sys.stderr.isatty(), "sweep")
    try:
        result = sweep.run(args.file, args.grid, overrides, job=args.job,
                           scenario=args.scenario, cluster=cluster, workers=args.workers,
                           progress=update, calibration=calibration)
    except sweep.SweepError as exc:
        if not exc.diagnostics:
            return usage(str(exc))
        return _no_rows(args, exc.diagnostics, args.file)   # E213, E221, E216, E802
    except EngineError as exc:
        return _no_rows(args, [cluster_failure(exc)], args.file)
    finally:
        stop()
    if not result.rows:            # the file cannot be read or parsed: no point can mend it
        return _no_rows(args, result.base.diagnostics, result.file)
    if args.format != "json":       # the document holds them
        for note in result.notes:
            sys.stderr.write(f"note: {note}\n")
    if args.plot:
        code = _plot(args, result)
        if code:
            return code
    if args.output:
        try:
            out.write(result, args.output, args.scenario)
        except OSError as exc:
            return usage(f"-o {args.output}: {exc.strerror or exc}")
    if args.format == "json":
        sys.stdout.write(out.document(result, args.scenario, args.job))
    elif args.format == "jsonl":
        sys.stdout.write(out.jsonl(result, args.scenario is not None))
    elif args.output:
        _written(result.file, len(result.rows), sum(r["valid"] for r in result.rows),
                 args.output)
    else:
        from astral_dsl.outputs.table import terminal_width

        sys.stdout.write(out.table(result, args.scenario, colour(args),
                                   terminal_width(sys.stdout)))
    return EXIT_OK if all(r["valid"] for r in result.rows) else EXIT_ERRORS


def _streamed(args, overrides, cluster, calibration) -> int:
    """Every output but the table and the plot: each row written as it comes, none held
    (outputs/sweep_stream.py), with the bytes of the held rows' outputs."""
    from astral_dsl.explore import sweep
    from astral_dsl.explore.engines import EngineError, engine
    from astral_dsl.outputs.sweep_stream import OutputError, Stream

    try:
        plan = sweep.plan(args.file, args.grid, overrides, job=args.job,
                          scenario=args.scenario, calibration=calibration)
    except sweep.SweepError as exc:
        if not exc.diagnostics:
            return usage(str(exc))
        return _no_rows(args, exc.diagnostics, args.file)   # E213, E221, E216, E802
    if plan.fatal:                 # the file cannot be read or parsed: no point can mend it
        return _no_rows(args, plan.base.diagnostics, plan.file)
    clobbers = written_over("-o", args.output, _read(plan, args.file))
    if clobbers is not None:
        return clobbers
    try:
        eng = engine(cluster, args.workers)
    except EngineError as exc:
        return _no_rows(args, [cluster_failure(exc)], args.file)
    try:
        with Stream(plan, args.scenario, args.job, args.format, args.output,
                    sys.stdout) as stream:
            update, stop = progress_bar(sys.stderr.isatty(), "sweep")
            try:
                try:
                    for row in sweep.evaluate(plan, eng, update):
                        stream.add(row)
                finally:
                    stop()
            except KeyboardInterrupt:       # Ctrl-C: exit 130, the rows written said partial
                _interrupted(args, stream, plan.size)
                raise
            if args.format != "json":       # the document holds them
                for note in plan.notes:
                    sys.stderr.write(f"note: {note}\n")
            stream.finish()
    except OutputError as exc:          # -o's file: cannot be opened, or written
        return usage(f"-o {args.output}: {exc}")
    except EngineError as exc:          # the cluster, before any row (its scatter)
        return _no_rows(args, [cluster_failure(exc)], args.file)
    finally:
        if hasattr(eng, "close"):
            eng.close()
    if args.format == "human":
        _written(plan.file, stream.points, stream.valid, args.output)
    return EXIT_OK if stream.valid == stream.points else EXIT_ERRORS


def _read(plan, file: str) -> list:
    """The project's files the sweep reads (the bundle the points are evaluated from: the
    design's modules, its inventories and climate files), which -o must not write over: -o is
    opened before the first point, and `-o fleet.csv` emptied the inventory the design reads."""
    from pathlib import Path

    from astral_dsl.semantics.modules import project_root

    root = project_root(Path(file))
    return [str(root / rel) for rel, _ in plan.bundle.files]


def _interrupted(args, stream, total: int) -> None:
    """What a sweep Ctrl-C stopped leaves written, on stderr: -o's file and `--format jsonl`'s
    output hold the rows of the first points only (a file cut at a row reads as a whole one;
    `--format json` prints nothing without its end)."""
    where = [f"-o {args.output}"] if args.output else []
    where += ["standard output"] if args.format == "jsonl" else []
    if where:
        held = f"the rows of the first {stream.written:,} only" if stream.written else \
            "no row (they waited for the cost column)" if stream.points else "no row"
        sys.stderr.write(f"astral: sweep interrupted after {stream.points:,} of {total:,} "
                         f"points: {' and '.join(where)} hold{'s' * (len(where) == 1)} "
                         f"{held}, not the whole sweep\n")
        sys.stderr.flush()


def _written(file: str, points: int, valid: int, output: str) -> None:
    sys.stdout.write(f"{file}: {points} point{'' if points == 1 else 's'} "
                     f"({valid} valid) written to {output}\n")


def _no_rows(args, diagnostics, file) -> int:
    """No point was evaluated: the diagnostics that say why (the file cannot be read or parsed,
    an unknown scenario, a cluster that cannot be used), with `--format json` or `jsonl` in the
    envelope with no `rows`; exit 2 for an unreadable file, an unusable cluster (E801) or a grid
    that cannot be used (E802), as for the other usage errors."""
    if args.format != "human":
        from astral_dsl.outputs.jsonout import dumps, envelope

        sys.stdout.write(dumps(envelope(diagnostics, file=file, rows=[])) + "\n")
    else:
        print_diagnostics(diagnostics, colour(args), sys.stdout)
    return EXIT_USAGE if any(d.code in ("E100", "E801", "E802") for d in diagnostics) \
        else EXIT_ERRORS


def _plot(args, result) -> int:
    from astral_dsl.outputs import pareto
    from astral_dsl.outputs import sweep as out

    names = [g.name for g in result.grids]
    pcols = out.param_columns(names, result.columns)
    known = list(pcols.values()) + [c for c in result.columns if c not in out.TEXT_COLUMNS]
    try:
        x = pareto.axis(args.x, known)
        y = pareto.axis(args.y, known)
    except pareto.AxisError as exc:
        return usage(f"--plot: {exc}")
    cells = [out.flat(r, names, result.columns, args.scenario, True) for r in result.rows]
    for cell, r in zip(cells, result.rows):      # parameters keep their unit for the axis label
        for n in names:
            cell[pcols[n]] = r["params"][n]
    labels = [", ".join(f"{n}={r['params'][n]}" for n in names) for r in result.rows]
    try:
        drawn, on_front, tight = pareto.plot(cells, [r["valid"] for r in result.rows], labels, x, y,
                                      args.plot, f"{result.file}: sweep of {', '.join(names)}",
                                      out.LABELS)
    except ImportError:
        return usage("--plot needs matplotlib (pip install matplotlib)")
    except (OSError, ValueError) as exc:
        return usage(plot_failure(args.plot, exc))
    sys.stderr.write(f"note: {drawn} points drawn to {plotted(args.plot)}, {on_front} on the "
                     "Pareto front" + (f"; {len(tight)} of them may not fit in GPU memory ("
                                       + "; ".join(tight) + ")" if tight else "") + "\n")
    return 0
