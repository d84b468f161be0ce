"""The public face of astral_dsl: what the command line and the language server call, and what
`import astral_dsl` offers (re-exported by astral_dsl/__init__.py).

    import astral_dsl
    design = astral_dsl.load("examples/astral.astral")           # a Design
    ws = astral_dsl.compile("examples/astral.astral")             # a Workspace (ws.design)
    checked = astral_dsl.check(ws, all_scenarios=True)           # `astral check`
    fc = astral_dsl.forecast(ws, job="llama405b", scenario="plane_b_down")

A Workspace (workspace.py) holds the parsed source and compiles it again when sizing, a
scenario or an override needs it; the check's steps are pipeline.py's."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from astral_dsl.analyses.summary import Totals
from astral_dsl.api import arguments as _a
from astral_dsl.api.commands import Target, diagnosis, diff, report, score_runs, size, sweep, \
    workspace_of
from astral_dsl.api.explore import margins, search
from astral_dsl.api.results import Chosen, DiffResult, ForecastResult, RunsResult, Sized
from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.model.baseline import Baseline
from astral_dsl.model.design import Design, Instance
from astral_dsl.pipeline import Checked
from astral_dsl.pipeline import front_end_errors as _front_end_errors
from astral_dsl.pipeline import check as _check
from astral_dsl.semantics.source_files import read_file
from astral_dsl.semantics.overrides import from_python as _in_python     # `overrides['NAME']`
from astral_dsl.semantics.overrides import listed as _listed
from astral_dsl.units import Quantity
from astral_dsl.units.quantity import UnitError
from astral_dsl.units.table import UnitSpecError
from astral_dsl.workspace import ParamValue, Workspace

if TYPE_CHECKING:
    from astral_dsl.diagnose import DiagnoseError
    from astral_dsl.diagnose.model import Diagnosis
    from astral_dsl.explore.margins import Report as MarginsReport
    from astral_dsl.explore.search import SearchError, SearchResult
    from astral_dsl.explore.sweep import SweepError, SweepResult
    from astral_dsl.outputs.report import ReviewError
    from astral_dsl.seer import ForecastError

# the errors and results of the commands whose modules are not on `astral check`'s start-up
# (Seer, explore, diagnose, the report), imported on first use: `except astral_dsl.SweepError`
# needed `from astral_dsl.explore.sweep import SweepError`, a path only docs/api.md gave
_LAZY = {"ForecastError": "astral_dsl.seer", "DiagnoseError": "astral_dsl.diagnose",
         "Diagnosis": "astral_dsl.diagnose.model", "SweepError": "astral_dsl.explore.sweep",
         "SweepResult": "astral_dsl.explore.sweep", "ReviewError": "astral_dsl.outputs.report",
         "SearchError": "astral_dsl.explore.search", "SearchResult": "astral_dsl.explore.search",
         "MarginsReport": "astral_dsl.explore.margins"}


# a name the API gives another module's class under (margins' Report is its own word there)
_RENAMED = {"MarginsReport": "Report"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name])
        return getattr(module, _RENAMED.get(name, name))
    raise AttributeError(f"module 'astral_dsl.api' has no attribute {name!r}")


def load(path: str | Path, overrides: Optional[Mapping[str, object]] = None,
         read=read_file) -> Design:
    """Compile a .astral file; returns a Design: the front end (`.valid`: it compiles;
    `check` runs the engineering checks and is `astral check`'s verdict). A design with `?` is
    sized (as `astral check` sizes it, once per user: the result is cached) and compiled with
    the values chosen, marked in `.chosen`.

    `overrides` sets top-level parameters as `--set` does: {"hosts_per_rack": "8"}; a value may
    also be a number (which, like a bare number on the command line, takes the unit of the
    parameter's default), a bool or a Quantity. Anything else is reported as E310. A path that
    is not a str or path, or overrides that are not a mapping, raise TypeError. The
    diagnostics of an override name it `overrides['NAME']` where the command's say `--set NAME`."""
    return Workspace.open(path, overrides, read, _in_python).sized


def loads(text: str | bytes, name: str = "<string>", root: str | Path | None = None,
          overrides: Optional[Mapping[str, object]] = None, read=read_file) -> Design:
    """Compile .astral source text (a str, or bytes as a file holds them); imports resolve
    against `root` (default: the current directory) and the stdlib. Text that is not Unicode
    (a lone surrogate, invalid UTF-8 bytes) is reported as E101. Text that is neither str nor
    bytes (None, a number) and overrides that are not a mapping raise TypeError. A design with
    `?` is sized, as `load` sizes it."""
    return Workspace.of_text(text, name, root, overrides, read, _in_python).sized


def compile(path: str | Path, overrides: Optional[Mapping[str, object]] = None,
            read=read_file) -> Workspace:
    """Read and parse a .astral file and everything it imports: a Workspace, whose `design`
    is the file compiled (on first use) and which compiles the same parsed source again:
    `compile(overrides=, assignments=, scenario=)`, `recompile(design, ...)` and `under
    (scenario)`, the design under one of its scenarios."""
    return Workspace.open(path, overrides, read, _in_python)


def compiles(text: str | bytes, name: str = "<string>", root: str | Path | None = None,
             overrides: Optional[Mapping[str, object]] = None, read=read_file) -> Workspace:
    """`compile` for source text (see `loads`)."""
    return Workspace.of_text(text, name, root, overrides, read, _in_python)


def check(target: Target, scenarios: Optional[Sequence[str]] = None,
          all_scenarios: bool = False, design: Optional[Design] = None,
          overrides: Optional[Mapping[str, ParamValue]] = None,
          baseline: Optional[Baseline] = None) -> Checked:
    """`astral check` as a function, of a file (a path) or a Workspace: the front end's
    diagnostics, sizing when the design has unknowns, the jobs validated, the engineering
    checks, then its scenarios (`scenarios` by name, the required ones always, every one with
    `all_scenarios`). `.valid` is the command's verdict (exit status 0); `.totals` its summary
    line. `design`: a design of the workspace (default: its own). The warnings the design's
    `allow`s and `baseline` (read with `read_baseline`) accept are in `.accepted`, apart from
    `.diagnostics`. A `scenarios` str is one name."""
    ws = workspace_of(target, overrides)
    _a.own_design(ws, _a.instance_of(design, Design, "design", " (of the workspace: ws.design)"))
    _a.instance_of(baseline, Baseline, "baseline", " (read_baseline)")
    return _check(ws, design, _a.names(scenarios, "scenarios"),
                  _a.flag(all_scenarios, "all_scenarios"), baseline,
                  option=_listed("--scenario", "scenarios", ws.option))   # `scenarios=['NAME']`


def check_file(path: str | Path, overrides: Optional[Mapping[str, object]] = None,
               scenarios: Optional[Sequence[str]] = None, all_scenarios: bool = False,
               read=read_file, baseline: Optional[Baseline] = None) -> Checked:
    """Open, compile and check a file (the command line's `astral check`)."""
    _a.instance_of(baseline, Baseline, "baseline", " (read_baseline)")
    return _check(compile(path, overrides, read), None, _a.names(scenarios, "scenarios"),
                  _a.flag(all_scenarios, "all_scenarios"), baseline,
                  option=_listed("--scenario", "scenarios"))            # `scenarios=['NAME']`


def forecast(target: Target, job: Optional[str] = None, scenario: Optional[str] = None,
             design: Optional[Design] = None,
             overrides: Optional[Mapping[str, ParamValue]] = None,
             **options: object) -> ForecastResult:
    """Seer's forecast of `job` (default: the first declared) of a file or a workspace's
    design (or `design`; default: the workspace's, with the values sizing chose for its `?`s),
    under `scenario` when named: the design compiled under it and its failures applied. Raises
    ForecastError when the job cannot be forecast, or the design has errors, as `astral
    forecast` refuses it (an override that names no parameter, E213, or a value that does not
    fit, E310, is not dropped: its message states why; `.diagnostics` holds the
    diagnostics); `options` are seer.forecast's (a what-if of the job's fields,
    `calibration=`)."""
    from astral_dsl.pipeline import forecast as _forecast
    from astral_dsl.seer import ForecastError

    ws = workspace_of(target, overrides)
    _a.name(job, "job")
    _a.name(scenario, "scenario")
    _a.own_design(ws, _a.instance_of(design, Design, "design", " (of the workspace: ws.design)"))
    calibration = options.get("calibration")
    if calibration is not None and not isinstance(calibration, (str, os.PathLike)):
        from astral_dsl.seer.calibration import Calibration

        _a.instance_of(calibration, Calibration, "calibration", " or the path of a fit file")
    _a.optional_path(options.get("operator_table"), "operator_table")
    chosen = ws.sized if design is None else design
    if not chosen.valid:
        raise ForecastError("the design has errors", chosen.diagnostics)
    fc = _forecast(ws, chosen, job, scenario, **options)
    return ForecastResult.of(fc)


def front_end_errors(design: Design) -> bool:
    """Whether a compiled design has errors that no choice of its unknowns (`?`) can mend."""
    _a.instance_of(design, Design, "design", " (astral_dsl.load)", optional=False)
    return _front_end_errors(design)


def summary(design: Design) -> dict:
    """GPUs, hosts, racks, switches and IT power of a compiled design."""
    from astral_dsl.analyses.summary import summarize

    _a.instance_of(design, Design, "design", " (astral_dsl.load)", optional=False)
    return summarize(design)


__all__ = ["Checked", "Chosen", "Design", "DiagnoseError", "Diagnosis", "Diagnostic",
           "DiffResult", "ForecastError", "ForecastResult", "Instance", "MarginsReport",
           "ParamValue", "Quantity", "ReviewError", "RunsResult", "SearchError", "SearchResult",
           "Severity", "Sized", "Span", "SweepError", "SweepResult", "Target", "Totals",
           "UnitError", "UnitSpecError", "Workspace", "check", "check_file", "compile",
           "compiles", "diagnosis", "diff", "forecast", "front_end_errors", "load", "loads",
           "margins", "report", "score_runs", "search", "size", "summary", "sweep"]
