"""`astral sweep`: evaluate a design at every point of a grid of top-level parameters.

    from astral_dsl.explore import sweep
    result = sweep.run("examples/astral.astral", ["hosts_per_rack=2..6", "rack_limit=40kW,45kW"])
    for row in result.rows: row["params"], row["valid"], row["metrics"]["it_power_kw"]

Rows come back in grid order (the first grid varying slowest) whatever finished first; a point
that fails is a row with its diagnostics."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.explore.bundle import load_with_bundle
from astral_dsl.explore.engines import REFUSED, chunks, engine as make_engine
from astral_dsl.explore.grid import Grid, GridError, check_names, parse_grids, points
from astral_dsl.explore.point import (FORECAST, SUMMARY, PointOptions, are_rows,
                                      evaluate_points)
from astral_dsl.pools import local_workers
from astral_dsl.syntax import ast


class SweepError(Exception):
    """The sweep cannot start: a bad grid (`diagnostics`: E802, exit 2), or an unknown parameter,
    job or scenario (E213, E221 or E216, exit 1, as every command says them)."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


GRID_HINT = ("a grid is a range as the language reads it (`2..6`, `2..<6`, `2..10:2`) or a "
             "comma list of values (`40kW,45kW`, `true,false`, `\"a\",\"b\"`), of a parameter "
             "that --set does not give")


def unfitting_grid(exc: GridError, ws, file) -> Diagnostic:
    """E802 for grid values that do not fit their parameter, at the parameter's `param` in the
    entry file: the values come from the command line, the kind they must have from there."""
    found = [item for item in ws.entry.tree.items
             if isinstance(item, ast.Param) and item.name.name == exc.name]
    span = found[0].span if found else None
    return Diagnostic("E802", Severity.ERROR, str(exc), span,
                      f"`{exc.name}` is declared here: give --grid values of its kind, as "
                      f"`--set {exc.name}=...` takes them", file=os.fspath(file))


def refused(code: str, message: str, file, hint: str) -> SweepError:
    """A SweepError for an argument that cannot be used, with its diagnostic (`code`, the
    language's for the same mistake) for a tool to read."""
    return SweepError(message, [Diagnostic(code, Severity.ERROR, message, None, hint,
                                           file=os.fspath(file))])


@records.frozen
class SweepResult:
    file: str
    grids: Sequence[Grid]
    rows: Tuple[Dict[str, Any], ...]   # one a point, in the order of grid.points
    base: Any                         # the design compiled with --set only
    columns: Sequence[str]            # the metric columns, in order
    engine: str = ""

    @property
    def notes(self) -> List[str]:
        return [g.note for g in self.grids if g.note]


def front_end_fatal(design) -> bool:
    """Errors no parameter value can mend: the file cannot be read or parsed, or it imports a
    module outside the project (E207: a file a worker never gets, whose points would read
    E205 there, not the E207 `astral check` gives)."""
    return any(d.is_error and (d.code.startswith("E1") or d.code == "E207")
               for d in design.diagnostics)


def run(path: str, grid_specs: Sequence[str], sets: Optional[Dict[str, str]] = None,
        job: Optional[str] = None, scenario: Optional[str] = None, cluster=None,
        workers: Optional[int] = None, progress: Optional[Callable[[int, int], None]] = None,
        engine=None, calibration=None) -> SweepResult:
    """Every point of the grids (module docstring). `calibration`: Seer's constants for the
    forecasts with `job` (a seer.calibration.Calibration; default: the shipped fit).
    `workers`: None or 1 to 1,024 (pools.local_workers: ValueError past it, before any work)."""
    local_workers("workers", workers)
    sets = dict(sets or {})
    try:
        grids = parse_grids(grid_specs, sets)
    except GridError as exc:
        raise refused("E802", str(exc), path, GRID_HINT) from None
    if not grids:           # a call without its arguments (E307)
        raise refused("E307", "give at least one --grid NAME=VALUES, e.g. --grid "
                      "hosts_per_rack=2..6", path, "a sweep needs a parameter and its values: "
                      "`--grid NAME=VALUES` (astral_dsl.sweep: grid={\"NAME\": [...]})")
    texts = [v[1:-1] for g in grids for v in g.values if len(v) >= 2 and v[0] == v[-1] == '"']
    ws, bundle = load_with_bundle(path, sets, texts)     # a text may name a data file
    base = ws.design
    if front_end_fatal(base):
        return SweepResult(base.file, grids, (), base, ())
    params = dict(base.params)
    unknown = [g.name for g in grids if g.name not in params]
    if unknown:             # E213, exit 1, as `--set` of a name the design does not declare
        from astral_dsl.semantics.overrides import unknown_parameter

        d = unknown_parameter("--grid", unknown[0], params, base.file)
        raise SweepError(f"{d.message} ({d.hint})", [d])
    try:
        check_names(grids, params)
    except GridError as exc:
        raise SweepError(str(exc), [unfitting_grid(exc, ws, base.file)]) from None
    if job is not None and job not in [j.template for j in base.jobs]:
        from astral_dsl.seer import unknown_job

        unknown = unknown_job(base, job)
        raise SweepError(f"{unknown.message} ({unknown.hint})", [unknown])
    if scenario is not None:
        from astral_dsl.pipeline_scenarios import unknown_scenarios

        unknown = unknown_scenarios(base, {scenario})
        if unknown:
            raise SweepError(f"{unknown[0].message} ({unknown[0].hint})", unknown)
    options = PointOptions(job=job, forecast=job is not None, scenario=scenario,
                           calibration=calibration)
    grid_points = points(grids)
    eng = engine or make_engine(cluster, workers)
    parts = chunks(len(grid_points), getattr(eng, "workers", 1))
    finished = [0]

    def done(k: int) -> None:
        finished[0] += len(parts[k])
        if progress is not None:
            progress(finished[0], len(grid_points))

    def lost(k: int, why: str):
        return [_lost_row(why, bundle.entry_name) for _ in parts[k]]

    try:                          # the engine closes whatever happens (Ctrl-C in the scatter)
        handle = eng.scatter(bundle) if hasattr(eng, "scatter") else bundle
        tasks = [(evaluate_points, (handle, [{**sets, **grid_points[i]} for i in part], options))
                 for part in parts]
        results = eng.run(tasks, done, lost)
    finally:
        if engine is None and hasattr(eng, "close"):
            eng.close()
    rows = []
    for k, (part, chunk_rows) in enumerate(zip(parts, results)):
        if not are_rows(chunk_rows, len(part)):         # from another version, or a rogue
            chunk_rows = lost(k, REFUSED)
        for i, row in zip(part, chunk_rows):
            rows.append({"params": grid_points[i], **row})
    columns = list(SUMMARY)
    if any("cost_usd" in r["metrics"] for r in rows):
        columns.append("cost_usd")
    if options.forecast:
        columns.extend(FORECAST)
    return SweepResult(base.file, grids, tuple(rows), base, tuple(columns),
                       eng.description)


def _lost_row(why: str, file: str) -> Dict[str, Any]:
    return {"valid": False, "metrics": {}, "diagnostics": [{
        "code": "E800", "severity": "error", "message": f"this point was not evaluated: {why}",
        "file": file, "range": None, "hint": "run the sweep again; if it recurs, run this point "
                                             "alone with `astral check --set ...`"}]}
