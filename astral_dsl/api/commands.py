"""The command line's other commands as functions (re-exported by astral_dsl/api/__init__.py):
`size`, `sweep`, `report`, `diff`, `diagnosis` (`astral diagnose`) and `score_runs` (`astral
runs`), each computing what its command prints from the same functions the command calls.
(`astral_dsl.diagnose` and `astral_dsl.runs` are the packages that do the work: a function
of the same name would be replaced by the package as soon as it is imported.)"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import (TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Tuple, Union)

from astral_dsl.api import arguments as _a
from astral_dsl.api.results import Chosen, DiffResult, RunsResult, Sized
from astral_dsl.pipeline import check as _check
from astral_dsl.semantics.overrides import from_python, listed
from astral_dsl.workspace import ParamValue, Workspace

if TYPE_CHECKING:
    from astral_dsl.diagnose.model import Diagnosis
    from astral_dsl.explore.sweep import SweepResult

PathLike = Union[str, "os.PathLike[str]"]
Target = Union[PathLike, Workspace]


def workspace_of(target: Target, overrides: Optional[Mapping[str, ParamValue]] = None
                 ) -> Workspace:
    """A workspace of `target`: itself (with `overrides` added), or the file it names opened."""
    _a.mapping(overrides, "overrides")
    if isinstance(target, Workspace):
        return target.with_params(**overrides) if overrides else target
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"a design is a path or a Workspace (astral_dsl.compile), not "
                        f"{type(target).__name__}")
    return Workspace.open(target, overrides, option=from_python)     # `overrides['NAME']`


def size(target: Target, scenario: Optional[str] = None,
         overrides: Optional[Mapping[str, ParamValue]] = None) -> Sized:
    """`astral size`: the design checked (sized when it has `?`s; under `scenario` when
    named), the values sizing chose, the objective and the size report's JSON summary."""
    from astral_dsl.outputs.size_json import chosen_fields, objective_json, size_summary

    ws = workspace_of(target, overrides)
    checked = _check(ws, None, [scenario] if _a.name(scenario, "scenario") else None)
    design, eng = checked.design, checked.engineering
    outcome = next((o for o in checked.scenarios if o.name == scenario), None)
    if outcome is not None and outcome.applied is not None and outcome.result is not None:
        design, eng = outcome.applied.design, outcome.result
    chosen = tuple(Chosen(f"{c['path']}.{c['field']}" if c["path"] else None, str(c["value"]),
                          c["file"], c["line"], c["column"], c["replicas"] or 1)
                   for c in chosen_fields(checked.design))
    summary = size_summary(design, eng, checked.sizing) if eng is not None else None
    return Sized(checked, chosen, objective_json(checked.sizing), summary)


def file_and_sets(target: Target, why: str) -> Tuple[PathLike, Dict[str, str]]:
    """The file of `target` (a path, or a Workspace of a file) and the parameters a Workspace
    sets, as `--set` texts: what the commands that compile the file again take (sweep,
    search, margins); `why` they do, for the TypeError of a Workspace of source text."""
    if isinstance(target, Workspace):
        if target.entry.path is None:
            raise TypeError(f"{why}: give a path, or a Workspace of a file "
                            f"(astral_dsl.compile), not one of source text")
        return target.entry.path, {k: _literal(v) for k, v in target.overrides.items()}
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"a design is a path or a Workspace (astral_dsl.compile), not "
                        f"{type(target).__name__}")
    return target, {}


def literal_sets(overrides: Optional[Mapping[str, ParamValue]]) -> Dict[str, str]:
    """`overrides` as `--set` texts."""
    return {k: _literal(v, f"overrides[{k!r}]") for k, v in (overrides or {}).items()}


def _literal(value: ParamValue, what: str = "a grid value") -> str:
    """A value as `--grid` and `--set` read it."""
    from astral_dsl.units import Quantity
    from astral_dsl.units.quantity import format_number

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        try:
            return format_number(float(value))
        except OverflowError:
            # an int beyond a float (whose str() refuses past 4,300 digits): its order of
            # magnitude, which --grid and --set refuse as too large to represent (E802, E310)
            return ("-" if value < 0 else "") + f"1e{int(math.log10(abs(value)))}"
    if isinstance(value, Quantity):
        return str(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} is an int, float, bool, str or Quantity, not "
                    f"{type(value).__name__}")


