"""`astral synth FILE -o OUT`: a drill. Observed data of a job as its ranks would log it,
made from Seer's forecast with realistic noise, drifting clocks and an injected fault (or none),
written as a rank log or as profiler traces; `astral diagnose FILE --observed OUT` should then
name the fault, and the pager wired to its exit code should fire (docs/diagnose.md, "Drills").

    astral synth examples/single_pod.astral -o run7.csv --fault nic_port --seed 5
    astral diagnose examples/single_pod.astral --observed run7.csv      # exit 1

The fault injected is printed (on standard error with --quiet-answer, so that whoever runs
the drill can hide it from whoever diagnoses)."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, accepted_apart, \
    add_calibration, add_common, colour, number, open_path, print_diagnostics, unreadable, \
    usage, whole

NAME = "synth"
HELP = "a drill: a job's observed data with an injected fault, for `astral diagnose`"
KINDS = ("none", "gpu", "nic_port", "tor", "agg", "uplink", "nvlink", "link_flap", "partial",
         "fast")


def register(sub) -> None:
    s = sub.add_parser(NAME, help=HELP)
    s.add_argument("file", metavar="FILE")
    s.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="a file (.csv, .jsonl: a rank log) or a directory (profiler traces, "
                        "rank-N.json.gz)")
    s.add_argument("--job", metavar="NAME", help="the job (default: the first)")
    s.add_argument("--fault", choices=KINDS, action="append",
                   help="the kind of fault, on a random part the job's traffic crosses "
                        "(default: none, a healthy run); repeat it to inject several at once")
    s.add_argument("--part", metavar="NAME", action="append",
                   help="the part to fail instead of a random one, one the job's traffic "
                        "crosses (the names of `astral forecast --ranks`): a GPU (gpu, "
                        "partial; its NVLink port: nvlink), a NIC port (nic_port), a "
                        "first-tier switch (tor), an upper-tier switch (agg), an uplink "
                        "`tor -- agg[j]` (uplink), a NIC link `port -- switch` (link_flap, "
                        "partial); with several --fault, one each, in their order")
    s.add_argument("--severity", type=number, metavar="X", action="append",
                   help="gpu: compute x (1 + X); fast: X times faster; others: the part's "
                        "rate x X (default: drawn as the proof draws it); with several "
                        "--fault, one each, in their order")
    s.add_argument("--seed", type=whole, default=0, help="the noise, the clocks and the part")
    s.add_argument("--iterations", type=whole, default=3)
    s.add_argument("--timers", choices=("kernels", "megatron"), default="kernels",
                   help="a rank log's compute rows: the GPU's compute (forward, backward) or "
                        "Megatron-LM's forward-compute/backward-compute wall time")
    s.add_argument("--drift", type=number, default=0.0, metavar="PPM",
                   help="hosts' clocks drift up to this many ppm either way (default 0; at "
                        "most 250: diagnose tolerates 500 ppm between a clock and the median)")
    s.add_argument("--quiet-answer", action="store_true",
                   help="print the injected fault on standard error, not standard output")
    add_calibration(s)
    add_common(s)


def run(args, overrides) -> int:
    import numpy as np

    from astral_dsl import diagnose, seer
    from astral_dsl.cli.runs import read_calibration
    from astral_dsl.synth import Noise, SynthError, generate, write
    from astral_dsl.synth.faults import MAX_DRAWN_DRIFT
    from astral_dsl.synth.generator import drift_refused

    if args.timers == "megatron" and not args.output.endswith((".csv", ".jsonl")):
        return usage("--timers megatron: a rank log's timers (OUT .csv or .jsonl); profiler "
                     "traces time every kernel")
    if args.seed < 0:
        return usage(f"--seed {args.seed}: a seed is a whole number from 0")
    if not 1 <= args.iterations <= MAX_ITERATIONS:
        return usage(f"--iterations must be between 1 and {MAX_ITERATIONS}")
    if not 0 <= args.drift <= MAX_DRAWN_DRIFT * 1e6:     # NaN too
        return usage(f"--drift: {drift_refused(args.drift)}" if args.drift > 0 else
                     f"--drift {args.drift:g}: a drift is a number of ppm from 0")
    asked, failed = _asked(args)
    if failed is not None:
        return failed
    calibration, failed = read_calibration(args)     # as every command that forecasts
    if failed is not None:
        return failed
    design = open_path(args.file, overrides).sized    # the values sizing chose for its `?`s
    if not design.valid:       # as every command: 2 for a file it cannot read, 1 for errors
        return _fail(args, design, design.diagnostics,
                     EXIT_USAGE if unreadable(design) else EXIT_ERRORS)
    try:
        fc = seer.forecast(design, job=args.job, calibration=calibration)
        rm = diagnose.rank_map(design, args.job)
    except (seer.ForecastError, diagnose.DiagnoseError) as exc:
        if getattr(exc, "diagnostics", None):          # the job's errors, as forecast's
            return _fail(args, design, list(design.diagnostics) + list(exc.diagnostics),
                         EXIT_ERRORS)
        return usage(str(exc))
    records = _records(fc, rm, args.iterations)
    if records > MAX_RECORDS:
        return usage(f"the drill would make about {records:,} records ({rm.world:,} ranks x "
                     f"{args.iterations} iterations); at most {MAX_RECORDS:,}: fewer "
                     f"--iterations, or a smaller job")
    rng = np.random.default_rng(args.seed)       # each fault drawn after the one before
    faults = []
    for kind, part, severity in asked:
        fault, failed = _drawn(kind, part, severity, rm, fc, rng, args)
        if failed is not None:
            return failed
        if any((f.kind, f.part) == (fault.kind, fault.part) for f in faults):
            return usage(f"--fault {kind}: `{fault.part}` is drilled twice: name another "
                         f"--part (or another --seed)")
        faults.append(fault)
    try:
        data = generate(fc, rm, faults, Noise(drift=args.drift * 1e-6), args.iterations,
                        args.seed)
    except SynthError as exc:
        if exc.field is None:
            return usage(str(exc))
        return _fail(args, design, list(design.diagnostics) + [_unreplayed(design, fc, exc)],
                     EXIT_ERRORS)
    out = args.output
    from astral_dsl.observe.ranklog import MAX_ROWS

    try:
        if out.endswith((".csv", ".jsonl")):
            write.write_log(data, out, "csv" if out.endswith(".csv") else "jsonl", args.timers,
                            max_lines=MAX_ROWS)
        else:
            write.write_traces(data, out)
    except write.TooLong as exc:       # E781 in astral diagnose: the drill could not be read
        return _unreadable_log(exc.lines, out.endswith(".csv"), args.iterations)
    except OSError as exc:
        return usage(f"cannot write `{out}`: {exc.strerror or exc}")
    answer = {"job": data.job, "ranks": data.world, "iterations": list(data.iterations),
              "written": out, "fault": faults[0].to_json() if faults else None}
    if len(faults) > 1:                  # `fault` the first, as a drill of one fault gives it
        answer["faults"] = [f.to_json() for f in faults]
    stream = sys.stderr if args.quiet_answer else sys.stdout
    if args.format == "json":
        # here: `astral --help` imports this module (for start-up)
        from astral_dsl.outputs.jsonout import accepted_json, dumps, envelope

        # the envelope of every command's JSON, the design's and the job's warnings with it
        # (those its `allow`s accept apart)
        diags, accepted = accepted_apart(list(design.diagnostics) + list(fc.diagnostics),
                                         design)
        stream.write(dumps(envelope(diags, file=design.file, accepted=accepted_json(accepted),
                                    **answer)) + "\n")
    else:
        what = ", ".join(f"{f.kind} {f.part} (severity {f.severity:g})" for f in faults) \
            or "no fault (a healthy run)"
        its = len(data.iterations)
        stream.write(f"synth: job `{data.job}`, {data.world:,} ranks x {its} "
                     f"iteration{'' if its == 1 else 's'} written to {out}; injected: {what}\n")
    return EXIT_OK


def _unreadable_log(lines: int, header: bool, iterations: int) -> int:
    """The usage error of a rank log of `lines` lines (its header among them), more than
    `astral diagnose` reads in one file (observe.ranklog.MAX_ROWS, E781 there): nothing was
    written (write.TooLong)."""
    from astral_dsl.observe import ranklog

    room, rows = ranklog.MAX_ROWS - header, lines - header   # a CSV's header is a line too
    fit = room // max(1, -(-rows // iterations))
    fewer = f"--iterations {fit} or fewer" if fit else "a smaller job"
    return usage(f"the rank log would hold {rows:,} rows, more than the {room:,} that `astral "
                 f"diagnose` reads in one file (E781): {fewer}; or a directory of profiler "
                 f"traces, one file per rank (-o DIRECTORY)")


def _asked(args):
    """([(kind, part or None, severity or None)] of each --fault but none, in order), or the
    usage error: --part and --severity each given for every --fault, in their order, or not
    at all; `none` alone; each severity checked against its kind."""
    kinds = args.fault or ["none"]
    for flag, given in (("--part", args.part), ("--severity", args.severity)):
        if given and len(given) != len(kinds):
            return None, usage(f"{flag}: {len(given)} given for {len(kinds)} --fault: "
                               f"one for each --fault, in their order, or none")
    if len(kinds) > 1 and "none" in kinds:
        return None, usage("--fault none is a healthy run: it cannot go with another --fault")
    parts = args.part or [None] * len(kinds)
    severities = args.severity or [None] * len(kinds)
    # (each was dropped unsaid: `--severity 2` without a --fault drilled a healthy run; `--part
    # ''`, a part drawn at random, is refused before, as every empty name: cli/option_paths.py)
    if "none" in kinds and (args.part or args.severity):
        return None, usage(f"{'--part' if args.part else '--severity'} with no fault to drill "
                           f"(--fault none, the default): a healthy run has no faulty part nor "
                           f"severity")
    for kind, severity in zip(kinds, severities):
        why = _bad_severity(kind, severity)
        if why:
            return None, usage(f"--severity: {why}")
    return [a for a in zip(kinds, parts, severities) if a[0] != "none"], None


def _drawn(kind, part, severity, rm, fc, rng, args):
    """(the fault of `kind`, drawn with `rng` as the proof draws it, moved onto `part` and
    given `severity` where named, None) or (None, the usage error)."""
    from astral_dsl.synth import Fault
    from astral_dsl.synth.inject import random_fault

    try:
        fault = random_fault(kind, rm, fc, rng, args.seed, args.iterations)
    except ValueError as exc:
        return None, usage(f"--fault {kind}: {exc}")
    if part:
        fault = _on_part(kind, fault, part, rm, fc, args.seed)
        if fault is None:
            return None, usage(f"--part: `{part}` is not a part of this kind that the job's "
                               f"traffic crosses")
    if severity is not None:
        # partial is a GPU or a NIC link: the severity is checked as the part's kind's
        why = _bad_severity(fault.kind, severity)
        if why:
            return None, usage(f"--severity: {kind} ({fault.part}): {why}")
        fault = Fault(fault.kind, fault.part, severity, fault.rank, fault.windows)
    return fault, None


def _fail(args, design, diagnostics, code: int) -> int:
    """A design or job that cannot be drilled: its diagnostics as the JSON envelope on standard
    output, or on standard error; the warnings its `allow`s accept apart."""
    diagnostics, accepted = accepted_apart(diagnostics, design)
    if args.format == "json":
        from astral_dsl.outputs.jsonout import accepted_json, dumps, envelope

        sys.stdout.write(dumps(envelope(diagnostics, file=design.file,
                                        accepted=accepted_json(accepted))) + "\n")
    else:
        from astral_dsl.outputs.human import accepted_lines
        from astral_dsl.outputs.terminal import printable_line

        print_diagnostics(diagnostics, colour(args, sys.stderr), sys.stderr)
        sys.stderr.writelines(printable_line(line + "\n") for line in accepted_lines(accepted))
    return code


def _unreplayed(design, fc, exc):
    """E798 at the job's `parallel` field the drill generator cannot replay (SynthError)."""
    from astral_dsl.diagnostics import Diagnostic, Severity

    job = next((j for j in design.jobs if j.template == fc.job.name), None)
    rec = job.member("parallel") if job is not None else None
    span = next((s for k, s in rec.field_spans if k == exc.field), rec.span) \
        if rec is not None else (job.span if job is not None else None)
    return Diagnostic("E798", Severity.ERROR, str(exc), span, exc.hint, file=design.file)


