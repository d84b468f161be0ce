"""`astral diff A B`: what changes from design A to design B, like `terraform plan`.

A and B are files, or `REV:path` read from git (`HEAD~1:examples/astral.astral`; the path is
relative to the repository's top, or to the working directory when it starts with `./` or
`../`, as git reads it). How a revision is read, with its imports and never as an option of
git, within bounded memory and disk: cli/revision.py.

`--set` overrides a parameter on both sides, `--set-a` on A only, `--set-b` on B only (so
`astral diff X X --set-b hosts_per_rack=5` is what a fifth host per rack does).

Exit codes: 0 both sides compile without errors, 1 either side has errors, 2 usage error or
unreadable input; with `--exit-code`, 1 when anything differs and 0 when nothing does (2 still
for a usage error)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

from astral_dsl.cli.common import (EXIT_ERRORS, EXIT_OK, EXIT_USAGE, UsageError,
                                   add_calibration, add_color, add_schema, add_set, colour,
                                   open_path, parse_sets, schema_first, unreadable, usage)

NAME = "diff"
HELP = "what changes between two designs (files or git REV:path)"


def register(sub) -> None:
    d = sub.add_parser(NAME, help=HELP)
    d.add_argument("a", metavar="A", nargs="?", help="a design: FILE or REV:path")
    d.add_argument("b", metavar="B", nargs="?", help="the other design: FILE or REV:path")
    add_set(d, help="override a top-level `param` on both sides")
    add_set(d, "--set-a", "override a top-level `param` on A only")
    add_set(d, "--set-b", "override a top-level `param` on B only")
    d.add_argument("--exit-code", action="store_true",
                   help="exit 1 when anything differs, 0 when nothing does (as git diff)")
    d.add_argument("--format", choices=["human", "json"], default="human")
    add_schema(d)
    add_calibration(d)
    add_color(d)


def _load(arg: str, overrides, folders: List[Path], option):
    """(label, checked design, relative-path function) of one side, its overrides named by
    `option` (semantics/overrides.py sided: `--set-a NAME` for A's own)."""
    from astral_dsl import api

    from astral_dsl.cli.revision import materialise, split_revision

    rev = split_revision(arg)
    if rev is None:
        ws = open_path(arg, overrides, option=option)   # `--set NAME`, not the API's
        result = api.check(ws)
        return arg, result, lambda f: _relative(f, ws.root)
    folder, entry, read = materialise(*rev)
    folders.append(folder)
    ws = open_path(str(entry), overrides, read, option)
    result = _renamed(api.check(ws), folder, rev[0])
    return arg, result, lambda f: _relative(f, ws.root, f"{rev[0]}:", folder)


def _relative(file: str, root: Optional[Path], strip: str = "",
              folder: Optional[Path] = None) -> str:
    """`file` relative to the project's root; a revision's `REV:path` (from the repository's
    top, laid out in `folder`) too, so that a file of the project is named alike on both sides
    (`lib/parts.astral`, not `designs/lib/parts.astral` on one of them). A stdlib file's name
    is the same everywhere already."""
    from astral_dsl.resources import is_stdlib_name

    if is_stdlib_name(file):
        return file
    if strip and file.startswith(strip) and folder is not None:
        file = str(folder / file[len(strip):])
    try:
        return str(Path(file).resolve().relative_to(Path(root).resolve())) if root else file
    except ValueError:
        return file


def _renamed(result, folder: Path, rev: str):
    """Diagnostics and checks name the revision's files as `REV:path`, not the temporary
    directory."""
    import attrs

    base = str(folder.resolve())

    def name(file):
        if file is None:
            return None
        try:
            return f"{rev}:" + str(Path(file).resolve().relative_to(base)).replace(os.sep, "/")
        except (ValueError, OSError):
            return file

    def fix(d):
        span = attrs.evolve(d.span, file=name(d.span.file)) if d.span is not None else None
        related = tuple(attrs.evolve(r, span=attrs.evolve(r.span, file=name(r.span.file)))
                        for r in d.related)
        return attrs.evolve(d, span=span, file=name(d.file) if d.file else d.file,
                            message=d.message.replace(base + os.sep, f"{rev}:"),
                            related=related)

    def fix_span(span):
        return attrs.evolve(span, file=name(span.file)) if span is not None else None

    design = result.design
    checks = tuple(attrs.evolve(c, span=fix_span(c.span)) for c in design.checks)
    # the warnings an `allow` accepts too: named by the temporary directory, each of the
    # revision's differed from the same one of the file's (a file against its own HEAD:
    # "12 difference(s)", every accepted W216 removed and added)
    accepted = tuple(attrs.evolve(a, diagnostic=fix(a.diagnostic), by=fix_span(a.by))
                     for a in result.accepted)
    return attrs.evolve(result, diagnostics=tuple(fix(d) for d in result.diagnostics),
                        accepted=accepted,
                        design=attrs.evolve(design, file=name(design.file), checks=checks))


def run(args, overrides) -> int:
    import shutil

    from astral_dsl.api.sides import side
    from astral_dsl.outputs.diff import compare, render, to_json
    from astral_dsl.outputs.jsonout import dumps, envelope
    from astral_dsl.semantics.overrides import sided

    from astral_dsl.cli.revision import GitError, RevisionRefused
    from astral_dsl.cli.runs import read_calibration

    done = schema_first(args, NAME, "A and B" if args.a is None or args.b is None else None)
    if done is not None:
        return done
    try:
        own_a, own_b = parse_sets(args.set_a, "--set-a"), parse_sets(args.set_b, "--set-b")
    except UsageError as exc:
        return usage(str(exc))
    # a side's own value replaces --set's, and its diagnostics name it by its own flag
    over_a, over_b = {**overrides, **own_a}, {**overrides, **own_b}
    calibration, failed = read_calibration(args)
    if failed is not None:
        return failed
    folders: List[Path] = []
    errors = []                 # both sides' errors, for the JSON envelope
    try:
        sides = []
        for arg, over, option in ((args.a, over_a, sided(own_a, "--set-a")),
                                  (args.b, over_b, sided(own_b, "--set-b"))):
            try:
                label, result, relative = _load(arg, over, folders, option)
            except GitError as exc:
                return usage(f"cannot read `{arg}` from git: {exc}")
            except RevisionRefused as exc:
                return _unusable(args, arg, [exc.diagnostic])
            if unreadable(result.design):
                return _unusable(args, arg, result.diagnostics)
            errors.extend(d for d in result.diagnostics if d.is_error)
            # the label names each value by the option that gave it, as a shell takes it
            sides.append(side(label + "".join(f" {option(k, v, shell=True)}"
                                              for k, v in over.items()),
                              result, relative, calibration))
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    a, b = sides
    changes = compare(a, b)
    if args.format == "json":
        # the envelope of every command's JSON: `valid` and the errors of either side (those of
        # exit 1; once each, as a file on both sides has them twice), then the diff's fields;
        # warnings that appear or go are among its changes
        sys.stdout.write(dumps(envelope(dict.fromkeys(errors), **to_json(a, b, changes)))
                         + "\n")
    else:
        sys.stdout.write(render(a, b, changes, colour(args)))
    if args.exit_code:
        return EXIT_ERRORS if changes else EXIT_OK
    return EXIT_ERRORS if not (a.valid and b.valid) else EXIT_OK


def _unusable(args, arg: str, diagnostics) -> int:
    """A side that cannot be read (a missing file, a revision refused): its diagnostics, on
    standard error or as the JSON envelope on standard output, as every command gives them;
    exit 2."""
    if args.format == "json":
        from astral_dsl.outputs.jsonout import dumps, envelope

        sys.stdout.write(dumps(envelope(diagnostics, file=arg)) + "\n")
    else:
        from astral_dsl.cli.common import print_diagnostics

        print_diagnostics(diagnostics, colour(args, sys.stderr), sys.stderr)
    return EXIT_USAGE
