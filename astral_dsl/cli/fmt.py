"""`astral fmt FILE...`: rewrite .astral files in the canonical layout (astral_dsl/fmt).

`--check` writes nothing, lists the files that would change and exits 1 if there are any;
`--diff` writes nothing and prints what would change as a unified diff. A folder stands for the
.astral files below it; `-` reads standard input and writes the result to standard output. A file
that does not parse is reported with the compiler's diagnostic and left as it is (exit 1)."""
from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import List

from astral_dsl.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, colour, print_diagnostics

NAME = "fmt"
HELP = "format .astral files in the canonical layout"


def register(sub) -> None:
    f = sub.add_parser(NAME, help=HELP)
    f.add_argument("files", nargs="+", metavar="FILE",
                   help="files or folders (.astral files below them); `-` for standard input")
    f.add_argument("--check", action="store_true",
                   help="write nothing; list the files that would change and exit 1 if any")
    f.add_argument("--diff", action="store_true",
                   help="write nothing; print the changes as a unified diff")
    f.add_argument("--color", choices=["auto", "always", "never"], default="auto")


def _expand(names: List[str]) -> List[str]:
    out: List[str] = []
    for name in names:
        p = Path(name)
        if name != "-" and p.is_dir():
            out.extend(str(f) for f in sorted(p.rglob("*.astral")))
        else:
            out.append(name)
    return out


def run(args, overrides) -> int:
    from astral_dsl.diagnostics import DiagnosticError
    from astral_dsl.fmt import FormatError, format_text
    from astral_dsl.syntax.source import decode

    worst = EXIT_OK
    changed: List[str] = []
    use_colour = colour(args, sys.stderr)
    for name in _expand(args.files):
        try:
            data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            sys.stderr.write(f"error[E100]: cannot read `{name}`: {exc.strerror or exc}\n")
            worst = max(worst, EXIT_USAGE)
            continue
        shown = "<stdin>" if name == "-" else name
        try:
            text = decode(shown, data).text
            result = format_text(text, shown)
        except DiagnosticError as exc:
            print_diagnostics([exc.diagnostic], use_colour, sys.stderr)
            worst = max(worst, EXIT_ERRORS)
            continue
        except FormatError as exc:   # a bug: never write a file whose meaning would change
            sys.stderr.write(f"error[E000]: internal formatter error: {exc}\n")
            worst = max(worst, EXIT_ERRORS)
            continue
        original = data.decode("utf-8", errors="replace")
        if name == "-" and not (args.check or args.diff):
            sys.stdout.write(result)
            continue
        if result == original:
            continue
        changed.append(shown)
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(
                original.replace("\r\n", "\n").splitlines(True), result.splitlines(True),
                f"{shown} (original)", f"{shown} (formatted)"))
        if args.check:
            sys.stdout.write(f"{shown}\n") if not args.diff else None
        elif not args.diff:
            Path(name).write_text(result, encoding="utf-8", newline="\n")
            sys.stderr.write(f"formatted {shown}\n")
    if args.check and changed:
        sys.stderr.write(f"{len(changed)} file(s) would be reformatted\n")
        worst = max(worst, EXIT_ERRORS)
    return worst