MAX_ITERATIONS = 100
MAX_RECORDS = 20_000_000     # about 2 GB of columns while generating; the proof's job makes 1.4M
RATES = ("nic_port", "tor", "agg", "uplink", "nvlink", "link_flap")


def _records(fc, rm, iterations: int) -> int:
    """About how many records the generator makes: per rank and iteration, its stage's blocks
    (compute, TP collective, a transfer each way, each EP all-to-all, each step of the CP ring)
    and a few collectives and steps."""
    low, a2a = fc.lowering, {}
    par = fc.job.parallel
    streams = ("ep",) * (par.ep > 1) + ("cp",) * (par.cp > 1)

    def records(s, b) -> int:
        key = (s, b.chunk, b.phase)
        if key not in a2a:
            a2a[key] = sum(1 for o in low.template(*key).ops if o.stream in streams
                           and not o.name.endswith(" (overlapped)")) if streams else 0
        return 4 + a2a[key]

    per = max((sum(records(s, b) for b in run.blocks) for s, run in enumerate(fc.runs)),
              default=0)
    return rm.world * iterations * (per + 16)


def _bad_severity(kind: str, severity) -> str:
    import math

    if severity is None:
        return ""
    if not math.isfinite(severity) or severity <= 0:
        return "must be a positive number"
    if kind in RATES and severity > 1:
        return f"{kind}: the part's rate is multiplied by it: at most 1"
    if kind == "fast" and not 1 < severity <= 1000:
        return "fast: the job runs this many times faster: above 1, at most 1000"
    if kind in ("gpu", "partial") and severity > 100:
        return f"{kind}: compute x (1 + X): at most 100"
    return ""