def sweep(path: Target, grid: Mapping[str, Union[str, Sequence[ParamValue]]],
          overrides: Optional[Mapping[str, ParamValue]] = None, job: Optional[str] = None,
          scenario: Optional[str] = None, workers: Optional[int] = None,
          calibration=None) -> "SweepResult":
    """`astral sweep`: the design (a path, or a Workspace of a file, with its overrides) at
    every point of `grid` ({name: values}: a list of values, each one value, or the text of
    `--grid`, e.g. "2..6"); one row per point (`rows`: params, metrics, diagnostics),
    forecasting `job` when named, with `calibration` (a Calibration or a fit file, as `astral
    sweep --calibration`; default: the shipped fit). Raises explore.sweep.SweepError for a
    malformed grid, an unknown parameter, job or scenario, `workers` below 1 or above 1,024
    (pools.MAX_LOCAL_WORKERS), or a file that cannot be read, parsed or imported (its errors in
    `diagnostics`: E100, E1xx, E207); TypeError for arguments of the wrong kind (a Workspace of source text: its points are compiled again from the file, in
    worker processes)."""
    import attrs

    from astral_dsl.explore import sweep as _sweep
    from astral_dsl.explore.grid import too_many_points

    path, sets = file_and_sets(path, "sweep compiles the design again from its file at every "
                                     "point")
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid is a mapping of parameter names to values, e.g. "
                        f"{{\"hosts_per_rack\": [2, 4]}}, not {type(grid).__name__}")
    _a.name(job, "job")
    _a.name(scenario, "scenario")
    _a.mapping(overrides, "overrides")
    from astral_dsl.pools import local_workers

    try:                # TypeError for another kind; a value out of range: the engine's bound
        local_workers("workers", workers)
    except ValueError as exc:
        raise _sweep.refused("E309", str(exc), path,
                             "give 1 to 1,024 worker processes (more than the cores only "
                             "contend for them), or None for one per core") from None
    if calibration is not None and job is None:        # as `astral sweep` refuses it
        raise _sweep.refused("E307", "calibration prices the forecasts of `job`: give the job "
                             "too", path, "name the job to forecast: `job=\"...\"`")
    _swept_once(grid, sets, overrides or {}, path)
    sets.update(literal_sets(overrides))
    # counted before a value is read: a list of 10^6 values took 20 s and 350 MB to refuse
    too_many = too_many_points(math.prod(len(_listed(name, values)) for name, values in
                                         grid.items() if not isinstance(values, str)))
    if too_many is not None:
        raise _sweep.refused("E802", too_many, path, _sweep.GRID_HINT)
    specs = [f"{name}={values}" if isinstance(values, str) else
             f"{name}=" + ",".join(_one(name, v, path) for v in _listed(name, values))
             for name, values in grid.items()]
    result = _sweep.run(os.fspath(path), specs, sets, job=job, scenario=scenario,
                        workers=workers, calibration=calibration_of(calibration),
                        set_option=from_python)             # `overrides['NAME']`
    if _sweep.front_end_fatal(result.base):
        # the file cannot be read, parsed or imported (E1xx, E207): no point can be swept; the
        # command line prints the design's errors and exits 1, the API says so rather than
        # return a result of no rows whose cause only `base.diagnostics` holds
        errors = [d for d in result.base.diagnostics if d.is_error]
        raise _sweep.SweepError(f"{errors[0].code}: {errors[0].message}", errors)
    current = dict(result.base.params)
    return attrs.evolve(result, rows=tuple(
        {**row, "params": {n: grid_value(v, current.get(n)) for n, v in row["params"].items()}}
        for row in result.rows))


def grid_value(text: str, current: object) -> ParamValue:
    """A point's value of a parameter as the point takes it, typed as `with_params` takes it:
    a number with a unit (or a bare number of a parameter whose value has one, as `--set`
    reads it: in that unit) a Quantity, a plain number an int or a float, `true`/`false` a
    bool, a string literal its text. (`astral sweep`'s JSON keeps a quantity as its text,
    `45 kW`: JSON has no quantity.)"""
    from astral_dsl.explore.grid import number_and_unit
    from astral_dsl.outputs.sweep import literal_json
    from astral_dsl.units import Quantity

    value = literal_json(text)
    read = number_and_unit(text) if not isinstance(value, bool) else None
    if read is None or not math.isfinite(read[0]):       # JSON's text of an infinity too
        return value
    unit = read[1] or (current.unit if isinstance(current, Quantity) else "")
    return Quantity.of(read[0], unit) if unit else value


