"""`astral sweep`: evaluate a design at every point of a grid of top-level parameters.

    from astral_dsl.explore import sweep
    result = sweep.run("examples/astral.astral", ["hosts_per_rack=2..6", "rack_limit=40kW,45kW"])
    for row in result.rows: row["params"], row["valid"], row["metrics"]["it_power_kw"]

Rows come back in grid order (the first grid varying slowest) whatever finished first; a point
that fails is a row with its diagnostics."""
from __future__ import annotations

import itertools
import math
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple


from astral_dsl import records
from astral_dsl.diagnostics import Diagnostic, Severity
from astral_dsl.explore.bundle import load_with_bundle
from astral_dsl.explore.engines import REFUSED, chunk_size, engine as make_engine
from astral_dsl.explore.grid import Grid, GridError, check_names, parse_grids, points
from astral_dsl.explore.point import (FORECAST, SUMMARY, PointOptions, are_rows,
                                      evaluate_points)
from astral_dsl.pools import local_workers
from astral_dsl.semantics.overrides import Option, command_line
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
        forecast = FORECAST[0] in self.columns
        return [g.note for g in self.grids if g.note] + job_note(self.base, forecast)


def job_note(base, forecast: bool) -> List[str]:
    """What a sweep without `--job` of a design that declares jobs leaves out: their forecast,
    which `--job` adds to every point (`astral search` takes the first job unasked; a sweep
    forecasts only the one it is given)."""
    jobs = [j.template for j in getattr(base, "jobs", ())] if not forecast else []
    if not jobs:
        return []
    return [f"the design declares job {', '.join(f'`{j}`' for j in jobs)}: `--job {jobs[0]}` "
            f"forecasts it at every point (iteration time, tokens/s, MFU, memory per GPU)"]


def front_end_fatal(design) -> bool:
    """Errors no parameter value can mend: the file cannot be read or parsed, or it imports a
    module outside the project (E207: a file a worker never gets, whose points would read
    E205 there, not the E207 `astral check` gives)."""
    return any(d.is_error and (d.code.startswith("E1") or d.code == "E207")
               for d in design.diagnostics)


@records.frozen
class Plan:
    """A sweep that can start: its grids, the base design (compiled with --set only), what the
    workers get (the bundle) and how each point is evaluated. `fatal`: the file cannot be read,
    parsed or imported, and no point can mend it (front_end_fatal)."""
    file: str
    grids: Sequence[Grid]
    base: Any
    bundle: Any
    sets: Dict[str, str]
    options: PointOptions
    fatal: bool = False
    # some source it reads writes `price`: a point may have a cost (explore/cost.py; prices are
    # never built in); when none does, no point has the cost column
    priceable: bool = True

    @property
    def size(self) -> int:
        return math.prod(len(g.values) for g in self.grids)

    @property
    def notes(self) -> List[str]:
        return [g.note for g in self.grids if g.note] + job_note(self.base,
                                                                 self.options.forecast)

    def columns(self, cost: bool) -> Tuple[str, ...]:
        """The metric columns, in order: `cost` when some point is priced."""
        return SUMMARY + (("cost_usd",) if cost else ()) + (
            FORECAST if self.options.forecast else ())


def plan(path: str, grid_specs: Sequence[str], sets: Optional[Dict[str, str]] = None,
         job: Optional[str] = None, scenario: Optional[str] = None, calibration=None,
         set_option: Option = command_line) -> Plan:
    """The sweep of run() before any point is evaluated; SweepError for what cannot start.
    `set_option` names an override of `sets` (semantics/overrides.py: the command's `--set
    NAME`, the API's `overrides['NAME']`), in the base design's messages and the points'."""
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
    ws, bundle = load_with_bundle(path, sets, texts, set_option)   # a text may name a file
    base = ws.design
    options = PointOptions(job=job, forecast=job is not None, scenario=scenario,
                           calibration=calibration, set_option=set_option)
    if front_end_fatal(base):
        return Plan(base.file, grids, base, bundle, sets, options, fatal=True)
    priceable = any("price" in text for _, text in ws.sources())
    params = dict(base.params)
    unknown = [g.name for g in grids if g.name not in params]
    if unknown:             # E213, exit 1, as `--set` of a name the design does not declare
        from astral_dsl.semantics.overrides import unknown_parameter

        d = unknown_parameter("--grid {}".format, unknown[0], params, base.file)
        raise SweepError(f"{d.message} ({d.hint})", [d])
    try:
        check_names(grids, params)
    except GridError as exc:
        raise SweepError(str(exc), [unfitting_grid(exc, ws, base.file)]) from None
    if job is not None and job not in [j.template for j in base.jobs]:
        from astral_dsl.seer import unknown_job

        unknown = unknown_job(base, job, set_option)
        raise SweepError(f"{unknown.message} ({unknown.hint})", [unknown])
    if scenario is not None:
        from astral_dsl.pipeline_scenarios import unknown_scenarios

        unknown = unknown_scenarios(base, {scenario}, set_option)
        if unknown:
            raise SweepError(f"{unknown[0].message} ({unknown[0].hint})", unknown)
    return Plan(base.file, grids, base, bundle, sets, options, priceable=priceable)