def _on_part(asked: str, fault, part: str, rm, fc, seed: int):
    """The fault of kind `asked` moved onto `part`, or None when the part is not of its kind or no
    traffic of the job crosses it: a GPU (gpu; partial; nvlink: its NVLink port, of a GPU that
    exchanges with another of its NVLink domain), a NIC port (nic_port), a first-tier
    switch (tor), an upper-tier switch (agg) or uplink (uplink) some flow crosses, a NIC link
    `port -- switch` (link_flap; partial); not the NIC parts of a rank whose traffic all stays
    in its NVLink domain (an NVL72 rack's). The fault keeps its severity and its bad windows."""
    from astral_dsl.synth import Fault
    from astral_dsl.synth.inject import crossing_ranks, nvlink_ranks, used_parts

    kind, sev, windows = fault.kind, fault.severity, fault.windows
    if kind == "nvlink":
        return next((Fault("nvlink", part, sev, r) for r in nvlink_ranks(rm, fc)
                     if rm.ranks[r].gpu == part), None)
    if kind in ("agg", "uplink"):
        switches, uplinks = used_parts(rm, fc, seed)
        return Fault(kind, part, sev) if part in (switches if kind == "agg" else uplinks) \
            else None
    partial = asked == "partial"             # drawn as a GPU or a link: either may be named
    crossing = set(crossing_ranks(rm, fc))   # NIC parts: of a rank whose traffic leaves its
    for r in rm.ranks:                       # NVLink domain (an NVL72 rack's may not)
        if kind == "gpu" or partial:
            if r.gpu == part:
                return Fault("gpu", part, sev, r.rank, windows)
        for p in (r.ports if r.rank in crossing else ()):
            if kind == "nic_port" and p.name == part:
                return Fault("nic_port", part, sev, r.rank)
            if kind == "tor" and p.switch == part:
                return Fault("tor", part, sev)
            if (kind == "link_flap" or partial) and f"{p.name} -- {p.switch}" == part:
                return Fault("link_flap", part, sev, r.rank, windows)
    return None


__all__ = ["HELP", "KINDS", "NAME", "register", "run"]