def _swept_once(grid: Mapping[str, object], workspace_sets: Mapping[str, object],
                overrides: Mapping[str, object], path) -> None:
    """E802 for a grid name also set by the Workspace (its with_params) or by `overrides`, in
    the API's words (`astral sweep` says `--grid` and `--set`: explore.grid.parse_grids)."""
    from astral_dsl.explore import sweep as _sweep

    for name in grid:
        if name in overrides:
            setter = f"overrides[{name!r}]"
            hint = f"give `{name}` in grid or in overrides, not both"
        elif name in workspace_sets:
            setter = "the Workspace (its with_params, or compile's overrides)"
            hint = (f"sweep a Workspace that does not set `{name}` (astral_dsl.compile(path) "
                    f"and with_params of the other parameters), or leave it out of grid")
        else:
            continue
        raise _sweep.refused("E802", f"grid[{name!r}] sweeps a parameter that {setter} sets "
                             f"too; a swept parameter takes its values from grid alone", path,
                             hint)


def _listed(name: str, values: object) -> Sequence[ParamValue]:
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"grid[{name!r}] is a list of values or the text of --grid "
                        f"(\"2..6\"), not {type(values).__name__}")
    return values


def _one(name: str, value: ParamValue, file) -> str:
    """A listed value as `--grid` text: one value, never a range or a list of its own (a str
    "1..3" in a list is not three values)."""
    from astral_dsl.explore import sweep as _sweep
    from astral_dsl.explore.grid import GridError, split_list

    text = _literal(value, f"each value of grid[{name!r}]")
    try:
        one = len(split_list(text)) == 1 and (text.startswith('"') or ".." not in text)
    except GridError:                     # an unterminated string: --grid says so
        one = True
    if not one:
        message = (f"grid[{name!r}]: {text!r} in a list is not one value; to sweep a range "
                   f"or a list, give its text alone: {{{name!r}: {text!r}}}")
        raise _sweep.refused("E802", message, file, _sweep.GRID_HINT)
    return text


def calibration_of(calibration):
    """A Calibration, or the one in the fit file at `calibration` (ValueError when it is not
    one), or None (the shipped fit): what `--calibration` gives the CLI's commands."""
    from astral_dsl.seer.calibration import Calibration, read_calibration

    if calibration is None or isinstance(calibration, Calibration):
        return calibration
    return read_calibration(_a.path(calibration, "calibration (a Calibration or a fit file)"))


def report(target: Target, output: PathLike, jobs: Optional[Sequence[str]] = None,
           scenario: Optional[str] = None, title: Optional[str] = None,
           overrides: Optional[Mapping[str, ParamValue]] = None, calibration=None) -> Path:
    """`astral report`: the design review written to `output` as one self-contained HTML
    page; returns its path. `calibration`: a Calibration or a fit file (`astral calibrate -o`)
    for the job forecasts (default: the shipped fit). Raises outputs.report.ReviewError for a
    job or scenario the design does not declare, ValueError (before any work) when `output`
    is empty or a file the call reads (the design, a module it imports, the fit file), as
    `astral report` refuses it, and OSError when the page cannot be written."""
    import attrs

    from astral_dsl.api.review import collect
    from astral_dsl.outputs.overwrite import clobbered
    from astral_dsl.outputs.report import build
    from astral_dsl.outputs.report.written import write_whole

    ws = workspace_of(target, overrides)
    out = Path(_a.path(output, "output"))
    if not os.fspath(output):           # Path("") is `.`: "Is a directory: '.'", never named
        raise ValueError("output: the path is empty: it names no file")
    read = list(ws.files()) + (
        [os.fspath(calibration)] if isinstance(calibration, (str, os.PathLike)) else [])
    what = clobbered(str(out), read)
    if what is not None:
        raise ValueError(f"output {out} is {what} that report reads: writing it would destroy "
                         f"it; name another file")
    jobs = _a.names(jobs, "jobs")
    _a.name(scenario, "scenario")
    _a.instance_of(title, str, "title")
    review = attrs.evolve(collect(ws, jobs=jobs, scenario=scenario,
                                  calibration=calibration_of(calibration),
                                  option=listed("--job", "jobs", ws.option)),  # `jobs=['NAME']`
                          overrides=tuple(sorted((k, str(v)) for k, v in ws.overrides.items())))
    # whole or not at all, beside it in a file of its own: `out.tmp` overwrote a user's file of
    # that name, and was left behind when `out` was a folder
    write_whole(str(out), build(review, title=title).encode("utf-8"))
    return out


