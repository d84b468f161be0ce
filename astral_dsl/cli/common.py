"""What every `astral` command shares: exit codes, `--set`, colour, compiling with sizing, and
printing diagnostics. I/O lives in the cli package; everything below it is pure."""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Dict, List, Optional

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 with a one-line reason
        self.print_usage(sys.stderr)
        sys.stderr.write(f"astral: error: {message}\n")
        _usage_document(message)
        raise SystemExit(EXIT_USAGE)


# A number an option takes, in ASCII: int() and float() take Unicode digits too (`１２`, `٨`),
# and `1_000` or ` 12 `, which no option means; argparse names the option the value was given to
_WHOLE = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|nan)",
                     re.IGNORECASE)


def whole(text: str) -> int:
    """An option's whole number (`type=whole`): ASCII digits 0-9, a sign before them."""
    if not _WHOLE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"`{_said(text)}` is not a whole number (digits 0-9)")
    return int(text)


def number(text: str) -> float:
    """An option's number (`type=number`): ASCII digits 0-9, a sign, a point, an exponent (and
    `inf` or `nan`, which the option's own bounds refuse where they matter)."""
    if not _NUMBER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"`{_said(text)}` is not a number (digits 0-9, a point)")
    return float(text)


def _said(text: str) -> str:
    from astral_dsl.diagnostics import excerpt

    return excerpt(text)            # a 1 MB argument is not echoed whole


# What a usage error also writes on standard output when the command was given `--format json`
# (or jsonl) and takes it: None (nothing: human output), or the fields of its one-line JSON
# document beside the envelope's (cli._main sets it from the arguments, before parsing them)
_USAGE_JSON: List[Optional[Dict[str, object]]] = [None]


def usage_as_json(fields: Optional[Dict[str, object]]) -> None:
    """A usage error from now on also prints the JSON envelope on standard output, with
    `fields` (`file`, and a command's own: diagnose's verdict), or nothing (None)."""
    _USAGE_JSON[0] = fields


def usage_names(file) -> None:
    """The design or table a usage error's JSON document names once the arguments are parsed
    (`file`: a command's FILE; none for several)."""
    if _USAGE_JSON[0] is not None and isinstance(file, str):
        _USAGE_JSON[0] = {**_USAGE_JSON[0], "file": file}


def _usage_document(message: str, diagnostics=()) -> None:
    """The one-line JSON document of a usage error under `--format json`: the envelope, `valid`
    false, the diagnostics found before it (none, mostly), the reason as `usage_error`."""
    fields = _USAGE_JSON[0]
    if fields is not None:
        _failure_document(diagnostics, {**fields, "usage_error": message},
                          error=message if "error" in fields else None)


def internal_document(message: str) -> None:
    """The JSON document of an internal error (exit 3) under `--format json`: the envelope with
    the E000 diagnostic alone (none of a command's own fields: there is no result)."""
    fields = _USAGE_JSON[0]
    if fields is not None:
        from astral_dsl.diagnostics import Diagnostic, Severity

        _failure_document([Diagnostic(
            "E000", Severity.ERROR, message, None, "this is a bug in astral_dsl, not in your "
            "design; please report it with the input file", file=fields.get("file"))],
            {"file": fields.get("file")})


