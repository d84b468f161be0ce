"""`astral check FILE...`: diagnostics and a one-line summary per design."""
from __future__ import annotations

import sys

from astral_dsl.cli.common import EXIT_OK, add_common, add_schema, checked, colour, exit_code, \
    print_diagnostics, schema_first, usage, written_over
from astral_dsl.regularfile import output

NAME = "check"
HELP = "compile designs and report diagnostics and a summary"


def register(sub) -> None:
    c = sub.add_parser(NAME, help=HELP)
    c.add_argument("files", nargs="*", metavar="FILE")
    c.add_argument("--scenario", action="append", default=[], metavar="NAME",
                   help="also check the design under this scenario (repeatable)")
    c.add_argument("--all-scenarios", action="store_true", help="check every scenario")
    c.add_argument("--strict", action="store_true",
                   help="treat every warning as an error (for CI): exit 1 when there is one "
                        "(the warnings `allow` or --baseline accept are not)")
    c.add_argument("--baseline", metavar="ACCEPTED.json",
                   help="accept the warnings this file lists (by code, file and message), "
                        "as `allow` does; they are listed apart")
    c.add_argument("--write-baseline", metavar="ACCEPTED.json",
                   help="write every warning reported to this file (accepting them from now "
                        "on with --baseline)")
    c.add_argument("--margins", action="store_true",
                   help="how far each check and engineering limit is from breaking, and for "
                        "which values of each param it holds")
    add_schema(c)
    add_common(c)


def run(args, overrides) -> int:
    from astral_dsl import gcpause

    # the ~100 modules a check imports: no collector pass walks them (for start-up)
    with gcpause.settled():
        from astral_dsl.pipeline import front_end_errors
        from astral_dsl.analyses.summary import one_line, summarize
        from astral_dsl.outputs.human import accepted_lines
        from astral_dsl.outputs.terminal import printable_line
        # size_json, not size_report (its tables: outputs.table), for start-up
        from astral_dsl.outputs.size_json import chosen_lines, objective_line

    done = schema_first(args, NAME, None if args.files else "FILE...")
    if done is not None:
        return done
    clobbers = written_over("--write-baseline", args.write_baseline, args.files)
    if clobbers is not None:
        return clobbers
    if args.baseline and args.write_baseline:
        return usage("--baseline and --write-baseline: give one (writing a baseline accepts "
                     "every warning reported)")
    baseline = None
    if args.baseline:
        baseline = read_baseline(args.baseline)
        if isinstance(baseline, str):
            return usage(baseline)
    read: list = []                      # the designs' files and their imports
    results = [checked(path, overrides, args.scenario, args.all_scenarios, baseline, read)
               for path in args.files]
    if args.write_baseline:
        clobbers = written_over("--write-baseline", args.write_baseline, read)
        if clobbers is not None:
            return clobbers
        results, failed = write_baseline(args.write_baseline, results)
        if failed is not None:
            return usage(failed)
    worst = EXIT_OK
    use_colour = colour(args)
    for path, result in zip(args.files, results):
        design = result.design
        diagnostics = strict(result.diagnostics) if args.strict else result.diagnostics
        # the counts hold whenever the design itself compiled (a failed `check` is still a design)
        summary = summarize(design, result.engineering) \
            if design.roots and not front_end_errors(design) else None
        if args.format == "json":
            # here, not above, for start-up (the text the terminal reads needs none of it)
            from astral_dsl.outputs.jsonout import accepted_json, dumps, envelope, scenario_json
            from astral_dsl.outputs.size_json import chosen_json

            scen = [{"name": o.name, "required": o.required, "broken": len(o.broken),
                     **{k: v for k, v in scenario_json(o.name, o.applied).items()
                        if k != "name"}, "notes": list(o.notes)}
                    for o in result.scenarios]
            extra = _margins(path, overrides, True) if args.margins else {}
            sys.stdout.write(dumps(envelope(diagnostics, file=design.file,
                                            summary=summary, scenarios=scen,
                                            chosen=chosen_json(design),
                                            accepted=accepted_json(result.accepted),
                                            **extra)) + "\n")
        else:
            print_diagnostics(diagnostics, use_colour, sys.stdout)
            errors = sum(d.is_error for d in result.diagnostics)
            warnings = sum(d.severity.value == "warning" for d in result.diagnostics)
            out = [line + "\n" for line in accepted_lines(result.accepted)]
            out += [line + "\n" for line in chosen_lines(design)]
            objective = objective_line(result.sizing)
            if objective is not None:
                out.append(objective + "\n")
            for o in result.scenarios:
                state = "holds" if not o.broken else f"breaks {len(o.broken)} constraint(s)"
                out.append(f"scenario {o.name}{' (required)' if o.required else ''}: {state}\n")
                out.extend(f"  note: {n}\n" for n in o.notes)
            status = summary_status(errors, warnings, args.strict, len(result.accepted))
            if summary is not None:
                out.append(one_line(design, summary) + f" [{status}]\n")
            else:
                out.append(f"{design.file}: {status}\n")
            sys.stdout.writelines(printable_line(line) for line in out)
            if args.margins:
                from astral_dsl.outputs.terminal import printable_text

                sys.stdout.write(printable_text(_margins(path, overrides, False)))
        worst = max(worst, exit_code(design, diagnostics))
    return worst


