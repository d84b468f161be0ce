"""The paths of the options that name a file a command reads or writes, checked before the
command runs (cli/__init__.py's main): none empty, none `-` for standard output, and each file
to write in a folder that exists; and the names of `--job`, `--scenario` and `--part`, and
the values of `--cluster`, `--gpus`, `--life`, `--order`, `--window`, `--x`, `--y` and
`--by-source`, none empty."""
from __future__ import annotations

import os
from typing import Optional


# the options that name a file a command writes (each command's own), by their argparse dest
_WRITTEN = (("output", "-o"), ("trace", "--trace"), ("ranks", "--ranks"), ("plot", "--plot"),
            ("write_baseline", "--write-baseline"), ("netbox", "--netbox"), ("docs", "--docs"))


# the options that name a file a command reads, by their argparse dest
_READ = (("baseline", "--baseline"), ("calibration", "--calibration"),
         ("highlight", "--highlight"), ("diagnosis", "--diagnosis"),
         ("operator_table", "--operator-table"), ("gpu_file", "--gpu-file"),
         ("tls_ca_file", "--tls-ca-file"), ("tls_cert", "--tls-cert"), ("tls_key", "--tls-key"))


def empty(args) -> Optional[str]:
    """The option of a file to read or write given as an empty path, or None: taken as not
    given (`--calibration "$FIT"` with FIT unset forecast with the shipped fit, `-o ""` wrote
    nothing, both in silence), or as `.` (report: "cannot write ``: Is a directory")."""
    return next((flag for name, flag in _WRITTEN + _READ if getattr(args, name, None) == ""),
                None)


# the options that name a job, a scenario or a part of the design, or give a value, by their
# argparse dest (a str, or a list when repeated), and what an empty one says. An empty name
# (`--job "$JOB"` with JOB unset) was looked up as a name, `--job : no such job` (E221), and
# `astral synth --part ""` refused as a --part given with no --fault; an empty value
# (`--cluster "$SCHEDULER"` with SCHEDULER unset) was taken as not given, in silence (a search
# ran on this machine's cores, not the cluster's; --gpus split the job's own count, --life took
# 4 years, --order the job's, --window every micro-batch), or read as a name (`--by-source :
# no table of that name`)
_NAMED, _VALUE = "the name is empty: it names no", "the value is empty:"
_EMPTY = (("job", "--job", f"{_NAMED} job"), ("scenario", "--scenario", f"{_NAMED} scenario"),
          ("part", "--part", f"{_NAMED} part"),
          ("cluster", "--cluster", f"{_VALUE} it names no scheduler (leave --cluster out to "
                                   f"run on this machine)"),
          ("gpus", "--gpus", f"{_VALUE} it gives no GPU count"),
          ("life", "--life", f"{_VALUE} it gives no write-off period"),
          ("order", "--order", f"{_VALUE} it gives no rank order"),
          ("window", "--window", f"{_VALUE} it gives no micro-batches"),
          ("x", "--x", f"{_VALUE} it names no column"),
          ("y", "--y", f"{_VALUE} it names no column"),
          ("by_source", "--by-source", f"{_VALUE} it names no table"))


def empty_name(args) -> Optional[str]:
    """Why an option naming a job, a scenario or a part names none (`--job ""`), or one giving
    a value gives none, or None (_EMPTY)."""
    for name, flag, why in _EMPTY:
        given = getattr(args, name, None)
        if given == "" or (isinstance(given, list) and "" in given):
            return f"{flag}: {why}"
    return None


def writes_dash(args) -> Optional[str]:
    """The option whose file to write is named `-` (standard output, by convention), or None:
    every command wrote a file named `-` in the working directory (`astral forecast x --trace -
    | jq` left 16 MB there and nothing on the pipe)."""
    return next((flag for name, flag in _WRITTEN if getattr(args, name, None) == "-"), None)


def nowhere(args) -> Optional[str]:
    """Why a file the command would write cannot be, known before any work: its folder does
    not exist, or it is a folder (a `calibrate` of two minutes, a `diagnose` or a `search`
    said so only at the end, its work lost). A folder that is the output (`synth -o DIR`,
    `export --netbox DIR`) is made with its parents."""
    for name, flag in _WRITTEN:
        path = getattr(args, name, None)
        # (--docs is read first, as calibrate checks before its fit; render's picture is told
        # by its own diagnostic, E703 with its hint, after a compile of seconds)
        if not isinstance(path, str) or not path or name in ("netbox", "docs") or (
                name == "output" and args.command == "render") or (
                name == "output" and args.command == "synth"
                and not path.endswith((".csv", ".jsonl"))):         # a drill's traces
            continue
        if name == "plot":              # matplotlib writes PATH.png for a PATH without extension
            from astral_dsl.cli.common import plotted

            path = plotted(path)
        if os.path.isdir(path):
            return f"{flag}: cannot write `{path}`: it is a folder (name a file in it)"
        folder = os.path.dirname(path)
        if folder and not os.path.isdir(folder):
            return f"{flag}: cannot write `{path}`: there is no folder `{folder}`"
    return None


__all__ = ["empty", "empty_name", "nowhere", "writes_dash"]