def diff(a: Target, b: Target, overrides: Optional[Mapping[str, ParamValue]] = None,
         calibration=None) -> DiffResult:
    """`astral diff A B` of two files (or workspaces): what changes from A to B; the jobs
    forecast with `calibration` (a Calibration or a fit file; default: the shipped fit)."""
    from astral_dsl.api.sides import side
    from astral_dsl.outputs.diff import compare

    sides = []
    for target in (a, b):
        ws = workspace_of(target, overrides)
        label = str(target) if not isinstance(target, Workspace) else ws.entry.key
        sides.append(side(label, _check(ws), lambda f, root=ws.root: _relative(f, root),
                          calibration_of(calibration)))
    return DiffResult(sides[0], sides[1], tuple(compare(sides[0], sides[1])))


def _relative(file: str, root: Path) -> str:
    from astral_dsl.resources import is_stdlib_name

    if is_stdlib_name(file):            # the same everywhere already
        return file
    try:
        return str(Path(file).resolve().relative_to(root))
    except ValueError:
        return file


def diagnosis(target: Target, observed: Sequence[PathLike], job: Optional[str] = None,
             order: Optional[str] = None, timers: str = "auto",
             overrides: Optional[Mapping[str, ParamValue]] = None,
             calibration=None) -> "Diagnosis":
    """`astral diagnose`: a running job's traces or rank logs (`observed`: files or folders)
    against its forecast and its peers: `.verdict`, `.probability`, `.suspects`, the per-rank
    `.breakdown`. `timers`: what the compute columns measure ("auto", "compute",
    "megatron"); `order`: the rank order of the parallel dimensions (default: the job's);
    `calibration`: a Calibration or a fit file for the forecast (default: the shipped fit).
    Raises diagnose.DiagnoseError (with diagnostics) when the input cannot be used or the
    design has no such job (E221), and seer.ForecastError when the design has errors."""
    from astral_dsl import diagnose as _diagnose
    from astral_dsl import observe
    from astral_dsl.seer import ForecastError

    design = workspace_of(target, overrides).design
    files = _a.paths(observed, "observed")
    for value, what in ((job, "job"), (order, "order"), (timers, "timers")):
        _a.name(value, what)
    if not design.valid:
        raise ForecastError("the design has errors", design.diagnostics)
    if not files:        # as a directory that holds no file (E780)
        from astral_dsl.diagnose.checks import diag

        message = "observed lists no file: there is nothing to diagnose"
        raise _diagnose.DiagnoseError(message, [diag(
            "E780", message, design.file, "give the job's profiler traces or rank logs: "
            "files, or folders that hold them")])
    return _diagnose.diagnose(design, observe.load(files), job=job,
                              order=order, timers=timers,
                              calibration=calibration_of(calibration),
                              option=from_python)                 # `job='NAME'`


def score_runs(table: PathLike, calibration=None,
               gpu_file: Optional[PathLike] = None) -> RunsResult:
    """`astral runs`: every row of a runs table (docs/runs.md) stated as a job, forecast and
    scored; `calibration` a Calibration or a fit written by `astral calibrate -o` (as the other
    functions take it; default: the shipped fit),
    `gpu_file` your own systems. A table or GPU file that cannot be read gives its
    diagnostics and no rows."""
    from astral_dsl.runs.evaluate import evaluate, prepare
    from astral_dsl.runs.table import read_table
    from astral_dsl.seer.calibration import shipped

    diags: Tuple[Any, ...] = ()
    systems = None
    if gpu_file is not None:
        from astral_dsl.runs.systems import read_systems

        gf = read_systems(_a.path(gpu_file, "gpu_file"))
        diags = tuple(gf.diagnostics)
        if not gf.valid:
            return RunsResult(gf.file, (), diags)
        systems = gf.by_key()
    read = read_table(_a.path(table, "table"))
    if not read.valid:
        return RunsResult(read.file, (), diags + tuple(read.diagnostics))
    cal = calibration_of(calibration) if calibration is not None else shipped()
    return RunsResult(read.file, tuple(evaluate(prepare(read, systems), cal)),
                      diags + tuple(read.warnings))


__all__ = ["calibration_of", "diagnosis", "diff", "file_and_sets", "grid_value", "literal_sets",
           "report", "score_runs", "size", "sweep", "workspace_of"]