def _margins(path, overrides, as_json: bool):
    """`--margins`: the margins text, or for JSON `margins` (one object per limit) and
    `margins_notes` (what holds for them all: around the values sizing chose, why a parameter
    could not be bracketed, why there are none) (astral_dsl/explore/margins)."""
    from astral_dsl.outputs.progress import Progress
    from astral_dsl.explore import margins
    from astral_dsl.outputs.margins import render, to_json

    with Progress("astral check --margins") as progress:
        progress.step("the design's limits")
        report = margins.analyse(path, overrides, step=progress.step)
    if not as_json:
        return render(report)
    return {"margins": to_json(report),
            "margins_notes": ([report.note] if report.note else []) + list(report.notes)}


def strict(diagnostics):
    """`--strict`: every warning becomes an error with the same code, message and span."""
    import attrs

    from astral_dsl.diagnostics import Severity

    return tuple(attrs.evolve(d, severity=Severity.ERROR,
                              notes=d.notes + ("a warning, made an error by --strict",))
                 if d.severity is Severity.WARNING else d for d in diagnostics)


def summary_status(errors: int, warnings: int, is_strict: bool, accepted: int = 0) -> str:
    """`ok`, `2 error(s)`, `ok, 3 warning(s)`, `ok, 6 accepted`; under --strict the warnings
    count as errors and the status says how many of them were warnings (accepted ones stay
    accepted)."""
    more = f", {accepted} accepted" if accepted else ""
    if is_strict and warnings:
        return f"{errors + warnings} error(s) ({warnings} warning(s) under --strict){more}"
    status = "ok" if not errors else f"{errors} error(s)"
    if warnings:
        status += f", {warnings} warning(s)"
    return status + more


def read_baseline(path: str):
    """The baseline file at `path` (its files are written relative to its folder), or why it
    cannot be used."""
    from astral_dsl import jsonin
    import os

    import attrs

    from astral_dsl.model.baseline import Baseline, restored
    from astral_dsl.outputs.jsonout import baseline_entries_of

    try:
        doc = jsonin.load_path(path)
    except OSError as exc:
        return f"--baseline: cannot read `{path}`: {exc.strerror or exc}"
    except ValueError as exc:           # not JSON, not UTF-8, nested past the parser's depth
        return f"--baseline: `{path}` is not JSON ({exc})"
    try:
        entries = baseline_entries_of(doc, path)
    except ValueError as exc:
        return f"--baseline: {exc}"
    folder = os.path.dirname(os.path.abspath(path))
    return Baseline(path, tuple(attrs.evolve(e, file=restored(e.file, folder)) if e.file else e
                                for e in entries))


def write_baseline(path: str, results):
    """Write the warnings of `results` to the baseline file `path` (files relative to its
    folder) and accept them: the results as if checked with it, or why it cannot be written."""
    import os

    import attrs

    from astral_dsl.model.allows import accept
    from astral_dsl.model.baseline import Baseline, absolute, baseline_entries, stored
    from astral_dsl.outputs.jsonout import baseline_json, dumps

    entries = tuple(attrs.evolve(e, file=absolute(e.file)) if e.file else e
                    for e in baseline_entries(d for r in results for d in r.diagnostics))
    folder = os.path.dirname(os.path.abspath(path))
    written = [attrs.evolve(e, file=stored(e.file, folder)) if e.file else e for e in entries]
    try:
        with open(output(path), "w", encoding="utf-8") as fh:
            fh.write(dumps(baseline_json(written)) + "\n")
    except OSError as exc:
        return results, f"--write-baseline: cannot write `{path}`: {exc.strerror or exc}"
    baseline = Baseline(path, entries)
    out = []
    for r in results:
        split = accept(r.diagnostics, (), baseline)
        out.append(attrs.evolve(r, diagnostics=split.reported,
                                accepted=r.accepted + split.accepted, baseline=baseline))
    return out, None