def _failure_document(diagnostics, fields, error=None) -> None:
    """One line of JSON on standard output, `valid` false; unless the command already wrote
    there (one document, never two) or writing fails (a full disk: the exit code says it)."""
    if getattr(sys.stdout, "written", False):
        return
    from astral_dsl.outputs.jsonout import dumps, envelope

    try:
        doc = envelope(diagnostics, **{"file": None, **fields, "valid": False})
        if error is not None:               # a command whose documents say it as `error`
            doc["error"] = error
        sys.stdout.write(dumps(doc) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


class UsageError(Exception):
    pass


def add_common(sp: argparse.ArgumentParser, formats=("human", "json"), params: bool = True,
               format_help: Optional[str] = None) -> None:
    """`--set` (where there are parameters to set: `params`), `--format` (unless `formats` is
    empty) and `--color`: on every command that compiles a design or reads runs tables."""
    if params:
        add_set(sp)
    if formats:
        sp.add_argument("--format", choices=list(formats), default=formats[0], help=format_help)
    add_color(sp)


def add_schema(sp: argparse.ArgumentParser, jsonl: bool = False) -> None:
    """`--schema`: the command prints the JSON Schema of its documents (schema_first)."""
    sp.add_argument("--schema", action="store_true",
                    help="print the JSON Schema of --format json's documents"
                         + (" and of --format jsonl's lines" if jsonl else ""))


def schema_first(args, name: str, missing: Optional[str]) -> Optional[int]:
    """`astral NAME --schema`: the JSON Schema of the command's documents printed
    (schema/NAME.schema.json, exit 0); else a usage error when the command's input, `missing`,
    is not given; else None: the command runs."""
    if args.schema:
        from astral_dsl import resources

        sys.stdout.write(resources.schema_text(name))
        return EXIT_OK
    if missing is not None:
        return usage(f"{name} needs {missing} (or --schema)")
    return None


def add_set(sp: argparse.ArgumentParser, flag: str = "--set",
            help: str = "override a top-level `param` (a bare number takes its unit)") -> None:
    sp.add_argument(flag, action="append", default=[], metavar="NAME=VALUE", help=help)


def add_calibration(sp: argparse.ArgumentParser) -> None:
    """`--calibration FIT.json` on a command that forecasts (read by cli.runs.read_calibration:
    the same reading and the same usage errors everywhere)."""
    sp.add_argument("--calibration", metavar="FIT.json",
                    help="fitted constants written by `astral calibrate -o` for the job "
                         "forecasts (default: the shipped fit)")


def add_color(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--color", choices=["auto", "always", "never"], default="auto")


def sets(args) -> Dict[str, str]:
    """The `--set NAME=VALUE` overrides of a command's arguments."""
    return parse_sets(getattr(args, "set", None) or [])


def parse_sets(items, flag: str = "--set") -> Dict[str, str]:
    """`flag`'s NAME=VALUE items as a mapping. One name given twice is a usage error, not the
    last one silently winning: a what-if changes exactly what it names, and `--set x=1 --set
    x=2` names two values for one parameter."""
    out: Dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name.strip():
            raise UsageError(f"{flag} expects NAME=VALUE, got `{item}`")
        name = name.strip()
        if name in out:
            raise UsageError(f"{flag} {name} is given twice (`{out[name]}` and "
                             f"`{value.strip()}`): give each parameter one value")
        out[name] = value.strip()
    return out


def usage(message: str, diagnostics=()) -> int:
    """A usage error: exit 2, the message on standard error. `diagnostics`: what the input said
    before the command stopped, for the JSON document under `--format json` (the command prints
    them itself otherwise)."""
    from astral_dsl.outputs.terminal import printable

    sys.stderr.write(f"astral: error: {printable(message)}\n")
    _usage_document(message, diagnostics)
    return EXIT_USAGE


def written_over(flag: str, output: Optional[str], inputs, folders: bool = False
                 ) -> Optional[int]:
    """A usage error (exit 2) when writing `output` (`flag`'s file) would overwrite one of the
    files the command reads, `inputs` (outputs/overwrite.py clobbered: the same file by any
    path, link or hard link; with `folders`, a folder stands for the files in it). `astral
    diagnose x.astral --observed run.csv -o run.csv` replaced the rank log with the diagnosis.
    None when it names none of them, or does not exist yet."""
    from astral_dsl.outputs.overwrite import clobbered

    what = clobbered(output, inputs, folders)
    if what is None:
        return None
    return usage(f"{flag} {output} is {what} that this command reads: writing it would destroy "
                 f"it; name another file")


def design_written_over(flag: str, output: Optional[str], ws) -> Optional[int]:
    """written_over for the files the design was compiled from, its imports among them (known
    once it is compiled): `astral report main.astral -o lib.astral`, with main.astral importing
    lib, replaced the module with the page."""
    return written_over(flag, output, ws.files())


def plotted(path: str) -> str:
    """The file matplotlib writes for `--plot PATH`: PATH, or PATH.png when it has no extension
    (its savefig.format, which it appends)."""
    return path if os.path.splitext(path)[1] else path + ".png"


def plot_failure(path: str, exc: Exception) -> str:
    """Why `--plot PATH` was not drawn: a folder that does not exist or cannot be written
    (OSError), or an extension matplotlib cannot write (ValueError)."""
    if isinstance(exc, OSError):
        return f"--plot: cannot write `{plotted(path)}`: {exc.strerror or exc}"
    return f"--plot `{path}`: {exc}"


def colour(args, stream=None) -> bool:
    if getattr(args, "color", "auto") == "always":
        return True
    if getattr(args, "color", "auto") == "never" or os.environ.get("NO_COLOR"):
        return False
    return (stream or sys.stdout).isatty()


def open_path(path: str, overrides, read=None, option=None):
    """The workspace of a file (api.compile, but for the overrides' messages: `--set NAME`,
    not the API's `overrides['NAME']`; `option`: another of the command's, diff's `--set-a
    NAME`): its design is `.design`."""
    from astral_dsl.semantics.overrides import command_line
    from astral_dsl.workspace import Workspace

    option = option or command_line
    return Workspace.open(path, overrides, option=option) if read is None else \
        Workspace.open(path, overrides, read, option)


def checked(path: str, overrides, scenarios=None, all_scenarios: bool = False, baseline=None,
            read: Optional[list] = None):
    """Compile, size when the design has unknowns, check (engineering, scenarios); the
    warnings the design's `allow`s (and `baseline`) accept are apart. `read`: a list to which
    the files of the design's modules are added (Workspace.files)."""
    from astral_dsl import gcpause
    # api.compile and api.check are these two: the pipeline's and the workspace's, imported
    # without the rest of the API (its result types, its other commands), for start-up
    from astral_dsl.pipeline import check, front_end_errors
    from astral_dsl.semantics.overrides import command_line
    from astral_dsl.workspace import Workspace

    def compiled():
        workspace = Workspace.open(path, overrides, option=command_line)    # `--set NAME`
        workspace.design           # compiled here, kept to the end like the syntax trees
        if read is not None:
            read.extend(workspace.files())
        return workspace

    # the file's and its imports' syntax trees and the design compiled from them stay out of
    # the collector's passes (the evaluator's own cycles, dropped as the compile ends, stay
    # with them: one compile's, 0.17 million objects for a 1 MB design; the peak memory of
    # its check is unchanged, 177 MB); the required scenarios' compiles come after the block
    # starts, and the collector frees theirs as before
    with gcpause.frozen(compiled) as workspace:
        design = workspace.design
        if design.jobs and not front_end_errors(design):
            # Seer's ~20 modules, which the check imports to validate the jobs, imported here:
            # no collector pass walks them (gcpause.settled, for start-up: about 1 ms)
            with gcpause.settled():
                import astral_dsl.seer.validate  # noqa: F401
        return check(workspace, None, scenarios, all_scenarios, baseline)


def accepted_apart(diagnostics, design):
    """(the diagnostics to report, the warnings the design's `allow`s accept): as `astral
    check` keeps them apart, for a command that prints a design's diagnostics beside its own
    result (model/allows.py apart)."""
    from astral_dsl.model.allows import apart

    return apart(diagnostics, design.allows)


def unreadable(design) -> bool:
    return any(d.code == "E100" or (d.code == "E108" and d.span is None)
               for d in design.diagnostics)


def exit_code(design, diagnostics) -> int:
    if unreadable(design):
        return EXIT_USAGE
    return EXIT_ERRORS if any(d.is_error for d in diagnostics) else EXIT_OK


def print_diagnostics(diagnostics, use_colour: bool, stream) -> None:
    from astral_dsl.outputs.human import render

    lines_cache: Dict[str, List[str]] = {}

    def line_of(file: str, n: int):
        if file not in lines_cache:
            # read as the compiler reads a source (a FIFO or device refused without blocking,
            # a file past the 8 MiB cap unread): a file may have changed since it was compiled;
            # a stdlib file's name names the installed one
            from astral_dsl.resources import source_file
            from astral_dsl.semantics.source_files import read_file

            try:
                text = read_file(source_file(file)).decode("utf-8-sig", errors="replace")
                lines_cache[file] = [ln.rstrip("\r") for ln in text.split("\n")]
            except (OSError, ValueError):
                lines_cache[file] = []
        lines = lines_cache[file]
        return lines[n - 1] if 0 < n <= len(lines) else None

    for d in diagnostics:
        stream.write(render(d, line_of, use_colour) + "\n\n")