def evaluate(p: Plan, eng, progress: Optional[Callable[[int, int], None]] = None
             ) -> Iterator[Dict[str, Any]]:
    """The rows of the plan's points, in grid order, as they are evaluated: each row
    {"params": {name: value}, "valid", "metrics", "diagnostics"}. The points are made and sent
    a round at a time (ROUND chunks a worker, see engines.chunks), and a round's rows are given
    before the next round starts, so the memory held is a round's, whatever the grid's size.
    `eng`: where they run (engines.engine; the caller closes it)."""
    total = p.size
    size = chunk_size(total, getattr(eng, "workers", 1))
    every = points(p.grids)
    finished = [0]
    handle = eng.scatter(p.bundle) if hasattr(eng, "scatter") else p.bundle
    round_points = size * ROUND * getattr(eng, "workers", 1)
    for first in range(0, total, round_points):
        batch = list(itertools.islice(every, min(round_points, total - first)))
        parts = [range(i, min(len(batch), i + size)) for i in range(0, len(batch), size)]

        def done(k: int, parts=parts) -> None:
            finished[0] += len(parts[k])
            if progress is not None:
                progress(finished[0], total)

        def lost(k: int, why: str, parts=parts):
            return [_lost_row(why, p.bundle.entry_name) for _ in parts[k]]

        tasks = [(evaluate_points, (handle, [{**p.sets, **batch[i]} for i in part],
                                    p.options)) for part in parts]
        results = eng.run(tasks, done, lost)
        for k, (part, chunk_rows) in enumerate(zip(parts, results)):
            if not are_rows(chunk_rows, len(part)):     # from another version, or a rogue
                chunk_rows = lost(k, REFUSED)
            for i, row in zip(part, chunk_rows):
                yield {"params": batch[i], **row}


ROUND = 8       # chunks a worker per round: as engines.chunks makes them for a small sweep


def run(path: str, grid_specs: Sequence[str], sets: Optional[Dict[str, str]] = None,
        job: Optional[str] = None, scenario: Optional[str] = None, cluster=None,
        workers: Optional[int] = None, progress: Optional[Callable[[int, int], None]] = None,
        engine=None, calibration=None, set_option: Option = command_line) -> SweepResult:
    """Every point of the grids (module docstring), every row held. `calibration`: Seer's
    constants for the forecasts with `job` (a seer.calibration.Calibration; default: the
    shipped fit). `workers`: None or 1 to 1,024 (pools.local_workers: ValueError past it,
    before any work); `set_option` as plan's. `astral sweep` writes its rows as they come
    instead (plan, evaluate)."""
    local_workers("workers", workers)
    p = plan(path, grid_specs, sets, job, scenario, calibration, set_option)
    if p.fatal:
        return SweepResult(p.file, p.grids, (), p.base, ())
    eng = engine or make_engine(cluster, workers)
    try:                          # the engine closes whatever happens (Ctrl-C in the scatter)
        rows = tuple(evaluate(p, eng, progress))
    finally:
        if engine is None and hasattr(eng, "close"):
            eng.close()
    columns = p.columns(any("cost_usd" in r["metrics"] for r in rows))
    return SweepResult(p.file, p.grids, rows, p.base, columns, eng.description)


def _lost_row(why: str, file: str) -> Dict[str, Any]:
    return {"valid": False, "metrics": {}, "diagnostics": [{
        "code": "E800", "severity": "error", "message": f"this point was not evaluated: {why}",
        "file": file, "range": None, "hint": "run the sweep again; if it recurs, run this point "
                                             "alone with `astral check --set ...`"}]}
